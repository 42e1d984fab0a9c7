"""Bounded input and no silent zeros (issue 25): an answer over the cap is refused as it arrives, not after the grader
has held it; a notebook too large, nested too deep or in nbformat 3 is refused by name with exit 2 at every entry;
and where the sandboxed kernel cannot import the package that grades it, grading stops with one line instead of
giving every learner 0.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from gpucost_lab.grading import kernel_command, notebooks
from gpucost_lab.grading.gradebook_cells import GradebookCells
from gpucost_lab.grading.run import MAX_MESSAGE_BYTES, run_submission
from gpucost_lab.grading.sandbox import Limits, SandboxUnavailable, unavailable_reason
from grading.test_attacks import RIGHT, SOURCE_ROOT, notebook

ROOT = Path(__file__).resolve().parents[2]
sandboxed = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")


def _grade_cli(path: Path, *extra: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpucost_lab", "grade", str(path), "--assignment", "mini_lab"]
        + ["--source-root", str(SOURCE_ROOT), *extra],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _refused(done: subprocess.CompletedProcess, *words: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, (done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr and all(w in lines[0] for w in words), lines[0]


def _nested(depth: int) -> str:
    return '{"cells": [], "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "nbformat": 4, "nbformat_minor": 5}'


@pytest.mark.parametrize(
    "text, words",
    [
        (_nested(5000), ("nested over", "64 levels")),
        (_nested(100), ("nested over", "64 levels")),
        (
            json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}),
            ("nbformat 3",),
        ),
        (
            json.dumps(
                {
                    "cells": [],
                    "metadata": {"pad": "x" * (notebooks.MAX_NOTEBOOK_BYTES + 1)},
                    "nbformat": 4,
                    "nbformat_minor": 5,
                }
            ),
            (f"{notebooks.MAX_NOTEBOOK_BYTES:,} bytes",),
        ),
    ],
    ids=["5000-deep", "100-deep", "nbformat-3", "over-16-MiB"],
)
def test_a_notebook_past_a_bound_is_one_line_and_exit_2(tmp_path, text, words):
    path = tmp_path / "mini_lab.ipynb"
    path.write_text(text)
    _refused(_grade_cli(path), str(path), *words)


def test_the_plain_autograde_refuses_an_nbformat_3_submission_too(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {"name": ""}}
    (tmp_path / "lab.ipynb").write_text(json.dumps(v3))
    nb = nbformat.read(tmp_path / "lab.ipynb", as_version=4)  # as nbgrader reads it: upgraded, noted
    resources = {"nbgrader": {"db_url": "sqlite://", "notebook": "lab", "assignment": "a"}}
    resources["metadata"] = {"path": str(tmp_path)}
    with pytest.raises(ValueError, match="nbformat 3 notebook"):
        GradebookCells().preprocess(nb, resources)


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


@sandboxed
@pytest.mark.grading
def test_an_answer_over_the_cap_is_dropped_as_it_arrives(tmp_path):
    huge = 300_000_000
    assert huge > MAX_MESSAGE_BYTES
    forge = f"import gpucost_lab.grading.answers as _answers\n_answers.dumps = lambda namespace, name: 'x' * {huge}\n"
    honest_peak, honest_score = _peak_rss_mb(notebook(tmp_path / "honest", RIGHT))
    hostile_peak, hostile_score = _peak_rss_mb(notebook(tmp_path / "hostile", RIGHT, before=forge))
    assert honest_score == 10 and hostile_score == 0
    # the grader never held the 300 MB reply (nor its repr): its peak is what an honest grading takes, give or take
    assert hostile_peak - honest_peak < 100, (honest_peak, hostile_peak)


@sandboxed
@pytest.mark.grading
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


@sandboxed
@pytest.mark.grading
def test_a_course_folder_with_its_own_package_is_graded_with_that_package(tmp_path):
    """The reproduction: a grader started in a folder that holds its own gpucost_lab (python -m puts it first on the
    path) while the environment's editable install points elsewhere. The kernel imports what the grader imports."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "gpucost_lab", course / "gpucost_lab", ignore=shutil.ignore_patterns("__pycache__"))
    path = notebook(tmp_path / "sub", RIGHT)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    done = _grade_cli(path, "--json", cwd=course, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["score"] == 10
