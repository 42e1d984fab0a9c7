"""gpucost_lab.timeline.shapes: input shapes, Python stacks and the operator behind a kernel, alone and in analyze's
top_ops (chapter 02, section 1).

Sources of truth: the shapes a Linear layer's operators take, by hand; torch.profiler's own traces; and, for a
CUDA trace, Kineto's own link between a kernel and the operator that launched it (the ``External id`` both
carry), scanned from the raw JSON with plain loops, against the time containment the module uses.
"""

from __future__ import annotations

import gzip
import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from gpucost_lab import timeline as tl
from gpucost_lab.timeline.shapes import input_shapes, python_stack
from gpucost_lab.timeline.text import render_analysis

from .helpers import SAMPLED


def _record(path, shapes: bool, stack: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    x = torch.randn(128, 256)

    def my_training_step():
        model(x).sum().backward()

    with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes, with_stack=stack) as prof:
        for _ in range(2):
            my_training_step()
    prof.export_chrome_trace(str(path))
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return _record(tmp_path_factory.mktemp("shapes") / "step.json", shapes=True, stack=True)


def test_a_linear_layer_s_input_shapes_by_hand(recorded):
    trace = tl.load_trace(recorded)
    ops = trace.events[trace.events["kind"] == "cpu_op"]
    shapes = input_shapes(ops, ["aten::linear", "aten::addmm"])
    # Linear(256, 512) on a batch of 128: input (128, 256), weight (512, 256), bias (512); then Linear(512, 10)
    assert [s["input_shapes"] for s in shapes["aten::linear"]] == [[[128, 256], [512, 256], [512]],
                                                                   [[128, 512], [10, 512], [10]]]  # fmt: skip
    assert all(s["count"] == 2 for s in shapes["aten::linear"])  # one call per step, two steps
    # addmm(bias, input, weight.t(), beta, alpha): two scalars recorded as []
    assert [[512], [128, 256], [256, 512], [], []] in [s["input_shapes"] for s in shapes["aten::addmm"]]


def test_the_stack_holds_the_caller_and_analyze_carries_both(recorded):
    out = tl.analyze(recorded, top=10)
    json.dumps(out, allow_nan=False)
    linear = next(o for o in out["top_ops"] if o["name"] == "aten::linear")
    assert linear["operator"] == "aten::linear"
    assert linear["input_shapes"][0]["input_shapes"] == [[128, 256], [512, 256], [512]]
    assert set(linear["input_shapes"][0]) == {"input_shapes", "count", "total_ms"}
    assert any("my_training_step" in frame for frame in linear["stack"])
    assert all(set(o) == {"name", "kind", "count", "total_ms", "share", "operator", "input_shapes", "stack"}
               for o in out["top_ops"])  # fmt: skip
    text = render_analysis(out, "step.json")
    assert "shapes (128x256, 512x256, 512) x2" in text and "my_training_step" in text


def test_the_innermost_frame_comes_first(recorded):
    with open(recorded) as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    op = next(e for e in raw if e.get("cat") == "cpu_op" and e["name"] == "aten::linear")
    around = [  # plain loop: python_function events on the op's thread that hold its start
        e
        for e in raw
        if e.get("cat") == "python_function" and e["tid"] == op["tid"] and e["ts"] <= op["ts"] <= e["ts"] + e["dur"]
    ]
    expected = [e["name"] for e in sorted(around, key=lambda e: (-e["ts"], e["dur"]))]
    trace = tl.load_trace(recorded)
    ev = trace.events
    row = ev[(ev["kind"] == "cpu_op") & (ev["name"] == "aten::linear")].iloc[0]
    assert python_stack(trace, row) == expected and len(expected) > 3
    assert expected[-1].endswith("<module>") or "test_" in " ".join(expected)  # the outermost frames are pytest's


def test_without_record_shapes_or_with_stack_the_lists_are_empty(tmp_path):
    out = tl.analyze(_record(tmp_path / "plain.json", shapes=False, stack=False), top=5)
    assert all(o["input_shapes"] == [] and o["stack"] == [] for o in out["top_ops"])
    assert not any(line.startswith("      ") for line in render_analysis(out).splitlines())


def test_a_kernel_s_operator_is_the_innermost_operator_around_its_launch():
    # By a plain scan of the raw JSON: kernel "correlation" = its launch call's; the launching operator is the
    # innermost cpu_op on the call's thread that holds the call. (This sampled trace's "External id"s repeat the
    # correlation ids, so Kineto's own operator link is not there to use.)
    with gzip.open(SAMPLED, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime" and "args" in e}
    ops = [e for e in events if e.get("cat") == "cpu_op"]

    def launcher(kernel):
        call = calls.get(kernel["args"]["correlation"])
        if call is None:
            return None
        around = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"] <= o["ts"] + o["dur"]]
        return max(around, key=lambda o: (o["ts"], -o["dur"]), default=None)

    out = tl.analyze(SAMPLED, top=3)
    for top in out["top_ops"]:
        launched = [e for e in events if e.get("cat") == "kernel" and e["name"] == top["name"]][:200]
        found = [o for o in map(launcher, launched) if o is not None]
        names = [o["name"] for o in found]
        assert top["operator"] == max(set(names), key=names.count), top["name"]
        dims = [o.get("args", {}).get("Input Dims") for o in found if o["name"] == top["operator"]]
        assert top["input_shapes"][0]["input_shapes"] in dims
        assert sum(s["count"] for s in top["input_shapes"]) <= names.count(top["operator"])
