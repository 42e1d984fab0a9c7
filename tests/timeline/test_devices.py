"""The device, its name and the rank, as the trace says them (gpucost_lab.timeline.devices, load_trace).

Expected values are read from the files by plain JSON scans (``deviceProperties``, ``distributedInfo``, the
categories and runtime names), never from the code under test.
"""

from __future__ import annotations

import gzip
import json

import pytest

from gpucost_lab import timeline as tl

from .helpers import X, gpu, load_events, raw_events, write_trace


def _document(name):
    with gzip.open(tl.example_trace(name), "rt") as f:
        return json.load(f)


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("a100_alexnet_train", "cuda"),
        ("a100_cuda_event_sync", "cuda"),
        ("sampled_rank0_gpu", "cuda"),
        ("sampled_rank1_gpu", "cuda"),
        ("mi250_rocm_minitoy_train", "rocm"),
        ("mtia_inference_rank0", "mtia"),
        ("cpu_only_small", "cpu"),
    ],
)
def test_each_real_trace_is_named_after_its_device(name, device):
    trace = tl.load_trace(tl.example_trace(name))
    doc = _document(name)
    assert trace.device == device
    assert trace.accelerated is (device != "cpu")
    props = doc.get("deviceProperties") or []
    assert trace.device_name == (props[0]["name"] if props else None)
    info = doc.get("distributedInfo") or {}
    assert (trace.rank, trace.world_size) == (info.get("rank"), info.get("world_size"))


def test_the_rocm_and_mtia_names_come_from_what_the_files_hold():
    mi250 = raw_events(tl.example_trace("mi250_rocm_minitoy_train"))
    assert any(e.get("cat") == "cuda_runtime" and e["name"] == "hipLaunchKernel" for e in mi250)
    assert _document("mi250_rocm_minitoy_train")["deviceProperties"][0]["name"].startswith("AMD")
    mtia = raw_events(tl.example_trace("mtia_inference_rank0"))
    assert {"mtia_ccp_events", "mtia_runtime"} <= {e.get("cat") for e in mtia}


def test_mtia_device_events_are_its_work_and_event_waits_are_waits():
    path = tl.example_trace("mtia_inference_rank0")
    device = [e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") == "mtia_ccp_events"]
    events = tl.load_trace(path).events
    on_device = events[events["cat"] == "mtia_ccp_events"]
    waits = sum(e["name"] == "event_wait" for e in device)
    assert (on_device["kind"] == "sync").sum() == waits > 0
    assert (on_device["kind"] == "kernel").sum() == len(device) - waits
    assert on_device["lane"].str.startswith("stream ").all()
    assert (events.loc[events["cat"] == "mtia_runtime", "kind"] == "runtime").all()


def test_rocm_streams_written_as_hex_strings_are_read_not_skipped():
    path = tl.example_trace("mi250_rocm_minitoy_train")
    hex_streams = [e for e in raw_events(path) if isinstance(e.get("args", {}).get("stream"), str)]
    assert hex_streams and {e["args"]["stream"] for e in hex_streams} == {"0x0"}
    trace = tl.load_trace(path)
    assert trace.skipped == {}
    runtime = trace.events[trace.events["kind"] == "runtime"]
    assert set(runtime.loc[runtime["name"] == "hipLaunchKernel", "stream"].dropna()) == {0}


@pytest.mark.parametrize(("text", "value"), [("0x1f", 31), ("0X10", 16), ("12", 12), ("-3", -3)])
def test_a_stream_string_of_digits_is_its_integer(tmp_path, text, value):
    trace = load_events(tmp_path, [gpu("k", 7, 0, 5), X("cuda_runtime", "hipLaunchKernel", 0, 1, stream=text)])
    assert trace.skipped == {}
    assert trace.events.loc[trace.events["name"] == "hipLaunchKernel", "stream"].tolist() == [value]


@pytest.mark.parametrize("text", ["zz", "0x", "1.5", "", "0x" + "f" * 17])
def test_a_stream_string_that_is_no_integer_is_skipped_with_its_reason(tmp_path, text):
    trace = load_events(tmp_path, [gpu("k", 7, 0, 5), X("cuda_runtime", "hipLaunchKernel", 0, 1, stream=text)])
    assert trace.skipped == {"args.stream not an integer": 1}


def test_a_trace_of_hip_launches_is_rocm_and_of_cuda_launches_cuda(tmp_path):
    hip = load_events(tmp_path, [gpu("k", 7, 0, 5), X("cuda_runtime", "hipLaunchKernel", 0, 1)], "hip.json")
    cuda = load_events(tmp_path, [gpu("k", 7, 0, 5), X("cuda_runtime", "cudaLaunchKernel", 0, 1)], "cuda.json")
    assert (hip.device, cuda.device) == ("rocm", "cuda")


def test_the_job_is_read_wherever_its_keys_sit_and_odd_values_are_none(tmp_path):
    events = [gpu("k", 7, 0, 5)]
    after = tmp_path / "after.json"
    after.write_text(
        json.dumps({"traceEvents": events, "distributedInfo": {"rank": 3, "world_size": 8, "backend": "nccl"}})
    )
    trace = tl.load_trace(after)
    assert (trace.rank, trace.world_size) == (3, 8)
    odd = tmp_path / "odd.json"
    odd.write_text(
        json.dumps({"distributedInfo": {"rank": "3", "world_size": -1}, "deviceProperties": {}, "traceEvents": events})
    )
    trace = tl.load_trace(odd)
    assert (trace.rank, trace.world_size, trace.device_name) == (None, None, None)
    bare = tl.load_trace(write_trace(tmp_path / "bare.json", events, array_format=True))
    assert (bare.rank, bare.device_name, bare.device) == (None, None, "cuda")


def test_an_mtia_backend_names_the_device(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps({"distributedInfo": {"backend": "mtia:hccl", "rank": 0}, "traceEvents": [gpu("k", 7, 0, 5)]})
    )
    assert tl.load_trace(path).device == "mtia"
