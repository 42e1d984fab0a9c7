"""The A100 AlexNet trace's host-to-device copies are the one-time upload of the weights (chapter 02, section 5).

The hand count: torchvision's AlexNet (torchvision/models/alexnet.py) has five convolutions and three linear
layers, a weight and a bias each, 16 float32 tensors:

    conv1  64 x 3 x 11 x 11 = 23,232      + 64        conv2  192 x 64 x 5 x 5 = 307,200  + 192
    conv3  384 x 192 x 3 x 3 = 663,552    + 384       conv4  256 x 384 x 3 x 3 = 884,736 + 256
    conv5  256 x 256 x 3 x 3 = 589,824    + 256       fc6    4096 x 9216 = 37,748,736    + 4096
    fc7    4096 x 4096 = 16,777,216       + 4096      fc8    1000 x 4096 = 4,096,000     + 1000

61,100,840 parameters, 244,403,360 bytes: what the trace's 16 pageable copies add up to. The same trace's 20
"Stream Wait Event"s are device-side: the host's cudaStreamWaitEvent calls return at once.
"""

from __future__ import annotations

import gzip
import json

import pytest
from torch import nn

from gpucost_lab import InputError
from gpucost_lab.timeline import example_trace, load_trace, memcpy_summary, sync_points
from gpucost_lab.timeline.weight_upload import alexnet, weight_copies

ALEXNET_TENSORS = [
    64 * 3 * 11 * 11, 64, 192 * 64 * 5 * 5, 192, 384 * 192 * 3 * 3, 384, 256 * 384 * 3 * 3, 256,
    256 * 256 * 3 * 3, 256, 4096 * 9216, 4096, 4096 * 4096, 4096, 1000 * 4096, 1000,
]  # fmt: skip


@pytest.fixture(scope="module")
def trace():
    return load_trace(example_trace("a100_alexnet_train"))


def test_the_model_is_torchvision_s_alexnet_by_hand():
    model = alexnet()
    assert [p.numel() for p in model.parameters()] == ALEXNET_TENSORS
    assert sum(ALEXNET_TENSORS) == 61_100_840
    assert all(p.is_meta for p in model.parameters())  # nothing allocated


def test_the_pageable_bytes_are_the_parameter_bytes(trace):
    summary = memcpy_summary(trace)
    htod = summary[summary["direction"] == "HtoD"]
    assert int(htod["total_bytes"].sum()) == 61_100_840 * 4 == 244_403_360
    assert int(htod["count"].sum()) == len(ALEXNET_TENSORS)


def test_each_copy_is_one_weight_tensor_in_order_inside_the_upload_annotation(trace):
    table = weight_copies(trace, alexnet())
    assert list(table["bytes"]) == [4 * n for n in ALEXNET_TENSORS]
    assert table["same_bytes"].all()
    assert set(table["copy"]) == {"Memcpy HtoD (Pageable -> Device)"}
    assert set(table["annotation"]) == {"[param|cuda]"}  # the benchmark's "move the model to cuda" phase
    assert list(table["parameter"][:2]) == ["features.0.weight", "features.0.bias"]


def test_the_16_stream_syncs_are_the_16_blocking_uploads(trace):
    # each upload is aten::to -> cudaMemcpyAsync -> cudaStreamSynchronize: a blocking copy from pageable memory
    ev = trace.events
    memcpy_calls = ev[(ev["kind"] == "runtime") & (ev["name"] == "cudaMemcpyAsync")].sort_values("ts_us")
    syncs = ev[(ev["kind"] == "runtime") & (ev["name"] == "cudaStreamSynchronize")].sort_values("ts_us")
    assert len(memcpy_calls) == len(syncs) == 16
    ends = (memcpy_calls["ts_us"] + memcpy_calls["dur_us"]).to_numpy()
    starts = syncs["ts_us"].to_numpy()
    assert (starts >= ends).all() and (starts[:-1] < memcpy_calls["ts_us"].to_numpy()[1:]).all()  # interleaved
    assert (sync_points(trace)["name"] == "cudaStreamSynchronize").sum() == 16


def test_a_model_that_is_not_the_trace_s_does_not_match(trace):
    table = weight_copies(trace, nn.Linear(4, 2))
    assert not table["same_bytes"].any()
    assert list(table["parameter"][:2]) == ["weight", "bias"] and table["parameter"].iloc[2] == ""


def test_bad_input_names_the_field(trace):
    with pytest.raises(InputError) as err:
        weight_copies("trace.json", alexnet())
    assert err.value.field == "trace"
    with pytest.raises(InputError) as err:
        weight_copies(trace, "alexnet")
    assert err.value.field == "model"


def test_a_stream_wait_event_orders_streams_on_the_device_and_the_host_does_not_wait(trace):
    # each device-side "Stream Wait Event" is the work of one cudaStreamWaitEvent call (same correlation id); the
    # host's call returns within a few microseconds (it queues the wait: CUDA Runtime API, cudaStreamWaitEvent),
    # while the stream it names waits on another stream's event
    with gzip.open(example_trace("a100_alexnet_train"), "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in raw if e["name"] == "cudaStreamWaitEvent"}
    waits = [e for e in raw if e["name"] == "Stream Wait Event"]
    assert len(waits) == 20 and all(w["args"]["correlation"] in calls for w in waits)
    assert max(c["dur"] for c in calls.values()) <= 5  # microseconds: the host is not held
    on_device = sync_points(trace)
    assert (on_device["name"] == "Stream Wait Event").sum() == 20
    assert set(on_device.loc[on_device["name"] == "Stream Wait Event", "lane"]) <= {"stream 7", "stream 20"}
