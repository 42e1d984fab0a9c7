"""``gpucost-lab analyze`` in a fresh process whose reader is gone before the first line (as ``| head -0`` would leave
it): it stops quietly, exit status 0, with no traceback and no BrokenPipeError on stderr.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpucost_lab import timeline as tl

pytestmark = pytest.mark.slow


def test_the_cli_stops_quietly_when_its_reader_stops_early():
    path = tl.example_trace("mtia_inference_rank0")
    cli = subprocess.Popen(
        [sys.executable, "-m", "gpucost_lab", "analyze", str(path), "--top", "1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert cli.stdout is not None and cli.stderr is not None
    cli.stdout.close()  # the reader is gone before the first line, as `| head -0` would be
    err = cli.stderr.read().decode()
    assert cli.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err
