"""benchmarks/gpu_record.py stops a step past its limit (a fresh process that sleeps for a minute, stopped after one
second) and its record says so. (The records and their rows otherwise: tests/project/test_gpu_results.py.)
"""

import json
import sys

import pytest

from .helpers import ROOT, load

pytestmark = pytest.mark.slow

record = load("gpu_record_under_test", ROOT / "benchmarks" / "gpu_record.py")


def test_a_step_past_its_limit_is_stopped_and_says_so(tmp_path):
    code = "import time; print('half way', flush=True); time.sleep(60)"
    status = record.main([str(tmp_path), "gpu_slow", "--timeout-s", "1", "--", sys.executable, "-c", code])
    saved = json.loads((tmp_path / "gpu_slow.json").read_text())
    assert status == 124 and saved["exit_status"] == 124 and saved["timed_out"] is True
    assert saved["result"] is None and "half way" in saved["stdout_tail"]
    assert saved["wall_s"] < 30  # stopped at about 1 s, not left to sleep out its 60
