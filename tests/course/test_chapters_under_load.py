"""Chapters 03, 06, 07 and 08 executed with two CPU-bound programs busy beside them (a learner's laptop, a CI runner).

The busy programs take both cores of a 2-core machine, so every timing in the chapters is disturbed. What
must still hold: no interval goes negative or excludes its own centre, the relative cost the chapter prints
equals the ratio of the costs in its table, no verdict contradicts its interval, and chapter 06's gate
either reaches the quiet machine's decisions (promote batch128-lr-scaled; bf16-autocast and tiny-model
fall back) or says "inconclusive" and falls back: it never promotes what a quiet machine refuses.

These chapters' answered run (tests/chapter_runs.py) is the one under load: it runs with the busy programs beside
it and ends in the checks above (``chapter_runs.UNDER_LOAD``), so the chapter executes once for both this test and
tests/course/test_chapters.py, and every cell of it, the graded checks with the reference answers included, passes under
load.
"""

from __future__ import annotations

import re

import pytest
from chapter_runs import BUSY_PROGRAMS, RUN_LIMIT_S, UNDER_LOAD

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(RUN_LIMIT_S)]


@pytest.mark.parametrize("name", sorted(UNDER_LOAD))
def test_chapter_verdicts_hold_with_two_busy_programs(name, chapter_run):
    run = chapter_run(name, "answered")
    assert run.busy_programs == BUSY_PROGRAMS == 2 and run.under_load_check == len(run.nb.cells) - 1
    assert run.nb.cells[run.under_load_check].source == UNDER_LOAD[name]
    assert "under load:" in run.shown(), "the under-load checks did not run to their end"
    assert run.errors() == [], run.error_text()
    assert not re.search(r"CI -|to -\d|_ci95_low +-", run.shown()), "a negative interval bound is displayed"
