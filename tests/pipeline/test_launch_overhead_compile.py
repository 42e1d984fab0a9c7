"""gpucost_lab.pipeline.launch_overhead's torch.compile for real (chapter 07): a cold compile into an empty cache folder
(seconds: the generated C++ is compiled), then the same graph again from the cache. (The pricing by hand:
tests/pipeline/test_launch_overhead.py.)
"""

from __future__ import annotations

import pytest
import torch

from gpucost_lab import InputError
from gpucost_lab.pipeline.launch_overhead import ManySmallOps

pytestmark = pytest.mark.slow


def test_compiling_into_a_fresh_cache_then_reusing_it(monkeypatch, tmp_path):
    """A cold compile into an empty folder (seconds: the generated C++ is compiled), then the same graph again."""
    from gpucost_lab.pipeline.launch_overhead import CACHE_ENV, COLD_RECORD, compile_model

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # restored after the test
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    compiled, cold = compile_model(ManySmallOps(layers=2, width=8), x, tmp_path)
    assert not cold.cache_hit and cold.cold_compile_s == cold.compile_s and (tmp_path / COLD_RECORD).exists()
    assert cold.max_abs_difference < 1e-5
    torch._dynamo.reset()
    _, warm = compile_model(ManySmallOps(layers=2, width=8), x, tmp_path)
    assert warm.cache_hit and warm.cold_compile_s == cold.compile_s
    with pytest.raises(InputError):
        compile_model(torch.nn.Linear(2, 2), x, tmp_path)
