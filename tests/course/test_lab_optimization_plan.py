"""The capstone lab, optimization_plan: its test cells and its points per section.

What every lab shares (its release matches its source, hides what it must, and grades as the points say) runs for
this lab in test_lab_profile.py and test_lab_profile_grading.py.

Points (from the lab's own headings): 1 diagnose 3 (idle share 1, fix 2), 2 parity 3 (report 2, tolerance 1),
3 cost to target 4 (costs 2, ratio 2), 4 memory 2 (largest microbatch 1, accumulation 1), 5 decision 3 (decision 2,
production 1), 6 principle 1 = 16; 80% is 12.8, so 13 points pass and 12 fail. Sections 2 to 5 build on each other
(parity -> costs -> decision, throughput -> memory plan -> decision); sections 1 and 6 stand alone, so they are the
ones left out of the partial answer sets (PARTIAL_ANSWERS in test_lab_profile_grading.py).
"""

import nbformat
from labtools import PLAN, cells, checks_after, meta


def test_every_test_cell_follows_its_answer_and_has_a_visible_and_a_hidden_part():
    previous = None
    for cell in nbformat.read(PLAN.source, as_version=4).cells:
        grading = meta(cell)
        if grading.get("grade"):
            # nbgrader puts a deleted test cell back after the answer or test cell before it
            assert meta(previous).get("solution") or meta(previous).get("grade"), grading["grade_id"]
            visible, _, rest = cell.source.partition("### BEGIN HIDDEN TESTS")
            assert "expect(" in visible and "expect(" in rest, f"{grading['grade_id']}: a visible and a hidden check"
            assert grading["locked"] and not grading["solution"]
        previous = cell


def test_points_per_section_match_the_docstring():
    source = cells(nbformat.read(PLAN.source, as_version=4))
    points = {gid: sum(meta(source[t])["points"] for t in checks_after(PLAN.name, gid)) for gid in PLAN.answers}
    assert points == {
        "plan_diagnose": 3,
        "plan_parity_runs": 3,
        "plan_throughput": 4,
        "plan_memory": 1,
        "plan_memory_fix": 1,
        "plan_release": 3,
        "plan_principle": 1,
    }
