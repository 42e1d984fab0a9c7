"""The heavy bad inputs of the CLI, at full size: each refused in one line (exit 2) in bounded time and memory, and
the largest valid inputs answered within what the README states.

Each case runs ``python -m gpucost_lab ...`` in a child process and records its exit status, its stderr's lines, its
wall time and its peak RSS (``os.wait4``, the child's own):

- ``analyze`` of the traces that exhausted memory or hung before the limits of
  ``gpucost_lab/timeline/limits.py``: 256 MB
  of whitespace between two events, an event name of 150 MB, gzip "bombs" (10 GB of one string, of whitespace
  between events, of a number outside the events, each a file of about 10 MB), and a FIFO;
- ``analyze`` at the event limit: a synthetic CUDA trace of 9,996,207 ``traceEvents`` entries (2.0 GB of JSON,
  ``timeline_scale.write_trace``), which must be answered (exit 0); skipped with ``--quick``;
- ``simulate`` at its budget (``--steps 6849``: 2,000,000 trace events) and just past it (``--steps 6850``, refused
  before any work), and ``--steps 10000 --eval-every 1 --eval-batches 10000`` (refused).

Targets: every refusal is one line with exit 2 within 30 s and 1 GB of peak RSS (the imports alone take about 300 MB);
the 10M-event analysis answers within 3 GB; the simulator's largest run writes its trace within 2 GB and 60 s. Prints
one JSON line. The files are written to a temporary folder (about 2.5 GB with the 10M-event trace) and removed.

    .venv/bin/python benchmarks/bad_input_limits.py [--quick]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

HERE = Path(__file__).resolve().parent
EVENT = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7}}'
MiB = 2**20


def _members(path: Path, head: bytes, middle: bytes, copies: int, tail: bytes) -> None:
    """A gzip file of several members: ``head``, ``copies`` x ``middle`` (compressed once), ``tail``."""
    one = gzip.compress(middle, compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(gzip.compress(head, mtime=0))
        for _ in range(copies):
            f.write(one)
        f.write(gzip.compress(tail, mtime=0))


def _plain(path: Path, head: bytes, middle: bytes, copies: int, tail: bytes) -> None:
    with open(path, "wb") as f:
        f.write(head)
        for _ in range(copies):
            f.write(middle)
        f.write(tail)


def run_cli(*argv: str, timeout: float = 600, folder: str = "") -> dict:
    """Exit status, stderr's lines (the first), wall time and the child's peak RSS of ``gpucost-lab ARGV``; the
    temporary ``folder`` is recorded as ``TMP``, so that the result names no folder of this machine."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucost_lab", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    reader.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = b"".join(err).decode(errors="replace")

    def scrub(value: str) -> str:
        return value.replace(folder, "TMP") if folder else value

    return {
        "argv": [scrub(a) if len(a) < 80 else scrub(a)[:77] + "..." for a in argv],
        "exit": proc.returncode,
        "stderr_lines": text.count("\n"),
        "first_line": scrub((text.splitlines() or [""])[0])[:240],
        "seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out the 10M-event trace (2 GB on disk)")
    args = parser.parse_args()
    started = Run.start()
    refusals, answers = [], []
    with tempfile.TemporaryDirectory(prefix="gpucost-bad-input-") as tmp:
        tmp = Path(tmp)
        traces = {
            "whitespace_256mb.json": lambda p: _plain(
                p, b'{"traceEvents":[' + EVENT + b",", b" " * MiB, 256, EVENT + b"]}"
            ),
            "name_150mb.json": lambda p: _plain(
                p, b'{"traceEvents":[' + EVENT + b',{"ph":"X","name":"', b"a" * MiB, 150, b'"}]}'
            ),
            "string_bomb_10gb.json.gz": lambda p: _members(
                p, b'{"traceEvents":[' + EVENT + b',{"ph":"X","name":"', b"a" * (16 * MiB), 640, b'"}]}'
            ),
            "whitespace_bomb_10gb.json.gz": lambda p: _members(
                p, b'{"traceEvents":[' + EVENT + b",", b" " * (16 * MiB), 640, EVENT + b"]}"
            ),
            "number_bomb_10gb.json.gz": lambda p: _members(
                p, b'{"n":1', b"1" * (16 * MiB), 640, b',"traceEvents":[' + EVENT + b"]}"
            ),
        }
        for name, write in traces.items():
            path = tmp / name
            write(path)
            refusals.append(
                {
                    "case": name,
                    "file_mb": round(path.stat().st_size / MiB, 1),
                    **run_cli("analyze", str(path), folder=str(tmp)),
                }
            )
            path.unlink()
        fifo = tmp / "fifo.json"
        os.mkfifo(fifo)
        refusals.append({"case": "fifo", **run_cli("analyze", str(fifo), timeout=60, folder=str(tmp))})
        out = tmp / "sim.json.gz"
        for steps, extra in (("6850", ()), ("10000", ("--eval-every", "1", "--eval-batches", "10000"))):
            refusals.append(
                {
                    "case": f"simulate --steps {steps}",
                    **run_cli("simulate", "--steps", steps, *extra, "-o", str(out), folder=str(tmp)),
                }
            )
        answers.append(
            {
                "case": "simulate --steps 6849 (2,000,000 events)",
                **run_cli("simulate", "--steps", "6849", "-o", str(out), folder=str(tmp)),
            }
        )
        if not args.quick:
            sys.path.insert(0, str(HERE))
            from timeline_scale import write_trace

            big = tmp / "events_10m.json"
            write_trace(str(big), 7_510_000, False)  # 9,996,207 traceEvents entries, flows included
            answers.append(
                {
                    "case": "analyze, 10M events",
                    "file_mb": round(big.stat().st_size / MiB, 1),
                    **run_cli("analyze", str(big), "--json", folder=str(tmp)),
                }
            )
    refused_ok = all(
        r["exit"] == 2 and r["stderr_lines"] == 1 and r["seconds"] < 30 and r["peak_rss_mb"] < 1024 for r in refusals
    )
    sim = answers[0]
    targets = {
        "refusals_one_line_within_30s_and_1gb": refused_ok,
        "simulate_budget_within_60s_and_2gb": sim["exit"] == 0 and sim["seconds"] < 60 and sim["peak_rss_mb"] < 2048,
    }
    if not args.quick:
        big = answers[1]
        targets["analyze_10m_events_within_3gb"] = big["exit"] == 0 and big["peak_rss_mb"] < 3072
    print(
        json.dumps(
            {
                "benchmark": "bad_input_limits",
                "refusals": refusals,
                "answers": answers,
                "targets_met": targets,
                "verdict": "pass" if all(targets.values()) else "short",
                "run": started.finish(),
            }
        )
    )


if __name__ == "__main__":
    main()
