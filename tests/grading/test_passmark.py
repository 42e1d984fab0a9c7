"""Tests of gpucost_lab.grading.passmark: 80% of the maximum score passes, inclusive, compared in exact fractions at
nbgrader's precision, against fractions worked out by hand (and the floating-point sums that would get them wrong).
"""

from gpucost_lab import grading


def test_pass_mark_is_80_percent_inclusive_in_exact_arithmetic():
    assert grading.PASS_MARK_PERCENT == 80
    assert grading.meets_pass_mark(8, 10) and not grading.meets_pass_mark(7.99, 10)
    # 2.4 / 3 is 0.7999999999999999 in floating point, so `score / max_score >= 0.8` would fail 2.4 of 3 points
    assert 2.4 / 3 < 0.8 and grading.meets_pass_mark(2.4, 3)
    assert 0.1 + 0.7 < 0.8 and grading.meets_pass_mark(0.1 + 0.7, 1)  # scores summed from cells: rounded first
    assert sum([0.1] * 80) != 8 and grading.meets_pass_mark(sum([0.1] * 80), 10)  # 7.99999999999998 is 8.00
    assert not grading.meets_pass_mark(0, 0)
    assert grading.points_to_pass(10) == 8 and grading.points_to_pass(12) == 9.6 and grading.points_to_pass(3) == 2.4
