"""Synthetic ranks of one job in which one rank is delayed by a known amount before each collective: the property
the wait per collective must recover (tests/timeline/test_straggler.py), and the folder HolisticTraceAnalysis's
straggler function reads in ``benchmarks/ranks_straggler_hta.py`` and ``benchmarks/ranks_scale.py``.

Standard library only, so HTA's environment can import it. Every rank runs ``steps`` ``ProfilerStep#N`` (numbered
from 1), each a chain of ``collectives`` blocks: ``kernels`` computation kernels of ``compute_us`` in all, then an
all-reduce. The delayed rank's computation takes ``delay_us`` longer before each collective, so the others enter the
all-reduce ``delay_us`` earlier and spin in it until the delayed rank arrives: their kernel lasts ``delay_us`` +
``transfer_us``, the delayed rank's ``transfer_us``, and every rank leaves it together. The late-arrival spread of
every collective is ``delay_us`` and each other rank's wait is ``delay_us``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ALL_REDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"
HOST_LEAD_US = 5.0  # the host launches every kernel of a step this long after the step begins


def _x(cat, name, ts, dur, pid, tid, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def schedule(ranks: int, *, delayed: int, steps: int = 3, collectives: int = 4, delay_us: float = 2_000.0,
             transfer_us: float = 500.0, compute_us: float = 3_000.0, jitter_us: float = 0.0, seed: int = 0,
             start_us: float = 1_000_000.0):  # fmt: skip
    """Per step, its start and end and per block (computation then collective) its start, each rank's arrival at
    the collective and the collective's end (the last arrival + ``transfer_us``), the same for every rank's file:
    rank r arrives ``compute_us`` (+ ``delay_us`` for the delayed rank, + a uniform [0, ``jitter_us``) draw of a
    generator seeded by ``seed``) after the block starts."""
    draw = random.Random(seed)
    out, t = [], start_us
    for _ in range(steps):
        step_start, blocks = t, []
        t += HOST_LEAD_US
        for _ in range(collectives):
            arrivals = [
                t + compute_us + (delay_us if r == delayed else 0.0) + draw.uniform(0.0, jitter_us)
                for r in range(ranks)
            ]
            end = max(arrivals) + transfer_us
            blocks.append((t, arrivals, end))
            t = end
        t += HOST_LEAD_US
        out.append((step_start, t, blocks))
    return out


def rank_events(rank: int, plan, *, kernels: int = 1):
    """The events of ``rank``'s trace under ``plan`` (:func:`schedule`), one at a time: per step its
    ``ProfilerStep#N``, per block ``kernels`` computation kernels up to the rank's arrival, then its all-reduce to
    the collective's end; each kernel launched by a ``cudaLaunchKernel`` early in the step."""
    correlation = 0
    for s, (step_start, step_end, blocks) in enumerate(plan):
        yield _x("user_annotation", f"ProfilerStep#{s + 1}", step_start, step_end - step_start, 1, 1)
        for block_start, arrivals, end in blocks:
            piece = (arrivals[rank] - block_start) / kernels
            pieces = [(GEMM, block_start + i * piece, piece, 7) for i in range(kernels)]
            for name, ts, dur, stream in [*pieces, (ALL_REDUCE, arrivals[rank], end - arrivals[rank], 20)]:
                correlation += 1
                launch = step_start + 1 + (correlation % 4)
                yield _x("cuda_runtime", "cudaLaunchKernel", launch, 1, 1, 1, correlation=correlation)
                yield _x("kernel", name, ts, dur, 0, stream, stream=stream, correlation=correlation, device=rank)


def write_rank(path: Path, rank: int, plan, *, world_size: int, says_rank: bool = True, base_time_ns=None,
               shift_us: float = 0.0, kernels: int = 1) -> Path:  # fmt: skip
    """One rank's trace at ``path`` (``distributedInfo`` when ``says_rank``; ``baseTimeNanoseconds`` when given,
    every timestamp written ``shift_us`` earlier: a clock counting from another origin)."""
    head: dict = {"schemaVersion": 1}
    if says_rank:
        head["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size}
    if base_time_ns is not None:
        head["baseTimeNanoseconds"] = base_time_ns
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w") as f:
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [')
        for i, event in enumerate(rank_events(rank, plan, kernels=kernels)):
            event["ts"] -= shift_us
            f.write((", " if i else "") + json.dumps(event))
        f.write("]}\n")
    return Path(path)


def write_job(folder: Path, ranks: int = 4, *, delayed: int = 2, kernels: int = 1, **knobs) -> list[Path]:
    """``ranks`` traces ``rank<N>.json`` in ``folder`` (each saying its rank), rank ``delayed`` late before each
    collective; ``knobs``: :func:`schedule`'s."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    plan = schedule(ranks, delayed=delayed, **knobs)
    return [
        write_rank(Path(folder) / f"rank{r}.json", r, plan, world_size=ranks, kernels=kernels) for r in range(ranks)
    ]
