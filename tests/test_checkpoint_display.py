"""Every numeric checkpoint accepts the value as its chapter displays it, and rejects plausible mistakes.

``DISPLAYED`` has one row per numeric checkpoint, keyed by chapter: where the chapter displays the value (a
regular expression over the text outputs of the cells above the question; its groups are the displayed
figures), what a learner writes from that display, the digits the check compares to, and plausible mistakes.
Each chapter runs once, with its reference answers, in a scratch working directory; then, in the same kernel,
each row's answer is put into the answer cell and the check cell is run again: the answer as displayed and
the answer rounded to the digits the question asks for must pass, every mistake must fail with AssertionError.
The check compares against the value the same kernel computed, so machine-speed figures (01.1) are fine.

Adding a chapter is adding its rows under its file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from chapter_answers import ANSWERS
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Shown:
    """A numeric checkpoint and how its chapter displays the answer."""

    answer_cell: str  # the answer cell's nbgrader grade_id; the check cell follows it
    shown: str | None  # regex over the text outputs above the question (None: a count the learner works out)
    answer: str  # what the learner writes: a Python expression over the displayed figures {0}, {1}, ...
    mistakes: dict[str, str] = field(default_factory=dict)  # what went wrong -> the expression a learner writes
    digits: str = "exact"  # the check cell's "significant=N" or "decimals=N"; "exact" for counts


DISPLAYED: dict[str, list[Shown]] = {
    "01_freeze_the_contract.ipynb": [
        Shown(
            "ch01_q1_answer",
            r"unsynchronized: ([\d,]+) samples/s.*claims a ([\d,]+)x speed-up",
            "{1}",
            {
                "inverted: synchronized over unsynchronized": "1 / {1}",
                "the unsynchronized throughput, not the ratio": "{0}",
            },
            digits="decimals=0",
        ),
        Shown(
            "ch01_q2_answer",
            r"contracts differ in (\d+) field\(s\)",
            "{0}",
            {"only the input shape": "{0} - 1", "every field of the contract": "len(contract.to_dict())"},
        ),
    ],
    "02_read_the_timeline.ipynb": [
        Shown(
            "ch02_q1_answer",
            r"GPU busy ([\d.]+) ms of a ([\d.]+) ms span",
            "1 - {0} / {1}",
            {
                "the busy share": "{0} / {1}",
                "a percentage": "100 * (1 - {0} / {1})",
                "the idle time in ms": "{1} - {0}",
                "after the fix": "busy_idle(fixed).idle_us / busy_idle(fixed).span_us",
            },
            digits="decimals=2",
        ),
        Shown(
            "ch02_q3_answer",
            r"^loss\.item\(\) every step +\S+ +\d+ +(\d+) +\d+ *$",
            "{0}",
            {
                "every nested call counted (item, _local_scalar_dense, synchronize)": "3 * {0}",
                "the rows that .head() shows": "5",
            },
        ),
        # the readable gaps table: row 0 is "0  <start> s  <duration> s  <before>  <after>"
        Shown(
            "ch02_q6_answer",
            r"^0 +([\d.]+) s +([\d.]+) s ",
            "{1}",
            {
                "the gap's start, not its length": "{0}",
                "in milliseconds": "{1} * 1000",
                "the second widest gap": 'alex_gaps["duration_us"].iloc[1] / 1e6',
            },
            digits="decimals=1",
        ),
        Shown(
            "ch02_q7_answer",
            r"^\d+ +communication +\S+ \S+ +([\d.]+)%",
            "{0} / 100",
            {
                "a percentage": "{0}",
                "communication with its overlaps": 'rank0_types[rank0_types["kernel_type"]'
                '.str.contains("communication")]'
                '["share"].sum()',
                "the GPU's busy share of the span": "rank0_busy.busy_us / rank0_busy.span_us",
            },
            digits="decimals=2",
        ),
    ],
    "04_memory_budget.ipynb": [
        Shown(
            "ch04_q1_answer",
            r"largest microbatch that fits: (\d+)",
            "{0}",
            {"rounded up": "{0} + 1", "the whole 24 GB, no reserve": "int((24 - 3.2) / 0.34)"},
        ),
        # not displayed: each block adds 0.34 x 100 / 10 = 3.4 GB; 3.2 + 5 x 3.4 = 20.2 <= 21.6 < 3.2 + 6 x 3.4 = 23.6
        Shown(
            "ch04_q2_answer",
            None,
            "6",
            {"the last block that fits": "5", "the block of the microbatch-60 example": "10"},
        ),
        Shown(
            "ch04_q3_answer",
            r"largest microbatch with checkpointing: (\d+)",
            "{0}",
            {"without checkpointing": "ledger.max_microbatch()", "rounded up": "{0} + 1"},
        ),
        Shown(
            "ch04_q4_answer",
            r"activations per sample: ([\d,]+) bytes",
            "{0}",
            {
                "MB, not bytes": "{0} / 1e6",
                "the whole microbatch of 8": "8 * {0}",
                "one sample's input": "per_sample_input_bytes",
            },
            digits="decimals=0",
        ),
        Shown(
            "ch04_q6_answer",
            r"min_time_us.*?^1 +([\d.]+) ",
            "{0}",
            {
                "seconds, not microseconds": "{0} / 1e6",
                "nanoseconds": "{0} * 1e3",
                "fp32's time": 'roofline.loc[0, "min_time_us"]',
                "the bf16 compute peak, ignoring the memory roof": "linear_bf16.flops / 125e12 * 1e6",
            },
            digits="significant=3",
        ),
        # counted from section 3's table: six rows say "in window", three say "LATE"
        Shown("ch04_q7_answer", None, "6", {"every fix that fits memory": "9", "only the late ones": "3"}),
        Shown(
            "ch04_q9_answer",
            r"full recomputation +peak +[\d.]+ GB +step x([\d.]+)",
            "{0}",
            {
                "accumulation's factor": "1.15",
                "the time saved, not the factor": "1 - {0}",
                "selective recomputation's": "1.027",
            },
            digits="significant=3",
        ),
    ],
    "05_profile_to_decision.ipynb": [
        Shown(
            "ch05_q1_answer",
            r"dominant phase: data\n.*?^\d+ +data +\S+ +(\S+) ",
            "{0}",
            {
                "a percentage": "100 * {0}",
                "the 90% figure of section 4": 'options["data"].wall_reduction_share',
                "after the fix": 'after_balance.set_index("phase").loc["data", "share"]',
            },
            digits="significant=4",
        ),
        Shown(
            "ch05_q3_answer",
            r"dominant phase: data\n.*?^\d+ +logging +\S+ +(\S+) ",
            "{0}",
            {
                "the 90% figure of section 4": 'options["logging"].wall_reduction_share',
                "a percentage": "100 * {0}",
                "after the fix": 'after_balance.set_index("phase").loc["logging", "share"]',
            },
            digits="significant=4",
        ),
        Shown(
            "ch05_q6_answer",
            r"\$([\d.]+) saved per nightly run",
            "{0}",
            {
                "the 90% bound of section 4": 'options["data"].cost_saved_usd',
                "cents": "100 * {0}",
                "the data phase's whole cost": 'before_balance.set_index("phase").loc["data", "cost_usd"]',
            },
            digits="decimals=2",
        ),
    ],
    "03_price_the_result.ipynb": [
        Shown(
            "ch03_q1_answer",
            r"cost_per_sample_usd_geomean.*?^baseline +(\S+) ",
            "{0}",
            {
                "the candidate's": 'cost_per_sample["candidate"].geomean',
                "per million samples": "{0} * 1e6",
                "per step of 64 samples": "{0} * 64",
            },
            digits="significant=4",
        ),
        Shown(
            "ch03_q2_answer",
            r"cost-to-target ratio from the table: ([\d.]+)",
            "{0}",
            {
                "inverted: baseline over candidate": "1 / {0}",
                "cost per sample only, steps ignored": "comparison.unit_cost_ratio",
                "steps only, cost per step ignored": 'Estimate.of(quality["candidate"].steps_to_target_values).geomean'
                ' / Estimate.of(quality["baseline"].steps_to_target_values).geomean',
            },
            digits="decimals=3",
        ),
    ],
    "06_release_the_result.ipynb": [
        Shown(
            "ch06_q1_answer",
            r"^ +action\b.*?^batch128-lr-scaled +(\w+) .*?^bf16-autocast +(\w+) .*?^tiny-model +(\w+) ",
            "['{0}', '{1}', '{2}'].count('promote')",
            {"the fallbacks": "['{0}', '{1}', '{2}'].count('fallback')", "every candidate": "3"},
        ),
        Shown(
            "ch06_q3_answer",
            r"^batch128-lr-scaled\b[^\n]*? ([\d.]+) to ([\d.]+)",
            "{1}",
            {
                "the lower end": "{0}",
                "the ratio itself": 'plans["batch128-lr-scaled"].decision.cost_ratio',
                "bf16's upper end": 'plans["bf16-autocast"].decision.cost_ratio_ci95[1]',
            },
            digits="decimals=3",
        ),
    ],
}


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _cell_index(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if _nbgrader(c).get("grade_id") == grade_id)


def _variable(nb, row: Shown) -> str:
    return nb.cells[_cell_index(nb, row.answer_cell)].source.split("=", 1)[0].strip()


def _rounded(expression: str, digits: str) -> str | None:
    """``expression`` rounded as the question asks, or None for an exact count."""
    kind, _, n = digits.partition("=")
    return {"significant": f"float(format({expression}, '.{n}g'))", "decimals": f"round({expression}, {n})"}.get(kind)


def _text(cell) -> str:
    return "".join(
        o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
        for o in cell.get("outputs", [])
    )


def _displayed(nb, row: Shown) -> list[str]:
    """The figures the chapter displays above the question, commas dropped."""
    if row.shown is None:
        return []
    for cell in nb.cells[: _cell_index(nb, row.answer_cell)]:
        match = re.search(row.shown, _text(cell), re.MULTILINE | re.DOTALL)
        if match:
            return [g.replace(",", "") for g in match.groups()]
    raise AssertionError(f"{row.answer_cell}: no output above the question shows {row.shown!r}")


CHAPTERS = [ROOT / "chapters" / name for name in DISPLAYED]
NUMERIC = re.compile(r"\bcheck_number\(")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_table_covers_every_numeric_checkpoint_and_the_question_states_its_digits(path):
    nb = nbformat.read(path, as_version=4)
    numeric = {
        nb.cells[i - 1].metadata["nbgrader"]["grade_id"]
        for i, c in enumerate(nb.cells)
        if _nbgrader(c).get("grade") and not _nbgrader(c).get("solution") and NUMERIC.search(c.source)
    }
    assert {row.answer_cell for row in DISPLAYED[path.name]} == numeric
    for row in DISPLAYED[path.name]:
        i = _cell_index(nb, row.answer_cell)
        check, question = nb.cells[i + 1].source, nb.cells[i - 1].source
        assert "where=" in check, f"{row.answer_cell}: the check should say where to recompute the answer from"
        if row.digits == "exact":
            assert not re.search(r"significant=|decimals=|rel_tol=", check), f"{row.answer_cell} is a count"
            continue
        assert f"{row.digits}," in check or f"{row.digits})" in check, f"{row.answer_cell}: check is not {row.digits}"
        kind, n = row.digits.split("=")
        asked = {
            "significant": f"{n} significant digits",
            "decimals": "nearest whole number" if n == "0" else f"{n} decimal place",
        }[kind]  # "1 decimal place", "2 decimal places"
        assert asked in question, f"{row.answer_cell}: the question should ask for the {asked}"


def _probe(client: NotebookClient, nb, code: str, check_source: str) -> str:
    """Run ``code`` as the answer cell, then the check cell: "passed" or the check's exception name."""
    cells = [nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell(check_source)]
    for cell in cells:
        nb.cells.append(cell)
        client.execute_cell(cell, len(nb.cells) - 1)
    errors = [o for cell in cells for o in cell.outputs if o.get("output_type") == "error"]
    return errors[0]["ename"] + ": " + errors[0]["evalue"] if errors else "passed"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_displayed_value_passes_and_plausible_mistakes_fail(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if _nbgrader(cell).get("solution"):
            cell.source = ANSWERS[path.name][_nbgrader(cell)["grade_id"]]
    committed = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    problems = []
    with client.setup_kernel():
        for index, cell in enumerate(list(nb.cells)):
            client.execute_cell(cell, index)
        for row in DISPLAYED[path.name]:
            shown = _displayed(nb, row)
            name, check = _variable(committed, row), nb.cells[_cell_index(nb, row.answer_cell) + 1].source
            answer = row.answer.format(*shown)
            right = {"as displayed": answer, "rounded as asked": _rounded(answer, row.digits)}
            for label, expression in right.items():
                if expression is not None:
                    verdict = _probe(client, nb, f"{name} = {expression}", check)
                    if verdict != "passed":
                        problems.append(f"{row.answer_cell} {label} ({expression}) should pass: {verdict}")
            for mistake, expression in row.mistakes.items():
                verdict = _probe(client, nb, f"{name} = {expression.format(*shown)}", check)
                if not verdict.startswith("AssertionError"):
                    problems.append(f"{row.answer_cell} mistake {mistake!r} should fail: {verdict}")
    assert problems == [], "\n".join(problems)
