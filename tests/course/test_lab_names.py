"""Each lab names what it checks: a section's text names, in code, every value its checks read from the learner.

A check cell reads some of the learner's names (what the answer cells define, from this section or an earlier one)
and some of the lab's setup names (``PRICE_PER_HOUR_USD``, ``WINDOW_HOURS``, ...). A learner reads the section's
text, not the check, so the text must name, in backticks, every learner name any of the section's checks reads,
hidden part included, and every setup name both a check reads and the reference answer uses (the values the learner
must pass); and where the reference answer passes a setup value by keyword (``price_per_hour_usd=PRICE_PER_HOUR_USD``),
the text shows that keyword with it, since the keyword's default is the self-study value and leaving it out passes
for the self-study job alone. Names are read with ``ast`` (a check's own ``_private`` names and imports are bound by
the check, so they are not read from anyone); the text's code is its inline code spans and fenced blocks.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import nbformat
import pytest
from labtools import LABS, PROFILE, is_check, meta

from gpucost_lab.grading.checks import bound_names, free_names, is_trusted_setup, split_hidden

FENCED = re.compile(r"```.*?```", re.DOTALL)
INLINE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)


@dataclass
class Section:
    """One ``## `` section of a lab: its markdown, its answer cells' solutions and its check cells' sources."""

    heading: str
    markdown: list[str] = field(default_factory=list)
    solutions: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)

    def code_spans(self) -> list[str]:
        """Every piece of code in the section's text: fenced blocks, then inline spans."""
        text = "\n\n".join(self.markdown)
        spans = FENCED.findall(text)
        return spans + [m.group(2) for m in INLINE.finditer(FENCED.sub("", text))]

    def named(self) -> set[str]:
        return {name for span in self.code_spans() for name in IDENTIFIER.findall(span)}


def _sections(nb) -> tuple[list[Section], set[str], set[str]]:
    """The lab's sections, the names its setup cells bind and the names its answer cells bind."""
    sections, setup, answers = [], set(), set()
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("## "):
            sections.append(Section(cell.source.lstrip().splitlines()[0]))
        if not sections:  # the introduction and the setup
            if is_trusted_setup(cell):
                setup |= bound_names(cell.source)
            continue
        section = sections[-1]
        if cell.cell_type == "markdown":
            section.markdown.append(cell.source)
        elif meta(cell).get("solution"):
            answers |= bound_names(cell.source)
            section.solutions += SOLUTION.findall(cell.source)
        elif is_check(cell):
            section.checks[meta(cell)["grade_id"]] = split_hidden(cell.source)[0]
    return sections, setup, answers


def _read(code: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}


def _keywords_with_setup_values(code: str, setup: set[str]) -> set[str]:
    """``keyword=NAME`` for each call in ``code`` that passes a setup name by keyword."""
    return {
        f"{kw.arg}={kw.value.id}"
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in setup
    }


def missing_names(nb) -> dict[str, list[str]]:
    """For each section whose text leaves out a name its checks read from the learner: those names."""
    sections, setup, answers = _sections(nb)
    missing = {}
    for section in sections:
        used = set().union(*(_read(code) for code in section.solutions))
        wanted = set()
        for gid, code in section.checks.items():
            for name in free_names(code):
                assert name in setup or name in answers, f"{gid} reads {name!r}, which neither setup nor answers define"
                if (name in answers and name not in setup) or (name in setup and name in used):
                    wanted.add(name)
        absent = sorted(wanted - section.named())
        if absent:
            missing[section.heading] = absent
    return missing


def missing_keywords(nb) -> dict[str, list[str]]:
    """For each section whose text leaves out a ``keyword=SETUP_NAME`` its reference answer passes: those."""
    sections, setup, _ = _sections(nb)
    missing = {}
    for section in sections:
        shown = {"".join(span.split()) for span in section.code_spans()}
        wanted = set().union(*(_keywords_with_setup_values(code, setup) for code in section.solutions))
        absent = sorted(kw for kw in wanted if not any(kw in span for span in shown))
        if absent:
            missing[section.heading] = absent
    return missing


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_each_section_names_every_value_its_checks_read_from_the_learner(lab):
    assert missing_names(nbformat.read(lab.source, as_version=4)) == {}


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_each_section_shows_the_setup_values_its_answer_passes_by_keyword(lab):
    assert missing_keywords(nbformat.read(lab.source, as_version=4)) == {}


def _profile_with_section_2(text: str):
    nb = nbformat.read(PROFILE.source, as_version=4)
    cell = next(c for c in nb.cells if meta(c).get("grade_id") == "lab_task2")
    cell.source = text
    return nb


def test_a_section_that_leaves_out_a_checked_name_or_the_price_keyword_is_caught():
    # section 2's checks read `timer` (section 1's), `balance` and `run_cost_usd`, and PRICE_PER_HOUR_USD, which its
    # answer passes as price_per_hour_usd=...; a text naming none of them misses all four names and the keyword
    nb = _profile_with_section_2("## 2 · The balance and the bill (2 points)\n\nBuild the balance and price the run.")
    heading = "## 2 · The balance and the bill (2 points)"
    assert missing_names(nb)[heading] == ["PRICE_PER_HOUR_USD", "balance", "run_cost_usd", "timer"]
    assert missing_keywords(nb)[heading] == ["price_per_hour_usd=PRICE_PER_HOUR_USD"]
    # the name alone is not the call: `PRICE_PER_HOUR_USD` named, `timer.balance()` shown without the keyword
    nb = _profile_with_section_2(
        f"{heading}\n\n`balance = timer.balance()`, then `run_cost_usd` at `PRICE_PER_HOUR_USD`, in dollars."
    )
    assert heading not in missing_names(nb)
    assert missing_keywords(nb)[heading] == ["price_per_hour_usd=PRICE_PER_HOUR_USD"]
