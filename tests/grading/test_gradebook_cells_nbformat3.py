"""Tests of gpucost_lab.grading.gradebook_cells without a grade: the plain autograde's preprocessor refuses an nbformat
3 submission by name, as ``gpucost-lab grade`` does. (The gradebook's locked cells graded:
tests/grading/test_gradebook_cells.py.)
"""

from __future__ import annotations

import json

import nbformat
import pytest

from gpucost_lab.grading.gradebook_cells import GradebookCells


def test_the_plain_autograde_refuses_an_nbformat_3_submission_too(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {"name": ""}}
    (tmp_path / "lab.ipynb").write_text(json.dumps(v3))
    nb = nbformat.read(tmp_path / "lab.ipynb", as_version=4)  # as nbgrader reads it: upgraded, noted
    resources = {"nbgrader": {"db_url": "sqlite://", "notebook": "lab", "assignment": "a"}}
    resources["metadata"] = {"path": str(tmp_path)}
    with pytest.raises(ValueError, match="nbformat 3 notebook"):
        GradebookCells().preprocess(nb, resources)
