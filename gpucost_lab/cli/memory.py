"""The memory commands of ``gpucost-lab`` (chapter 04): ``ledger`` and ``fix-oom``.

Bad input raises :class:`~gpucost_lab.InputError` naming the field; :mod:`gpucost_lab.cli.main` prints it as one line
naming the flag (:data:`FLAGS` maps this module's fields) and exits with status 2.
"""

from __future__ import annotations

import argparse

from gpucost_lab import cost
from gpucost_lab._validate import InputError, price_per_hour
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.memory.figures import (
    COURSE_ACTIVATION_GB_PER_SAMPLE,
    COURSE_STATIC_GB,
    DEFAULT_DEVICE_GB,
    DEFAULT_RESERVE_FRACTION,
    MICROBATCH_OVERHEAD_FRACTION,
    OPTIMIZERS,
    RECOMPUTE_MODES,
    SELECTIVE_EXTRA_COMPUTE,
    SELECTIVE_SAVING_FRACTION,
    static_memory,
)
from gpucost_lab.memory.fixes import COURSE_SAMPLES_PER_NIGHT, COURSE_STEP_TIME_S, COURSE_WINDOW_HOURS, plan_fixes
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.precision import PRECISIONS

# Library errors name the Python field; the CLI user typed the flag.
FLAGS = {
    "microbatch": "--microbatch",
    "static_gb": "--static-gb",
    "activation_gb_per_sample": "--activation-gb-per-sample",
    "device_gb": "--device-gb",
    "reserve_fraction": "--reserve",
    "blocks": "--blocks",
    "parameters": "--params",
    "precision": "--precision",
    "optimizer": "--optimizer",
    "accumulation_steps": "--accumulation",
    "recompute": "--recompute",
    "global_batch": "--global-batch",
    "microbatch_overhead_fraction": "--microbatch-overhead",
    "selective_saving_fraction": "--selective-saving",
    "selective_extra_compute": "--selective-extra-compute",
    "step_time_s": "--step-time-s",
    "samples_per_s": "--samples-per-s",
    "samples_per_night": "--samples-per-night",
    "mixed_precision_step_time_factor": "--mixed-precision-step-time-factor",
    "window_hours": "--window-hours",
    "price_per_hour_usd": "--price-per-hour",
}


def _add_ledger_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--static-gb",
        type=float,
        default=None,
        help=f"weights + gradients + optimizer state (GB; default {COURSE_STATIC_GB}); or --params",
    )
    p.add_argument(
        "--params",
        type=int,
        default=None,
        dest="parameters",
        help="parameter count: static memory = parameters x bytes per parameter of --precision and --optimizer",
    )
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=None, help="with --params (default adamw)")
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="the run's precision; mixed precisions halve the activations (2-byte elements)",
    )
    p.add_argument(
        "--activation-gb-per-sample",
        type=float,
        default=COURSE_ACTIVATION_GB_PER_SAMPLE,
        help="activations per sample, in fp32",
    )
    p.add_argument("--device-gb", type=float, default=DEFAULT_DEVICE_GB)
    p.add_argument(
        "--reserve",
        type=float,
        default=DEFAULT_RESERVE_FRACTION,
        help="fraction of device memory kept free, in [0, 1)",
    )
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument(
        "--microbatch-overhead",
        type=float,
        default=MICROBATCH_OVERHEAD_FRACTION,
        help="per-microbatch overhead over one batch's step time, in [0, 1) (measured: "
        f"{MICROBATCH_OVERHEAD_FRACTION})",
    )
    p.add_argument(
        "--selective-saving",
        type=float,
        default=SELECTIVE_SAVING_FRACTION,
        help="share of activations selective recomputation saves, in [0, 1)",
    )
    p.add_argument(
        "--selective-extra-compute",
        type=float,
        default=SELECTIVE_EXTRA_COMPUTE,
        help="selective recomputation's extra compute (0.027 = +2.7%%)",
    )


