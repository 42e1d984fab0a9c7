"""Tests of gpucost_lab.grading.answers: answers as plain data, what the grader rebuilds and what it refuses, against
values built by hand; and that the kernel loads this module without the rest of the grading package, whose
``__init__`` still offers every name it lists (tested here, the one reason it loads its modules lazily).

The learner's kernel can send any JSON text at all; whatever it sends, the grader either rebuilds a plain value
(or a course type, by its own constructor) or a ``Rejected`` answer that fails the checks reading it. It never
raises: an exception there would make the whole submission ungradable.
"""

import json
import subprocess
import sys

import pytest

from gpucost_lab.grading import answers
from gpucost_lab.loop.phases import PhaseTimer

TIMER = "gpucost_lab.loop.phases.PhaseTimer"


def sent_timer(records) -> str:
    return json.dumps({"value": {"__type__": TIMER, "records": records}})


def test_a_phase_timer_comes_back_with_its_records():
    timer = PhaseTimer(clock=iter([0.0, 1.0, 1.0, 3.5, 3.5, 4.0]).__next__, synchronize=lambda: None)
    for phase in ("data", "forward_backward", "data"):
        with timer.phase(phase):
            pass
    back = answers.loads(answers.dumps({"timer": timer}, "timer"), "timer")
    assert isinstance(back, PhaseTimer) and type(back) is PhaseTimer
    assert back._records == [("data", 0.0, 1.0), ("forward_backward", 1.0, 3.5), ("data", 3.5, 4.0)]
    assert all(type(start) is float and type(end) is float for _, start, end in back._records)


@pytest.mark.parametrize(
    "record,why",
    [
        (["data", True, 2.0], "a phase record that is not"),  # a bool is not a number of seconds
        (["data", 1, "2"], "a phase record that is not"),
        ([7, 1.0, 2.0], "a phase record that is not"),  # the phase is a name
        (["data", 2.0, 1.0], "a phase record that is not"),  # ends before it starts
        (["data", 1.0], "not enough values"),
        (["data", 1.0, 2.0, 3.0], "too many values"),
        ("data", "a sequence sent as something else"),
    ],
)
def test_a_malformed_phase_record_is_rejected(record, why):
    back = answers.loads(sent_timer([["data", 0.0, 1.0], record]), "timer")
    assert isinstance(back, answers.Rejected) and why in back.why, back


def test_numbers_too_large_for_a_float_are_rejected_not_raised():
    huge = "1" + "0" * 400  # valid JSON; float() of it overflows
    back = answers.loads(f'{{"value": {{"__type__": "{TIMER}", "records": [["data", 1, {huge}]]}}}}', "timer")
    assert isinstance(back, answers.Rejected) and "OverflowError" in back.why
    assert answers.loads(f'{{"value": {huge}}}', "n") == int(huge)  # a plain int of any size is still an int


def test_the_kernel_loads_the_answer_module_without_nbgrader():
    # The sandboxed kernel imports this module before the learner's first cell; through the grading package it
    # used to load nbgrader, nbformat and jsonschema too (seconds of start-up in every graded kernel).
    code = (
        "import sys, gpucost_lab.grading.answers; "
        "print(sorted(m for m in ('nbgrader', 'nbformat', 'jsonschema', 'nbclient') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_the_grading_package_still_offers_its_names():
    from gpucost_lab import grading

    assert set(grading.__all__) <= set(dir(grading))
    assert grading.grade.__module__ == "gpucost_lab.grading.autograde"
    assert grading.PASS_MARK_PERCENT == 80 and grading.points_to_pass(16) == 12.8
    with pytest.raises(AttributeError):
        grading.no_such_name  # noqa: B018
