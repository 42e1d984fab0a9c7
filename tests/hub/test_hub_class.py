"""A class on the course's JupyterHub, end to end: the hub on loopback (deploy/hub), an instructor and four learners,
each with their own server and home folder, and the lab profile_training_loop from release to grades.csv.

The instructor generates and releases the lab with the formgrader (on their own server); each learner lists, fetches
and submits it through their own server's nbgrader endpoints (those the Assignments tab calls), having written their
answers with the server's contents API; the instructor collects and autogrades with the formgrader, one submission
at a time in name order, and exports with ``nbgrader export`` (the course's export: a ``passed`` column) and
``gpucost_lab.grading.export`` (Canvas's and Moodle's import files).

Expected scores, by hand from the lab's points (16 in all: sections 1-8 worth 3, 2, 3, 1, 2, 2, 2, 1; the pass mark
80% of 16 = 12.8, so 13 passes and 12 fails):

- ana, every answer: 16, passed;
- eve, hostile: a blank lab (0, not passed) whose first answer cell rewrites every gradebook it finds (every score to
  0, 100 points of extra credit and manual score) and empties every file it reaches under the class folder;
  graded after ana and before max and zoe, so it could reach a score already given and the files of those after it;
  its last two cells display HTML and markdown meant to run in the formgrader (a script, event handlers, an iframe,
  SVG, javascript: links, an application/javascript output): the formgrader's page of it holds none of them;
- max, section 3 left as released: 16 - 3 = 13, passed;
- zoe, sections 3 and 4 left as released: 16 - 3 - 1 = 12, not passed.

Then the hub is stopped: the proxy and every server with it, and no process of the class is left.
"""

from __future__ import annotations

import csv
import io
import sys

import pytest
from classflow import HOSTILE, LAB, NOTEBOOK, gradebook, run_class
from grading.helpers import active
from hubrun import HubError, HubRun

from gpucost_lab.grading.export import export_grades

pytestmark = [pytest.mark.hub, pytest.mark.grading, pytest.mark.slow]

LEARNERS = {"ana": "full", "eve": HOSTILE, "max": "no_dominant", "zoe": "no_dominant_correlate"}
EXPECTED = {"ana": (16.0, "True"), "eve": (0.0, "False"), "max": (13.0, "True"), "zoe": (12.0, "False")}
MAX_SCORE = 16.0


@pytest.fixture(scope="module")
def hub_class(hub_ready, tmp_path_factory, request):
    run = HubRun(tmp_path_factory.mktemp("hub") / "class", list(LEARNERS))
    request.addfinalizer(run.stop)  # whatever happens: the hub, the proxy and every server stopped
    try:
        done = run_class(run, LEARNERS, autograde="formgrader")
    except HubError as err:
        pytest.fail(f"{err}\n--- hub log:\n{run.log_tail()}", pytrace=False)
    print(
        f"\nhub class of {len(LEARNERS)}: " + ", ".join(f"{k} {v:.1f}" for k, v in done.times.items()), file=sys.stderr
    )
    return done


def test_each_learner_s_assignments_tab_lists_the_released_lab(hub_class):
    for user in LEARNERS:
        listed = hub_class.seen[user]["before"]
        assert [(a["assignment_id"], a["status"]) for a in listed] == [(LAB, "released")], user
        assert [nb["notebook_id"] for nb in listed[0]["notebooks"]] == [LAB]


def test_fetch_puts_the_lab_in_the_learner_s_own_home(hub_class):
    for user in LEARNERS:
        fetched = [a for a in hub_class.seen[user]["fetched"] if a["status"] == "fetched"]
        assert [a["path"] for a in fetched] == [LAB], user
        assert (hub_class.run.klass.home(user) / NOTEBOOK).is_file()


def test_each_submission_is_listed_under_the_learner_s_own_id(hub_class):
    for user in LEARNERS:
        submitted = [a for a in hub_class.seen[user]["submitted"] if a["status"] == "submitted"]
        assert len(submitted) == 1 and submitted[0]["student_id"] == user, submitted
        assert len(submitted[0]["submissions"]) == 1


def test_the_instructor_collects_every_submission(hub_class):
    course = hub_class.run.klass.course
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(LEARNERS)
    for user in LEARNERS:
        assert (course / "submitted" / user / LAB / f"{LAB}.ipynb").is_file()


@pytest.mark.parametrize("user", sorted(LEARNERS))
def test_each_learner_scores_what_their_answers_earn(hub_class, user):
    score, extras = gradebook(hub_class.run)[user]
    assert score == EXPECTED[user][0]
    assert all(extra in (None, 0) and manual is None for extra, manual in extras), extras


@pytest.mark.parametrize("user", sorted(LEARNERS))
def test_grades_csv_has_the_score_and_the_passed_column(hub_class, user):
    row = hub_class.grades[user]
    assert (row["assignment"], float(row["score"]), float(row["max_score"])) == (LAB, EXPECTED[user][0], MAX_SCORE)
    assert row["passed"] == EXPECTED[user][1]


@pytest.mark.parametrize(
    "fmt, identity, passed",
    [
        ("canvas", "SIS Login ID", {"True": "complete", "False": "incomplete"}),
        ("moodle", "Username", {"True": "Pass", "False": "Fail"}),
    ],
)
def test_the_class_s_gradebook_exports_for_the_lms(hub_class, fmt, identity, passed):
    rows = list(csv.DictReader(io.StringIO(export_grades(hub_class.run.klass.course / "gradebook.db", fmt))))
    learners = {row[identity]: row for row in rows if row[identity]}
    assert sorted(learners) == sorted(LEARNERS)
    for user, (score, verdict) in EXPECTED.items():
        assert (float(learners[user][LAB]), learners[user][f"{LAB} passed"]) == (score, passed[verdict])


def test_the_hostile_notebook_changed_nothing_else(hub_class):
    assert hub_class.hostile == "eve"
    for part in hub_class.before:
        assert hub_class.after[part] == hub_class.before[part], f"{part} changed while the class was graded"
    assert len(hub_class.before) == 4 + len(LEARNERS) - 1  # course parts, exchange, three other learners


def test_the_formgrader_shows_the_hostile_submission_with_nothing_that_runs(hub_class):
    """The page the instructor opens to grade eve's lab by hand, as their own server renders it: none of what her
    cells displayed can run there (tests/grading/test_sanitize.py's check), and what it said is still shown."""
    run, instructor = hub_class.run, hub_class.run.klass.instructor
    (eve,) = [s for s in run.formgrader(f"submitted_notebooks/{LAB}/{LAB}", method="GET") if s["student"] == "eve"]
    page = run.request("GET", f"/user/{instructor}/formgrader/submissions/{eve['id']}/", user=instructor, raw=True)
    page = page.decode("utf-8")
    assert "formgrade.js" in page  # the formgrader's own page, its scripts loaded
    assert active(page) == []
    assert "PWN-LINK-HTML" in page and "Markdown answer KEEP-MD." in page  # the hostile cells ran and are shown


def test_learners_have_no_formgrader(hub_class):
    with pytest.raises(HubError, match="HTTP 404"):
        hub_class.run.user_api("ana", "GET", "/formgrader/api/assignments")


def test_the_hub_stops_and_leaves_no_process(hub_class):
    run = hub_class.run
    run.stop()
    assert run.proc.returncode is not None
    assert run.left_after_hub == [], f"still running after the hub stopped: {run.left_after_hub}"
    assert run.left_after_kill == []
