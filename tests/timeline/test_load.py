"""gpucost_lab.timeline.load: ``load_trace``'s events table, gzip by content, its errors and the course's example
traces, against plain scans of the trace JSON, hand counts and the rows of a tiny trace written by hand.
"""

from __future__ import annotations

import json

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.timeline import framing, load_trace

from .helpers import ALEXNET, EXPECTED, SAMPLED, TRICKY, as_dict, complete, load_in_blocks, write_file


def test_events_table_has_the_documented_columns_and_one_row_per_complete_event():
    trace = tl.load_trace(ALEXNET)
    assert list(trace.events.columns) == tl.EVENT_COLUMNS
    events = complete(ALEXNET)
    assert len(trace.events) == len(events) == 868  # 1,408 entries less 500 ac2g flows, 38 metadata, 2 instants
    assert trace.device == "cuda"
    counts = trace.events["kind"].value_counts().to_dict()
    # hand count from the fixture's categories: 79 kernel, 16 gpu_memcpy, 3 gpu_memset, 41 cuda_sync,
    # 361 cuda_runtime, 359 cpu_op, 8 user_annotation (no ProfilerStep), 1 "Trace"
    assert counts == {
        "runtime": 361,
        "cpu_op": 359,
        "kernel": 79,
        "sync": 41,
        "memcpy": 16,
        "annotation": 8,
        "memset": 3,
        "other": 1,
    }
    kernels = trace.events[trace.events["kind"] == "kernel"]
    assert set(kernels["lane"]) == {f"stream {e['args']['stream']}" for e in events if e["cat"] == "kernel"}
    assert trace.events["ts_us"].is_monotonic_increasing
    memcpy = trace.events[trace.events["kind"] == "memcpy"]
    assert int(memcpy["bytes"].sum()) == sum(e["args"]["bytes"] for e in events if e["cat"] == "gpu_memcpy")


def test_gzip_and_plain_read_alike(tmp_path, monkeypatch):
    text = json.dumps({"traceEvents": TRICKY})
    for block in (7, framing.BLOCK):
        plain = load_in_blocks(write_file(tmp_path / "t.json", text), block, monkeypatch)
        packed = load_in_blocks(write_file(tmp_path / "t.json.gz", text, gz=True), block, monkeypatch)
        assert as_dict(plain.events) == as_dict(packed.events) == EXPECTED


def bad_input_cases(tmp_path):
    raw = SAMPLED.read_bytes()
    cases = {
        "truncated gz": (raw[: len(raw) // 2], "truncated or malformed"),
        "malformed json": (b'{"traceEvents": [{"ph": "X", "ts": 1,, }]}', "truncated or malformed"),
        "empty traceEvents": (b'{"traceEvents": []}', "no trace events"),
        "no traceEvents key": (b'{"schemaVersion": 1}', "no trace events"),
        "not gzip inside": (b"\x1f\x8b not really gzip", "truncated or malformed"),
    }
    for label, (data, message) in cases.items():
        path = tmp_path / (label.replace(" ", "_") + ".json.gz")
        path.write_bytes(data)
        yield label, path, message


def test_bad_files_raise_value_error_naming_the_file(tmp_path):
    for label, path, message in bad_input_cases(tmp_path):
        with pytest.raises(ValueError, match=message) as err:
            tl.load_trace(path)
        assert str(path) in str(err.value), label
    for path, message in [(tmp_path, "directory"), (tmp_path / "missing.json", "no such trace file")]:
        with pytest.raises(ValueError, match=message) as err:
            tl.load_trace(path)
        assert str(path) in str(err.value)


def test_the_course_s_real_traces_ship_with_the_package_under_their_licence():
    for name in tl.EXAMPLE_TRACES:
        path = tl.example_trace(name)
        assert path.is_file() and path.name == f"{name}.json.gz"
    folder = tl.example_trace("a100_alexnet_train").parent
    assert "MIT License" in (folder / "LICENSE").read_text()
    assert {p.name for p in folder.iterdir()} == {"LICENSE", "README.md"} | {f"{n}.json.gz" for n in tl.EXAMPLE_TRACES}
    with pytest.raises(ValueError, match="name must be one of 'a100_alexnet_train'"):
        tl.example_trace("../../etc/passwd")


def test_loading_with_a_progress_bar_counts_every_event(tmp_path, capsys):
    from gpucost_lab.simulate.config import SimConfig
    from gpucost_lab.simulate.write import simulate, write_trace

    path = write_trace(SimConfig(steps=2), tmp_path / "t.json")
    total = len(simulate(SimConfig(steps=2))["traceEvents"])
    quiet = load_trace(path)
    shown = load_trace(path, progress=True)
    assert shown.events.equals(quiet.events)
    err = capsys.readouterr().err
    assert "reading t.json" in err and f"{total}" in err.replace(",", "")