def add_ledger(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("ledger", help="training-memory budget at one microbatch size (or one global batch)")
    p.add_argument("--microbatch", type=int, default=None, help="required unless --global-batch is given")
    p.add_argument(
        "--accumulation",
        type=int,
        default=None,
        dest="accumulation_steps",
        help="microbatches per optimizer step (default 1; with --global-batch the smallest that fits)",
    )
    p.add_argument(
        "--global-batch",
        type=int,
        default=None,
        help="samples per optimizer step, run as --accumulation microbatches of ceil(B / K)",
    )
    p.add_argument("--recompute", choices=RECOMPUTE_MODES, default="none", help="activation recomputation")
    _add_ledger_inputs(p)
    add_json_flag(p)
    return p


def add_fix_oom(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("fix-oom", help="every fix for a global batch that does not fit, priced, cheapest first")
    p.add_argument("--global-batch", type=int, required=True)
    _add_ledger_inputs(p)
    p.add_argument(
        "--step-time-s",
        type=float,
        default=None,
        help=f"the baseline optimizer step at the global batch, on a device where it fits (default "
        f"{COURSE_STEP_TIME_S}); or --samples-per-s",
    )
    p.add_argument("--samples-per-s", type=float, default=None)
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    p.add_argument("--window-hours", type=float, default=COURSE_WINDOW_HOURS)
    p.add_argument("--samples-per-night", type=float, default=COURSE_SAMPLES_PER_NIGHT)
    p.add_argument(
        "--mixed-precision-step-time-factor",
        type=float,
        default=1.0,
        help="a mixed-precision step's time over the baseline's (default 1.0: no speed-up credited)",
    )
    add_json_flag(p)
    return p


def _ledger_from(args: argparse.Namespace) -> tuple[MemoryLedger, dict | None]:
    """The ledger the flags describe, and the static-memory breakdown when it counts from --params."""
    knobs = dict(
        device_gb=args.device_gb,
        reserve_fraction=args.reserve,
        blocks=args.blocks,
        microbatch_overhead_fraction=args.microbatch_overhead,
        selective_saving_fraction=args.selective_saving,
        selective_extra_compute=args.selective_extra_compute,
    )
    if args.parameters is None:
        if args.optimizer is not None:
            raise InputError(
                "optimizer",
                f"optimizer counts static memory from a parameter count: give --params with it (with "
                f"--static-gb the optimizer state is inside the GB), got optimizer={args.optimizer!r}",
            )
        static_gb = COURSE_STATIC_GB if args.static_gb is None else args.static_gb
        ledger = MemoryLedger(static_gb=static_gb, activation_gb_per_sample=args.activation_gb_per_sample, **knobs)
        return ledger.with_precision(args.precision), None
    if args.static_gb is not None:
        raise InputError(
            "static_gb",
            f"static_gb must be left out when parameters are given (two ways to give static memory: "
            f"give one), got static_gb={args.static_gb!r} with parameters={args.parameters!r}",
        )
    static = static_memory(args.parameters, args.precision, args.optimizer or "adamw")
    ledger = MemoryLedger.from_parameters(
        args.parameters, args.activation_gb_per_sample, optimizer=static.optimizer, **knobs
    )
    return ledger.with_precision(args.precision), static.to_dict()


def ledger_command(args: argparse.Namespace) -> tuple[dict, str]:
    ledger, static = _ledger_from(args)
    if args.global_batch is not None:
        if args.microbatch is not None:
            raise InputError(
                "global_batch",
                f"global_batch must be left out when microbatch is given (two ways to size the step: give "
                f"one; the microbatch follows from the global batch and accumulation_steps), got "
                f"global_batch={args.global_batch!r} with microbatch={args.microbatch!r}",
            )
        result = ledger.at_global_batch(
            args.global_batch, accumulation_steps=args.accumulation_steps, recompute=args.recompute
        )
    elif args.microbatch is None:
        raise InputError(
            "microbatch", "microbatch is required (or global_batch, samples per optimizer step), got neither"
        )
    else:
        k = 1 if args.accumulation_steps is None else args.accumulation_steps
        result = ledger.at(args.microbatch, recompute=args.recompute, accumulation_steps=k)
    out = {
        **result.to_dict(),
        "static_gb": ledger.static_gb,
        "activation_gb_per_sample": ledger.activation_gb_per_sample,
    }
    lines = [
        f"microbatch {result.microbatch}: peak {result.peak_gb:.2f} GB of a {result.budget_gb:.2f} GB budget -> "
        f"{'fits' if result.fits else 'does NOT fit'} (headroom {result.headroom_gb:.2f} GB); "
        f"largest microbatch that fits: {result.max_microbatch}"
    ]
    plain = (
        result.accumulation_steps == 1
        and args.global_batch is None
        and result.recomputation == "none"
        and result.precision == "fp32"
        and static is None
    )
    if not plain:
        uneven = (
            " (the last one smaller)" if result.microbatch * result.accumulation_steps != result.global_batch else ""
        )
        lines.append(
            f"global batch {result.global_batch} = {result.accumulation_steps} x microbatch "
            f"{result.microbatch}{uneven}; {result.precision}, recomputation {result.recomputation}; "
            f"optimizer step x{result.step_time_factor:.3f} of one batch's time"
        )
    if static is not None:
        out["static"] = static
        lines.append(
            f"static {static['static_gb']:.2f} GB = {static['parameters']:,} parameters x "
            f"{static['bytes_per_parameter']} B ({static['precision']}, {static['optimizer']}: weights "
            f"{static['weights_gb']:.2f} + gradients {static['gradients_gb']:.2f} + fp32 master "
            f"{static['master_weights_gb']:.2f} + optimizer state {static['optimizer_state_gb']:.2f} GB)"
        )
    lines.append(result.table().reset_index().to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return out, "\n".join(lines)


def fix_oom_command(args: argparse.Namespace) -> tuple[dict, str]:
    ledger, _ = _ledger_from(args)
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    step_time_s = args.step_time_s
    if step_time_s is None and args.samples_per_s is None:
        step_time_s = COURSE_STEP_TIME_S
    plan = plan_fixes(
        ledger,
        args.global_batch,
        step_time_s=step_time_s,
        samples_per_s=args.samples_per_s,
        price_per_hour_usd=args.price_per_hour,
        window_hours=args.window_hours,
        samples_per_night=args.samples_per_night,
        mixed_precision_step_time_factor=args.mixed_precision_step_time_factor,
    )
    return plan.to_dict(), plan.text()


COMMANDS = (
    Command("ledger", add_ledger, ledger_command, FLAGS),
    Command("fix-oom", add_fix_oom, fix_oom_command, FLAGS),
)
