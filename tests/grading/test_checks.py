"""Tests of gpucost_lab.grading.checks: which cells are tests and setup, what a learner may see of a test, and the
grader's run of one test on answers given here as plain values, against sources whose names, lines and outcomes are
read off by hand.
"""

from __future__ import annotations

import os
import sys

from nbformat.v4 import new_code_cell, new_markdown_cell

from gpucost_lab.grading import answers
from gpucost_lab.grading.checks import (
    Checks,
    LearnerError,
    bound_names,
    error_output,
    free_names,
    is_test,
    is_trusted_setup,
    split_hidden,
    visible_source,
)

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"  # nbgrader's markers, as a lab's author writes them


def _cell(make, **nbgrader):
    return make("x = 1", metadata={"nbgrader": {"grade_id": "c", **nbgrader}})


def test_a_test_is_a_graded_code_cell_that_is_not_an_answer():
    assert is_test(_cell(new_code_cell, grade=True, solution=False, locked=True))
    assert not is_test(_cell(new_code_cell, grade=True, solution=True))  # a code answer graded by hand
    assert not is_test(_cell(new_code_cell, grade=False, solution=True))  # an answer cell
    assert not is_test(_cell(new_markdown_cell, grade=True, solution=False))
    assert not is_test(new_code_cell("assert True"))  # no nbgrader metadata


def test_trusted_setup_is_a_locked_code_cell_that_is_neither_test_nor_answer():
    assert is_trusted_setup(_cell(new_code_cell, grade=False, solution=False, locked=True))
    assert not is_trusted_setup(_cell(new_code_cell, grade=False, solution=False, locked=False))  # the learner's own
    assert not is_trusted_setup(_cell(new_code_cell, grade=True, solution=False, locked=True))  # a test
    assert not is_trusted_setup(_cell(new_markdown_cell, grade=False, solution=False, locked=True))
    assert not is_trusted_setup(new_code_cell("PRICE = 2.0"))


def test_the_hidden_lines_are_blanked_and_numbered_from_1():
    source = f"assert a == 1\n{BEGIN}\nassert a == 2\nassert b\n{END}\nassert c"
    code, hidden = split_hidden(source)
    # lines 3 and 4 lie between the markers; the markers become empty lines, so every line keeps its number
    assert hidden == {3, 4}
    assert code == "assert a == 1\n\nassert a == 2\nassert b\n\nassert c"
    assert split_hidden("assert a == 1") == ("assert a == 1", set())


def test_a_learner_sees_the_visible_checks_and_one_line_where_hidden_ones_were():
    source = (
        "from lab_helpers import close_enough\n"
        "assert close_enough(to_gb(2e9), 2.0)\n"
        "# + checks that run only when the lab is graded\n"
        f"{BEGIN}\nassert close_enough(to_gb(3e9), 3.0)\n{END}\n"
        "assert to_gb(0) == 0\n"
        f"{BEGIN}\nassert close_enough(to_gb(5e8), 0.5)\n{END}\n"
    )
    assert visible_source(source) == (
        "from lab_helpers import close_enough\n"
        "assert close_enough(to_gb(2e9), 2.0)\n"
        "# (hidden checks ran here when this lab was graded; they are not shown)\n"
        "assert to_gb(0) == 0"
    )
    assert visible_source("assert ok\n\n") == "assert ok"


def test_the_names_a_test_reads_are_those_it_neither_binds_nor_has_as_builtins():
    source = (
        "import math\n"
        "from lab_helpers import close_enough\n"
        "x = 2\n"
        "def twice(v):\n"
        "    return 2 * v\n"
        "assert close_enough(step_time_s(x, steps), 0.5)\n"
        "assert abs(twice(rate) - math.pi) < 1 and len(items) == step_time_s(1, 1)\n"
    )
    names = free_names(source)
    # bound: math, close_enough, x, twice and its argument v; builtins: abs, len. step_time_s is read twice.
    assert sorted(names) == ["items", "rate", "step_time_s", "steps"]
    assert len(names) == len(set(names))


def test_the_names_a_cell_binds_at_its_top_level():
    source = (
        "import os.path, json\n"
        "import numpy as np\n"
        "from math import pi\n"
        "x, (y, z) = 1, (2, 3)\n"
        "total: int = 0\n"
        "count += 1\n"
        "for i in range(3):\n"
        "    inner = i\n"
        "with open('f') as fh:\n"
        "    pass\n"
        "def f():\n"
        "    local = 1\n"
        "class C:\n"
        "    attr = 1\n"
    )
    # a function's or a class's own names are not the cell's
    assert bound_names(source) == {"os", "json", "np", "pi", "x", "y", "z", "total", "count", "i", "inner", "fh"} | {
        "f",
        "C",
    }


def test_a_failed_check_is_one_error_output_with_its_reason():
    out = error_output("the check `assert x == 1` failed")
    assert (out.output_type, out.ename, out.evalue) == ("error", "CheckFailed", "the check `assert x == 1` failed")
    assert out.traceback == ["CheckFailed: the check `assert x == 1` failed"]


