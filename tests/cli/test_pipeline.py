"""``gpucost-lab pipeline`` (gpucost_lab.cli.pipeline): bad input is one line naming the flag with exit status 2,
before anything runs. The command's runs (its JSON rows and text, and the README documenting every key) are in
test_pipeline_runs.py.
"""

from __future__ import annotations

import pytest

from gpucost_lab.cli.main import main

from . import helpers


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["--workers", "-1"], "--workers"),
        (["--workers", "65"], "--workers"),
        (["--workers", "two"], "--workers"),
        (["--batches", "0"], "--batches"),
        (["--repeats", "1"], "--repeats"),
        (["--batch-size", "0"], "--batch-size"),
        (["--prefetch-factor", "0"], "--prefetch-factor"),
        (["--prefetch-factor", "2", "--workers", "0"], "--prefetch-factor"),  # no workers to set
        (["--persistent-workers", "--workers", "0"], "--persistent-workers"),
        (["--decode-passes", "-1"], "--decode-passes"),
        (["--price-per-hour", "0"], "--price-per-hour"),
        (["--price-per-hour", "nan"], "--price-per-hour"),
        (["--device", "tpu"], "--device"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_and_exit_2(capsys, argv, flag):
    line = helpers.assert_one_line_naming(capsys, ["pipeline", *argv, "--json"], flag)
    assert "--num-workers" not in line  # simulate's flag, not this command's


def test_simulate_still_names_its_own_num_workers_flag(capsys, tmp_path):
    # registering this command's flags must not rename another command's
    assert main(["simulate", "--num-workers", "-1", "-o", str(tmp_path / "x.json")]) == 2
    assert "--num-workers" in capsys.readouterr().err
