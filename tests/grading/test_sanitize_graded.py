"""Learner HTML never runs in a real grade (issue 25; the sanitizer itself: tests/grading/test_sanitize.py). The lab
profile_training_loop with every answer right (16 of 16 points, tests/grading/test_classes.py), a hostile code cell
and a hostile markdown cell appended (tests/grading/helpers.py ``hostile_submission``): ``gpucost-lab grade`` (the
feedback page holds none of the vectors and the score is 16), the autograded notebook on disk sanitized, and the same
submission graded with the sanitizer off, as an autograded notebook written before it existed would be: its
feedback and formgrader pages run the vectors, and generated again with the course's configuration they run none.
tests/browser/test_feedback_xss.py opens both feedback pages in Chromium."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from gpucost_lab.grading.sanitize import render_markdown

from .helpers import (
    HTML_VECTORS,
    MARKDOWN_VECTORS,
    PARAGRAPH,
    PNG,
    active,
    cli_grade,
    grade_unsanitized,
    hostile_submission,
    needs_sandbox,
)

pytestmark = pytest.mark.grading

LAB = "profile_training_loop"
MAX_SCORE = 16.0


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    code, report = cli_grade(hostile_submission(folder / "submission"), folder / "feedback")
    return code, report


@pytest.fixture(scope="module")
def unsanitized(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unsanitized")
    return grade_unsanitized(hostile_submission(folder / "submission"), folder)


def _autograded(course) -> Path:
    return course.path / "autograded" / "student" / LAB / f"{LAB}.ipynb"


@needs_sandbox
def test_a_hostile_submission_scores_full_marks_and_its_feedback_runs_nothing(graded):
    code, report = graded
    assert (code, report["score"], report["max_score"], report["passed"], report["failed"]) == (
        0,
        MAX_SCORE,
        MAX_SCORE,
        True,
        [],
    )
    page = Path(report["feedback_html"]).read_text(encoding="utf-8")
    assert active(page) == []
    # what the lab shows still shows: the table, the plot, the paragraph, printed text, the markdown's text
    assert '<table border="1" class="dataframe">' in page and "<td>H100</td>" in page
    assert f'src="data:image/png;base64,{PNG}' in page
    assert PARAGRAPH in page and "KEEP-STDOUT" in page and "Markdown answer KEEP-MD." in page
    assert "Score: 16.0 / 16.0" in page


@needs_sandbox
def test_without_the_sanitizer_the_same_submission_runs_every_vector(unsanitized):
    report, course = unsanitized
    assert report.score == MAX_SCORE  # the same grade: sanitizing changes no score
    page = Path(report.feedback_html).read_text(encoding="utf-8")
    found = " ".join(active(page))
    for name in [*HTML_VECTORS, *MARKDOWN_VECTORS, "application-javascript"]:
        assert f"'{name}'" in found, name


@needs_sandbox
def test_the_autograded_notebook_on_disk_is_sanitized(tmp_path):
    """``grading.grade`` (what ``gpucost-lab grade`` runs) with its course kept: the notebook the formgrader reads."""
    from gpucost_lab import grading

    path = hostile_submission(tmp_path / "submission")
    report = grading.grade(path, course_dir=tmp_path / "course", feedback_dir=tmp_path / "feedback")
    assert report.score == MAX_SCORE
    nb = nbformat.read(tmp_path / "course" / "autograded" / "student" / LAB / f"{LAB}.ipynb", as_version=4)
    code_cell, markdown_cell = nb.cells[-2:]
    assert [sorted(o.get("data", {"(stream)": 1})) for o in code_cell.outputs] == [
        ["text/html", "text/plain"],
        ["text/plain"],  # application/javascript removed
        ["text/plain"],  # image/svg+xml removed
        ["text/html", "text/plain"],  # text/markdown, rendered and sanitized as HTML
        ["text/html", "text/plain"],
        ["image/png", "text/plain"],
        ["(stream)"],
    ]
    assert code_cell.outputs[-1].text == "KEEP-STDOUT\n"
    assert all(active(o.data["text/html"]) == [] for o in code_cell.outputs if "text/html" in o.get("data", {}))
    assert markdown_cell.source.startswith('<div class="gpucost-sanitized">')
    assert "Markdown answer KEEP-MD." in markdown_cell.source
    assert active(render_markdown(markdown_cell.source)) == []


@needs_sandbox
def test_feedback_and_formgrader_of_a_notebook_autograded_before_are_sanitized(unsanitized):
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.server_extensions.formgrader import handlers

    from gpucost_lab.grading.course import course_config, run_converter

    _, course = unsanitized
    autograded = _autograded(course)
    assert "application/javascript" in autograded.read_text(encoding="utf-8")  # written without the sanitizer

    config = course_config(course.path, 30)  # the course's configuration, as nbgrader_config.py gives it
    assert run_converter(config, GenerateFeedback, assignment_id=LAB, student_id="student") is None
    page = (course.path / "feedback" / "student" / LAB / f"{LAB}.html").read_text(encoding="utf-8")
    assert active(page) == [] and "Score: 16.0 / 16.0" in page

    # the formgrader's view: its exporter (HTMLExporter with the formgrade template), as SubmissionHandler renders it
    resources = {
        "assignment_id": LAB,
        "notebook_id": LAB,
        "submission_id": "s1",
        "index": 0,
        "total": 1,
        "base_url": "",
        "student": "student",
        "last_name": None,
        "first_name": None,
        "notebook_path": f"/tree/autograded/student/{LAB}/{LAB}.ipynb",
    }
    views = {}
    for which, preprocessors in (("course", None), ("control", [])):
        config = course_config(course.path, 30)
        config.HTMLExporter.template_name = "formgrade"
        config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
        if preprocessors is not None:
            config.HTMLExporter.preprocessors = preprocessors
        views[which], _ = HTMLExporter(config=config).from_filename(str(autograded), resources=copy.deepcopy(resources))
    assert "formgrade.js" in views["course"]  # the formgrader's page, with its scripts
    assert active(views["course"]) == []
    assert "'application-javascript'" in " ".join(active(views["control"]))
