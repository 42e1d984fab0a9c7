"""Tests of gpucost_lab.grading.run: one submission run in the sandbox, against limits set by construction. An answer
over the message cap is dropped as it arrives, not after the grader has held it; and where the sandboxed kernel
cannot import the package that grades it, grading stops with one line instead of giving every learner 0. (What the
sandbox gets of a submission's files: tests/grading/test_run_submission_files.py.)
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from gpucost_lab.grading import kernel_command
from gpucost_lab.grading.run import MAX_MESSAGE_BYTES, run_submission
from gpucost_lab.grading.sandbox import Limits, SandboxUnavailable
from grading.test_attacks import RIGHT, SOURCE_ROOT, notebook

from .helpers import needs_sandbox

pytestmark = pytest.mark.grading


def _peak_rss_mb(path: Path) -> tuple[float, dict]:
    code = (
        "import json, resource, sys\n"
        "from gpucost_lab import grading\n"
        f"r = grading.grade({str(path)!r}, assignment='mini_lab', source_root={str(SOURCE_ROOT)!r}, timeout_s=5)\n"
        "print(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, r.score]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    peak, score = json.loads(done.stdout.strip().splitlines()[-1])
    return peak, score


@needs_sandbox
def test_an_answer_over_the_cap_is_dropped_as_it_arrives(tmp_path):
    huge = 300_000_000
    assert huge > MAX_MESSAGE_BYTES
    forge = f"import gpucost_lab.grading.answers as _answers\n_answers.dumps = lambda namespace, name: 'x' * {huge}\n"
    honest_peak, honest_score = _peak_rss_mb(notebook(tmp_path / "honest", RIGHT))
    hostile_peak, hostile_score = _peak_rss_mb(notebook(tmp_path / "hostile", RIGHT, before=forge))
    assert honest_score == 10 and hostile_score == 0
    # the grader never held the 300 MB reply (nor its repr): its peak is what an honest grading takes, give or take
    assert hostile_peak - honest_peak < 100, (honest_peak, hostile_peak)


@needs_sandbox
def test_a_kernel_that_cannot_import_the_grader_stops_grading_with_one_line(tmp_path, monkeypatch):
    package = str(kernel_command.package_root() / "gpucost_lab")
    binds = kernel_command.python_binds

    def without_the_package():
        args = binds()
        at = args.index(package)
        return args[: at - 1] + args[at + 2 :]

    monkeypatch.setattr(kernel_command, "python_binds", without_the_package)
    nb = new_notebook(cells=[new_code_cell("x = 1")])
    (tmp_path / "sub").mkdir()
    with pytest.raises(SandboxUnavailable, match="could not load the package that grades it"):
        run_submission(nb, tmp_path / "sub", None, Limits(), 30, 300, False, logging.getLogger("test"))
