"""The release command of ``gpucost-lab`` (chapter 06, release the result): ``plan``, the optimization plan on the
built-in workload (profile, parity, memory, cost to target) ending in the release gate's decision, recorded in a
registry and written up in a report when asked.

Every input and output is checked before the plan runs (minutes); the decision and its report land together or not
at all. Bad input raises :class:`~gpucost_lab.InputError` naming the field; :mod:`gpucost_lab.cli.main` prints it as
one line naming the flag (:data:`FLAGS` maps this module's fields) and exits with status 2.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from gpucost_lab import cost
from gpucost_lab._validate import InputError, output_file, price_per_hour
from gpucost_lab.atomic import Pending
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.cli.errors import shown, writing
from gpucost_lab.release import plan as release_plan
from gpucost_lab.release import report as release_report
from gpucost_lab.release.gate import Decision
from gpucost_lab.release.registry import Registry

# Library errors name the Python field; the CLI user typed the flag.
FLAGS = {
    **{name: "--" + name.replace("_", "-") for name in ("rounds", "candidate", "registry", "report")},
    "price_per_hour_usd": "--price-per-hour",
}


def add_plan(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "plan",
        help="the optimization plan on the built-in workload: profile, parity, memory, "
        "cost to target, release decision",
    )
    p.add_argument("--candidate", default="batch128-lr-scaled", help=f"one of {', '.join(release_plan.CANDIDATES)}")
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    p.add_argument("--rounds", type=int, default=10, help="ABBA/BAAB rounds of the interleaved timing")
    p.add_argument("--registry", help="a release registry (JSON) to record the decision in and fall back to")
    p.add_argument("--report", help="write the throughput/cost report here (.md or .html)")
    add_json_flag(p)
    return p


class FlagRegistry(Registry):
    """The registry ``--registry`` names: its errors name the flag, and :meth:`record` only prepares the write
    (``pending``), which waits for the report's, so that the decision and its report land together."""

    def __init__(self, typed: str):
        super().__init__(output_file("registry", typed))
        self.typed = typed
        self.pending: Pending | None = None

    def _load(self) -> list[dict]:
        try:
            return super()._load()
        except InputError:
            raise
        except ValueError as err:
            raise InputError("registry", f"registry: {err}") from None

    def record(self, decision: Decision, at: datetime | None = None) -> dict:
        with writing("registry", self.typed):
            entry, self.pending = self.prepare_record(decision, at)
        return entry


def _checked_registry(args: argparse.Namespace) -> FlagRegistry | None:
    """Every input and output checked before the plan runs (minutes), not when its files are written; the
    registry, read once so that one that cannot be read is refused now."""
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    release_plan.check_rounds(args.rounds)
    if args.report is not None:
        release_report.report_path(args.report, "report")
    if args.registry is None:
        return None
    registry = FlagRegistry(args.registry)
    registry.current()
    return registry


def _run_plan(args: argparse.Namespace, registry: FlagRegistry | None) -> dict:
    """The plan's result, its decision recorded and its report written together: a write that fails, or a plan
    that does, leaves no temporary file and the registry as it was."""
    report = None
    try:
        result = release_plan.run_plan(
            args.candidate, price_per_hour_usd=args.price_per_hour, rounds=args.rounds, registry=registry
        )
        out = result.to_dict()
        if args.report is not None:
            with writing("report", args.report):
                report = release_report.write_report_pending(result.report_data(), args.report)
        if registry is not None and registry.pending is not None:
            with writing("registry", args.registry):
                registry.pending.commit()
        if report is not None:
            with writing("report", args.report):
                out["report"] = str(report.commit())
    finally:
        for pending in (report, registry.pending if registry is not None else None):
            if pending is not None and not pending.done:
                pending.discard()
    return out


def plan_command(args: argparse.Namespace) -> tuple[dict, str]:
    out = _run_plan(args, _checked_registry(args))
    d, c = out["decision"], out["cost_to_target"]
    lines = [
        f"{d['action'].upper()}: {out['candidate']['name']} against {out['baseline']['name']} -> "
        f"production runs {d['to']}"
    ]
    if c["ratio"] is not None:
        lines.append(
            f"cost to target {c['ratio']:.3f}x baseline (95% CI {c['ratio_ci95'][0]:.3f} to "
            f"{c['ratio_ci95'][1]:.3f}), {c['verdict']}, at an assumed ${out['price_per_hour_usd']:.2f}/h"
        )
    lines += [f"  {reason}" for reason in d["reasons"]]
    if args.report is not None:
        lines.append(f"report: {shown(out['report'])}")
    return out, "\n".join(lines)


COMMANDS = (Command("plan", add_plan, plan_command, FLAGS, paths=("registry", "report"), nested_input="registry"),)
