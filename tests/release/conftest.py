"""The contract every gate, candidate and registry test measures against (tests/release/test_report.py has its own)."""

import pytest

from gpucost_lab.measure.contract import BenchmarkContract


@pytest.fixture(scope="module")
def contract():
    return BenchmarkContract.capture(inputs=[(64, 32)], device="cpu", repeats=3, model_name="MLP")