def _checks(tmp_path, values, call=None, learner=""):
    """Checks whose kernel holds ``values``; the names fetched are kept in ``fetched``."""
    fetched = []

    def fetch(name):
        fetched.append(name)
        return values[name]

    return Checks(fetch, call, tmp_path, learner), fetched


def _evalue(outputs) -> str:
    (out,) = outputs
    return out.evalue


def test_a_test_reads_the_setup_s_values_in_the_grader_and_the_answers_from_the_kernel(tmp_path):
    checks, fetched = _checks(tmp_path, {"answer": 6, "PRICE": 0.0})
    assert checks.run_setup("PRICE = 2.0") is None
    assert checks.check("q1_test", "assert answer == 3 * PRICE") == []  # 6 == 3 * 2.0
    assert fetched == ["answer"]  # the kernel's PRICE (0.0) is never asked for


def test_why_a_test_failed_quotes_a_visible_check_and_never_a_hidden_one(tmp_path):
    checks, _ = _checks(tmp_path, {"answer": 5})
    assert _evalue(checks.check("q1_test", "assert answer == 6")) == "the check `assert answer == 6` failed"
    said = checks.check("q1_test", "assert answer == 6, 'off by one'")
    assert _evalue(said) == "the check `assert answer == 6` failed: off by one"
    hidden = f"assert answer > 0\n{BEGIN}\nassert answer == 6\n{END}"
    assert _evalue(checks.check("q1_test", hidden)) == "a hidden check failed"
    raised = checks.check("q1_test", "assert answer.upper() == 'X'")
    assert _evalue(raised) == (
        "the check `assert answer.upper() == 'X'` raised AttributeError: 'int' object has no attribute 'upper'"
    )
    assert _evalue(checks.check("q1_test", "assert (")).startswith("the test of q1_test could not be read: ")
    # a lab's expect(condition, message), across lines, is quoted like an assert: its condition, then what it said
    lab = "from gpucost_lab.course.checkpoints import expect\nexpect(answer\n       == 6, 'off by one')"
    assert _evalue(checks.check("q1_test", lab)) == "the check `expect(answer == 6)` failed: off by one"


def test_an_answer_that_is_not_plain_data_fails_with_its_reason(tmp_path):
    checks, _ = _checks(tmp_path, {"answer": answers.Rejected("answer", "a set is not plain data")})
    assert _evalue(checks.check("q1_test", "assert answer")) == "`answer` was not graded: a set is not plain data"


def test_a_learner_s_function_is_called_through_the_kernel(tmp_path):
    asked = []

    def call(name, args, kwargs):
        asked.append((name, args, kwargs))
        if args == (0,):
            raise LearnerError("twice(...) the kernel did not answer within 1 s")
        return 2 * args[0]

    checks, _ = _checks(tmp_path, {"twice": answers.LearnerFunction("twice")}, call)
    assert checks.check("q1_test", "assert twice(21, scale=1) == 42") == []
    assert asked == [("twice", (21,), {"scale": 1})]
    assert _evalue(checks.check("q1_test", "assert twice(0) == 0")) == (
        "the check `assert twice(0) == 0` could not use your answer: twice(...) the kernel did not answer within 1 s"
    )


def test_a_name_the_failed_setup_should_have_bound_is_not_fetched_from_the_kernel(tmp_path):
    checks, fetched = _checks(tmp_path, {"RATE": 1.0})
    assert checks.run_setup("PRICE = 2.0\nRATE = 1 / 0") == "ZeroDivisionError: division by zero"
    assert _evalue(checks.check("q1_test", "assert RATE > 0")) == (
        "the lab's setup did not define 'RATE' when it ran in the grader"
    )
    assert checks.check("q2_test", "assert PRICE == 2.0") == []  # bound before the error
    assert fetched == []


def test_the_setup_runs_in_the_lab_s_folder_with_the_learner_s_id_and_leaves_nothing_behind(tmp_path, monkeypatch):
    from gpucost_lab.course.variants import LEARNER_ENV

    monkeypatch.delenv(LEARNER_ENV, raising=False)
    (tmp_path / "lab_helpers.py").write_text("def close_enough(a, b):\n    return abs(a - b) < 1e-9\n")
    here = os.getcwd()
    checks, _ = _checks(tmp_path, {"answer": 0.3}, learner="ada")
    setup = (
        "import os\nfrom lab_helpers import close_enough\n"
        "WHO = os.environ['GPUCOST_LAB_LEARNER']\nHERE = os.getcwd()"  # the variable the course's labs read
    )
    assert checks.run_setup(setup) is None
    assert (checks.setup_ns["WHO"], checks.setup_ns["HERE"]) == ("ada", str(tmp_path))
    assert checks.check("q1_test", "assert close_enough(answer, 0.1 + 0.2)") == []  # 0.1 + 0.2 is not 0.3 exactly
    assert os.getcwd() == here and LEARNER_ENV not in os.environ
    assert "lab_helpers" not in sys.modules and str(tmp_path) not in sys.path
