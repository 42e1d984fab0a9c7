"""Checkpoint helpers: a wrong or missing answer fails, a right one passes, the key is not in plain text."""
import json
from importlib import resources

import pytest

from gpucost_lab.checkpoints import answer_digest, check_choice, check_number


def test_number_within_tolerance_passes(capsys):
    check_number("idle share", 0.415, 0.41, abs_tol=0.01)
    assert "✓ idle share" in capsys.readouterr().out


@pytest.mark.parametrize("answer,message", [(None, "not answered"), (..., "not answered"), ("", "not answered"),
                                            (0.45, "not it"), ("0.41", "number"), (True, "number"),
                                            (float("nan"), "number")])
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
    from gpucost_lab.checkpoints import check_equal

    check_equal("who runs", " Batch128-LR-scaled ", "batch128-lr-scaled")
    assert "✓ who runs" in capsys.readouterr().out
    check_equal("count", 2, 2)
    with pytest.raises(AssertionError, match="not it"):
        check_equal("who runs", "fp32-baseline", "batch128-lr-scaled")
    with pytest.raises(AssertionError, match="not answered"):
        check_equal("who runs", None, "x")
