"""``timeline.diff`` and ``gpucost-lab diff``: before vs after per step, with a verdict on every line, on twelve
simulated traces (written once for the module) and on a CPU training loop profiled here with and without a data
stall.

The simulated traces come from the seeded simulator, so every figure and verdict below is the same on every machine.
The expected values are computed here straight from the trace JSON (``ProfilerStep#N`` events, GPU events and their
launch calls), not through the code under test.
"""

import dataclasses
import gzip
import json
import math
import re
from pathlib import Path

import pytest
import torch

from gpucost_lab.cli.main import main
from gpucost_lab.measure.profiling import profile_window
from gpucost_lab.simulate import write as simulate
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.stats import decide
from gpucost_lab.timeline import DIFF_VERDICTS, TraceDiff, diff, load_trace

from .helpers import NO_DIRECTION, plain_events, step_times_ms

pytestmark = pytest.mark.slow

STEPS = 24  # the healthy run's first step waits 5 ms for its first batch; 24 steps keep that one step's weight low
SEEDS_BEFORE, SEEDS_AFTER = (1, 2, 3), (4, 5, 6)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Paths of simulated traces by (scenario, seed), written once for the module."""
    folder = tmp_path_factory.mktemp("diff")
    paths = {}
    for scenario in ("healthy", "dataloader_stall"):
        for seed in SEEDS_BEFORE + SEEDS_AFTER:
            config = dataclasses.replace(SCENARIOS[scenario], seed=seed, steps=STEPS)
            paths[scenario, seed] = simulate.write_trace(config, folder / f"{scenario}-{seed}.json")
    return paths


def gpu_per_step_ms(path):
    """Per trace: (GPU work per step by launching step, GPU span from the first step's start to the last end), ms.
    The simulator has one stream that runs one operation at a time, so busy time is the sum of durations."""
    ev = [e for e in plain_events(path) if e.get("ph") == "X"]
    marks = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#"))
    launch = {e["args"]["correlation"]: e["ts"] for e in ev if e["cat"] == "cuda_runtime"}
    work = [e for e in ev if e["cat"] in ("kernel", "gpu_memcpy")]
    per_step = [0.0] * len(marks)
    for e in work:
        t = launch[e["args"]["correlation"]]
        per_step[next(i for i, (s, end) in enumerate(marks) if s <= t <= end)] += e["dur"] / 1e3
    span = (max(e["ts"] + e["dur"] for e in work) - marks[0][0]) / 1e3
    return per_step, span


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def paths(traces, scenario, seeds):
    return [traces[scenario, s] for s in seeds]


# ----------------------------------------------------------------------------------------------- verdicts
def test_removing_the_stall_is_better_on_step_time_and_idle(traces):
    result = diff(paths(traces, "dataloader_stall", SEEDS_BEFORE), paths(traces, "healthy", SEEDS_AFTER))
    assert result.before.interval_across == result.after.interval_across == "traces"
    assert result.before.n == result.after.n == 3
    step, idle = result.line("step_time"), result.line("idle")
    assert step.verdict == "better" and idle.verdict == "better"
    for line in (step, idle):
        assert line.ci95_low <= line.ratio <= line.ci95_high < 1
        assert line.verdict == decide(line_interval(line), "better", "worse")  # the one rule, from the position
        assert line.better_when == "lower" and "lower is better" in line.reason
    # the values, computed from the JSON: across traces, the geometric mean of each trace's mean step time
    for side, scenario, seeds in (
        ("before_ms", "dataloader_stall", SEEDS_BEFORE),
        ("after_ms", "healthy", SEEDS_AFTER),
    ):
        means = [sum(t) / len(t) for t in (step_times_ms(p) for p in paths(traces, scenario, seeds))]
        assert getattr(step, side) == pytest.approx(geomean(means), rel=1e-6)
        idle_means = []
        for p in paths(traces, scenario, seeds):
            per_step, span = gpu_per_step_ms(p)
            idle_means.append((span - sum(per_step)) / STEPS)  # idle = the GPU span over the steps - busy
        assert getattr(idle, side) == pytest.approx(geomean(idle_means), rel=1e-5)
    assert step.ratio == pytest.approx(step.after_ms / step.before_ms)
    # the stall was data loading: the GPU work per step is the same, and the kernels say so
    busy = result.line("busy")
    assert busy.ratio == pytest.approx(1.0) and busy.verdict in NO_DIRECTION
    per_step, _ = gpu_per_step_ms(traces["healthy", 4])
    assert busy.after_ms == pytest.approx(per_step[0], rel=1e-6)
    kernels = [ln for ln in result.lines if ln.metric == "kernel"]
    assert len(kernels) == 5 and all(ln.verdict in NO_DIRECTION and ln.ratio == pytest.approx(1.0) for ln in kernels)
    # the single-process loader's phase is gone after; the worker loader's phase is new
    phases = {ln.name: ln for ln in result.lines if ln.metric == "phase"}
    single = next(ln for name, ln in phases.items() if "SingleProcess" in name)
    assert single.after_ms == 0 and single.verdict == "better"
    assert next(ln for name, ln in phases.items() if "MultiProcessing" in name).verdict == "worse"
    assert {"forward", "backward", "optimizer"} <= set(phases)


def test_the_reverse_direction_is_worse(traces):
    result = diff(paths(traces, "healthy", SEEDS_AFTER), paths(traces, "dataloader_stall", SEEDS_BEFORE))
    assert result.line("step_time").verdict == "worse"
    assert result.line("idle").verdict == "worse"
    assert result.line("step_time").ci95_low > 1


def test_one_trace_each_side_gives_an_interval_across_steps(traces):
    before, after = traces["dataloader_stall", 1], traces["healthy", 4]
    result = diff(before, after)
    assert result.before.interval_across == result.after.interval_across == "steps"
    assert result.before.n == result.after.n == STEPS
    step = result.line("step_time")
    assert step.before_ms == pytest.approx(geomean(step_times_ms(before)), rel=1e-6)
    assert step.after_ms == pytest.approx(geomean(step_times_ms(after)), rel=1e-6)
    assert step.verdict == "better"
    # the healthy run's GPU never waits after its first step: idle is 0 ms in those steps, which the log scale cannot
    # hold, so there is no interval and no verdict
    idle = result.line("idle")
    assert idle.ci95_low is None and idle.verdict == "inconclusive" and "0 ms samples" in idle.reason


@pytest.mark.parametrize("per_side", [1, 3])
def test_two_runs_of_the_same_program_are_same_or_inconclusive_never_a_direction(traces, per_side):
    result = diff(paths(traces, "healthy", SEEDS_BEFORE[:per_side]), paths(traces, "healthy", SEEDS_AFTER[:per_side]))
    step = result.line("step_time")
    assert step.before_ms != step.after_ms  # the jitter differs...
    assert step.verdict in NO_DIRECTION and step.ci95_low < 1 < step.ci95_high  # ...and is all the diff sees
    assert all(ln.verdict in NO_DIRECTION for ln in result.lines if ln.ci95_low is not None)
    assert {ln.verdict for ln in result.lines} <= set(DIFF_VERDICTS)


def test_a_trace_against_itself_has_ratio_one_everywhere(traces):
    trace = load_trace(traces["healthy", 1])  # a Trace works as well as a path
    result = diff(trace, [traces["healthy", 1]])
    assert all(
        ln.ratio == pytest.approx(1.0) and ln.verdict in NO_DIRECTION for ln in result.lines if ln.ratio is not None
    )


def test_result_is_json_ready_and_text_has_a_line_per_figure(traces):
    result = diff(traces["dataloader_stall", 1], traces["healthy", 4], top=2)
    assert isinstance(result, TraceDiff)
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert set(out) == {"device", "before", "after", "equivalence_margin", "lines"}
    assert set(out["before"]) == {"traces", "steps", "interval_across", "n"}
    assert out["lines"][0]["metric"] == "step_time" and out["lines"][0]["name"] is None
    text = result.text()
    assert len(result.to_frame()) == len(result.lines)
    # every label whole, each on a line that starts with it (the figures on the same line or the next)
    lines = text.split("without an interval:", 1)[0].splitlines()  # the table, above the reasons
    for ln in result.lines:
        (i,) = [k for k, line in enumerate(lines) if line.strip().startswith(ln.label)]
        figures = lines[i] if lines[i].strip() != ln.label else lines[i + 1]
        assert figures.rstrip().endswith(ln.verdict) and f"{ln.before_ms:.3f}" in figures
    assert all(path in text for path in result.before.traces + result.after.traces)  # each trace named in full


def test_reasons_wrap_between_words_and_no_row_is_wider_than_the_table(traces):
    from gpucost_lab.timeline.diff import REASON_WIDTH

    result = diff(traces["dataloader_stall", 1], traces["healthy", 4], top=3)
    text = result.text()
    notes = text.split("without an interval:\n", 1)[1].splitlines() if "without an interval:" in text else []
    assert all(len(line) <= REASON_WIDTH for line in notes)
    joined = " ".join(line.strip() for line in notes)
    assert all(ln.reason in joined for ln in result.lines if ln.ci95_low is None)  # wrapped, nothing lost
    header = next(line for line in text.splitlines() if line.rstrip().endswith("verdict"))
    rows = [line for line in text.splitlines() if line.rstrip().endswith(("better", "worse", "same", "inconclusive"))]
    assert rows and all(len(row.rstrip()) <= len(header.rstrip()) + len("inconclusive") for row in rows)


def test_bad_top_and_width(traces):
    with pytest.raises(ValueError, match="^top"):
        diff(traces["healthy", 1], traces["healthy", 2], top=0)
    with pytest.raises(ValueError, match="^margin"):
        diff(traces["healthy", 1], traces["healthy", 2], margin=0.0)


def line_interval(line):
    from gpucost_lab.stats import Interval

    return Interval(line.ratio, line.ci95_low, line.ci95_high)


def _cpu_loop_trace(path, stall_s: float):
    """A CPU training loop under the profiler, each step a tiny matmul after a data wait of ``stall_s`` (a sleep, as
    a loader waits, then the collate's own operators)."""
    import time as _time

    x = torch.randn(32, 32)

    def step():
        if stall_s:
            _time.sleep(stall_s)
            torch.stack([torch.randn(256) for _ in range(64)]).sum()  # the collate: operators, busy time
        (x @ x).sum()

    profile_window(step, wait=0, warmup=1, active=8, trace_path=path)
    return path


def test_a_stall_in_every_step_against_none_is_better_on_step_time_busy_and_idle(tmp_path):
    """The issue's reproduction: a 40 ms data stall in every step, step time about 60x shorter without it. Its
    interval is wide on a busy machine, but lies far below 1: better, with the width reported beside it."""
    stalled = _cpu_loop_trace(tmp_path / "stalled.json.gz", 0.04)
    clean = _cpu_loop_trace(tmp_path / "clean.json.gz", 0.0)
    result = diff(stalled, clean)
    for metric in ("step_time", "busy", "idle"):
        line = result.line(metric)
        assert line.verdict == "better" and line.ci95_high < 1, (metric, line.reason)
    assert result.line("step_time").ratio < 0.2  # at least 40 ms of 40 ms and a little more gone


# ----------------------------------------------------------------------------------------------- the CLI
def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_diff_json_and_text(capsys, traces):
    before, after = paths(traces, "dataloader_stall", SEEDS_BEFORE), paths(traces, "healthy", SEEDS_AFTER)
    code, out, err = run(capsys, "diff", *before, "--after", *after, "--top", "3", "--json")
    assert code == 0, err
    data = json.loads(out)
    lines = {ln["metric"]: ln for ln in data["lines"] if ln["name"] is None}
    assert lines["step_time"]["verdict"] == "better" and lines["idle"]["verdict"] == "better"
    assert data["before"]["traces"] == [str(p) for p in before]
    assert sum(ln["metric"] == "kernel" for ln in data["lines"]) == 3
    code, out, err = run(capsys, "diff", *before, "--after", *after)
    assert code == 0 and err == ""
    assert re.search(r"step time\s+[\d.]+\s+[\d.]+\s+0\.\d+\s+[\d.]+ to [\d.]+\s+better", out)


def test_cli_json_keys_are_in_the_readme(capsys, traces):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    documented = set(re.findall(r"`([a-z0-9_]+)`", readme)) | {
        k for group in re.findall(r"`\{([a-z0-9_, ]+)\}`", readme) for k in group.replace(" ", "").split(",")
    }
    code, out, _ = run(capsys, "diff", traces["healthy", 1], "--after", traces["healthy", 4], "--json")
    data = json.loads(out)
    keys = set(data) | set(data["before"]) | {k for ln in data["lines"] for k in ln}
    assert code == 0 and keys - documented == set()
    assert "gpucost-lab diff" in readme


def no_steps_trace(path):
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": 0,
        "tid": 7,
        "ts": 10.0,
        "dur": 5.0,
        "args": {"stream": 7, "correlation": 1},
    }
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": [kernel]}).encode()))
    return path


@pytest.mark.parametrize(
    "case, expect",
    [
        ("missing", "no such trace file"),
        ("no steps", "no ProfilerStep#N steps"),
        ("top", "--top"),
        ("no after", "--after"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(capsys, tmp_path, traces, case, expect):
    good = traces["healthy", 1]
    argv = {
        "missing": ["diff", good, "--after", tmp_path / "absent.json"],
        "no steps": ["diff", good, "--after", no_steps_trace(tmp_path / "flat.json.gz")],
        "top": ["diff", good, "--after", good, "--top", "0"],
        "no after": ["diff", good],
    }[case]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0] and "Traceback" not in err
