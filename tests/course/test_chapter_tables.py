"""Every chapter's tables and figures read as a learner needs them, in the outputs of the chapter's spoiled run
(tests/chapter_runs.py, the ``chapter_run`` fixture; the same run tests/course/test_chapters.py reads): quiet, and
with every cell but the answers and their checks as committed (no other cell reads an answer, test_chapter_cells.py), so
each of those cells shows what it shows a learner who runs the chapter as committed.

- The columns the checkpoints' hints point to are shown whole: each heading below is a word of some output line, not
  cut (``min_time_us``) or wrapped onto a line of its own, and no table is truncated (pandas' ``...``).
- No time, size, rate or price is in scientific notation (``1.085e+04`` samples/s, ``9.708e-08`` USD). A number
  without a unit, a relative difference between two floating-point results, may be (``9.433e-08``): an output that
  names a difference is left out.
- Every figure is an image with alt text, what it shows in one sentence (``gpucost_lab.formatting.figure``): no bare
  PNG, no ``<Figure size ...>``, no ``<img>`` without a non-empty ``alt``; and each chapter shows the figures it draws.

(Without executing anything, tests/course/test_chapter_cells.py checks that no chapter sets pandas' display options
in a cell of its own or calls ``plt.show()``.)
"""

from __future__ import annotations

import re

import pytest
from chapter_runs import CHAPTERS, RUN_LIMIT_S

from gpucost_lab.memory.fixes import (
    COURSE_GLOBAL_BATCH,
    COURSE_SAMPLES_PER_NIGHT,
    COURSE_STEP_TIME_S,
    COURSE_WINDOW_HOURS,
    plan_fixes,
)
from gpucost_lab.memory.ledger import MemoryLedger

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(RUN_LIMIT_S)]


def _fix_names() -> list[str]:
    """The names of section 3's fixes in chapter 04, from the chapter's ledger and the course's case."""
    ledger = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)
    plan = plan_fixes(
        ledger,
        COURSE_GLOBAL_BATCH,
        step_time_s=COURSE_STEP_TIME_S,
        window_hours=COURSE_WINDOW_HOURS,
        samples_per_night=COURSE_SAMPLES_PER_NIGHT,
    )
    return [f.name for f in plan.fixes]


# chapter -> the column headings (and, for chapter 04, the fix names) its checkpoints' hints point to
HEADINGS = {
    "02_read_the_timeline.ipynb": ["duration_us", "share", "sync_points"],
    "03_price_the_result.ipynb": ["cost_per_sample_usd_geomean"],
    "04_memory_budget.ipynb": ["min_time_us", "step_time_factor", "fits_window", "in window", *_fix_names()],
    "05_profile_to_decision.ipynb": ["share", "whole night"],
    "06_release_the_result.ipynb": ["action", "ratio 95% CI"],
    "07_feed_the_device.ipynb": ["data_wait_fraction", "time_ratio"],
}
FIGURES = {  # chapter -> the figures it draws
    "02_read_the_timeline.ipynb": 1,
    "04_memory_budget.ipynb": 2,
    "05_profile_to_decision.ipynb": 1,
    "07_feed_the_device.ipynb": 1,
    "08_profile_the_service.ipynb": 1,
}
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+\b")
DIMENSIONLESS = re.compile(r"\bdifference\b")  # a relative difference between two results: no unit to read it in
IMG = re.compile(r"<img\b[^>]*>", re.I)
ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


def _outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o["output_type"] != "error"]


def _texts(output: dict) -> list[str]:
    """What an output shows as text: a print, a result's text twin, a Markdown report."""
    if output["output_type"] == "stream":
        return [output["text"]]
    data = output.get("data", {})
    return [data[kind] for kind in ("text/plain", "text/markdown") if kind in data]


@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.name in HEADINGS], ids=lambda p: p.name)
def test_the_columns_the_hints_point_to_are_shown_whole(path, chapter_run):
    lines = [line for o in _outputs(chapter_run(path, "spoiled").nb) for t in _texts(o) for line in t.splitlines()]
    for heading in HEADINGS[path.name]:
        whole = re.compile(rf"(?:^|\s){re.escape(heading)}(?:\s|$)")
        assert any(whole.search(line) for line in lines), f"{path.name}: no output line shows {heading!r} whole"
    for o in _outputs(chapter_run(path, "spoiled").nb):
        table = o.get("data", {}).get("text/plain", "")
        assert "..." not in table and not re.search(r"\\$", table, re.M), (
            f"{path.name}: a table cut or wrapped:\n{table}"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_time_size_rate_or_price_is_in_scientific_notation(path, chapter_run):
    for o in _outputs(chapter_run(path, "spoiled").nb):
        for text in _texts(o):
            if DIMENSIONLESS.search(text):
                continue
            found = SCIENTIFIC.findall(text)
            assert not found, f"{path.name}: scientific notation {found} in\n{text}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_figure_is_an_image_with_alt_text(path, chapter_run):
    shown = 0
    for o in _outputs(chapter_run(path, "spoiled").nb):
        data = o.get("data", {})
        assert not {"image/png", "image/jpeg", "image/svg+xml"} & set(data), (
            f"{path.name}: an image without alt text; show it with gpucost_lab.formatting.figure"
        )
        assert not data.get("text/plain", "").startswith("<Figure size"), f"{path.name}: a figure left to pyplot"
        for tag in IMG.findall(data.get("text/html", "")):
            alt = ALT.search(tag)
            assert alt and (alt.group(1) or alt.group(2) or "").strip(), f"{path.name}: an image without alt text"
            shown += 1
    assert shown == FIGURES.get(path.name, 0)
