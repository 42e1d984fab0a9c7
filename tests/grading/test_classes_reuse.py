"""One worker, one course, many learners: what a hostile learner does cannot reach the next one.

``grade_class`` keeps its worker processes and their copy of the generated course for the whole class (the speed
of issue 15). Here a single worker grades hostile submissions first and honest ones after, in one course. Each
learner must score exactly what their own answers earn on the fixture lab (tests/fixtures/grading/solutions/
mini_lab: 3 + 2 + 2 + 2 + 1 = 10 points, worked out by hand below), whatever the ones before did.
"""

import pytest

from gpucost_lab.grading.classes import grade_class
from grading.helpers import needs_sandbox
from grading.test_attacks import ATTACKS, POINTS, RIGHT, SOURCE_ROOT, WRONG, notebook
from grading.test_workflow_attacks import KERNEL_BREAKER, TIMEOUT_S, gradebook_writer

pytestmark = [pytest.mark.grading, needs_sandbox]

FULL = sum(POINTS.values())
EXPECTED = {  # graded in this order by the one worker (names sort as they are submitted)
    "a_gradebook_writer": 0,  # a blank lab that rewrites every gradebook it can find
    "b_kernel_breaker": 0,  # a blank lab whose kernel stops answering
    "c_stealthy_transformer": 0,  # a blank lab that turns every later cell into `pass` while graded
    "d_rewritten_helper": POINTS["q1"],  # Q1 right, the rest wrong, the tests' helper file rewritten: 3
    "e_honest": FULL,  # 10
    "f_partial": POINTS["q1"] + POINTS["q2"] + POINTS["q3"],  # 3 + 2 + 2 = 7
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    notebook(folder / "a_gradebook_writer", {}, before=gradebook_writer(folder))
    notebook(folder / "b_kernel_breaker", {}, before=KERNEL_BREAKER)
    notebook(folder / "c_stealthy_transformer", {}, before=ATTACKS["stealthy transformer"])
    notebook(folder / "d_rewritten_helper", {**WRONG, "q1": RIGHT["q1"]}, before=ATTACKS["rewritten helper file"])
    notebook(folder / "e_honest", RIGHT)
    notebook(folder / "f_partial", {q: RIGHT[q] for q in ("q1", "q2", "q3")})
    return grade_class(folder, workers=1, assignment="mini_lab", source_root=SOURCE_ROOT, timeout_s=TIMEOUT_S)


def test_each_learner_scores_what_their_own_answers_earn(graded):
    rows = graded.set_index("student")
    assert list(rows["error"]) == [None] * len(EXPECTED)
    assert {s: rows.loc[s, "score"] for s in EXPECTED} == EXPECTED
    assert set(rows["max_score"]) == {FULL}


def test_the_pass_mark_is_applied_to_each(graded):
    rows = graded.set_index("student")
    assert {s: bool(rows.loc[s, "passed"]) for s in EXPECTED} == {s: points >= 8 for s, points in EXPECTED.items()}
