"""Learner HTML never runs (issue 25), in a real browser: a hostile submission's feedback page opened from disk in
headless Chromium runs none of its vectors, while the same submission's page built without the sanitizer runs them.

The submission is tests/grading/test_sanitize_graded.py's (``hostile_submission``, tests/grading/helpers.py): the lab
profile_training_loop with every answer right, then a code cell that displays each vector (``IPython.display``) and a
markdown cell holding more. Each vector, once run, pushes its name onto ``window.__pwned``. The sanitized page comes
from ``gpucost-lab grade``; the control page from the same grade with the sanitizer off (what every feedback page was
before it). In both, the test clicks each link and button a vector left (a ``javascript:`` link runs only when clicked),
then reads ``window.__pwned``. The mutation-XSS vectors (HTML that a sanitizer's parser and the browser's may read
apart) are loaded one page each, as the sanitizer returns them, so that it is Chromium's own parse that is checked.

Chromium and Playwright as in test_widgets_in_jupyterlab.py; the grading needs the sandbox (bubblewrap).
"""

from __future__ import annotations

import pytest
from grading.helpers import (
    MARK,
    MXSS_VECTORS,
    cli_grade,
    grade_unsanitized,
    hostile_submission,
    needs_sandbox,
)
from test_widgets_in_jupyterlab import chromium_context

from gpucost_lab.grading.sanitize import clean_html

# what a learner clicks: each runs its vector in the unsanitized page
CLICKS = [("a", "PWN-LINK-HTML"), ("a", "PWN-LINK-ENTITY"), ("a", "PWN-LINK-MD"), ("button", "PWN-FORM")]
# the vectors that run in Chromium in a feedback page built without the sanitizer. Not here: the application/
# javascript output (nbconvert wraps it in code that needs jQuery, which the feedback page lacks; the formgrader has
# it: tests/grading/test_sanitize_graded.py), the <object> and <embed> javascript: URLs (Chromium refuses them)
RUN_UNSANITIZED = {
    "script",
    "img-onerror",
    "iframe-srcdoc",
    "svg-script",
    "svg-onload",
    "details-ontoggle",
    "javascript-link",
    "entity-javascript-link",
    "form-action",
    "markdown-script",
    "markdown-img-onerror",
    "markdown-javascript-link",
    "markdown-iframe",
}
SETTLE_MS = 1_000  # after the load and after the clicks: image errors, toggles, iframes

pytestmark = [pytest.mark.browser, pytest.mark.grading, needs_sandbox]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The hostile submission's feedback page from ``gpucost-lab grade``, and the control page without sanitizer."""
    folder = tmp_path_factory.mktemp("feedback-xss")
    code, report = cli_grade(hostile_submission(folder / "submission"), folder / "feedback")
    assert (code, report["score"]) == (0, 16.0)
    control, _ = grade_unsanitized(hostile_submission(folder / "control-submission"), folder / "control")
    return {"sanitized": report["feedback_html"], "control": control.feedback_html}


def ran(browser, url: str, clicks=CLICKS) -> tuple[list[str], dict]:
    """Open ``url``, click what a learner would, and return what ran (``window.__pwned``) and what was clickable."""
    page = browser.new_page()
    try:
        page.goto(url, wait_until="load", timeout=60_000)
        page.wait_for_timeout(SETTLE_MS)
        clickable = {}
        for tag, text in clicks:
            targets = page.locator(tag, has_text=text)
            clickable[text] = targets.count()
            for i in range(targets.count()):
                targets.nth(i).click(timeout=5_000)
        page.wait_for_timeout(SETTLE_MS)
        return page.evaluate(f"window.{MARK} || []"), clickable
    finally:
        page.close()


def test_the_control_page_runs_the_vectors(browser, pages):
    """Without this, the test below could pass on a page where nothing would ever run."""
    names, clickable = ran(browser, f"file://{pages['control']}")
    assert set(names) == RUN_UNSANITIZED
    assert clickable == {text: 1 for _, text in CLICKS}


def test_the_feedback_page_runs_nothing(browser, pages):
    names, clickable = ran(browser, f"file://{pages['sanitized']}")
    assert names == []
    # the links are still there, as text without a target; the form's button is shown as text
    assert clickable == {"PWN-LINK-HTML": 1, "PWN-LINK-ENTITY": 1, "PWN-LINK-MD": 1, "PWN-FORM": 0}


def one_page(folder, name: str, html: str) -> str:
    path = folder / f"{name}.html"
    path.write_text(f"<!DOCTYPE html><html><body><div>{html}</div></body></html>", encoding="utf-8")
    return f"file://{path}"


def test_a_mutation_xss_vector_runs_in_a_page_as_written(browser, tmp_path):
    """The control of the test below: Chromium reads a <noscript>'s content as text (scripting is on), so the
    <img> that a parser without scripting sees inside a title attribute is an element, and runs."""
    url = one_page(tmp_path, "noscript", MXSS_VECTORS["noscript-mxss"])
    assert ran(browser, url, clicks=[])[0] == ["noscript-mxss"]


@pytest.mark.parametrize("name", sorted(MXSS_VECTORS))
def test_mutation_xss_runs_nothing_as_chromium_reads_it(browser, tmp_path, name):
    cleaned, changed = clean_html(MXSS_VECTORS[name])
    assert changed is True
    assert ran(browser, one_page(tmp_path, name, cleaned), clicks=[])[0] == []
