"""gpucost_lab.simulate.trace: the trace log's events, allocator totals and lanes, against hand-written values."""

import pytest

from gpucost_lab.simulate.trace import ALLOCATOR_ROUND_BYTES, GPU_PID, PID, STREAM, TRACE_START_US, TraceLog, ns

MIB = 1024**2


def test_microseconds_become_whole_nanoseconds():
    assert ns(1.5) == 1500 and ns(0.0004) == 0 and ns(2.0006) == 2001
    assert isinstance(ns(3.0), int)


def test_an_event_is_written_in_microseconds_after_the_trace_start():
    log = TraceLog(allocated=0)
    log.emit("cpu_op", "aten::mm", 2500, 4000, {"x": 1})
    (event,) = [e[3] for e in log.events]
    # 2,500 ns after the start is ts 1,000,000 + 2.5 us; 1,500 ns long is 1.5 us
    assert event == {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": PID,
        "tid": PID,
        "ts": TRACE_START_US + 2.5,
        "dur": 1.5,
        "args": {"x": 1},
    }
    assert log.end == 4000


def test_a_gpu_event_comes_with_a_flow_arrow_from_its_launch():
    log = TraceLog(allocated=0)
    corr = log.new_id()
    log.gpu_event("kernel", "k", 3000, 5000, corr, ext=9, rt_start=1000, extra={"grid": [1, 1, 1]})
    kernel, start, finish = (e[3] for e in log.events)
    assert (kernel["pid"], kernel["tid"]) == (GPU_PID, STREAM) and kernel["args"]["correlation"] == corr == 1
    assert kernel["args"]["External id"] == 9 and kernel["args"]["grid"] == [1, 1, 1]
    # the arrow starts on the main thread when the launch call starts, and ends on the stream when the kernel does
    assert (start["ph"], start["pid"], start["ts"]) == ("s", PID, TRACE_START_US + 1.0)
    assert (finish["ph"], finish["tid"], finish["ts"], finish["bp"]) == ("f", STREAM, TRACE_START_US + 3.0, "e")
    assert start["id"] == finish["id"] == corr and {start["cat"], finish["cat"]} == {"ac2g"}


def test_the_allocator_totals_follow_each_block_and_reserve_in_2_mib_segments():
    log = TraceLog(allocated=MIB)  # 1 MiB resident before the trace: 2 MiB reserved
    assert ALLOCATOR_ROUND_BYTES == 2 * MIB and log.reserved == 2 * MIB
    a = log.memory(3 * MIB)  # 4 MiB allocated: reserved grows to 4 MiB
    b = log.memory(MIB)  # 5 MiB: reserved 6 MiB
    assert b == a + 3 * MIB  # blocks handed out one after the other
    log.memory(0, addr=a)  # freeing 3 MiB: 2 MiB allocated, reserved stays at its peak
    totals = [
        (e[3]["args"]["Bytes"], e[3]["args"]["Total Allocated"], e[3]["args"]["Total Reserved"]) for e in log.events
    ]
    assert totals == [(3 * MIB, 4 * MIB, 4 * MIB), (MIB, 5 * MIB, 6 * MIB), (-3 * MIB, 2 * MIB, 6 * MIB)]
    assert log.live == {b: MIB}
    with pytest.raises(KeyError):
        log.memory(0, addr=a)  # a block is freed once


def test_lanes_are_named_for_the_main_thread_the_stream_and_each_worker():
    rows = TraceLog(allocated=0).metadata(num_workers=2)
    assert len(rows) == 3 * (2 + 2)  # a process name, a process label and a thread name per lane
    threads = [r["args"]["name"] for r in rows if r["name"] == "thread_name"]
    assert threads == [
        f"thread {PID} (python3)",
        f"stream {STREAM} ",
        "thread 4300 (pt_data_worker_0)",
        "thread 4301 (pt_data_worker_1)",
    ]
    assert {r["ph"] for r in rows} == {"M"} and {r["ts"] for r in rows} == {TRACE_START_US}


def test_the_document_puts_the_lanes_first_then_the_events_in_time_order():
    log = TraceLog(allocated=0)
    log.emit("cpu_op", "late", 5000, 6000)
    log.emit("cpu_op", "early_long", 1000, 3000)
    log.emit("cpu_op", "early_short", 1000, 2000)  # same start: the longer (the enclosing) one first
    doc = log.document({"name": "GPU", "totalGlobalMem": 1}, {"seed": 0}, num_workers=0)
    assert doc["schemaVersion"] == 1 and doc["deviceProperties"] == [{"id": 0, "name": "GPU", "totalGlobalMem": 1}]
    assert doc["simConfig"] == {"seed": 0}
    names = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert names == ["early_long", "early_short", "late"]
    assert all(e["ph"] == "M" for e in doc["traceEvents"][:6])
