"""The end-to-end class at scale: 30 learners fetch, answer and submit at the same moment, each through their own
server; the instructor collects every submission and grades the class with one `nbgrader autograde` (a terminal on
their server), then exports. Every submission must be collected and graded with the score its answers earn, and the
whole round trip (the hub and 31 servers starting included) must end within LOAD_LIMIT_S.

Opt-in, as it takes minutes: GPUCOST_HUB_LOAD=1 (or `make hub-load`). The learners cycle through the kinds of the
end-to-end test, by hand from the lab's 16 points: every answer 16 (passed), section 3 left out 13 (passed), sections 3
and 4 left out 12 (not passed); one of them is the hostile notebook, 0 (not passed).
"""

from __future__ import annotations

import os
import sys

import pytest
from classflow import HOSTILE, gradebook, run_class
from hubrun import HubError, HubRun

N = 30
KINDS = ("full", "no_dominant", "no_dominant_correlate")
EXPECTED = {
    "full": (16.0, "True"),
    "no_dominant": (13.0, "True"),
    "no_dominant_correlate": (12.0, "False"),
    HOSTILE: (0.0, "False"),
}
LOAD_LIMIT_S = 900  # measured ~5 min on the 2-core development machine; 3x for a slower or busier one

pytestmark = [
    pytest.mark.timeout(1800),  # 30 learners fetch, submit and are graded: minutes (opt-in)
    pytest.mark.hub,
    pytest.mark.grading,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("GPUCOST_HUB_LOAD"),
        reason="the 30-learner hub class takes minutes: set GPUCOST_HUB_LOAD=1 (make hub-load)",
    ),
]


@pytest.fixture(scope="module")
def big_class(hub_ready, tmp_path_factory, request):
    kinds = {f"learner{i:02d}": KINDS[i % len(KINDS)] for i in range(1, N + 1)}
    kinds["learner13"] = HOSTILE
    run = HubRun(tmp_path_factory.mktemp("hub-load") / "class", list(kinds))
    request.addfinalizer(run.stop)
    try:
        done = run_class(run, kinds, at_once=True, autograde="cli")
    except HubError as err:
        pytest.fail(f"{err}\n--- hub log:\n{run.log_tail()}", pytrace=False)
    print(f"\nhub class of {N}: " + ", ".join(f"{k} {v:.1f}" for k, v in done.times.items()), file=sys.stderr)
    return done


def test_every_submission_is_collected_and_graded_with_its_score(big_class):
    course = big_class.run.klass.course
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(big_class.kinds)
    scores = gradebook(big_class.run)
    assert {u: s for u, (s, _) in scores.items()} == {u: EXPECTED[k][0] for u, k in big_class.kinds.items()}
    assert {u: r["passed"] for u, r in big_class.grades.items()} == {
        u: EXPECTED[k][1] for u, k in big_class.kinds.items()
    }


def test_the_hostile_notebook_changed_nothing_else(big_class):
    for part in big_class.before:
        assert big_class.after[part] == big_class.before[part], part


def test_the_class_completes_within_the_stated_time(big_class):
    assert big_class.times["total_s"] < LOAD_LIMIT_S, big_class.times


def test_the_hub_stops_and_leaves_no_process(big_class):
    big_class.run.stop()
    assert big_class.run.left_after_hub == [] and big_class.run.left_after_kill == []
