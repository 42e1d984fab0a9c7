"""One step of ``benchmarks/gpu_check.sh`` run and kept as a JSON record; the check's summary.

    python3 benchmarks/gpu_record.py OUT_DIR NAME [--timeout-s S] [--pytest] -- COMMAND ...
    python3 benchmarks/gpu_record.py OUT_DIR --summary NAME ...

The first form runs COMMAND from the repository root (its stderr passes through), stops it after ``--timeout-s``
seconds, and writes ``OUT_DIR/NAME.json`` in the form ``benchmarks/collect.py`` reads from ``benchmarks/results/``:
``benchmark`` (NAME), ``device`` (the GPU's name, ``torch.cuda.get_device_name()`` as the check read it once and
passed in ``GPUCOST_GPU_NAME``), ``command`` (repository-relative), ``started``, ``finished``, ``wall_s``,
``exit_status``, ``timed_out``, ``machine``, ``versions``, ``load`` and ``result``: the JSON COMMAND printed (its
last line, else its whole output), or with ``--pytest`` the outcome of every test, read from the JUnit XML that
pytest writes (COMMAND is then pytest's command line; ``--junitxml`` is added). NaN and infinite figures are kept
as null. A command that printed no JSON keeps the end of its output in ``stdout_tail``. It exits with COMMAND's
status (124 when stopped at the limit).

The second form writes ``OUT_DIR/gpu_check.json``: each named step's exit status, time and verdict from its record
(a step without a record was not run), and the check's verdict: "pass" when every step exited 0 with a "pass"
verdict or none, else "short".

Standard library only, beside ``benchmarks/machine.py``: it runs before anything else is known to import.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from machine import machine, utc_now  # noqa: E402

SUMMARY = "gpu_check"
TAIL_CHARS = 4000


def shown(arg: str) -> str:
    """An argument as a record shows it: a path inside the repository relative to it, no folder of one machine."""
    if os.path.isabs(arg):
        try:
            rel = os.path.relpath(arg, ROOT)
        except ValueError:
            rel = ".."
        return os.path.basename(arg) if rel.startswith("..") else rel
    return arg


def last_json(stdout: str):
    """The JSON a command printed: its last non-empty line, else the whole output; None when neither parses."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    for text in (lines[-1] if lines else "", stdout):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    return None


def strict(value):
    """``value`` with every NaN or infinite float as None: the records are strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strict(v) for v in value]
    return value


def junit_outcomes(path: Path) -> dict:
    """Every test case in pytest's JUnit XML: its id, outcome, seconds and message; counts and a verdict."""
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = case.get("name", "")
        # classname "tests.test_gpu" (a module) or "tests.test_gpu.TestX" (a class): the file is its longest prefix
        # that is a file of the repository
        cut = next(
            (i for i in range(len(module), 0, -1) if (ROOT / Path(*module[:i])).with_suffix(".py").is_file()),
            len(module),
        )
        test_id = "/".join(module[:cut]) + ".py::" + "::".join([*module[cut:], name])
        outcome, message = "passed", None
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                message = (found.get("message") or found.text or "").strip()[:TAIL_CHARS]
                break
        tests.append({"id": test_id, "outcome": outcome, "time_s": float(case.get("time") or 0), "message": message})
    counts = {k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "error", "skipped")}
    clean = counts["passed"] > 0 and counts["passed"] == len(tests)  # on a GPU nothing may fail, err or skip
    return {"benchmark": "gpu_tests", **counts, "tests": tests, "verdict": "pass" if clean else "short"}


def run_step(out_dir: Path, name: str, command: list[str], timeout_s: float, pytest: bool) -> int:
    junit = None
    if pytest:
        fd, junit_name = tempfile.mkstemp(suffix=".xml")
        os.close(fd)
        junit = Path(junit_name)
        command = [*command, f"--junitxml={junit}"]
    device = os.environ.get("GPUCOST_GPU_NAME") or None
    started, load_start, t0 = utc_now(), os.getloadavg(), time.monotonic()
    timed_out, stdout = False, ""
    try:
        # pytest's report goes to the console; a benchmark's JSON is kept
        proc = subprocess.run(
            command, cwd=ROOT, stdout=None if pytest else subprocess.PIPE, text=True, timeout=timeout_s
        )
        status, stdout = proc.returncode, proc.stdout or ""
    except subprocess.TimeoutExpired as err:
        timed_out, status = True, 124
        stdout = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        print(f"gpu_record: {name} stopped at its limit of {timeout_s:.0f} s", file=sys.stderr)
    wall_s = time.monotonic() - t0
    if pytest:
        try:
            result = junit_outcomes(junit) if junit.stat().st_size else None
        except (OSError, ET.ParseError):
            result = None
        junit.unlink(missing_ok=True)
    else:
        result = last_json(stdout)
    info = machine()
    info["gpu"] = device or info["gpu"]
    record = {
        "benchmark": name,
        "device": device or info["gpu"],
        "command": shlex.join(shown(c) for c in command if not (junit and c.startswith("--junitxml="))),
        "started": started,
        "finished": utc_now(),
        "wall_s": round(wall_s, 1),
        "exit_status": status,
        "timed_out": timed_out,
        "load": {
            "load_average_1_5_15_start": [round(x, 2) for x in load_start],
            "load_average_1_5_15_end": [round(x, 2) for x in os.getloadavg()],
        },
        "machine": {k: info[k] for k in ("cpu_model", "cpu_cores", "gpu")},
        "versions": info["versions"],
        "result": strict(result),
    }
    if result is None and stdout:
        record["stdout_tail"] = stdout[-TAIL_CHARS:]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return status


def summary(out_dir: Path, names: list[str]) -> dict:
    steps, device = [], None
    for name in names:
        path = out_dir / f"{name}.json"
        if not path.exists():
            steps.append({"step": name, "exit_status": None, "wall_s": None, "verdict": "not run"})
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        device = device or record.get("device")
        result = record.get("result") if isinstance(record.get("result"), dict) else {}
        if record["timed_out"]:
            verdict = "stopped at its limit"
        elif record["exit_status"] != 0:
            verdict = f"failed (exit status {record['exit_status']})"
        else:
            verdict = result.get("verdict", "ran") if record.get("result") is not None else "printed no JSON"
        steps.append(
            {"step": name, "exit_status": record["exit_status"], "wall_s": record["wall_s"], "verdict": verdict}
        )
    ok = all(s["exit_status"] == 0 and s["verdict"] in ("pass", "ran") for s in steps)
    return {
        "benchmark": SUMMARY,
        "device": device,
        "finished": utc_now(),
        "steps": steps,
        "verdict": "pass" if ok and steps else "short",
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("names", nargs="+", help="the step's name (with --summary: every step's)")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--pytest", action="store_true", help="COMMAND is pytest: record each test's outcome")
    parser.add_argument("--summary", action="store_true", help=f"write {SUMMARY}.json from the steps' records")
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.summary:
        result = summary(args.out_dir, args.names)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / f"{SUMMARY}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        for s in result["steps"]:
            print(f"  {s['step']:<24} {s['verdict']}" + (f" ({s['wall_s']} s)" if s["wall_s"] is not None else ""))
        return 0 if result["verdict"] == "pass" else 1
    if len(args.names) != 1 or not command:
        parser.error("a step needs exactly one NAME and a COMMAND after --")
    return run_step(args.out_dir, args.names[0], command, args.timeout_s, args.pytest)


if __name__ == "__main__":
    sys.exit(main())
