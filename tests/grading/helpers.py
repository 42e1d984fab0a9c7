"""Helpers of the tests in tests/grading/: the fixture lab (tests/fixtures/grading/solutions/mini_lab, 10 points) and
learners' copies of it, `gpucost-lab grade` in this process and in a fresh one, the sandbox's skip mark,
:func:`active`, the check of what in a page could run a learner's script, and the hostile vectors it looks for with
a submission of the real lab that shows them all (tests/browser and tests/hub use them too).
"""

from __future__ import annotations

import atexit
import copy
import json
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest
from labtools import answered_release, write_submission
from nbformat.v4 import new_code_cell, new_markdown_cell

from gpucost_lab import grading
from gpucost_lab.cli.main import main
from gpucost_lab.grading.course import Course, generate_course
from gpucost_lab.grading.notebooks import DEFAULT_TIMEOUT_S
from gpucost_lab.grading.sandbox import unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOT = ROOT / "tests" / "fixtures" / "grading" / "solutions"
ASSIGNMENT = "mini_lab"
SOURCE_NB = SOURCE_ROOT / ASSIGNMENT / "mini_lab.ipynb"
FIXTURE_ARGS = ["--assignment", ASSIGNMENT, "--source-root", str(SOURCE_ROOT)]
VENV_BIN = Path(sys.executable).parent  # nbgrader, and the `alembic` it runs by name

needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")
# what bwrap says where user namespaces are forbidden (Ubuntu 24.04's kernel.apparmor_restrict_unprivileged_userns=1)
USERNS_FAILURE = "bwrap: setting up uid map: Permission denied"


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solution(question):
    """The source's answer to ``question`` without the solution markers (what a learner who got it right writes)."""
    source = next(c.source for c in nbformat.read(SOURCE_NB, as_version=4).cells if grade_id(c) == f"{question}_answer")
    return "\n".join(line for line in source.splitlines() if "### " not in line)


def learner_copy(released, folder, answers=(), *, custom=None, edit_tests=None, delete=(), name="mini_lab.ipynb"):
    """Write a learner's notebook: ``answers`` answered correctly, ``custom`` answers as given, tests edited/deleted."""
    nb = copy.deepcopy(released)
    custom, edit_tests = custom or {}, edit_tests or {}
    for cell in nb.cells:
        gid = grade_id(cell) or ""
        q = gid.split("_")[0]
        if gid.endswith("_answer") and q in custom:
            cell.source = custom[q]
        elif gid.endswith("_answer") and q in answers:
            cell.source = solution(q)
        if gid in edit_tests:
            cell.source = edit_tests[gid]
    nb.cells = [c for c in nb.cells if grade_id(c) not in delete]
    path = Path(folder) / name
    nbformat.write(nb, path)
    return path


def grade_fixture(path, **kw):
    """``grading.grade`` of the fixture lab, in the shared course (:func:`shared_course`) unless ``course_dir``."""
    return grade_shared(path, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, **kw)


# One nbgrader course per lab, source and timeout in each test process, made at its first use (generating one is
# about half the time of a grade): ``grading.grade(..., course=)`` grades in it and removes the submission after,
# as a class is graded. The tests about making a course (a temporary one, ``course_dir``) keep their own.
_COURSES: dict[tuple[str, str, int], Course] = {}
_COURSES_ROOT = Path(tempfile.mkdtemp(prefix="gpucost-test-courses-"))  # made before any test moves tempfile's root
atexit.register(shutil.rmtree, _COURSES_ROOT, True)


def shared_course(source_root: Path, assignment: str, timeout_s: int = DEFAULT_TIMEOUT_S) -> Course:
    """This process's course generated from ``source_root/assignment``: made again if a submission stayed in it."""
    key = (str(Path(source_root).resolve()), assignment, timeout_s)
    course = _COURSES.get(key)
    if course is None or course.dirty:
        folder = Path(tempfile.mkdtemp(prefix=f"{assignment}-", dir=_COURSES_ROOT))
        course = _COURSES[key] = generate_course(folder, Path(source_root).resolve(), assignment, timeout_s)
    return course


