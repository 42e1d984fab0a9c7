"""``gpucost-lab predict`` and ``profile-to-cost`` (gpucost_lab.cli.pricing), in this process: the course question's
figures by hand (chapter 03) and bad input in one line with exit status 2. The installed command measuring the
worked example is in test_pricing_installed_command.py.
"""

import pytest

from .helpers import assert_one_line_naming, run_json


def test_predict_course_question(capsys):
    out = run_json(capsys, "predict", "--throughput-gain", "0.20", "--steps-change", "0.25")
    assert out["relative_cost"] == pytest.approx(1.25 / 1.20)
    assert out["verdict"] == "more expensive"
    priced = run_json(
        capsys,
        "predict",
        "--throughput-gain",
        "0.20",
        "--steps-change",
        "0.25",
        "--price-per-hour",
        "2.10",
        "--baseline-hours",
        "8",
        "--window-hours",
        "8",
    )
    assert priced["baseline_cost_usd"] == pytest.approx(16.80)
    assert priced["candidate_cost_usd"] == pytest.approx(17.50)
    assert priced["candidate_fits_window"] is False


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["predict", "--throughput-gain", "inf", "--steps-change", "0.1"], "--throughput-gain"),
        (["predict", "--throughput-gain", "0.2", "--steps-change", "0.1", "--price-per-hour", "0"], "--price-per-hour"),
        (["predict", "--throughput-gain", "0.2", "--steps-change", "-1"], "--steps-change"),
        (["profile-to-cost", "--device", "tpu"], "--device"),
        (["profile-to-cost", "--price-per-hour", "-2"], "--price-per-hour"),
        (["profile-to-cost", "--repeats", "1"], "--repeats"),
        (
            [
                "predict",
                "--throughput-gain",
                "0.2",
                "--steps-change",
                "0.1",
                "--price-per-hour",
                "1e308",
                "--baseline-hours",
                "10",
                "--json",
            ],
            "--price-per-hour",
        ),  # the cost overflows
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, flag):
    assert_one_line_naming(capsys, argv, flag)
