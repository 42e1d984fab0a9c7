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


def test_ledger_same_figures_as_before(capsys):
    out = run_json(capsys, "ledger", "--microbatch", "32")
    assert out["peak_gb"] == 3.2 + 0.34 * 32 and out["budget_gb"] == 24 * 0.9
    assert out["max_microbatch"] == 54 and out["fits"] is True and out["headroom_gb"] == pytest.approx(7.52)
    assert (out["accumulation_steps"], out["global_batch"], out["step_time_factor"]) == (1, 32, 1.0)
    assert out["static_gb"] == 3.2 and out["activation_gb_per_sample"] == 0.34
    assert "recompute" not in out and "static" not in out


def test_ledger_accumulation_keeps_the_microbatch_peak(capsys):
    plain = run_json(capsys, "ledger", "--microbatch", "60")
    out = run_json(capsys, "ledger", "--microbatch", "60", "--accumulation", "2")
    assert out["peak_gb"] == plain["peak_gb"] == pytest.approx(23.6)
    assert out["global_batch"] == 120 and out["accumulation_steps"] == 2
    assert out["step_time_factor"] == pytest.approx(1.15)


def test_ledger_bf16_adamw_one_billion_parameters(capsys):
    out = run_json(
        capsys,
        "ledger",
        "--precision",
        "bf16-mixed",
        "--optimizer",
        "adamw",
        "--params",
        "1000000000",
        "--microbatch",
        "8",
    )
    assert out["static_gb"] == pytest.approx(16.0)  # 1e9 x (2 + 2 + 4 + 4 + 4) B
    s = out["static"]
    assert s["bytes_per_parameter"] == 16 and s["parameters"] == 10**9
    assert (s["weights_gb"], s["gradients_gb"], s["master_weights_gb"], s["optimizer_state_gb"]) == pytest.approx(
        (2.0, 2.0, 4.0, 8.0)
    )
    assert out["activation_gb_per_sample"] == pytest.approx(0.17)  # the fp32 0.34 at 2 bytes an element
    assert out["peak_gb"] == pytest.approx(16 + 0.17 * 8)  # 17.36
    assert out["max_microbatch"] == 32  # floor((21.6 - 16) / 0.17) = floor(32.9)


def test_ledger_global_batch_and_recompute(capsys):
    out = run_json(capsys, "ledger", "--global-batch", "60")
    assert (out["accumulation_steps"], out["microbatch"], out["global_batch"]) == (2, 30, 60)
    assert out["peak_gb"] == pytest.approx(13.4) and out["step_time_factor"] == pytest.approx(1.15)
    sel = run_json(capsys, "ledger", "--global-batch", "60", "--recompute", "selective")
    assert (sel["accumulation_steps"], sel["microbatch"]) == (1, 60)
    assert sel["peak_gb"] == pytest.approx(10.748) and sel["recomputation"] == "selective"
    assert sel["max_microbatch"] == 146 and sel["step_time_factor"] == pytest.approx(1.027)
    fixed = run_json(capsys, "ledger", "--global-batch", "60", "--accumulation", "3")
    assert (fixed["microbatch"], fixed["global_batch"]) == (20, 60) and fixed["peak_gb"] == pytest.approx(10.0)
