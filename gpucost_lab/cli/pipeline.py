"""``gpucost-lab pipeline``: the input pipeline of chapter 07 measured per loader setting
(:mod:`gpucost_lab.pipeline.loader`).

For each number of workers in ``--workers``: the loader's samples/s alone, the training loop's samples/s, the share of
the loop's time spent waiting for data, and the cost per sample at ``--price-per-hour``, each the geometric mean of
``--repeats`` epochs with its 95% interval. Bad input raises :class:`~gpucost_lab.InputError` naming the field;
:mod:`gpucost_lab.cli.main` prints it as one line naming the flag (:data:`FLAGS` maps this module's fields) and exits
with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, price_per_hour
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.measure.device import resolve_device
from gpucost_lab.pipeline.bounds import check_run
from gpucost_lab.pipeline.loader import (
    DECODE_PASSES,
    DEFAULT_BATCHES,
    DEFAULT_REPEATS,
    MAX_WORKERS,
    LoaderConfig,
    PipelineMeasurement,
    measure_settings,
)

# Library errors name the Python field; the CLI user typed the flag. (num_workers is not here: it is simulate's
# --num-workers; this command checks its --workers itself.)
FLAGS = {
    "workers": "--workers",
    "batch_size": "--batch-size",
    "batches": "--batches",
    "repeats": "--repeats",
    "prefetch_factor": "--prefetch-factor",
    "persistent_workers": "--persistent-workers",
    "pin_memory": "--pin-memory",
    "non_blocking": "--non-blocking",
    "decode_passes": "--decode-passes",
    "price_per_hour_usd": "--price-per-hour",
    "device": "--device",
}


FIGURES = ("loader_samples_per_s", "loop_samples_per_s", "data_wait_fraction", "first_batch_s", "cost_per_sample_usd")


def add_pipeline(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "pipeline",
        help="the input pipeline per number of workers: loader and loop samples/s, data-wait share, cost per sample",
    )
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2], help="numbers of workers (default: 0 1 2)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches", type=int, default=DEFAULT_BATCHES, help="batches per timed epoch")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timed epochs per setting (>= 2)")
    p.add_argument("--prefetch-factor", type=int, default=None, help="batches each worker loads ahead (workers > 0)")
    p.add_argument("--persistent-workers", action="store_true", help="keep the workers between epochs (workers > 0)")
    p.add_argument("--pin-memory", action="store_true", help="page-locked batches (acts on CUDA only)")
    p.add_argument("--non-blocking", action="store_true", help="asynchronous host-to-device copy (CUDA only)")
    p.add_argument("--decode-passes", type=int, default=DECODE_PASSES, help="the decode's per-sample work")
    p.add_argument("--device", default="cpu", help="where the training step runs: cpu, cuda or cuda:N")
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    add_json_flag(p, "print one JSON object: one row per setting")
    return p


def _settings(args: argparse.Namespace) -> tuple[list[int], LoaderConfig]:
    """The numbers of workers to measure and the loader setting they share, checked before anything runs."""
    workers = [integer_at_least("workers", n, 0, MAX_WORKERS) for n in args.workers]
    check_run(len(workers), args.batch_size, args.batches, args.repeats, args.decode_passes)
    for field, value in (("prefetch_factor", args.prefetch_factor), ("persistent_workers", args.persistent_workers)):
        if value not in (None, False) and max(workers) == 0:
            raise InputError(field, f"{field} sets the workers: give a number of workers > 0, got workers={workers}")
    base = LoaderConfig(
        batch_size=args.batch_size,
        num_workers=max(workers, default=0),  # worker-only settings checked against the most workers, dropped for 0
        pin_memory=args.pin_memory,
        prefetch_factor=args.prefetch_factor,
        persistent_workers=args.persistent_workers,
        non_blocking=args.non_blocking,
    )
    return workers, base


def _measure(
    args: argparse.Namespace, workers: list[int], base: LoaderConfig, device: str
) -> list[PipelineMeasurement]:
    """Each setting measured, with one thread for the training step: the workers and the step share the cores."""
    cores = _cores()
    if max(workers) > cores:  # DataLoader's own warning says so in four lines; the measurement is still valid
        print(
            f"gpucost-lab pipeline: note: --workers {max(workers)} is more than the {cores} cores this process may "
            f"use: the workers take turns on them, which the measurement shows",
            file=sys.stderr,
        )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="This DataLoader will create", category=UserWarning)
            return measure_settings(
                workers,
                base,
                batches=args.batches,
                repeats=args.repeats,
                device=device,
                decode_passes=args.decode_passes,
            )
    finally:
        torch.set_num_threads(threads)


def _table(args: argparse.Namespace, device: str, rows: list[dict]) -> str:
    lines = [
        f"{args.repeats} rounds of an epoch of {args.batches} batches of {args.batch_size}, loader alone and loop, per "
        f"setting on {device} (a warm-up epoch first); geometric means [95% CI], at ${args.price_per_hour:.2f}/h",
        f"{'setting':<34} {'loader samples/s':>22} {'loop samples/s':>22} {'waiting for data':>18} "
        f"{'first batch ms':>14} {'cost per sample':>16}",
    ]
    for r in rows:
        ld, lp, w, f, c = (r[k] for k in FIGURES)
        wait = f"{w['geomean']:.1%} [{w['ci95_low']:.0%}-{w['ci95_high']:.0%}]"
        lines.append(
            f"{r['setting']:<34} {_rate(ld):>22} {_rate(lp):>22} {wait:>18} {f['geomean'] * 1e3:>14.1f} "
            f"{'$' + format(c['geomean'], '.3e'):>16}"
        )
    return "\n".join(lines)


def pipeline_command(args: argparse.Namespace) -> tuple[dict, str]:
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    device = resolve_device(args.device)
    workers, base = _settings(args)
    rows = [m.to_dict(args.price_per_hour) for m in _measure(args, workers, base, device)]
    out = {
        "device": device,
        "batch_size": args.batch_size,
        "batches_per_epoch": args.batches,
        "repeats": args.repeats,
        "decode_passes": args.decode_passes,
        "price_per_hour_usd": args.price_per_hour,
        "settings": rows,
    }
    return out, _table(args, device, rows)


def _cores() -> int:
    """The cores this process may use, as DataLoader counts them for its warning."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _rate(e: dict) -> str:
    return f"{e['geomean']:,.0f} [{e['ci95_low']:,.0f}-{e['ci95_high']:,.0f}]"


COMMANDS = (Command("pipeline", add_pipeline, pipeline_command, FLAGS),)
