"""Helpers shared by the tests of gpucost_lab.timeline: the real traces' paths, plain scans of their JSON, tiny traces
written by hand, a loader that reads a file a chosen number of bytes at a time, and a diff's step times read off
the JSON, and a simulated run written and loaded.

Nothing here calls the code under test to derive an expected value: the scans are plain loops over the raw JSON.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd

from gpucost_lab import timeline as tl
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.simulate.write import write_trace as write_simulated
from gpucost_lab.timeline import framing

# ----------------------------------------------------------------------------------------------- the real traces
FIXTURES = tl.example_trace("a100_alexnet_train").parent
SAMPLED = FIXTURES / "sampled_rank0_gpu.json.gz"
ALEXNET = FIXTURES / "a100_alexnet_train.json.gz"
EVENT_SYNC = FIXTURES / "a100_cuda_event_sync.json.gz"
CPU_SMALL = FIXTURES / "cpu_only_small.json.gz"

# The hand count: torchvision's AlexNet (torchvision/models/alexnet.py) has five convolutions and three linear
# layers, a weight and a bias each, 16 float32 tensors:
#
#     conv1  64 x 3 x 11 x 11 = 23,232      + 64        conv2  192 x 64 x 5 x 5 = 307,200  + 192
#     conv3  384 x 192 x 3 x 3 = 663,552    + 384       conv4  256 x 384 x 3 x 3 = 884,736 + 256
#     conv5  256 x 256 x 3 x 3 = 589,824    + 256       fc6    4096 x 9216 = 37,748,736    + 4096
#     fc7    4096 x 4096 = 16,777,216       + 4096      fc8    1000 x 4096 = 4,096,000     + 1000
#
# 61,100,840 parameters, 244,403,360 bytes: what the a100_alexnet_train trace's 16 pageable copies add up to.
ALEXNET_TENSORS = [
    64 * 3 * 11 * 11, 64, 192 * 64 * 5 * 5, 192, 384 * 192 * 3 * 3, 384, 256 * 384 * 3 * 3, 256,
    256 * 256 * 3 * 3, 256, 4096 * 9216, 4096, 4096 * 4096, 4096, 1000 * 4096, 1000,
]  # fmt: skip


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def complete(path):
    return [e for e in raw_events(path) if e.get("ph") == "X"]


# ----------------------------------------------------------------------------------------------- traces by hand
def write_trace(path, events, *, gz=False, array_format=False):
    doc = events if array_format else {"schemaVersion": 1, "traceEvents": events}
    with (gzip.open if gz else open)(path, "wt") as f:
        json.dump(doc, f)
    return path


def X(cat, name, ts, dur, tid=1, pid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(name, ts, dur, stream=7, correlation=None):
    return X(
        "kernel",
        name,
        ts,
        dur,
        tid=stream,
        pid=0,
        stream=stream,
        device=0,
        **({} if correlation is None else {"correlation": correlation}),
    )


def launch(correlation, ts):
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": 1,
        "args": {"correlation": correlation},
    }


def gpu(name, stream, ts, dur, correlation=None, cat="kernel"):
    args = {"stream": stream, **({} if correlation is None else {"correlation": correlation})}
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def load_events(tmp_path, events, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return tl.load_trace(path)


# ----------------------------------------------------------------------------------------------- reading a file
BLOCKS = [1, 2, 3, 5, 8, 64, framing.BLOCK]  # bytes read at a time: cuts fall inside strings, escapes, numbers
NA = pd.NA

TRICKY = [  # strings that hold brackets, quotes, "},{" and backslashes; nested args; a non-ASCII name
    {
        "ph": "X",
        "cat": "kernel",
        "name": 'k[0]{"}},{"',
        "pid": 0,
        "tid": 7,
        "ts": 10,
        "dur": 5,
        "args": {"stream": 7, "correlation": 1, "grid": [1, {"a": [2]}], "note": '\\"}],{\\\\'},
    },
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 2,
        "ts": 8,
        "dur": 1,
        "args": {"correlation": 1},
    },
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 10, "cat": "ac2g", "name": "ac2g", "bp": "e"},  # left out
    {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 2,
        "ts": 9,
        "args": {"Bytes": 256, "Total Allocated": 1024, "Device Type": 1},
    },
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 2, "ts": 0, "dur": 20, "args": {}},
    {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": "Memcpy HtoD (Pageable -> Device)",
        "pid": 0,
        "tid": 7,
        "ts": 16,
        "dur": 2,
        "args": {"stream": 7, "correlation": 2, "bytes": 4096},
    },
    {"ph": "X", "cat": "cpu_op", "name": "aten::\u00fcn\u00efcode\\", "pid": "1", "tid": "2", "ts": 1, "dur": 3},
]
EXPECTED = {  # TRICKY's rows by hand, by start: the step, the op, the launch, the memory instant, the kernel, the copy
    "name": [
        "ProfilerStep#3",
        "aten::\u00fcn\u00efcode\\",
        "cudaLaunchKernel",
        "[memory]",
        'k[0]{"}},{"',
        "Memcpy HtoD (Pageable -> Device)",
    ],
    "kind": ["step", "cpu_op", "runtime", "memory", "kernel", "memcpy"],
    "cat": ["user_annotation", "cpu_op", "cuda_runtime", "", "kernel", "gpu_memcpy"],
    "pid": ["1", "1", "1", "1", "0", "0"],
    "tid": ["2", "2", "2", "2", "7", "7"],
    "lane": ["thread 2", "thread 2", "thread 2", "thread 2", "stream 7", "stream 7"],
    "ts_us": [0.0, 1.0, 8.0, 9.0, 10.0, 16.0],
    "dur_us": [20.0, 3.0, 1.0, 0.0, 5.0, 2.0],
    "stream": [NA, NA, NA, NA, 7, 7],
    "correlation": [NA, NA, 1, NA, 1, 2],
    "bytes": [NA, NA, NA, 256, NA, 4096],
    "total_allocated_bytes": [NA, NA, NA, 1024, NA, NA],
    "device_type": [NA, NA, NA, 1, NA, NA],
    "input_dims": [""] * 6,  # none recorded (record_shapes=False)
}


def write_file(path, text: str | bytes, gz: bool = False):
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def load_in_blocks(path, block, monkeypatch, **kwargs):
    """``load_trace(path)`` reading ``block`` bytes at a time."""
    monkeypatch.setattr(framing, "BLOCK", block)
    return tl.load_trace(path, **kwargs)


def as_dict(events: pd.DataFrame) -> dict:
    return {k: [NA if v is pd.NA else v for v in events[k].tolist()] for k in events.columns}


# ----------------------------------------------------------------------------------------------- diff's sides


def plain_events(path):
    """The events of an uncompressed trace file."""
    return json.loads(Path(path).read_text())["traceEvents"]


def step_times_ms(path):
    """ProfilerStep#N durations, in ms, in step order."""
    marks = [e for e in plain_events(path) if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    return [e["dur"] / 1e3 for e in sorted(marks, key=lambda e: int(e["name"].split("#")[1]))]


NO_DIRECTION = ("same", "inconclusive")  # the verdicts of a diff that finds no direction


# ----------------------------------------------------------------------------------------------- simulated traces


def simulated_trace(tmp_path, config=SCENARIOS["dataloader_stall"]):
    """``config``'s simulated run written to ``tmp_path`` and loaded."""
    return tl.load_trace(write_simulated(config, tmp_path / "t.json.gz"))
