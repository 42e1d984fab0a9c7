"""``python -m gpucost_lab``, in a fresh process (which imports torch): the package runs the CLI assembled in
gpucost_lab.cli.main (tests/cli/test_main.py tests it in this process)."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_python_dash_m_runs_the_cli():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpucost_lab",
            "predict",
            "--throughput-gain",
            "0.25",
            "--steps-change",
            "0.2",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert json.loads(proc.stdout)["verdict"] == "cheaper"
