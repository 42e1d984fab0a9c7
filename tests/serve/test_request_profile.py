"""profile_request: one request's phases under torch.profiler. A profile holds the four phases and the model's
operators, the pause lasts at least its stated time on the request the server would pause, the trace loads with the
phase labels, torch gets its thread count back, and bad input names its field. (Which phase is the slowest, over
three profiles each: tests/serve/test_request_profile_phases.py.)
"""

import pytest
import torch

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.request_profile import PROFILED_PHASES, TOP_OPS_COLUMNS, profile_request
from gpucost_lab.timeline import load_trace

HEALTHY = ServeConfig()


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
