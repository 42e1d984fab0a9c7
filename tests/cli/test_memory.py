"""``gpucost-lab ledger`` (gpucost_lab.cli.memory): JSON keys and values from the course text (chapter 04, the
worked ledger), and bad input in one line with exit status 2. fix-oom's own tests are in tests/memory/test_fixes.py.
"""

import pytest

from gpucost_lab.cli.main import main

from .helpers import assert_one_line_naming, run_json


def test_ledger_course_example(capsys):
    out = run_json(capsys, "ledger", "--microbatch", "32")
    assert set(out) >= {"budget_gb", "peak_gb", "fits", "headroom_gb", "max_microbatch", "blocks"}
    assert out["budget_gb"] == pytest.approx(21.6)
    assert out["peak_gb"] == pytest.approx(14.08)
    assert out["headroom_gb"] == pytest.approx(7.52)
    assert out["fits"] is True and out["max_microbatch"] == 54
    assert [b["block"] for b in out["blocks"]] == list(range(1, 11))
    assert [b["activations_gb"] for b in out["blocks"]] == pytest.approx([1.088 * k for k in range(1, 11)])
    assert set(out["blocks"][0]) == {"block", "activations_gb", "total_gb", "state"}


def test_ledger_over_budget(capsys):
    out = run_json(capsys, "ledger", "--microbatch", "60", "--device-gb", "24", "--reserve", "0.1")
    assert out["fits"] is False
    assert out["peak_gb"] == pytest.approx(3.2 + 0.34 * 60)
    assert out["blocks"][-1]["state"] == "over budget"


def test_ledger_human_output_names_the_verdict(capsys):
    assert main(["ledger", "--microbatch", "55"]) == 0
    assert "does NOT fit" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["ledger", "--microbatch", "0"], "--microbatch"),
        (["ledger", "--microbatch", "8", "--reserve", "1"], "--reserve"),
        (["ledger", "--microbatch", "8", "--device-gb", "-24"], "--device-gb"),
        (["ledger", "--microbatch", "8", "--static-gb", "nan"], "--static-gb"),
        (["ledger", "--microbatch", "eight"], "--microbatch"),
        (["ledger"], "--microbatch"),
        (["ledger", "--microbatch", "8", "--device-gb", "1e308"], "--device-gb"),  # the largest microbatch overflows
        (["ledger", "--microbatch", "8", "--blocks", "10000000"], "--blocks"),  # at most 1,000 rows
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, flag):
    assert_one_line_naming(capsys, argv, flag)