def grade_shared(path, *, assignment: str, source_root: Path, timeout_s: int = DEFAULT_TIMEOUT_S, **kw):
    """``grading.grade(path, ...)`` in the shared course of its lab, or in its own where ``course_dir`` is given."""
    if kw.get("course_dir") is None:
        kw["course"] = shared_course(source_root, assignment, timeout_s)
    return grading.grade(path, assignment=assignment, source_root=source_root, timeout_s=timeout_s, **kw)


def cli(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr()


def grade_cli(path: Path, *extra: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """``gpucost-lab grade PATH`` against the fixture lab, in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "gpucost_lab", "grade", str(path), "--assignment", ASSIGNMENT]
        + ["--source-root", str(SOURCE_ROOT), *extra],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


# --------------------------------------------------------------------------------------- what in a page could run

MARK = "__pwned"  # each hostile vector (below), once run, pushes its name onto window.__pwned
# attributes whose value a browser loads or runs (a title or an alt is only text)
_RUNS = frozenset({"href", "src", "srcdoc", "action", "formaction", "data", "xlink:href", "background", "poster"})


class _Active(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("iframe", "object", "embed", "svg", "math"):
            self.found.append(f"<{tag}> element")
        for name, value in attrs:
            if (name.startswith("on") or name in _RUNS) and MARK in (value or ""):
                self.found.append(f"<{tag} {name}={unquote(value)!r}>")  # a javascript: URL runs decoded
        if tag == "script":
            self._script = []

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            body, self._script = "".join(self._script), None
            if MARK in body:
                self.found.append(f"<script>{body}")


def active(html: str) -> list[str]:
    """What in ``html`` could run a vector: a script, or a URL or ``srcdoc`` attribute, naming ``__pwned``; an
    ``on*`` attribute; an ``iframe``, ``object``, ``embed``, ``svg`` or ``math`` element."""
    parser = _Active()
    parser.feed(html)
    parser.close()
    return parser.found


# ------------------------------------------------------------------- hostile vectors and a submission that shows them
# Each vector, once run, pushes its name onto window.__pwned (MARK); tests/grading/test_sanitize.py tests that the
# sanitizer removes each, test_sanitize_graded.py grades a submission that shows them all, tests/browser opens
# its pages.

HOSTILE_LAB = "profile_training_loop"  # the lab the hostile submission answers (every answer right: 16 of 16 points)
# a 1 x 1 PNG
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PARAGRAPH = "<p>Cost per step: <b>$0.42</b> at <i>3.25 USD/h</i></p>"


def flag(name: str, where: str = "window") -> str:
    """JavaScript that records that the vector ``name`` ran (in the page's window: ``window.__pwned``)."""
    return f"({where}.{MARK}={where}.{MARK}||[]).push('{name}')"


#: name -> HTML that runs ``flag(name)`` when the page loads, or when its link or button is clicked
HTML_VECTORS = {
    "script": f"<script>{flag('script')}</script>",
    "img-onerror": f'<img src="x" onerror="{flag("img-onerror")}">',
    "iframe-srcdoc": f'<iframe srcdoc="<script>{flag("iframe-srcdoc", "parent")}</script>"></iframe>',
    "svg-script": f'<svg xmlns="http://www.w3.org/2000/svg"><script>{flag("svg-script")}</script></svg>',
    "svg-onload": f'<svg onload="{flag("svg-onload")}"><rect width="4" height="4"/></svg>',
    "details-ontoggle": f'<details open ontoggle="{flag("details-ontoggle")}"><summary>more</summary>x</details>',
    "javascript-link": f'<a href="javascript:{flag("javascript-link")}">PWN-LINK-HTML</a>',
    "entity-javascript-link": f'<a href="jav&#x09;ascript:{flag("entity-javascript-link")}">PWN-LINK-ENTITY</a>',
    "form-action": f'<form action="javascript:{flag("form-action")}"><button>PWN-FORM</button></form>',
    "object": f'<object data="javascript:{flag("object")}"></object>',
    "embed": f'<embed src="javascript:{flag("embed")}">',
}
#: name -> HTML that a sanitizer's parse and the browser's may read apart (mutation XSS); tests/browser loads each
MXSS_VECTORS = {
    "math-mxss": f'<math><mtext><table><mglyph><style><img src=x onerror="{flag("math-mxss")}">',
    "svg-style-mxss": f'<svg><style><a title="</style><img src=x onerror={flag("svg-style-mxss")}>"></a></style>',
    "noscript-mxss": f'<noscript><p title="</noscript><img src=x onerror={flag("noscript-mxss")}>"></noscript>',
}
#: name -> markdown (a markdown cell's source) that runs ``flag(name)``
MARKDOWN_VECTORS = {
    "markdown-script": f"A note.\n\n<script>{flag('markdown-script')}</script>\n",
    "markdown-img-onerror": f'Inline <img src="x" onerror="{flag("markdown-img-onerror")}"> here.',
    "markdown-javascript-link": f"[PWN-LINK-MD](javascript:{flag('markdown-javascript-link')})",
    "markdown-iframe": f'<iframe srcdoc="<script>{flag("markdown-iframe", "parent")}</script>"></iframe>',
}
JAVASCRIPT = flag("application-javascript")
SVG_WITH_SCRIPT = f'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><script>{flag("svg")}</script></svg>'


HOSTILE_CELL = f"""\
import base64

import pandas as pd
from IPython.display import HTML, SVG, Image, Javascript, Markdown, display

display(HTML({"".join(HTML_VECTORS.values()) + PARAGRAPH!r}))
display(Javascript({JAVASCRIPT!r}))
display(SVG({SVG_WITH_SCRIPT!r}))
display(Markdown({MARKDOWN_VECTORS["markdown-img-onerror"]!r}))
display(pd.DataFrame({{"gpu": ["A100", "H100"], "usd_per_hour": [1.5, 3.25]}}))
display(Image(data=base64.b64decode({PNG!r})))
print("KEEP-STDOUT")
"""
HOSTILE_MARKDOWN = "Markdown answer KEEP-MD.\n\n" + "\n\n".join(MARKDOWN_VECTORS.values())


def hostile_submission(folder: Path) -> Path:
    """The lab with every answer right, then a code cell that displays each vector and a markdown cell with them."""
    nb = answered_release(HOSTILE_LAB)
    nb.cells.append(new_code_cell(HOSTILE_CELL))
    nb.cells.append(new_markdown_cell(HOSTILE_MARKDOWN))
    return write_submission(nb, folder, HOSTILE_LAB)


def grade_unsanitized(path: Path, folder: Path):
    """``path`` graded as :func:`gpucost_lab.grading.grade` does, with the sanitizer off (as before it existed): the
    report and the course (kept in ``folder/course``; the feedback page in ``folder/feedback``)."""
    from gpucost_lab.grading.autograde import autograde_in
    from gpucost_lab.grading.course import generate_course
    from gpucost_lab.grading.submission import read_submission

    sub = read_submission(path, None, HOSTILE_LAB, source_root=ROOT / "solutions")
    course = generate_course(folder / "course", sub.root, sub.assignment, 30)
    course.config.SanitizeLearnerHTML.enabled = False
    course.config.HTMLExporter.preprocessors = []
    return autograde_in(course, sub, feedback=True, feedback_dir=folder / "feedback"), course


def cli_grade(path: Path, feedback_dir: Path) -> tuple[int, dict]:
    """``gpucost-lab grade PATH --feedback-dir FEEDBACK_DIR --json``, in this process: its exit status and report."""
    import contextlib
    import io

    from gpucost_lab.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["grade", str(path), "--feedback-dir", str(feedback_dir), "--json"])
    return code, json.loads(out.getvalue())
