"""Checkpoint helpers: a wrong or missing answer fails, a right one passes, the key is not in plain text."""

import json
from importlib import resources

import pytest

from gpucost_lab.course.checkpoints import answer_digest, check_choice, check_number


def test_number_within_tolerance_passes(capsys):
    check_number("idle share", 0.415, 0.41, abs_tol=0.01)
    assert "✓ idle share" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer,message",
    [
        (None, "not answered"),
        (..., "not answered"),
        ("", "not answered"),
        (0.45, "not it"),
        ("0.41", "number"),
        (True, "number"),
        (float("nan"), "number"),
    ],
)
def test_number_missing_or_wrong_fails(answer, message):
    with pytest.raises(AssertionError, match=message):
        check_number("idle share", answer, 0.41, abs_tol=0.01)


def test_relative_tolerance():
    check_number("gap", 20.9, 20.0, rel_tol=0.05)
    with pytest.raises(AssertionError):
        check_number("gap", 21.1, 20.0, rel_tol=0.05)


def test_digest_ignores_case_and_spacing_but_not_content():
    assert answer_digest("q", "  Num_Workers ") == answer_digest("q", "num_workers")
    assert answer_digest("q", "num_workers") != answer_digest("q", "pin_memory")
    assert answer_digest("q1", "x") != answer_digest("q2", "x")  # salted by question


def test_keys_hold_no_plain_answers():
    keys = json.loads((resources.files("gpucost_lab") / "data" / "answer_keys.json").read_text())
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in keys.values())


def test_unknown_question_and_missing_answer():
    with pytest.raises(KeyError, match="question_id"):
        check_choice("no-such-question", "x")
    with pytest.raises(AssertionError, match="not answered"):
        check_choice("no-such-question", None)


def test_check_equal_compares_with_a_computed_value(capsys):
    from gpucost_lab.course.checkpoints import check_equal

    check_equal("who runs", " Batch128-LR-scaled ", "batch128-lr-scaled")
    assert "✓ who runs" in capsys.readouterr().out
    check_equal("count", 2, 2)
    with pytest.raises(AssertionError, match="not it"):
        check_equal("who runs", "fp32-baseline", "batch128-lr-scaled")
    with pytest.raises(AssertionError, match="not answered"):
        check_equal("who runs", None, "x")


# Displayed digits: the answer passes within half a unit of the last digit the chapter shows. By hand:
# 7131.6 to 4 significant digits is "7132", unit 1, so [7131.1, 7132.1] passes;
# 1.403e-09 to 4 significant digits is "1.403e-09", unit 1e-12, so [1.4025e-09, 1.4035e-09] passes;
# 0.635087 to 2 decimal places is "0.64", unit 0.01, so [0.630087, 0.640087] passes;
# 9.996 to 3 significant digits is "10.0" (rounding carries into a new digit), unit 0.1, so [9.946, 10.046] passes.
@pytest.mark.parametrize(
    "answer,expected,digits,passes",
    [
        (7132, 7131.6, {"significant": 4}, True),
        (7131.6, 7131.6, {"significant": 4}, True),
        (7130, 7131.6, {"significant": 4}, False),
        (7131, 7131.6, {"significant": 4}, False),
        (1.403e-9, 1.403e-09, {"significant": 4}, True),
        (1.404e-9, 1.403e-09, {"significant": 4}, False),
        (1.4e-9, 1.403e-09, {"significant": 4}, False),
        (7132, 7131.6, {"decimals": 0}, True),
        (7131, 7131.6, {"decimals": 0}, False),
        (0.64, 0.635087, {"decimals": 2}, True),
        (0.635, 0.635087, {"decimals": 2}, True),
        (0.63, 0.635087, {"decimals": 2}, False),
        (63.5, 0.635087, {"decimals": 2}, False),
        (0.6, 0.635087, {"decimals": 2}, False),
        (10.0, 9.996, {"significant": 3}, True),
        (10.04, 9.996, {"significant": 3}, True),
        (10.1, 9.996, {"significant": 3}, False),
        (5.25, 5.246293, {"significant": 3}, True),
        (5.246293e-6, 5.246293, {"significant": 3}, False),
        (6.03, 6.028, {"decimals": 2}, True),
        (603, 6.028, {"decimals": 2}, False),
    ],
)
def test_displayed_digits(answer, expected, digits, passes):
    if passes:
        check_number("q", answer, expected, **digits)
    else:
        with pytest.raises(AssertionError, match="not it"):
            check_number("q", answer, expected, **digits)


