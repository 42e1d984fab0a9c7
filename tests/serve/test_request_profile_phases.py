"""profile_request: which of one request's phases is the slowest under torch.profiler, as properties that hold on a busy
machine. Each compares phases of the same profiles, and where a preemption could stretch one short phase, on the
smallest of three profiles per phase (a preemption rarely lands in the same phase of all three): the serialization stall
multiplies the serialize phase (and reads every value of several rows), and without it a heavy model's forward pass is
the slowest. (One profile's contents, the pause and bad input: tests/serve/test_request_profile.py.)
"""

import pytest

from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.request_profile import PROFILED_PHASES, profile_request

pytestmark = pytest.mark.slow

STALLED = ServeConfig(stall="serialize")  # 1,000 outputs made JSON one value at a time
HEALTHY = ServeConfig()
# A model whose forward pass outweighs its output's JSON: six 2048-wide layers (about 25 MB of weights read per
# request) against 16 output values.
MODEL_HEAVY = ServeConfig(hidden_width=2048, layers=6, output_width=16)


def _least_ms(config: ServeConfig, profiles: int = 3) -> dict[str, float]:
    """Each phase's smallest time over ``profiles`` profiles of one request."""
    runs = [profile_request(config).phases_ms for _ in range(profiles)]
    return {phase: min(run[phase] for run in runs) for phase in PROFILED_PHASES}


def _next_after(phases_ms: dict[str, float], phase: str) -> float:
    return max(ms for name, ms in phases_ms.items() if name != phase)


def test_the_serialization_stall_is_the_slowest_phase_by_a_large_factor():
    stalled = _least_ms(STALLED)
    healthy = _least_ms(HEALTHY)
    assert max(stalled, key=stalled.get) == "serialize"
    assert stalled["serialize"] > 3 * _next_after(stalled, "serialize")
    # the same model and outputs: the stall alone multiplies the serialize phase (one .item() and one json.dumps
    # a value, against one json.dumps of the list)
    assert stalled["serialize"] > 3 * healthy["serialize"]


def test_without_the_stall_a_heavy_model_is_the_slowest_phase():
    least = _least_ms(MODEL_HEAVY)
    assert max(least, key=least.get) == "model" != "serialize"
    assert least["model"] > 3 * least["serialize"]


def test_several_rows_make_one_request_whose_stall_reads_every_value():
    # 4 rows of 1,000 outputs, each value read out of the tensor on its own: 4 x 1,000 = 4,000 aten::item calls,
    # and 2 in preprocess (bool() of the finiteness check, float() of the largest absolute input)
    ops = profile_request(STALLED, rows=4, warmup=0, top=1000).top_ops.set_index("name")
    assert ops.loc["aten::item", "calls"] == 4 * STALLED.output_width + 2
    assert ops.loc["aten::addmm", "calls"] == STALLED.layers  # the 4 rows run as one batch
