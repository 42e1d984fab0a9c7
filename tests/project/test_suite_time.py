"""benchmarks/suite_time.py reads a `make test` log: each tier's counts and time, and the slowest tests over all tiers.

A log written here in the shapes pytest prints (the unit tier's quiet summary, the others' framed one, a tier cut
short), so every figure is known before the parser reads it.
"""

import sys

from .helpers import ROOT, load

sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports benchmarks/machine.py as `machine`
suite_time = load("bench_suite_time", ROOT / "benchmarks" / "suite_time.py")

LOG = """\
.venv/bin/ruff check .
All checks passed!
.venv/bin/python -m pytest -q --tier unit tests
........
============================= slowest 20 durations =============================
3.77s call     tests/serve/test_load_curve.py::test_a_short_real_curve_rises_with_the_rate
0.98s setup    tests/timeline/test_diff.py::test_removing_the_stall_is_better_on_step_time_and_idle
2456 passed, 13 skipped, 345 deselected in 75.48s (0:01:15)
.venv/bin/python -m pytest --tier integration tests
tests/grading/test_x.py ..F
============================= slowest 20 durations =============================
81.04s setup    tests/project/test_binder.py::test_postbuild[a b]
0.01s call     tests/grading/test_export.py::test_a_csv_without_passed_is_one_line
==== 1 failed, 228 passed, 2585 deselected, 18 warnings in 1196.51s (0:19:56) ====
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -n 2 --dist loadgroup --tier e2e --tier integration tests
tests/browser/test_feedback_xss.py ....
"""


def test_each_tier_s_counts_and_time_are_read_and_a_tier_cut_short_says_so():
    tiers = suite_time.tier_reports(LOG)
    assert tiers["unit"] == {"finished": True, "s": 75.48, "passed": 2456, "skipped": 13, "deselected": 345}
    assert tiers["integration"] == {"finished": True, "s": 1196.51, "failed": 1, "passed": 228, "deselected": 2585}
    assert tiers["e2e+integration"] == {"finished": False}


def test_the_slowest_are_taken_over_every_tier_slowest_first():
    top = suite_time.slowest(LOG, 3)
    assert [(d["s"], d["phase"]) for d in top] == [(81.04, "setup"), (3.77, "call"), (0.98, "setup")]
    assert top[0]["test"] == "tests/project/test_binder.py::test_postbuild[a b]"
