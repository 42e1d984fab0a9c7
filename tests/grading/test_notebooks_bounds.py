"""Tests of gpucost_lab.grading.notebooks: bounded input (issue 25), against bounds set by construction: ``gpucost-lab
grade`` in a fresh process refuses a notebook too large, nested too deep or in nbformat 3 by name, in one line with
exit status 2.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from gpucost_lab.grading import notebooks

from .helpers import grade_cli

pytestmark = pytest.mark.slow


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
    _refused(grade_cli(path), str(path), *words)
