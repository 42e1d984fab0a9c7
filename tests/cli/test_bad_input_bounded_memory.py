"""A trace nested 100,000 levels deep, analyzed by the CLI in a fresh process whose data is capped at 1 GiB
(RLIMIT_DATA): one line and exit status 2, in bounded memory. The nesting limit itself is tested in this process in
test_bad_input.py."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from .helpers import DEEP

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA bounds anonymous memory on Linux")
def test_analyze_of_deep_nesting_is_one_line_and_exit_2_in_bounded_memory(tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * DEEP + b"]" * DEEP)
    assert path.stat().st_size == 200_000
    limit = 1 << 30  # 1 GiB of data: the CLI needs about 0.4 GiB; the unbounded parse failed with MemoryError here

    def bounded():
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "gpucost_lab", "analyze", str(path)],
        capture_output=True,
        text=True,
        preexec_fn=bounded,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr == (
        f"gpucost-lab analyze: error: {path}: JSON nested more than 64 levels deep; allowed: at "
        f"most 64 levels of arrays and objects inside one another\n"
    )
