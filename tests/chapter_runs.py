"""Each chapter executed once per kind of run; the chapter tests read these runs (the ``chapter_run`` fixture).

Three kinds, each in a fresh kernel and a scratch working directory (a chapter must not depend on its own folder),
and each with a store of measured intervals (``measured_answers``) of its own whose contents the run states, never
one that earlier tests filled, so the runs pass or fail alike in any order:

- "answered": the reference answers of ``chapter_answers.ANSWERS`` in the answer cells, an empty store. Chapters
  whose verdicts rest on timings (``UNDER_LOAD``: 03, 06, 07 and 08) run with two CPU-bound programs busy beside
  them, the chapter's under-load checks appended as a last cell. Then, in the same kernel and with the busy programs
  stopped, every row of ``chapter_answers.DISPLAYED`` is probed: the answer as displayed, the answer rounded as
  asked, and each plausible mistake go into a copy of the answer cell, followed by its check cell. A measured row is
  probed once more with a store seeded with an interval wide enough to hold the answer and every mistake (what a
  busy run may print): the answer still passes and every mistake still fails.
- "spoiled": each reference answer's value perturbed (numbers tripled and shifted, anything else replaced), an empty
  store: the spoiled run checks that a wrong answer lies outside the interval the run prints. Then, in the same
  kernel, each answer cell as committed (its placeholder) goes in once more, followed by its check cell
  (``ChapterRun.as_committed``): what a learner who ran the chapter without answering sees. That stands for a run of
  the chapter as committed because no other cell reads a name an answer cell binds, and a check cell reads only its
  own answer's (tests/course/test_chapters.py checks both on the sources), so the placeholders change nothing else.
- "re-run": a chapter with measured questions (``RERUN``) run again after its answered run, under the same load, each
  numeric answer cell holding as a literal the figure the answered run displayed (``DISPLAYED``), as a learner who
  read it on the first Run All would have typed it; the other answers are the reference ones. Its store holds what
  the answered run kept (a copy of that run's store), as a learner's second Run All finds the first one's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from chapter_answers import ANSWERS, DISPLAYED, Shown
from labtools import ROOT, is_check, meta
from nbclient import NotebookClient

from gpucost_lab.course import measured_answers
from gpucost_lab.course.questions import QUESTIONS, Measured

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
KINDS = ("answered", "spoiled", "re-run")
CELL_TIMEOUT_S = 600  # per cell: a guard against a hang, not against a slow or busy machine
# The limit of a test that reads these runs (pytest-timeout; the suite's default is 300 s): the first test of a
# chapter makes its run, chapter 08's about a minute quiet and several times that on busy cores. A hung cell fails
# the test by name within it.
RUN_LIMIT_S = 900
BUSY_PROGRAMS = 2

UNDER_LOAD = {
    "03_price_the_result.ipynb": """
for _est in [*cost_per_sample.values(), *(m.units_per_s for m in runs.values())]:
    assert 0 < _est.ci95_low <= _est.geomean <= _est.ci95_high, _est
for _iv in [*to_target.values(), cost_ratio.interval, comparison.interval]:
    assert 0 < _iv[1] <= _iv[0] <= _iv[2], _iv
_table = to_target["candidate"].value / to_target["baseline"].value
_printed = relative_cost(gain, samples_change)  # section 4's "relative cost" (r is reused by section 5)
assert abs(_printed - _table) <= 1e-9 * _table and abs(cost_ratio.ratio - _table) <= 1e-9 * _table, (_printed, _table)
assert cost_ratio.verdict in ("inconclusive", "cheaper" if _table < 1 else "more expensive"), cost_ratio.reason
print("under load:", comparison.reason, "|", cost_ratio.reason)
""",
    "06_release_the_result.ipynb": """
for _name, _p in plans.items():
    _low, _high = _p.decision.cost_ratio_ci95
    assert 0 < _low <= _p.decision.cost_ratio <= _high, (_name, _p.decision.cost_ratio_ci95)
    assert _p.decision.checks["cost"] == (_p.cost.verdict == "cheaper"), _name
_quiet = {"batch128-lr-scaled": "promote", "bf16-autocast": "fallback", "tiny-model": "fallback"}
for _name, _p in plans.items():
    assert _p.decision.action == _quiet[_name] or (_p.decision.action == "fallback"
                                                   and _p.cost.verdict == "inconclusive"), (_name, _p.decision.reasons)
print("under load:", {_name: (_p.decision.action, _p.cost.verdict) for _name, _p in plans.items()})
""",
    "07_feed_the_device.ipynb": """
