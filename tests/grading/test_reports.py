"""Tests of gpucost_lab.grading.reports: every key of a grade's and a self-check's report, against the keys the README's
section "For instructors" documents.
"""

import re

from gpucost_lab import grading

from .helpers import ROOT


def test_readme_documents_the_grading_keys():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## For instructors", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)`", section)) | {
        k for group in re.findall(r"`\{([a-z_, ]+)\}`", section) for k in group.replace(" ", "").split(",")
    }
    grade_keys = set(grading.GradeReport(1, 2, 50, False).to_dict()) | {"cell", "points", "max_points", "message"}
    check = grading.SelfCheckReport("x.ipynb", 1, 2, 0, 2, 50, 1.6, False)
    assert grade_keys - documented == set()
    assert set(check.to_dict()) - documented == set()
    assert "make labs" in section and "hidden tests may still fail" in section