def test_a_halfway_value_passes_its_own_display_despite_float_error():
    # 0.125 is exact in binary and prints as "0.12" (half to even), but 0.125 - 0.12 is 0.0050000000000000044
    assert f"{0.125:.2f}" == "0.12"
    check_number("q", 0.12, 0.125, decimals=2)
    check_number("q", 7132, 7131.5, decimals=0)


def test_integers_stay_exact_without_a_tolerance():
    check_number("count", 12, 12)
    with pytest.raises(AssertionError):
        check_number("count", 13, 12)
    with pytest.raises(AssertionError):
        check_number("count", 12.0000001, 12)


def test_the_message_names_the_digits_and_where_to_recompute():
    with pytest.raises(AssertionError, match=r"not it to 4 significant digits; recompute it from the `share` column$"):
        check_number("05.1", 0.69, 0.6852, significant=4, where="the `share` column")
    with pytest.raises(AssertionError, match=r"to the nearest whole number; recompute it from the chapter's figures$"):
        check_number("01.1", 7131, 7131.6, decimals=0)
    with pytest.raises(AssertionError) as failure:
        check_number("01.2", 1, 2)
    assert "table" not in str(failure.value)  # without where, it does not claim there is a table


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"significant": 0}, "significant"),
        ({"significant": 2.0}, "significant"),
        ({"significant": True}, "significant"),
        ({"decimals": -1}, "decimals"),
        ({"decimals": "2"}, "decimals"),
        ({"significant": 3, "decimals": 2}, "significant or decimals"),
        ({"rel_tol": -0.1}, "rel_tol"),
        ({"abs_tol": float("nan")}, "abs_tol"),
        ({"where": ""}, "where"),
        ({"where": 3}, "where"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        check_number("q", 1.0, 1.0, **kwargs)
    with pytest.raises(ValueError, match="expected"):
        check_number("q", 1.0, float("inf"))


def test_check_equal_says_where_to_look():
    from gpucost_lab.course.checkpoints import check_equal

    with pytest.raises(AssertionError, match=r"look again at the registry table in section 4$"):
        check_equal("who runs", "a", "b", where="the registry table in section 4")
    with pytest.raises(AssertionError) as failure:
        check_equal("who runs", "a", "b")
    assert "table" not in str(failure.value)


# A measured figure passes anywhere inside its 95% interval, the ends rounded outward to the digits asked. By hand:
# (0.6024, 0.5734, 0.6329) to 2 decimals: the ends go to 0.57 and 0.64, so [0.57, 0.64] passes;
# (4.065e-9, 3.96e-9, 4.173e-9) to 2 significant digits: the ends go to 3.9e-9 and 4.2e-9.
@pytest.mark.parametrize(
    "answer,estimate,digits,passes",
    [
        (0.60, (0.6024, 0.5734, 0.6329), {"decimals": 2}, True),
        (0.57, (0.6024, 0.5734, 0.6329), {"decimals": 2}, True),
        (0.64, (0.6024, 0.5734, 0.6329), {"decimals": 2}, True),
        (0.6295, (0.6024, 0.5734, 0.6329), {"decimals": 2}, True),  # a second run's figure inside this interval
        (0.56, (0.6024, 0.5734, 0.6329), {"decimals": 2}, False),
        (0.65, (0.6024, 0.5734, 0.6329), {"decimals": 2}, False),
        (1 / 0.6024, (0.6024, 0.5734, 0.6329), {"decimals": 2}, False),  # inverted
        (60.24, (0.6024, 0.5734, 0.6329), {"decimals": 2}, False),  # a percentage
        (4.1e-9, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, True),
        (3.9e-9, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, True),
        (4.2e-9, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, True),
        (3.8e-9, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, False),
        (4.3e-9, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, False),
        (4.065e-3, (4.065e-9, 3.96e-9, 4.173e-9), {"significant": 2}, False),  # per million samples
    ],
)
def test_a_measured_figure_passes_inside_its_interval(answer, estimate, digits, passes):
    from gpucost_lab.course.checkpoints import check_in_interval

    if passes:
        check_in_interval("q", answer, estimate, **digits)
    else:
        with pytest.raises(AssertionError, match="outside this run's 95% interval"):
            check_in_interval("q", answer, estimate, **digits)


@pytest.mark.parametrize(
    "estimate,digits,field",
    [
        ((0.7, 0.5734, 0.6329), {"decimals": 2}, "estimate"),  # the value outside its own interval
        ((0.6, 0.5734, float("inf")), {"decimals": 2}, "ci95_high"),
        ((0.6, 0.5734, 0.6329), {}, "digits"),
        ((0.6, 0.5734, 0.6329), {"decimals": -1}, "decimals"),
    ],
)
def test_a_measured_check_refuses_a_bad_estimate_or_digits(estimate, digits, field):
    from gpucost_lab._validate import InputError
    from gpucost_lab.course.checkpoints import check_in_interval

    with pytest.raises(InputError) as error:
        check_in_interval("q", 0.6, estimate, **digits)
    assert error.value.field == field


def test_a_miss_is_an_assertion_error_shown_in_one_line():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from gpucost_lab.course.checkpoints import Miss

    assert issubclass(Miss, AssertionError) and Miss("02.1: not it")._render_traceback_() == ["✗ 02.1: not it"]
    shell = InteractiveShell.instance()
    with capture_output() as shown:
        result = shell.run_cell("from gpucost_lab.course.checkpoints import check_choice\ncheck_choice('01.4', 'x')")
    assert isinstance(result.error_in_exec, AssertionError)  # a failed cell, as nbgrader counts it
    lines = [line for line in (shown.stdout + shown.stderr).splitlines() if line.strip()]
    assert lines == ["✗ 01.4: 'x' is not it; reread the section above and try again"], lines


def test_checkpoint_computes_the_truth_from_the_chapters_names(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from gpucost_lab.course import measured_answers

    # an empty store of earlier intervals: the chapters run in this session printed their own 07.2 intervals
    monkeypatch.setenv(measured_answers.STORE_ENV, str(tmp_path / "store.json"))

    from gpucost_lab.course.checkpoints import checkpoint
    from gpucost_lab.stats import Interval

    def run(code: str, **names) -> None:
        exec(code, {"checkpoint": checkpoint, **names})

    # 07.2: the persistent-workers change is results[1]; its interval (0.6024, 0.5734, 0.6329) accepts [0.57, 0.64]
    results = [None, SimpleNamespace(comparison=SimpleNamespace(interval=Interval(0.6024, 0.5734, 0.6329)))]
    run('checkpoint("07.2", 0.58)', results=results)
    with pytest.raises(AssertionError, match="07.2 .*outside"):
        run('checkpoint("07.2", 0.66)', results=results)
    # 04.1: the ledger's answer, to the unit: a ledger stand-in whose max_microbatch() is 56
    run('checkpoint("04.1", 56)', ledger=SimpleNamespace(max_microbatch=lambda checkpointing=False: 56))
    with pytest.raises(AssertionError, match="04.1"):
        run('checkpoint("04.1", 57)', ledger=SimpleNamespace(max_microbatch=lambda checkpointing=False: 56))
    # 06.4: a text, case and spacing ignored
    run('checkpoint("06.4", " Batch128 ")', registry=SimpleNamespace(current=lambda: "batch128"))
    # a choice goes to its salted key: 01.4's is "false" (the chapter argues the first steps are warm-up)
    run('checkpoint("01.4", "false")')


def test_checkpoint_says_what_to_run_when_the_chapter_has_not_run():
    from gpucost_lab.course.checkpoints import checkpoint

    with pytest.raises(AssertionError, match=r"02.1 idle share: run the chapter's cells above first \('stall'"):
        exec('checkpoint("02.1", 0.4)', {"checkpoint": checkpoint})
    with pytest.raises(AssertionError, match="not answered"):
        exec('checkpoint("02.1", None)', {"checkpoint": checkpoint})
    with pytest.raises(KeyError, match="question_id"):
        checkpoint("99.9", 1)
