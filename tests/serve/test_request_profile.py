"""profile_request: one request's phases under torch.profiler, as properties that hold on a busy machine.

Each measured property compares phases of the same profiles, and where a preemption could stretch one short phase,
on the smallest of three profiles per phase (a preemption rarely lands in the same phase of all three). Faults are
checked by what they must do: the serialization stall multiplies the serialize phase, the pause lasts at least its
stated time.
"""

import pytest
import torch

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.request_profile import PROFILED_PHASES, TOP_OPS_COLUMNS, profile_request
from gpucost_lab.timeline import load_trace

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


@pytest.mark.slow
def test_the_serialization_stall_is_the_slowest_phase_by_a_large_factor():
    stalled = _least_ms(STALLED)
    healthy = _least_ms(HEALTHY)
    assert max(stalled, key=stalled.get) == "serialize"
    assert stalled["serialize"] > 3 * _next_after(stalled, "serialize")
    # the same model and outputs: the stall alone multiplies the serialize phase (one .item() and one json.dumps
    # a value, against one json.dumps of the list)
    assert stalled["serialize"] > 3 * healthy["serialize"]


@pytest.mark.slow
def test_without_the_stall_a_heavy_model_is_the_slowest_phase():
    least = _least_ms(MODEL_HEAVY)
    assert max(least, key=least.get) == "model" != "serialize"
    assert least["model"] > 3 * least["serialize"]


def test_the_profile_holds_the_four_phases_and_the_models_operators():
    profile = profile_request(HEALTHY, warmup=1)
    assert list(profile.phases_ms) == list(PROFILED_PHASES)
    assert all(ms > 0 for ms in profile.phases_ms.values())
    table = profile.table()
    assert list(table["phase"]) == list(PROFILED_PHASES) and list(table.columns) == ["phase", "ms", "share"]
    assert table["share"].sum() == pytest.approx(1.0)
    assert table.set_index("phase")["ms"].to_dict() == profile.phases_ms
    assert profile.slowest_phase() == max(profile.phases_ms, key=profile.phases_ms.get)
    ops = profile.top_ops
    assert list(ops.columns) == TOP_OPS_COLUMNS and len(ops) <= 10
    assert list(ops["self_cpu_ms"]) == sorted(ops["self_cpu_ms"], reverse=True)
    assert not set(ops["name"]) & set(PROFILED_PHASES)  # the labels are the phases, not operators
    everything = profile_request(HEALTHY, warmup=1, top=1000).top_ops.set_index("name")
    # three Linear layers on a 2-D batch: one aten::addmm each
    assert everything.loc["aten::addmm", "calls"] == HEALTHY.layers
    text = profile.text()
    assert "slowest phase: " + profile.slowest_phase() in text and "stall 'none'" in text


def test_the_pause_falls_on_the_request_the_server_would_pause():
    # pause_every=4: the server pauses its 4th request; after 3 warm-up requests the profiled one is the 4th
    paused = profile_request(ServeConfig(stall="pause", pause_every=4, pause_ms=50.0), warmup=3)
    assert paused.phases_ms["preprocess"] >= 50.0  # a sleep lasts at least its time
    assert paused.slowest_phase() == "preprocess"


def test_the_trace_loads_with_the_phase_labels(tmp_path):
    path = tmp_path / "request.json"
    profile_request(HEALTHY, warmup=1, trace_path=path)
    events = load_trace(path).events
    labels = events[events["name"].isin(PROFILED_PHASES)]
    assert sorted(labels["name"]) == sorted(PROFILED_PHASES) and set(labels["kind"]) == {"annotation"}
    # in the server's order, one after another
    ordered = labels.sort_values("ts_us")
    assert list(ordered["name"]) == list(PROFILED_PHASES)
    ends = (ordered["ts_us"] + ordered["dur_us"]).tolist()
    assert all(end <= start for end, start in zip(ends[:-1], ordered["ts_us"].tolist()[1:]))


def test_torch_gets_its_thread_count_back():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        profile_request(HEALTHY, warmup=0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"config": {"stall": "none"}}, "config"),
        ({"rows": 0}, "rows"),
        ({"rows": 10_000}, "rows"),
        ({"warmup": -1}, "warmup"),
        ({"seed": -1}, "seed"),
        ({"top": 0}, "top"),
        ({"trace_path": "/no/such/folder/trace.json"}, "trace_path"),
    ],
)
def test_bad_input_names_its_field(kwargs, field):
    kwargs = {"config": HEALTHY, **kwargs}
    with pytest.raises(InputError) as err:
        profile_request(kwargs.pop("config"), **kwargs)
    assert err.value.field == field


@pytest.mark.slow
def test_several_rows_make_one_request_whose_stall_reads_every_value():
    # 4 rows of 1,000 outputs, each value read out of the tensor on its own: 4 x 1,000 = 4,000 aten::item calls,
    # and 2 in preprocess (bool() of the finiteness check, float() of the largest absolute input)
    ops = profile_request(STALLED, rows=4, warmup=0, top=1000).top_ops.set_index("name")
    assert ops.loc["aten::item", "calls"] == 4 * STALLED.output_width + 2
    assert ops.loc["aten::addmm", "calls"] == STALLED.layers  # the 4 rows run as one batch
