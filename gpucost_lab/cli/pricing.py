"""The pricing commands of ``gpucost-lab`` (chapter 03, price the result): ``predict`` (is +X% throughput with +Y%
steps to target cheaper?) and ``profile-to-cost`` (the worked example from a frozen contract through synchronized
timing and a profile to the cost per sample).

Bad input raises :class:`~gpucost_lab.InputError` naming the field; :mod:`gpucost_lab.cli.main` prints it as one line
naming the flag (:data:`FLAGS` maps this module's fields) and exits with status 2.
"""

from __future__ import annotations

import argparse

from gpucost_lab import cost
from gpucost_lab._validate import price_per_hour
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.cli.errors import shown
from gpucost_lab.course import profile_to_cost
from gpucost_lab.measure.device import DEVICE_CHOICES

# Library errors name the Python field; the CLI user typed the flag.
FLAGS = {
    **{
        name: "--" + name.replace("_", "-")
        for name in ("throughput_gain", "steps_change", "baseline_hours", "window_hours", "repeats", "device")
    },
    "price_per_hour_usd": "--price-per-hour",
}


def add_predict(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("predict", help="is +X%% throughput with +Y%% steps to target cheaper?")
    p.add_argument("--throughput-gain", type=float, required=True, help="0.20 for +20%% samples/s")
    p.add_argument("--steps-change", type=float, required=True, help="0.25 for +25%% steps to target")
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    p.add_argument("--baseline-hours", type=float, help="the baseline run's length, to price both runs")
    p.add_argument("--window-hours", type=float, help="the nightly window the run must finish in")
    add_json_flag(p)
    return p


def add_profile_to_cost(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("profile-to-cost", help="the worked example: contract, synchronized timing, profile, price")
    p.add_argument("--device", default="auto", help=f"one of {', '.join(DEVICE_CHOICES)} or cuda:N")
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    p.add_argument("--repeats", type=int, default=5)
    add_json_flag(p)
    return p


def predict_command(args: argparse.Namespace) -> tuple[dict, str]:
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    out = cost.predict(
        args.throughput_gain, args.steps_change, args.price_per_hour, args.baseline_hours, args.window_hours
    )
    lines = [f"relative cost {out['relative_cost']:.3f} -> {out['verdict']}"]
    if "baseline_hours" in out:
        lines.append(
            f"baseline {out['baseline_hours']:.2f} h = ${out['baseline_cost_usd']:.2f}; candidate "
            f"{out['candidate_hours']:.2f} h = ${out['candidate_cost_usd']:.2f} at ${args.price_per_hour:.2f}/h"
        )
    if "window_hours" in out:
        lines.append(
            f"{out['window_hours']:.2f} h window: baseline {'fits' if out['baseline_fits_window'] else 'late'}, "
            f"candidate {'fits' if out['candidate_fits_window'] else 'late'}"
        )
    return out, "\n".join(lines)


def profile_to_cost_command(args: argparse.Namespace) -> tuple[dict, str]:
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    result = profile_to_cost.run(
        device=args.device, price_per_hour_usd=args.price_per_hour, repeats=args.repeats, progress=not args.json
    )
    out = result.to_dict()
    sps, cps = out["samples_per_second"], out["cost_per_sample_usd"]
    c = out["contract"]
    lines = [
        f"contract {out['contract_fingerprint']}: {c['model_name']} on {c['gpu_name'] or c['cpu_model']}, "
        f"{c['dtype']}, batch {c['units_per_step']}, {c['warmup_steps']} warm-up + {c['measured_steps']} steps "
        f"x {c['repeats']} repeats, sync: {c['sync_method']}",
        f"samples/s {sps['geomean']:,.0f} (95% CI {sps['ci95_low']:,.0f} to {sps['ci95_high']:,.0f})",
        f"cost per sample ${cps['geomean']:.3e} (95% CI {cps['ci95_low']:.3e} to {cps['ci95_high']:.3e}) "
        f"at an assumed ${out['price_per_hour_usd']:.2f} per accelerator-hour",
        f"peak memory {out['peak_memory_bytes'] / 1e6:.1f} MB ({out['peak_memory_method']})",
        "top operators by self time:",
    ]
    lines += [
        f"  {shown(op['name']):<36} {op['calls']:>5} calls {op['self_time_s'] * 1e3:9.2f} ms" for op in out["top_ops"]
    ]
    if out["plausibility"]:
        lines.append(f"roofline check: {out['plausibility']['message']}")
    return out, "\n".join(lines)


COMMANDS = (
    Command("predict", add_predict, predict_command, FLAGS),
    Command("profile-to-cost", add_profile_to_cost, profile_to_cost_command, FLAGS),
)