_quiet = {0: "slower", 1: "faster"}  # num_workers 0 -> 1 (workers restarted every epoch); persistent workers
for _i, _r in enumerate(results):
    _c = _r.comparison
    if _c is None:
        assert _r.verdict.startswith("no effect") and _r.cost_verdict == "same cost", _r.change
        continue
    assert 0 < _c.ci95_low <= _c.time_ratio <= _c.ci95_high, (_r.change, _c.interval)
    assert _c.verdict != "faster" or _c.ci95_high < 1, (_r.change, _c.interval)
    assert _c.verdict != "slower" or _c.ci95_low > 1, (_r.change, _c.interval)
    _price = {"faster": "cheaper", "slower": "more expensive"}.get(_c.verdict, "inconclusive")
    assert _r.cost_verdict == _price, (_r.change, _r.cost_verdict)
    assert _c.verdict in (_quiet.get(_i, _c.verdict), "inconclusive"), (_r.change, _c.verdict)
assert compile_cmp.verdict in ("faster", "inconclusive"), compile_cmp.reason
print("under load:", [(_r.change, _r.verdict) for _r in results], "| compile:", compile_cmp.verdict)
""",
    "08_profile_the_service.ipynb": """
for _v in (fix.p50, fix.p99, batching.p50, batching.p99):
    _r, _low, _high = _v.interval
    assert 0 <= _low <= _r <= _high, _v.reason
    assert _v.verdict != "faster" or _high < 1, _v.reason
    assert _v.verdict != "slower" or _low > 1, _v.reason
assert fix.p50.verdict in ("faster", "inconclusive"), fix.p50.reason  # the fix never reads as a slowdown
assert batching.p50.verdict in ("slower", "inconclusive"), batching.p50.reason  # batching waits for company
assert open_p99 > 2 * closed_p99, (open_p99, closed_p99)  # the closed loop hides the pause, loaded or not
for _point, _word in sustained.verdicts:
    assert _word != "meets" or _point.ci95_high_ms < SLO_MS, (_point, _word)
    assert _word != "misses" or _point.ci95_low_ms > SLO_MS, (_point, _word)
assert noisiest_phase(per_phase) == "preprocess", per_phase  # the pause sits in preprocess, busy machine or not
print("under load:", fix.p50.verdict, batching.p50.verdict, f"{open_p99:.0f} vs {closed_p99:.1f} ms", sustained.qps)
""",
}


@dataclass
class ChapterRun:
    """One executed chapter: the notebook with its outputs, and what the probes of its displayed values found."""

    path: Path
    kind: str
    nb: nbformat.NotebookNode
    busy_programs: int = 0  # CPU-bound programs that ran beside the chapter's cells
    under_load_check: int | None = None  # index of the appended under-load check cell
    probes: int = 0  # answers and mistakes put into an answer cell, each followed by its check cell
    probe_problems: list[str] = field(default_factory=list)
    store: Path | None = None  # the run's own store of measured intervals (measured_answers)
    as_committed: dict[str, list] = field(default_factory=dict)  # a spoiled run's: answer cell -> its check's errors

    def errors(self) -> list[int]:
        """Indices of the code cells that raised."""
        return [i for i, c in enumerate(self.nb.cells) if c.cell_type == "code" and _error_outputs(c)]

    def error_text(self) -> str:
        return "\n".join(f"cell {i}: {_error_outputs(self.nb.cells[i])[0].get('evalue', '')}" for i in self.errors())

    def checks(self) -> set[int]:
        """Indices of the chapter's graded check cells."""
        return {i for i, c in enumerate(self.nb.cells) if is_check(c)}

    def shown(self) -> str:
        """Everything the chapter printed or displayed as text."""
        return "\n".join(_text(c) for c in self.nb.cells if c.cell_type == "code")


