"""A hostile learner against the grader, round four (issue 40): the grader's own memory and time, namespaces inside
the sandbox, and the lab's truth within the learner's reach. The page's anchors are tests/grading/test_anchors.py.

Each test is an attack a learner's answer cell can make, and the score or the bound it must get, derived by hand:

- an answer of the largest size the grader accepts, forged in the kernel (its answers module replaced), and a flood
  of output: the grader's peak RSS, measured in a process of its own doing the grading, stays within 200 MB of an
  honest run's, and each fetch within 10 s;
- ``unshare -Urm`` (a user namespace, then a 12 GB tmpfs over the 256 MB ``/tmp``), ``ptrace`` and the grader's
  truth module, on the path the grader takes as root (a real kernel) and, as uid 65534, the unprivileged one;
- the lab "Profile a training loop" answered by one call of the package's reference functions per answer, and by
  chapter 05's ``run_instrumented`` for both timers: neither passes; the solution scores 16 as a learner whose
  largest overhead is eval and as one whose largest is checkpoint (its lever from its own balance).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from labtools import learner_copy as lab_learner_copy
from labtools import meta, source_path

from gpucost_lab.course.variants import lab_variant
from gpucost_lab.grading import kernel_command, seccomp, wire
from gpucost_lab.grading.sandbox import Limits
from gpucost_lab.grading.truth import lab_balance

from .helpers import ROOT, grade_shared, needs_sandbox

pytestmark = [pytest.mark.grading, needs_sandbox]
MB = 2**20

# --------------------------------------------------------------------------------------- the grader's own bounds

# The grading, in a process of its own: one notebook (an answer cell, then a test that reads `a` and `b`), run by
# run_submission in a sandboxed kernel; each fetch timed around the grader's own _Kernel.fetch; the peak RSS of the
# whole process (VmHWM) read at the end.
GRADER = textwrap.dedent(
    """
    import json, logging, sys, time
    from pathlib import Path
    from nbformat.v4 import new_code_cell, new_notebook
    from gpucost_lab.grading import run
    from gpucost_lab.grading.sandbox import Limits

    cell, folder = Path(sys.argv[1]).read_text(), Path(sys.argv[2])
    fetch_s, original = [], run._Kernel.fetch

    def timed(self, name):
        start = time.monotonic()
        try:
            return original(self, name)
        finally:
            fetch_s.append(time.monotonic() - start)

    run._Kernel.fetch = timed
    test = "assert a == [1, 2, 3] and b == {'x': 1.5}"
    nb = new_notebook(cells=[new_code_cell(cell), new_code_cell(test, metadata={"nbgrader": {
        "grade": True, "grade_id": "t", "locked": True, "points": 1}})])
    (folder / "submission").mkdir(parents=True)
    run.run_submission(nb, folder / "submission", None, Limits(), 120, 900, False, logging.getLogger("grader"))
    status = Path("/proc/self/status").read_text()
    peak_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
    print(json.dumps({"peak_mb": peak_kb / 1024, "fetch_s": fetch_s, "test": nb.cells[1].outputs,
                      "kept_chars": len(json.dumps(nb.cells[0].outputs))}))
    """
)
HONEST = "a = [1, 2, 3]\nb = {'x': 1.5}\nprint('y' * 100)\n"
# The largest answers the grader accepts, forged: `a` is base64 of 8,000,000 characters of JSON holding 1,000,000
# values (499,990 empty lists and a padding string: 1 + 3 + 2 x 499,990 = 999,984 values); `b` an object whose repr,
# the reply's text/plain, is a list literal of 10.7 M characters, as long as a reply may carry an answer (the grader
# before issue 40 evaluated it with ast.literal_eval). The kernel also prints 100 lines of 100,000 characters.
HOSTILE = textwrap.dedent(
    f"""
    import base64, sys
    N = 499_990
    body = '{{"value":[' + '[],' * N + '"' + 'x' * ({wire.MAX_ANSWER_CHARS} - 14 - 3 * N) + '"]}}'
    assert len(body) == {wire.MAX_ANSWER_CHARS}
    BOMB = base64.b64encode(body.encode()).decode()

    class Literal:
        def __repr__(self):
            return "[" + "[]," * (({wire.MAX_ANSWER_WIRE_CHARS} - 2) // 3) + "]"

    def forged(namespace, name, *rest):
        return BOMB if name == "a" else Literal()

    answers = sys.modules["gpucost_lab.grading.answers"]
    answers.send = answers.call_send = answers.dumps = answers.call_dumps = forged
    for _ in range(100):
        print("y" * 100_000)
    """
)


def grade_in_a_process(tmp_path: Path, cell: str) -> dict:
    tmp_path.mkdir()
    (tmp_path / "cell.py").write_text(cell)
    done = subprocess.run(
        [sys.executable, "-c", GRADER, str(tmp_path / "cell.py"), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_largest_hostile_answers_cost_the_grader_less_than_200_mb_and_10_s_a_fetch(tmp_path):
    honest = grade_in_a_process(tmp_path / "honest", HONEST)
    hostile = grade_in_a_process(tmp_path / "hostile", HOSTILE)
    figures = (
        f"peak RSS honest {honest['peak_mb']:.0f} MB, hostile {hostile['peak_mb']:.0f} MB; fetches honest "
        f"{[round(s, 2) for s in honest['fetch_s']]} s, hostile {[round(s, 2) for s in hostile['fetch_s']]} s"
    )
    print(figures)
    assert honest["test"] == [], honest["test"]  # the honest answers pass
    assert [o["ename"] for o in hostile["test"]] == ["CheckFailed"]  # the forged ones are refused, not graded
    # `a` was within the bounds, read; `b`, no base64 text at all, is what the test names
    assert "`b` was not graded: the kernel sent no readable answer" in hostile["test"][0]["evalue"]
    assert hostile["peak_mb"] - honest["peak_mb"] < 200, figures
    assert len(hostile["fetch_s"]) == 2 and max(hostile["fetch_s"]) <= 10, figures
    # the flood: 10 MB of printed lines, of which one cell keeps at most 10 outputs' worth and a note
    assert hostile["kept_chars"] <= 11 * 20_000, hostile["kept_chars"]


# --------------------------------------------------------------------------------------- no namespaces, no truth

PROBE = textwrap.dedent(
    """
    import ctypes, importlib, os, subprocess
    R = {}
    grab = "mount -t tmpfs -o size=12g none /tmp && df -B1 --output=size /tmp | tail -1"
    done = subprocess.run(["unshare", "-Urm", "sh", "-c", grab], capture_output=True, text=True)
    R["unshare"] = (done.returncode, done.stdout.strip(), done.stderr.strip())
    R["tmp_bytes"] = os.statvfs("/tmp").f_blocks * os.statvfs("/tmp").f_frsize
    libc = ctypes.CDLL(None, use_errno=True)
    R["ptrace"] = (libc.ptrace(0, 0, None, None), ctypes.get_errno())  # PTRACE_TRACEME
    truth = importlib.import_module("gpucost_lab.grading.truth")
    R["truth"] = (hasattr(truth, "lab_timer"), os.listdir(list(truth.__path__)[0]))
    """
)
PROBE_CHECKS = textwrap.dedent(
    """
    code, out, err = R["unshare"]
    assert code != 0 and "Operation not permitted" in err, R["unshare"]
    assert R["tmp_bytes"] == TMP_BYTES, R["tmp_bytes"]
    assert R["ptrace"] == (-1, 1), R["ptrace"]  # EPERM
    assert R["truth"] == (False, []), R["truth"]
    """
)


def test_an_answer_cell_cannot_make_namespaces_mounts_or_traces_nor_reach_the_truth(tmp_path):
    import logging

    from nbformat.v4 import new_code_cell, new_notebook

    from gpucost_lab.grading.run import run_submission

    checks = f"TMP_BYTES = {Limits().tmp_mb * MB}\n" + PROBE_CHECKS
    grade = {"nbgrader": {"grade": True, "grade_id": "probe", "locked": True, "points": 1}}
    nb = new_notebook(cells=[new_code_cell(PROBE), new_code_cell(checks, metadata=grade)])
    (tmp_path / "submission").mkdir()
    run_submission(nb, tmp_path / "submission", None, Limits(), 60, 300, False, logging.getLogger("test"))
    learner, check = nb.cells
    assert not [o for o in learner.outputs if o.get("output_type") == "error"], learner.outputs
    assert check.outputs == [], check.outputs[0].get("evalue")


def _as_nobody(argv: list[str], **kw) -> subprocess.CompletedProcess:
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    return subprocess.run(drop + argv, capture_output=True, text=True, timeout=60, **kw)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: uid 65534 runs the unprivileged path here")
def test_the_unprivileged_sandbox_refuses_unshare_too(tmp_path, monkeypatch):
    # the grader not root: bubblewrap makes a user namespace; inside it, a second one gives back uid 0 and mounts
    monkeypatch.setattr(kernel_command, "privileged", lambda: False)
    program = tmp_path / "filter.bpf"
    seccomp.write(program)
    os.chmod(program, 0o644)
    sandbox = ["bwrap", "--tmpfs", "/tmp", *kernel_command.system_binds(), "--proc", "/proc", "--dev", "/dev"]
    sandbox += [*kernel_command.namespaces(), "--die-with-parent"]
    grab = ["--", "unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=12g none /tmp && echo mounted"]
    control = _as_nobody(sandbox + grab)
    if control.returncode != 0:
        pytest.skip(f"no unprivileged user namespaces here: {control.stderr.strip()}")
    assert control.stdout.strip() == "mounted"  # the attack, where nothing refuses it
    with open(program, "rb") as fd:
        refused = _as_nobody(["bwrap", "--seccomp", str(fd.fileno()), *sandbox[1:], *grab], pass_fds=(fd.fileno(),))
    assert refused.returncode != 0 and "Operation not permitted" in refused.stderr, refused
    # and the graded kernel's command loads that filter on this path as on root's
    argv = kernel_command.kernel_argv(tmp_path, Limits(), {}, None)
    assert argv[argv.index("--seccomp") + 1] == str(kernel_command.SECCOMP_FD)


# --------------------------------------------------------------------------------------- the lab's truth

LAB = "profile_training_loop"
# Every answer one call of the package's reference functions (the lab's truth before issue 40), and the grader's
# truth module tried first: 16 of 16 before. Now: reference_balance and run_uninstrumented are gone from the loop, so
# sections 2, 3, 5 (lever from section 3), 6 and 7 raise; the timer of run_instrumented has the five phases (1
# point) but not the lab's calls; the idle phase, computed from the loop's utilization, is checkpoint in either
# order (a checkpoint lasts 100 s or more, a data or logging call under a second: 1 point); section 8 is a literal
# (1 point). 3 points.
REFERENCE_CALLS = {
    "lab_instrument": "from gpucost_lab.loop.simulated import run_instrumented\ntry:\n"
    "    from gpucost_lab.grading.truth import lab_timer\n    timer = lab_timer(loop)\nexcept ImportError:\n"
    "    timer = run_instrumented(loop, PhaseTimer(clock=loop.clock))",
    "lab_balance": "balance = loop.reference_balance()\n"
    "run_cost_usd = loop.run_uninstrumented() / 3600 * PRICE_PER_HOUR_USD",
    "lab_dominant": "_ref = loop.reference_balance().set_index('phase')\n"
    "overhead_share = float(_ref.loc['eval', 'share'] + _ref.loc['checkpoint', 'share'])\n"
    "largest_overhead_phase = _ref['seconds'].drop('forward_backward').idxmax()",
    "lab_decide": "lever = next(n for n, (p, _) in LOOP_LEVERS.items() if p == largest_overhead_phase)\n"
    "bound_share = float(loop.reference_balance().set_index('phase').loc[LOOP_LEVERS[lever][0], 'share'])",
    "lab_act": "improved = loop.with_lever(lever)\n"
    "after_timer = run_instrumented(improved, PhaseTimer(clock=improved.clock))\n"
    "saving_share = 1 - improved.run_uninstrumented() / loop.run_uninstrumented()",
    "lab_price": "saved_usd_per_run = (loop.run_uninstrumented() - improved.run_uninstrumented()) / 3600 * "
    "PRICE_PER_HOUR_USD\nfits_window = improved.run_uninstrumented() / 3600 <= WINDOW_HOURS",
}
# Chapter 05's run_instrumented for both timers, every other answer the solution's: it logs after eval and
# checkpoint, so the two call-by-call checks fail, lab_instrument_totals (2 points) and lab_saving (2), and nothing
# else (totals, shares and walls are the same in either order; the idle phase is checkpoint in either): 12 of 16,
# below the 13 that pass.
CHAPTER_TIMERS = {
    "lab_instrument": "from gpucost_lab.loop.simulated import run_instrumented\n"
    "timer = run_instrumented(loop, PhaseTimer(clock=loop.clock))",
    "lab_act": "from gpucost_lab.loop.simulated import run_instrumented\nimproved = loop.with_lever(lever)\n"
    "after_timer = run_instrumented(improved, PhaseTimer(clock=improved.clock))\n"
    "saving_share = 1 - after_timer.wall_s / timer.wall_s",
}


def _learner_whose_largest_overhead_is(phase: str) -> str:
    """The first of s0, s1, ... whose job's largest overhead phase is ``phase``, by the grader's truth."""
    for i in range(200):
        seconds = lab_balance(lab_variant(LAB, f"s{i}").loop()).set_index("phase")["seconds"]
        if seconds.drop("forward_backward").idxmax() == phase:
            return f"s{i}"
    raise AssertionError(f"no learner among 200 whose largest overhead is {phase}")


def _submission(folder: Path, answers: dict) -> Path:
    nb = lab_learner_copy(source_path(LAB))  # the solution, as a learner submits it
    for cell in nb.cells:
        if meta(cell).get("grade_id") in answers:
            cell.source = answers[meta(cell)["grade_id"]]
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{LAB}.ipynb")
    return folder / f"{LAB}.ipynb"


@pytest.fixture(scope="module")
def lab_course(tmp_path_factory):
    from gpucost_lab.grading.course import generate_course

    folder = tmp_path_factory.mktemp("lab-course")
    return folder, generate_course(folder / "course", ROOT / "solutions", LAB, 30)


def _grade(lab_course, answers: dict, student: str):
    from gpucost_lab.grading.autograde import autograde_in
    from gpucost_lab.grading.submission import read_submission

    folder, course = lab_course
    path = _submission(folder / f"{student}-{len(answers)}", answers)
    sub = read_submission(path, student, LAB, source_root=ROOT / "solutions")
    return autograde_in(course, sub, feedback=False, forget=True)


def test_every_answer_one_call_of_the_reference_functions_does_not_pass(lab_course):
    report = _grade(lab_course, REFERENCE_CALLS, "carol")
    passing = {"lab_instrument_phases", "lab_idle_phase", "lab_revalidate_check"}
    assert (report.score, report.passed) == (3, False), report.failed
    cells = {c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(source_path(LAB), as_version=4).cells
             if meta(c).get("grade")}  # fmt: skip
    assert {f["cell"] for f in report.failed} == cells - passing


def test_chapter_05_s_run_instrumented_for_the_timers_does_not_pass(lab_course):
    report = _grade(lab_course, CHAPTER_TIMERS, "carol")
    assert (report.score, report.passed) == (12, False)
    failed = {f["cell"]: f["message"] for f in report.failed}
    assert set(failed) == {"lab_instrument_totals", "lab_saving"}
    assert "call by call" in failed["lab_instrument_totals"] and "call by call" in failed["lab_saving"]


@pytest.mark.parametrize("phase", ["eval", "checkpoint"])
def test_the_solution_scores_full_marks_whatever_the_learner_s_largest_overhead(lab_course, phase):
    report = _grade(lab_course, {}, _learner_whose_largest_overhead_is(phase))
    assert (report.score, report.passed, report.failed) == (16, True, ())


# --------------------------------------------------------------------------------------- a notebook nbgrader refuses


def test_a_cell_whose_metadata_nbgrader_refuses_is_dropped_and_the_rest_graded(tmp_path):
    # one extra key in Q2's answer cell failed nbgrader's schema for the whole notebook ("not graded", no score):
    # now that cell alone is dropped, so Q2's test (2 points) fails and the other four earn 3 + 2 + 2 + 1 = 8
    from grading.test_attacks import RIGHT, SOURCE_ROOT, grade_id, notebook

    path = notebook(tmp_path / "sub", RIGHT)
    nb = nbformat.read(path, as_version=4)
    next(c for c in nb.cells if grade_id(c) == "q2_answer").metadata["nbgrader"]["extra"] = 1
    nbformat.write(nb, path)
    report = grade_shared(path, assignment="mini_lab", source_root=SOURCE_ROOT, timeout_s=10)
    assert (report.score, [f["cell"] for f in report.failed]) == (8, ["q2_test"])
    assert any("'q2_answer': nbgrader refuses its metadata" in note and "'extra'" in note for note in report.notes)
