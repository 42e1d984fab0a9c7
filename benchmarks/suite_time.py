"""`make test` on a clean clone, timed: what CI runs (``CI=true``), quiet or beside busy programs.

Clones the repository's committed HEAD into a scratch folder, runs ``CI=true make test`` there with
``--durations=20`` added to each pytest run (``PYTEST_ADDOPTS``), and prints one JSON line: the whole command's wall
time (set-up and lint included), each tier's test time and counts as pytest reports them (passed, failed, skipped,
errors), their sum (the "tests" time the suite's target is about), and the 20 slowest test phases over all tiers.
With ``--busy N``, N CPU-bound programs run beside the whole command (benchmarks/under_load.sh, which always stops
them).
The clone is removed afterwards unless ``--keep``. Exits with ``make test``'s status.

    .venv/bin/python benchmarks/suite_time.py [--busy 1] [--repo PATH] [--keep]

Not run by ``make bench``: one run takes as long as the suite (benchmarks/RESULTS.md, "Not measured by make bench").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

ROOT = Path(__file__).resolve().parents[1]
TIER_RUN = re.compile(r"^.*?python -m pytest .*?--tier \w+.*$", re.M)  # a pytest run of one tier or more
TIER = re.compile(r"--tier (\w+)")
SUMMARY = re.compile(
    r"^=*\s*(?P<counts>\d+ (?:passed|failed|skipped|errors?)\b.*?) in (?P<s>[0-9.]+)s(?: \([0-9:]+\))?\s*=*$", re.M
)
DURATION = re.compile(r"^(?P<s>[0-9.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S.*)$", re.M)
COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


def tier_reports(output: str) -> dict[str, dict]:
    """Each pytest run's counts and test time, from the output of ``make test``, by the tiers it ran ("unit",
    "integration+e2e")."""
    starts = [("+".join(TIER.findall(m.group(0))), m.start()) for m in TIER_RUN.finditer(output)]
    reports = {}
    for (tier, start), end in zip(starts, [s for _, s in starts[1:]] + [len(output)]):
        summary = list(SUMMARY.finditer(output, start, end))
        if not summary:
            reports[tier] = {"finished": False}
            continue
        counts = {
            kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNT.findall(summary[-1]["counts"])
        }
        reports[tier] = {"finished": True, "s": float(summary[-1]["s"]), **counts}
    return reports


def slowest(output: str, n: int = 20) -> list[dict]:
    """The ``n`` slowest test phases pytest listed (``--durations``), over every tier."""
    found = [{"s": float(m["s"]), "phase": m["phase"], "test": m["test"].strip()} for m in DURATION.finditer(output)]
    return sorted(found, key=lambda d: -d["s"])[:n]


def run_suite(repo: Path, busy: int, keep: bool) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="suite-time-"))
    clone = scratch / "clone"
    try:
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True)
        env = {**os.environ, "CI": "true", "PYTEST_ADDOPTS": "--durations=20"}
        run = Run.start()
        started = time.perf_counter()
        command = (
            ["make", "test"]
            if busy == 0
            else [str(ROOT / "benchmarks" / "under_load.sh"), "-n", str(busy), "make", "test"]
        )
        with open(scratch / "make-test.log", "w") as log:  # written as it runs: a run cut short can still be read
            done = subprocess.run(command, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        wall_s = time.perf_counter() - started
        output = (scratch / "make-test.log").read_text()
        tiers = tier_reports(output)
        return {
            "benchmark": "suite_time",
            "commit": commit.stdout.strip(),
            "busy_programs": busy,
            "exit_status": done.returncode,
            "make_test_s": round(wall_s, 1),
            "tests_s": round(sum(t.get("s", 0.0) for t in tiers.values()), 1),
            "tiers": tiers,
            **{k: sum(t.get(k, 0) for t in tiers.values()) for k in ("passed", "failed", "skipped", "error")},
            "slowest": slowest(output),
            "log": str(scratch / "make-test.log") if keep else None,
            "run": run.finish(),
        }
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound programs beside the run (default 0)")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    parser.add_argument("--keep", action="store_true", help="keep the clone and the log")
    args = parser.parse_args()
    if args.busy < 0:
        parser.error(f"--busy {args.busy}: allowed: 0 or more")
    result = run_suite(args.repo, args.busy, args.keep)
    print(json.dumps(result))
    return result["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