def _error_outputs(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _text(cell) -> str:
    return "".join(
        o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
        for o in cell.get("outputs", [])
    )


def spoiled(reference: str) -> str:
    """The reference answer with its value spoiled: numbers tripled and shifted (a measured figure's interval on a
    busy machine has held 1.5x its centre), anything else replaced."""
    name = reference.split("=", 1)[0].strip()
    return (
        f"{reference}\n{name} = ({name} * 3 + 1) if isinstance({name}, (int, float)) "
        f"and not isinstance({name}, bool) else 'not the answer'"
    )


@contextlib.contextmanager
def busy_programs(n: int):
    """``n`` CPU-bound programs running for the duration of the block, always stopped."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def run_chapter(
    path: Path, kind: str, workdir: Path, answers: dict[str, str] | None = None, seed_store: Path | None = None
) -> ChapterRun:
    """Execute the chapter at ``path`` as ``kind`` says, in ``workdir`` (``answers``: a re-run's, by grade_id), with
    a store of measured intervals of its own: empty, or a copy of ``seed_store`` (a re-run's)."""
    assert kind in KINDS and (answers is not None) == (kind == "re-run") == (seed_store is not None), kind
    nb = nbformat.read(path, as_version=4)
    answers = answers if answers is not None else ANSWERS.get(path.name, {})
    for cell in nb.cells:
        gid = meta(cell).get("grade_id")
        if meta(cell).get("solution") and gid in answers:
            cell.source = spoiled(answers[gid]) if kind == "spoiled" else answers[gid]
    run = ChapterRun(path, kind, nb, store=workdir / f"{path.stem}-measured-store.json")
    if seed_store is not None and seed_store.exists():
        shutil.copyfile(seed_store, run.store)
    if kind == "answered" and path.name in UNDER_LOAD:
        nb.cells.append(nbformat.v4.new_code_cell(UNDER_LOAD[path.name]))
        run.under_load_check, run.busy_programs = len(nb.cells) - 1, BUSY_PROGRAMS
    if kind == "re-run":
        run.busy_programs = BUSY_PROGRAMS if path.name in UNDER_LOAD else 0
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    with client.setup_kernel(env={**os.environ, measured_answers.STORE_ENV: str(run.store)}):
        with busy_programs(run.busy_programs):
            for index, cell in enumerate(list(nb.cells)):
                client.execute_cell(cell, index)
        if kind == "answered" and path.name in DISPLAYED:
            run.probes, run.probe_problems = _probe_displayed(client, nb, path, workdir)
        if kind == "spoiled":
            run.as_committed = _probe_as_committed(client, nb, path)
    return run


def _probe_as_committed(client: NotebookClient, nb, path: Path) -> dict[str, list]:
    """Each answer cell as committed, then its check cell, in the run's kernel: the errors of the pair, by grade_id."""
    committed = nbformat.read(path, as_version=4)
    found = {}
    for i, cell in enumerate(committed.cells):
        if meta(cell).get("solution") and meta(cell).get("grade_id"):
            assert is_check(committed.cells[i + 1]), f"{path.name}: cell {i + 1} is not the check of cell {i}"
            found[meta(cell)["grade_id"]] = _probe_errors(client, nb, [cell.source, committed.cells[i + 1].source])
    return found


# --------------------------------------------------------------------------------------------------
# the probes of the displayed values (tests/course/test_checkpoint_display.py)


def cell_index(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if meta(c).get("grade_id") == grade_id)


def question_of(answer_cell: str):
    """The question an answer cell answers ("ch07_q2_answer" -> QUESTIONS["07.2"])."""
    chapter, number = answer_cell.removeprefix("ch").removesuffix("_answer").split("_q")
    return QUESTIONS[f"{chapter}.{number}"]


def rounded(expression: str, answer_cell: str) -> str | None:
    """``expression`` rounded as the question asks, or None for an exact count."""
    q = question_of(answer_cell)
    if getattr(q, "significant", None) is not None:
        return f"float(format({expression}, '.{q.significant}g'))"
    if getattr(q, "decimals", None) is not None:
        return f"round({expression}, {q.decimals})"
    return None


def _displayed(nb, row: Shown) -> list[str]:
    """The figures the chapter displays above the question, commas dropped."""
    if row.shown is None:
        return []
    for cell in nb.cells[: cell_index(nb, row.answer_cell)]:
        match = re.search(row.shown, _text(cell), re.MULTILINE | re.DOTALL)
        if match:
            return [g.replace(",", "") for g in match.groups()]
    raise AssertionError(f"{row.answer_cell}: no output above the question shows {row.shown!r}")


def _probe_errors(client: NotebookClient, nb, sources: list[str]) -> list:
    """Run ``sources`` as cells after the chapter's own, which the run keeps alone: the error outputs, in order."""
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    for cell in cells:
        nb.cells.append(cell)
        client.execute_cell(cell, len(nb.cells) - 1)
    del nb.cells[-len(cells) :]
    return [o for cell in cells for o in _error_outputs(cell)]


def _probe(client: NotebookClient, nb, code: str, check_source: str) -> str:
    """Run ``code`` as the answer cell, then the check cell: "passed" or the check's exception name and message."""
    errors = _probe_errors(client, nb, [code, check_source])
    return errors[0]["ename"] + ": " + errors[0]["evalue"] if errors else "passed"


MISSED = ("AssertionError", "Miss")  # a check's exception names when the answer is wrong


def _probe_displayed(client: NotebookClient, nb, path: Path, workdir: Path) -> tuple[int, list[str]]:
    """How many probes ran, and each row's right answers that fail and mistakes that do not fail with AssertionError."""
    committed = nbformat.read(path, as_version=4)
    probes, problems = 0, []
    for row in DISPLAYED[path.name]:
        try:
            shown = _displayed(nb, row)
        except AssertionError as e:
            problems.append(str(e))
            continue
        i = cell_index(nb, row.answer_cell)
        name, check = committed.cells[i].source.split("=", 1)[0].strip(), nb.cells[i + 1].source
        answer = row.answer.format(*shown)
        right = {"as displayed": answer, "rounded as asked": rounded(answer, row.answer_cell)}
        mistakes = {mistake: expression.format(*shown) for mistake, expression in row.mistakes.items()}
        n, found = _probe_row(client, nb, name, check, right, mistakes)
        probes, problems = probes + n, problems + [f"{row.answer_cell} {p}" for p in found]
        if isinstance(question_of(row.answer_cell), Measured):
            store = workdir / f"{row.answer_cell}-seeded-store.json"
            with _seeded_store(client, nb, question_of(row.answer_cell).label, [answer, *mistakes.values()], store):
                n, found = _probe_row(client, nb, name, check, {"as displayed": answer}, mistakes)
            probes, problems = probes + n, problems + [f"{row.answer_cell} (wide interval kept) {p}" for p in found]
    return probes, problems


def _probe_row(client, nb, name: str, check: str, right: dict, mistakes: dict) -> tuple[int, list[str]]:
    """Each right answer must pass and each mistake fail with AssertionError: the probes run, and what went wrong."""
    probes, problems = 0, []
    for label, expression in right.items():
        if expression is not None:
            probes += 1
            verdict = _probe(client, nb, f"{name} = {expression}", check)
            if verdict != "passed":
                problems.append(f"{label} ({expression}) should pass: {verdict}")
    for mistake, expression in mistakes.items():
        probes += 1
        verdict = _probe(client, nb, f"{name} = {expression}", check)
        if not verdict.startswith(MISSED):
            problems.append(f"mistake {mistake!r} should fail: {verdict}")
    return probes, problems


def _run_code(client: NotebookClient, nb, code: str) -> None:
    errors = _probe_errors(client, nb, [code])
    assert not errors, errors


@contextlib.contextmanager
def _seeded_store(client: NotebookClient, nb, label: str, expressions: list[str], store: Path):
    """The kernel reads a store holding one interval for ``label`` that spans the values of ``expressions`` (the
    answer and its mistakes) by a factor 2 either side, kept with no mistakes of its own run; then its own again."""
    values = f"[float({'), float('.join(expressions)})]"
    _run_code(
        client,
        nb,
        "import os as _os\nfrom gpucost_lab.course import measured_answers as _ma\n"
        f"_own_store, _os.environ[_ma.STORE_ENV] = _os.environ[_ma.STORE_ENV], {str(store)!r}\n"
        f"_v = {values}\n"
        f"_ma.remember({label!r}, min(_v) / 2 if min(_v) > 0 else 2 * min(_v), 2 * max(_v))",
    )
    assert len(json.loads(store.read_text())[label]) == 1
    try:
        yield
    finally:
        _run_code(client, nb, "_os.environ[_ma.STORE_ENV] = _own_store")


RERUN = sorted(
    {name for name, rows in DISPLAYED.items() for row in rows if isinstance(question_of(row.answer_cell), Measured)}
)


def typed_answers(answered: ChapterRun) -> dict[str, str]:
    """The answers a learner types on a second Run All: each displayed figure as a literal, else the reference."""
    answers = dict(ANSWERS[answered.path.name])
    for row in DISPLAYED[answered.path.name]:
        if row.shown is None:
            continue
        name = answers[row.answer_cell].split("=", 1)[0].strip()
        value = eval(row.answer.format(*_displayed(answered.nb, row)), {})  # an expression over literals only
        answers[row.answer_cell] = f"{name} = {value!r}"
    return answers


class ChapterRuns:
    """The runs of this test session, each made the first time a test asks for it."""

    def __init__(self, tmp_path_factory):
        self._tmp = tmp_path_factory
        self._runs: dict[tuple[str, str], ChapterRun] = {}

    def __call__(self, path: Path | str, kind: str) -> ChapterRun:
        path = ROOT / "chapters" / path if isinstance(path, str) else path
        key = (path.name, kind)
        if key not in self._runs:
            workdir = self._tmp.mktemp(f"{path.stem}-{kind.replace(' ', '-')}")
            answers, seed = None, None
            if kind == "re-run":
                answered = self(path, "answered")
                answers, seed = typed_answers(answered), answered.store
            self._runs[key] = run_chapter(path, kind, workdir, answers, seed)
        return self._runs[key]
