"""Tests of gpucost_lab.grading.course against nbgrader's own failure to generate the fixture lab
(tests/fixtures/grading/solutions/mini_lab with two cells of one grade id): ``GradingError``, no grade given; one
line and exit status 2 on the command line too.
"""

import shutil

import nbformat
import pytest

from gpucost_lab import grading

from .helpers import ASSIGNMENT, SOURCE_NB, SOURCE_ROOT, cli

pytestmark = pytest.mark.grading


def test_a_source_nbgrader_cannot_generate_is_a_grading_error(tmp_path, capsys):
    source_root = tmp_path / "solutions"
    shutil.copytree(SOURCE_ROOT, source_root)
    nb = nbformat.read(source_root / ASSIGNMENT / "mini_lab.ipynb", as_version=4)
    test_cell = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "q1_test")
    twin = nbformat.v4.new_code_cell(test_cell.source, metadata=dict(test_cell.metadata))
    nb.cells.append(twin)  # two cells with one grade id: nbgrader refuses to generate the assignment
    nbformat.write(nb, source_root / ASSIGNMENT / "mini_lab.ipynb")
    submission = shutil.copy(SOURCE_NB, tmp_path / "submission.ipynb")
    with pytest.raises(grading.GradingError, match="nbgrader could not generate assignment 'mini_lab'"):
        grading.grade(submission, assignment=ASSIGNMENT, source_root=source_root)
    code, out = cli(capsys, "grade", str(submission), "--assignment", ASSIGNMENT, "--source-root", str(source_root))
    assert code == 2 and len(out.err.strip().splitlines()) == 1 and "could not generate" in out.err
