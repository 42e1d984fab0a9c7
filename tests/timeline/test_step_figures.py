"""gpucost_lab.timeline.step_figures: ``per_step``'s figures per step (ms) against hand computations on small CPU and
CUDA traces written here, each worked out in the comments beside it.
"""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.timeline.step_figures import per_step

from .helpers import X, kernel, write_trace


def test_a_cpu_step_s_window_is_the_step_itself(tmp_path):
    # steps [0, 100) and [100, 250) on the main thread; operators a [10, 40), c [95, 105) (across the boundary: 5 us
    # in each step) and b [120, 200). Busy: 30 + 5 = 35 us, then 5 + 80 = 85 us; idle = step - busy: 65 and 65 us.
    # Phases: "fwd" [10, 40) lies in step 1 (30 us); "data" [90, 130) is 10 us in step 1 and 30 us in step 2.
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 100),
        X("user_annotation", "ProfilerStep#2", 100, 150),
        X("cpu_op", "a", 10, 30),
        X("cpu_op", "c", 95, 10),
        X("cpu_op", "b", 120, 80),
        X("user_annotation", "fwd", 10, 30),
        X("user_annotation", "data", 90, 40),
    ]
    base, named = per_step(tl.load_trace(write_trace(tmp_path / "t.json", events)))
    assert base.to_dict("list") == {
        "step_time": pytest.approx([0.100, 0.150]),
        "busy": pytest.approx([0.035, 0.085]),
        "idle": pytest.approx([0.065, 0.065]),
    }
    assert set(named) == {"phase", "cpu_op"}
    assert named["phase"].to_dict("list") == {"data": pytest.approx([0.010, 0.030]), "fwd": pytest.approx([0.030, 0])}
    assert named["cpu_op"].to_dict("list") == {
        "a": pytest.approx([0.030, 0]),
        "b": pytest.approx([0, 0.080]),
        "c": pytest.approx([0.005, 0.005]),
    }


def test_a_cuda_step_owns_the_work_it_launched_even_when_the_gpu_runs_behind(tmp_path):
    # Host steps [0, 100), [100, 200), [200, 300). k1 is launched at 10 (step 1) and runs [50, 150), past the step's
    # end; k2 and k3 are launched at 120 and 130 (step 2) and run [160, 180) and [185, 195); step 3 launches nothing.
    # GPU windows: step 1 [0, 150) (from its host start to k1's end), step 2 [150, 195) (to k3's end), step 3
    # [195, 300) (to its host end). Busy: 100, 20 + 10 = 30, 0 us; idle: 150 - 100 = 50, 45 - 30 = 15, 105 us.
    # Kernels by the step that launched them: k1 100 us in step 1; k2 20 us and k3 10 us in step 2.
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 100),
        X("user_annotation", "ProfilerStep#2", 100, 100),
        X("user_annotation", "ProfilerStep#3", 200, 100),
        X("user_annotation", "fwd", 20, 40),
        X("gpu_user_annotation", "fwd", 50, 100, tid=7, pid=0, stream=7),  # the GPU's mirror: not a host phase
        X("cuda_runtime", "cudaLaunchKernel", 10, 2, correlation=1),
        X("cuda_runtime", "cudaLaunchKernel", 120, 2, correlation=2),
        X("cuda_runtime", "cudaLaunchKernel", 130, 2, correlation=3),
        kernel("k1", 50, 100, correlation=1),
        kernel("k2", 160, 20, correlation=2),
        kernel("k3", 185, 10, correlation=3),
    ]
    base, named = per_step(tl.load_trace(write_trace(tmp_path / "t.json", events)))
    assert base.to_dict("list") == {
        "step_time": pytest.approx([0.100, 0.100, 0.100]),
        "busy": pytest.approx([0.100, 0.030, 0]),
        "idle": pytest.approx([0.050, 0.015, 0.105]),
    }
    assert set(named) == {"phase", "kernel"}
    assert named["phase"].to_dict("list") == {"fwd": pytest.approx([0.040, 0, 0])}
    assert named["kernel"].to_dict("list") == {
        "k1": pytest.approx([0.100, 0, 0]),
        "k2": pytest.approx([0, 0.020, 0]),
        "k3": pytest.approx([0, 0.010, 0]),
    }


def test_steps_are_taken_in_time_order_whatever_their_numbers(tmp_path):
    # ProfilerStep#9 [0, 40) then ProfilerStep#2 [40, 100): the rows follow time, 40 us then 60 us
    events = [
        X("user_annotation", "ProfilerStep#2", 40, 60),
        X("user_annotation", "ProfilerStep#9", 0, 40),
        X("cpu_op", "a", 0, 10),
        X("cpu_op", "b", 40, 30),
    ]
    base, named = per_step(tl.load_trace(write_trace(tmp_path / "t.json", events)))
    assert base["step_time"].tolist() == pytest.approx([0.040, 0.060])
    assert named["cpu_op"].to_dict("list") == {"a": pytest.approx([0.010, 0]), "b": pytest.approx([0, 0.030])}


def test_a_trace_without_steps_is_refused_naming_the_file(tmp_path):
    trace = tl.load_trace(write_trace(tmp_path / "flat.json", [kernel("k", 10, 5, correlation=1)]))
    with pytest.raises(ValueError, match="no ProfilerStep#N steps") as err:
        per_step(trace)
    assert str(trace.path) in str(err.value)
