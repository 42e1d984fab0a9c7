"""Executing the whole course end to end: every chapter and both lab solutions, each in its own kernel, timed.

- Chapters (``chapters/*.ipynb``) run as committed: their graded check cells are tagged ``raises-exception`` and
  fail by design on the unanswered checkpoints; nbclient allows an error in those cells only (``allow_errors``
  is off, so an error in any other cell stops the run and is reported).
- Lab solutions (``solutions/*/*.ipynb``) run with the ``### BEGIN/END SOLUTION`` and ``### BEGIN/END HIDDEN
  TESTS`` marker lines removed, so every answer and every test (hidden ones included) runs; no error is allowed.
  ``GPUCOST_LAB_SELF_CHECK=1`` is set, as when a lab is graded, so the lab's own self-check cell does nothing.

Each notebook runs in a scratch working directory (as tests/course/test_chapters.py does) with a fresh kernel;
the kernel
start (launch until it answers ``kernel_info``) is timed apart from executing the cells. Targets: each notebook
under 20 s (start + execution), the serving chapter (``SERVING``: it puts real servers under a minute of load)
under 60 s, and the whole course under 180 s, on the machine it runs on. Prints one JSON line; exits 0 even when
short.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import nbformat
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
SERVING = ("08_profile_the_service.ipynb",)  # a minute of LoadGen runs against real servers, not 20 s
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def _strip_markers(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = "\n".join(ln for ln in cell.source.splitlines() if ln.strip() not in MARKERS)
    return nb


def run_notebook(path: Path, solution: bool, cell_timeout_s: int) -> dict:
    nb = nbformat.read(path, as_version=4)
    if solution:
        _strip_markers(nb)
    row = {
        "notebook": str(path.relative_to(ROOT)),
        "kernel_start_s": None,
        "execute_s": None,
        "cells": 0,
        "expected_errors": 0,
        "error": None,
    }
    with tempfile.TemporaryDirectory(prefix="gpucost-course-") as workdir:
        client = NotebookClient(
            nb,
            timeout=cell_timeout_s,
            kernel_name="python3",
            allow_errors=False,
            resources={"metadata": {"path": workdir}},
        )
        t0 = time.perf_counter()
        try:
            with client.setup_kernel():
                t1 = time.perf_counter()
                row["kernel_start_s"] = round(t1 - t0, 3)
                try:
                    for index, cell in enumerate(nb.cells):
                        client.execute_cell(cell, index)
                        if cell.cell_type == "code":
                            row["cells"] += 1
                            if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                                row["expected_errors"] += 1  # only a raises-exception cell gets here with one
                except CellExecutionError as err:
                    row["error"] = f"cell {index}: " + str(err).strip().splitlines()[-1][:300]
                row["execute_s"] = round(time.perf_counter() - t1, 3)
        except Exception as err:  # noqa: BLE001 -- a kernel that does not start is reported, not raised
            row["error"] = f"{type(err).__name__}: {err}"[:300]
    return row


def _limit(notebook: str, args: argparse.Namespace) -> float:
    """The seconds ``notebook`` may take: the serving chapter's minute, else the per-notebook limit."""
    return args.serving_s if Path(notebook).name in SERVING else args.per_notebook_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-notebook-s", type=float, default=20.0)
    parser.add_argument("--serving-s", type=float, default=60.0)
    parser.add_argument("--course-s", type=float, default=180.0)
    parser.add_argument("--cell-timeout", type=int, default=120)
    parser.add_argument("--only", default=None, help="run only notebooks whose path contains this (smoke tests)")
    args = parser.parse_args()
    run = Run.start("nbclient", "nbconvert", "ipykernel")
    os.environ["GPUCOST_LAB_SELF_CHECK"] = "1"  # kernels inherit it: the lab's self-check cell does nothing

    notebooks = [(p, False) for p in sorted((ROOT / "chapters").glob("*.ipynb"))]
    notebooks += [(p, True) for p in sorted((ROOT / "solutions").glob("*/*.ipynb"))]
    if args.only:
        notebooks = [(p, s) for p, s in notebooks if args.only in str(p)]
    t0 = time.perf_counter()
    rows = [run_notebook(p, s, args.cell_timeout) for p, s in notebooks]
    course_s = time.perf_counter() - t0

    for r in rows:
        r["total_s"] = round((r["kernel_start_s"] or 0) + (r["execute_s"] or 0), 3)
    over = [r["notebook"] for r in rows if r["total_s"] >= _limit(r["notebook"], args)]
    failed = [r["notebook"] for r in rows if r["error"]]
    kernel = [r["kernel_start_s"] for r in rows if r["kernel_start_s"] is not None]
    result = {
        "benchmark": "course_execution",
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "run": run.finish(),
        "notebooks": rows,
        "course_s": round(course_s, 1),
        "kernel_start_s_total": round(sum(kernel), 2),
        "execute_s_total": round(sum(r["execute_s"] or 0 for r in rows), 2),
        "slowest": max(rows, key=lambda r: r["total_s"])["notebook"] if rows else None,
        "failed": failed,
        "over_per_notebook_target": over,
        "targets": {
            "per_notebook_s": args.per_notebook_s,
            "serving_s": {"notebooks": list(SERVING), "s": args.serving_s},
            "course_s": args.course_s,
            "errors": "none outside raises-exception cells (chapters); none at all (solutions)",
        },
        "verdict": "pass" if not failed and not over and course_s < args.course_s else "short",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
