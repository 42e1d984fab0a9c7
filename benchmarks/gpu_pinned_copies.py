"""Pinned memory and ``non_blocking`` host-to-device copies on a GPU (chapter 07, "What changes on a GPU host").

Three parts, each kept even when another fails (its ``error`` says why):

- ``copies``: a host-to-device copy from pageable memory (``dst.copy_(src)``) against the same bytes from pinned
  memory (``dst.copy_(src.pin_memory(), non_blocking=True)``), interleaved (``compare_steps``: ABBA/BAAB rounds in
  a seeded order, 10 copies per block, each block between two synchronizations), at 64 MiB (the bus's bandwidth)
  and at one chapter-07 batch (32 x 3 x 16 x 16 float32, 96 KiB: a copy's fixed cost). Bandwidth = bytes / the
  side's geometric-mean copy time. The bytes that arrive are checked against the source.
- ``asynchrony``: how soon ``copy_(..., non_blocking=True)`` returns, as a share of the time until the copy is done
  (synchronize, clock, copy, clock, synchronize, clock; one value per copy, 20 copies of 64 MiB): from pinned memory
  the call only queues the copy (a share near 0); from pageable memory the driver stages it through a pinned buffer
  on the host's time (near 1).
- ``chapter``: chapter 07 on the GPU, its exercise 5: ``measure_settings((0, 2, 4, 8), device="cuda")`` (the
  settings table) and the chapter's loader, 2 persistent workers, against the same with ``pin_memory=True`` and
  ``non_blocking=True``, interleaved (``compare_configs``), priced per sample.

Target (the verdict): the 64 MiB pinned copy faster than the pageable one (interval below 1), and the pinned
``non_blocking`` copy returning before half of it is done (the share's interval below 0.5). The chapter's figures
are reported. ``--device cpu`` is a dry run only: nothing can be pinned without CUDA, so both sides copy between
host tensors. Prints one JSON line.

    python3 benchmarks/gpu_pinned_copies.py [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

import torch

from gpucost_lab.measure.compare import compare_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.device import synchronizer
from gpucost_lab.pipeline.compare import compare_configs
from gpucost_lab.pipeline.loader import IMAGE_SHAPE, LoaderConfig, measure_settings, settings_table
from gpucost_lab.stats import Estimate

LARGE_BYTES = 64 * 2**20
BATCH = 32  # chapter 07's batch
BATCH_BYTES = BATCH * IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2] * 4  # float32
ASYNC_COPIES = 20


def _sources(nbytes: int, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(pageable source, pinned source, destination) of ``nbytes`` seeded bytes."""
    pageable = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=torch.Generator().manual_seed(nbytes))
    pinned = pageable.pin_memory() if device.startswith("cuda") else pageable.clone()
    return pageable, pinned, torch.empty(nbytes, dtype=torch.uint8, device=device)


def copy_comparison(nbytes: int, device: str, rounds: int = 6) -> dict:
    pageable, pinned, dst = _sources(nbytes, device)
    contract = BenchmarkContract.capture(
        inputs=[(nbytes,)],
        units_per_step=1,
        device=device,
        warmup_steps=3,
        measured_steps=10,
        repeats=rounds,
        model_name=f"host-to-device copy of {nbytes} bytes",
    )
    cmp = compare_steps(
        lambda: dst.copy_(pageable), lambda: dst.copy_(pinned, non_blocking=True), contract, order_seed=nbytes % 1000
    )
    synchronizer(device)()
    arrived = bool(torch.equal(dst.cpu(), pageable))
    pageable_s, pinned_s = cmp.baseline.step_time_s.geomean, cmp.candidate.step_time_s.geomean
    return {
        "bytes": nbytes,
        "pageable_gb_per_s": nbytes / pageable_s / 1e9,
        "pinned_non_blocking_gb_per_s": nbytes / pinned_s / 1e9,
        "pageable_copy_s": pageable_s,
        "pinned_copy_s": pinned_s,
        "pinned_over_pageable_time": cmp.to_dict(),
        "bytes_arrived_intact": arrived,
    }


def return_share(nbytes: int, device: str, copies: int = ASYNC_COPIES) -> dict:
    """Per source: the share of a ``non_blocking`` copy's time that passes before the call returns."""
    pageable, pinned, dst = _sources(nbytes, device)
    sync, out = synchronizer(device), {"bytes": nbytes, "copies": copies}
    for name, src in (("pinned", pinned), ("pageable", pageable)):
        dst.copy_(src, non_blocking=True)  # warm-up
        shares, returned, done = [], [], []
        for _ in range(copies):
            sync()
            t0 = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            shares.append((t1 - t0) / (t2 - t0))
            returned.append(t1 - t0)
            done.append(t2 - t0)
        out[name] = {
            "returned_share": Estimate.of(shares).to_dict(),
            "returned_s": Estimate.of(returned).to_dict(),
            "done_s": Estimate.of(done).to_dict(),
        }
    return out


def chapter_on_device(device: str) -> dict:
    settings = measure_settings((0, 2, 4, 8), device=device)
    table = settings_table(settings).reset_index()
    base = LoaderConfig(batch_size=BATCH, num_workers=2, persistent_workers=True)
    pinned = replace(base, pin_memory=True, non_blocking=True)
    change = compare_configs(base, pinned, device=device, order_seed=8)
    return {
        "settings": table.to_dict(orient="records"),
        "pin_memory_and_non_blocking": {
            **change.row(),
            "reason": change.comparison.reason if change.comparison else None,
        },
    }


def part(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as err:  # noqa: BLE001 -- one part failing on the GPU machine must not lose the others
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a dry run, nothing pinned")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_pinned_copies: no CUDA device here (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    device = args.device
    copies = {
        "large": part(copy_comparison, LARGE_BYTES, device),
        "batch": part(copy_comparison, BATCH_BYTES, device),
    }
    asynchrony = part(return_share, LARGE_BYTES, device)
    chapter = part(chapter_on_device, device)
    errors = [name for name, p in (*copies.items(), ("asynchrony", asynchrony), ("chapter", chapter)) if "error" in p]
    large = copies["large"]
    ok = (
        not errors
        and large["pinned_over_pageable_time"]["ci95_high"] < 1
        and large["bytes_arrived_intact"]
        and copies["batch"]["bytes_arrived_intact"]
        and asynchrony["pinned"]["returned_share"]["ci95_high"] < 0.5
    )
    result = {
        "benchmark": "gpu_pinned_copies",
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "copies": copies,
        "asynchrony": asynchrony,
        "chapter": chapter,
        "errors": errors,
        "targets": {
            "copies": "64 MiB from pinned memory faster than from pageable (interval below 1)",
            "asynchrony": "a pinned non_blocking copy returns before half of it is done (interval below 0.5)",
        },
        "verdict": "pass" if ok else "short",
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
