"""The page's anchors are the grader's (issue 40): a learner's headings named after every grade id, in Markdown (whose
heading nbconvert gives the id of its text) and in HTML (``<h4 id=...>``), placed before everything the grader shows,
capture neither the feedback page's contents links nor the formgrader's ``$("#" + grade_id)`` score boxes.

Headless Chromium (as in tests/browser/test_widgets_in_jupyterlab.py) follows each contents link of the feedback page
and reads which element the fragment indicates (``:target``), and looks each grade id up in the formgrader's view as
jQuery's ``$("#id")`` does (``getElementById``, the first element of that id in the document). The fixture lab
(tests/fixtures/grading/solutions/mini_lab) has five tests, q1_test to q5_test.
"""

from __future__ import annotations

import copy

import nbformat
import pytest
from browser.test_widgets_in_jupyterlab import chromium_context
from nbformat.v4 import new_markdown_cell

from gpucost_lab import grading
from grading.test_attacks import RIGHT, notebook

from .helpers import SOURCE_ROOT, needs_sandbox

pytestmark = [pytest.mark.grading, pytest.mark.browser, needs_sandbox]
TESTS = [f"q{i}_test" for i in range(1, 6)]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The right answers, and before the lab's first cell a Markdown heading and an HTML heading per grade id."""
    folder = tmp_path_factory.mktemp("anchors")
    path = notebook(folder / "submission", RIGHT)
    nb = nbformat.read(path, as_version=4)
    forged = [new_markdown_cell(f"#### {gid}\n\nScore 3.0 / 3.0 (Top)") for gid in TESTS]
    forged += [new_markdown_cell(f'<h4 id="{gid}">{gid}: Score 3.0 / 3.0</h4>') for gid in TESTS]
    nb.cells[:0] = forged
    nbformat.write(nb, path)
    report = grading.grade(
        path, assignment="mini_lab", source_root=SOURCE_ROOT, course_dir=folder / "course", feedback_dir=folder
    )
    assert report.score == 10
    return report.feedback_html, folder / "course" / "autograded" / "student" / "mini_lab" / "mini_lab.ipynb"


def _formgrader_view(autograded, course) -> str:
    """The formgrader's page for ``autograded``, as its SubmissionHandler renders it (the course's exporter)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    from gpucost_lab.grading.course import course_config

    resources = {"assignment_id": "mini_lab", "notebook_id": "mini_lab", "submission_id": "s1", "index": 0}
    resources |= {"total": 1, "base_url": "", "student": "student", "last_name": None, "first_name": None}
    resources["notebook_path"] = "/tree/autograded/student/mini_lab/mini_lab.ipynb"
    config = course_config(course, 30)
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    return HTMLExporter(config=config).from_filename(str(autograded), resources=copy.deepcopy(resources))[0]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


def test_each_contents_link_of_the_feedback_page_reaches_the_grader_s_anchor(browser, graded):
    page = browser.new_page()
    try:
        page.goto(f"file://{graded[0]}", wait_until="load", timeout=60_000)
        for gid in TESTS:
            page.click(f'#toc a[href="#{gid}"]', timeout=5_000)
            target = page.evaluate("(() => { const t = document.querySelector(':target'); "
                                   "return t && [t.tagName, t.getAttribute('name'), t.id]; })()")  # fmt: skip
            assert target == ["A", gid, ""], (gid, target)  # nbgrader's <a name=...>, not a learner's heading
        # the learner's headings are there, under ids of their own
        ids = page.evaluate("[...document.querySelectorAll('h4[id]')].map(h => h.id)")
        assert sorted(set(ids) & {f"learner-{gid}" for gid in TESTS}) == [f"learner-{gid}" for gid in TESTS]
    finally:
        page.close()


def test_each_score_box_of_the_formgrader_is_found_by_its_grade_id(browser, graded, tmp_path):
    autograded = graded[1]
    view = tmp_path / "formgrade.html"
    view.write_text(_formgrader_view(autograded, autograded.parents[3]), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(f"file://{view}", wait_until="domcontentloaded", timeout=60_000)
        for gid in TESTS:
            found = page.evaluate(f"(() => {{ const e = document.getElementById({gid!r}); "
                                  "return e && [e.tagName, e.className]; })()")  # fmt: skip
            assert found == ["INPUT", "score tabbable"], (gid, found)
    finally:
        page.close()
