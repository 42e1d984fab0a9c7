"""Bad input everywhere: nesting and event limits of a trace, unusable events skipped and counted, results that
would overflow, output paths that cannot be written, control characters in printed names, and the field every
InputError names.

Every expected value here is derived by hand from the fixture written in the test, not by the module's code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import gpucost_lab
from gpucost_lab import InputError, cost
from gpucost_lab import timeline as tl
from gpucost_lab.cli import main as cli
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.quality.seeds import SeedRuns
from gpucost_lab.simulate import write as simulate
from gpucost_lab.timeline.limits import MAX_DEPTH, DepthLimitedReader

from .helpers import DEEP

FLOAT_MAX = sys.float_info.max


def run_cli(capsys, *argv):
    """(exit status, stdout, stderr) of the CLI run in this process."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, out, err, *fragments):
    assert code == 2 and out == ""
    assert "Traceback" not in err and err.endswith("\n") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def write_events(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def kernel(name, ts, dur, **extra):
    event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "args": {"stream": 7}}
    if dur is not None:
        event["dur"] = dur
    event.update(extra)
    return event


# ----------------------------------------------------------------------------------------------- nesting depth


def test_deep_nesting_is_refused_before_the_parser_sees_a_byte():
    reader = DepthLimitedReader(io.BytesIO(b'{"traceEvents": ' + b"[" * DEEP + b"]" * DEEP + b"}"), "deep.json")
    with pytest.raises(ValueError, match=f"deep.json: JSON nested more than {MAX_DEPTH} levels deep"):
        reader.read(65536)  # the first chunk already passes the limit: the parser would receive nothing


def nested_args(levels: int) -> dict:
    """An event whose args hold ``levels`` nested lists: document, traceEvents, event, args, then the lists."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return kernel("k", 0, 5, args={"stream": 7, "shape": value})


def test_depth_limit_counts_brackets_outside_strings_only(tmp_path):
    tricky = kernel('[[[{{{ "quoted" \\ [[[', 10, 5)  # brackets, a quote and a backslash inside a string
    ok = write_events(tmp_path / "ok.json", [nested_args(MAX_DEPTH - 4), tricky])
    assert len(tl.load_trace(ok).events) == 2  # 4 + 60 = 64 levels: allowed
    deep = write_events(tmp_path / "deep.json", [nested_args(MAX_DEPTH - 3), tricky])
    with pytest.raises(ValueError, match="nested more than 64 levels"):
        tl.load_trace(deep)


def test_strings_and_escapes_split_across_reads_are_followed():
    doc = json.dumps({"a": ['x\\"[[[', "\\\\", '"]]]{{{'] * 3, "b": [[[]]]}).encode()  # true depth 4
    for size in (1, 2, 3, 5):
        reader, raw = DepthLimitedReader(io.BytesIO(doc), "d", max_depth=4), b""
        while chunk := reader.read(size):
            raw += chunk
        assert raw == doc
        with pytest.raises(ValueError, match="nested more than 3 levels"):
            tight = DepthLimitedReader(io.BytesIO(doc), "d", max_depth=3)
            while tight.read(size):
                pass


# ----------------------------------------------------------------------------------------------- event count
def test_more_events_than_the_limit_are_refused(tmp_path, capsys, monkeypatch):
    path = write_events(tmp_path / "t.json", [kernel(f"k{i}", 10 * i, 5) for i in range(5)])
    assert len(tl.load_trace(path, max_events=5).events) == 5
    with pytest.raises(ValueError, match="traceEvents must hold at most 4 events"):
        tl.load_trace(path, max_events=4)
    with pytest.raises(ValueError, match="max_events must be an integer >= 1, got 0"):
        tl.load_trace(path, max_events=0)
    monkeypatch.setitem(tl.load_trace.__kwdefaults__, "max_events", 3)
    code, out, err = run_cli(capsys, "analyze", str(path))
    assert_one_line_error(code, out, err, "traceEvents must hold at most 3 events")


# ----------------------------------------------------------------------------------------------- unusable events
BAD_EVENTS = [
    kernel("neg", 30, -15078),  # dur negative
    kernel("nodur", 40, None),  # dur missing
    {**kernel("nulldur", 41, None), "dur": None},  # dur missing (null)
    kernel("strdur", 42, "5"),  # dur not a number
    kernel("booldur", 43, True),  # dur not a number
    kernel("nots", None, 5),  # ts missing
    kernel("negts", -1, 5),  # ts negative
    kernel("huge", 1.7e308, 1e308),  # ts + dur not finite
    kernel("bigstream", 44, 5, args={"stream": 1e30}),  # args.stream not an integer
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": "x", "args": {"Total Allocated": 8}},
]
EXPECTED_SKIPS = {
    "dur negative": 1,
    "dur missing": 2,
    "dur not a number": 2,
    "ts missing": 1,
    "ts negative": 1,
    "ts + dur not finite": 1,
    "args.stream not an integer": 1,
    "ts not a number": 1,
}


def test_unusable_events_are_skipped_and_counted(tmp_path):
    path = write_events(tmp_path / "t.json", [kernel("a", 0, 10), kernel("b", 20, 5), *BAD_EVENTS])
    trace = tl.load_trace(path)
    assert trace.skipped == EXPECTED_SKIPS and sum(trace.skipped.values()) == len(BAD_EVENTS) == 10
    assert list(trace.events["name"]) == ["a", "b"]
    b = tl.busy_idle(trace)  # kernels [0, 10] and [20, 25]
    assert (b.span_us, b.busy_us, b.idle_us) == (25.0, 15.0, 10.0)
    assert tl.analyze(trace)["skipped_events"] == EXPECTED_SKIPS


def test_a_trace_of_only_unusable_events_is_refused_naming_the_counts(tmp_path):
    path = write_events(tmp_path / "t.json", [kernel("neg", 30, -15078), kernel("nodur", 40, None)])
    skipped = r"skipped 2 events \(dur missing: 1, dur negative: 1\)"
    with pytest.raises(ValueError, match="no usable trace events: " + skipped):
        tl.load_trace(path)


def test_analyze_states_the_skipped_count_and_never_a_negative_busy_time(tmp_path, capsys):
    path = write_events(tmp_path / "t.json", [kernel("a", 0, 10), kernel("b", 20, 5), *BAD_EVENTS])
    code, out, err = run_cli(capsys, "analyze", str(path))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"{path}: cuda trace, span 25 µs, busy 15 µs (60.0%), idle 10 µs, 0 steps"
    assert lines[1].startswith(
        "skipped 10 events (args.stream not an integer: 1, dur missing: 2, dur negative: 1, "
        "dur not a number: 2, ts + dur not finite: 1, ts missing: 1, ts negative: 1, "
        "ts not a number: 1): ts and dur must be finite numbers >= 0"
    )


def test_analyze_json_carries_the_skipped_counts(tmp_path, capsys):
    path = write_events(tmp_path / "t.json", [kernel("a", 0, 10), kernel("b", 20, 5), *BAD_EVENTS])
    code, out, _ = run_cli(capsys, "analyze", str(path), "--json")
    result = json.loads(out)
    assert code == 0 and result["skipped_events"] == EXPECTED_SKIPS
    assert (result["busy_ms"], result["span_ms"]) == (0.015, 0.025)


def test_a_zero_span_prints_no_division(tmp_path, capsys):
    path = write_events(tmp_path / "t.json", [kernel("instant", 5, 0)])
    code, out, err = run_cli(capsys, "analyze", str(path))
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"{path}: cuda trace, span 0 µs, busy 0 µs (of a zero span), idle 0 µs, 0 steps"


# ----------------------------------------------------------------------------------------------- control characters
def test_control_characters_in_names_are_escaped_when_printed(tmp_path, capsys):
    name = "k\x1b[31mred\nline\u202e"
    path = write_events(
        tmp_path / "t.json",
        [
            kernel(name, 0, 10),
            kernel("b", 20, 5),
            {"ph": "X", "cat": "user_annotation", "name": "ph\tase", "pid": 1, "tid": 1, "ts": 0, "dur": 3, "args": {}},
        ],
    )
    code, out, err = run_cli(capsys, "analyze", str(path))
    assert code == 0 and err == ""
    assert all(line.isprintable() for line in out.splitlines())
    assert r"k\x1b[31mred\nline\u202e -> b" in out
    assert r"phases: ph\tase 3 µs" in out
    weird = tmp_path / "no\nsuch\x07.json"
    code, out, err = run_cli(capsys, "analyze", str(weird))
    assert_one_line_error(code, out, err, r"no\nsuch\x07.json: no such trace file")


# ----------------------------------------------------------------------------------------------- overflow
@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["ledger", "--microbatch", "32", "--device-gb", "1e308"],
            f"--device-gb must be <= {(3.2 + 0.34 * 10**12) / 0.9:.6g} with --activation-gb-per-sample=0.34 ",
        ),
        (
            ["ledger", "--microbatch", "32", "--activation-gb-per-sample", "1e-300"],
            f"(or --activation-gb-per-sample >= {(21.6 - 3.2 + 1e-9) / 10**12:.6g} at this --device-gb)",
        ),
        (
            ["ledger", "--microbatch", "32", "--static-gb", "1.7e308", "--activation-gb-per-sample", "1e307"],
            f"--activation-gb-per-sample must be <= {(FLOAT_MAX - 1.7e308) / 320:.6g} with --static-gb=1.7e+308",
        ),
        (
            ["ledger", "--microbatch", str(10**20)],
            f"--microbatch must be an integer in [1, 1000000000000], got {10**20}",
        ),
        (
            ["ledger", "--microbatch", "32", "--blocks", "10000000"],
            "--blocks must be an integer in [1, 1000], got 10000000",
        ),
        (
            [
                "predict",
                "--throughput-gain",
                "0.2",
                "--steps-change",
                "1e303",
                "--price-per-hour",
                "1e6",
                "--baseline-hours",
                "10",
                "--json",
            ],
            f"--price-per-hour must be <= {FLOAT_MAX / (10 * ((1 + 1e303) / 1.2)):.6g} with --baseline-hours=10.0",
        ),
        (  # a price beyond the stated range, whatever the result: 1e308 USD an hour is a typo
            ["predict", "--throughput-gain", "0.2", "--steps-change", "0.25", "--price-per-hour", "1e308"],
            "--price-per-hour must be in [1e-06, 1e+06] USD per hour",
        ),
        (
            ["predict", "--throughput-gain", "0.2", "--steps-change", "0.25", "--baseline-hours", "1e308", "--json"],
            f"--baseline-hours must be <= {FLOAT_MAX / (1.25 / 1.2) / 2.1:.6g} with --price-per-hour=2.1",
        ),
        (
            ["predict", "--throughput-gain", "-0.999", "--steps-change", "1e307", "--json"],
            f"--steps-change must be <= {FLOAT_MAX * (1 - 0.999) - 1:.6g} with --throughput-gain=-0.999: beyond it the "
            f"relative cost overflows, got 1e+307",
        ),
    ],
)
def test_results_that_would_overflow_are_refused_naming_flag_value_and_limit(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, out, err, f"gpucost-lab {argv[0]}: error: ", message)


def test_the_largest_allowed_blocks_still_answers(capsys):
    code, out, _ = run_cli(capsys, "ledger", "--microbatch", "32", "--blocks", "1000", "--json")
    assert code == 0 and len(json.loads(out)["blocks"]) == 1000


# ----------------------------------------------------------------------------------------------- output paths
def test_output_paths_that_are_folders_or_in_no_folder_are_refused_before_any_work(tmp_path, capsys):
    folder_md, folder_json, a_file = tmp_path / "r.md", tmp_path / "t.json", tmp_path / "plain"
    folder_md.mkdir(), folder_json.mkdir(), a_file.write_text("x")
    cases = [
        (["plan", "--report", str(tmp_path)], f"--report must end with one of .md, .html, .htm, got '{tmp_path}'"),
        (["plan", "--report", str(folder_md)], f"--report must be a file path, not a folder, got '{folder_md}'"),
        (
            ["plan", "--registry", str(folder_json)],
            f"--registry must be a file path, not a folder, got '{folder_json}'",
        ),
        (["plan", "--report", str(a_file / "r.md")], "--report must be in an existing folder"),
        (["simulate", "-o", str(folder_json)], f"--output must be a file path, not a folder, got '{folder_json}'"),
        (["simulate", "-o", str(tmp_path / "missing" / "t.json")], "--output must be in an existing folder"),
        (["simulate", "-o", str(tmp_path / "t.txt")], "--output must end with .json or .json.gz"),
    ]
    for argv, message in cases:
        assert_one_line_error(*run_cli(capsys, *argv), message)
    assert sorted(os.listdir(tmp_path)) == ["plain", "r.md", "t.json"] and not os.listdir(folder_md)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_special_file_is_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    assert_one_line_error(*run_cli(capsys, "simulate", "-o", str(fifo)), "--output must be a regular file")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="a folder's mode does not stop root")
def test_an_unwritable_folder_is_refused(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert_one_line_error(
            *run_cli(capsys, "simulate", "-o", str(locked / "t.json")), "--output must be in a folder you may write to"
        )
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="needs Linux's sysfs, where no one creates files")
def test_a_folder_no_one_may_create_files_in_is_one_line_and_exit_2(capsys):
    code, out, err = run_cli(capsys, "simulate", "-o", "/sys/t.json", "--steps", "2")
    # refused up front (os.access says no) or, for root, when the temporary file cannot be created
    assert_one_line_error(code, out, err, "--output", "'/sys/t.json'")
    assert "you may write to" in err and not os.path.exists("/sys/t.json")


def test_a_write_that_fails_midway_leaves_nothing_behind(tmp_path, capsys, monkeypatch):
    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(simulate.os, "replace", full_disk)
    target = tmp_path / "t.json"
    assert_one_line_error(
        *run_cli(capsys, "simulate", "-o", str(target), "--steps", "2"),
        f"--output '{target}' could not be written (No space left on device)",
    )
    assert os.listdir(tmp_path) == []  # neither the trace nor its temporary file


# ----------------------------------------------------------------------------------------------- InputError.field
def test_an_input_error_is_a_value_error_carrying_its_field():
    with pytest.raises(InputError) as caught:
        cost.predict(0.2, 0.25, price_per_hour_usd=0)
    err = caught.value
    assert isinstance(err, ValueError) and gpucost_lab.InputError is InputError
    assert err.field == "price_per_hour_usd"
    assert str(err) == "price_per_hour_usd must be > 0, got 0"


@pytest.mark.parametrize(
    "call, field, message",
    [
        (
            lambda: MemoryLedger(3.2, 0.34, reserve_fraction=1.0),
            "reserve_fraction",
            "reserve_fraction must be in [0, 1)",
        ),
        (
            lambda: MemoryLedger(3.2, 0.34).at(32, recompute="half"),
            "recompute",
            "recompute must be one of 'none', 'selective', 'full', got 'half'",
        ),
        (lambda: MemoryLedger(3.2, 0.34, gradient_gb=4.0), "gradient_gb", "gradient_gb must be at most static_gb=3.2"),
        (lambda: tl.diff([], "after.json"), "before", "before must hold at least one trace, got none"),
        (lambda: SeedRuns(()), "runs", "runs must hold at least one TrainResult"),
        (lambda: cost.predict(0.2, 0.25, window_hours=8), "window_hours", "window_hours needs baseline_hours"),
    ],
)
def test_every_kind_of_check_names_its_field(call, field, message):
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.field == field and str(caught.value).startswith(message), caught.value


def test_an_input_error_keeps_its_field_across_processes():
    back = pickle.loads(pickle.dumps(InputError("scenario.steps", "scenario.steps must be an integer >= 1, got 0")))
    assert (back.field, str(back)) == ("scenario.steps", "scenario.steps must be an integer >= 1, got 0")


# ----------------------------------------------------------------------------------------------- issue 33: bounds
def test_a_ledger_whose_budget_dwarfs_a_sample_is_refused_not_searched_for_ever(capsys):
    # 1e30 GB of budget and static memory: 0.34 GB is below a float's resolution there (ulp(1e30) is 1.4e14), so
    # peak(m + 1) == peak(m) for every m the search could step through
    for command in (["ledger", "--microbatch", "4"], ["fix-oom", "--global-batch", "60"]):
        code, out, err = run_cli(capsys, *command, "--static-gb", "1e30", "--device-gb", "1e30", "--reserve", "0")
        limit = 0.34 * 2.0**43  # the activations one more sample adds, times MAX_BUDGET_PER_SAMPLE
        assert_one_line_error(code, out, err, f"--device-gb must be <= {limit:.6g} with --activation-gb-per-sample")


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["fix-oom", "--global-batch", "60", "--step-time-s", "1e-320"],
            f"--step-time-s must be >= {60 / FLOAT_MAX:.6g}",
        ),
        (["simulate", "--gpu", "bogus", "-o", "t.json"], "--gpu must be one of 'A10'"),
        (["profile-to-cost", "--price-per-hour", "1e-320"], "--price-per-hour must be in [1e-06, 1e+06]"),
        (["profile-to-cost", "--repeats", "1000000000"], "--repeats must be an integer in [2, 100], got 1000000000"),
        (["plan", "--rounds", str(10**9)], "--rounds must be an integer in [2, 1000]"),
        (["ledger", "--microbatch", "4", "--selective-extra-compute", "1e308"], "--selective-extra-compute must be in"),
        (["export-grades", "--format", "canvas", "--canvas-id", "lab=²"], "--canvas-id must be ASSIGNMENT=ID"),
        (["pipeline", "--batch-size", str(10**30)], "--batch-size must be an integer in [1, 4096]"),
        (["pipeline", "--decode-passes", str(10**9)], "--decode-passes must be an integer in [0, 100]"),
        (["pipeline", "--batches", "1000", "--batch-size", "4096"], "--batches must be <= 2 with --batch-size=4096"),
        (["analyze", "t.json", "--top", str(10**30)], "--top must be an integer in [1, 1000]"),
        (["grade-class", ".", "--workers", "1000"], "--workers must be a whole number from 1 to 64"),
        (["grade", "x.ipynb", "--timeout", "9" * 400], "--timeout must be a whole number of seconds from 1 to 3600"),
    ],
)
def test_every_size_count_and_rate_has_a_stated_range(capsys, argv, message):
    assert_one_line_error(*run_cli(capsys, *argv), message)


def test_the_simulators_event_count_is_known_before_it_runs():
    # the bound is on trace_events(config), counted from the knobs: it must never count fewer events than the run
    # writes (else the bound would not hold), and never many more (else it would refuse runs that fit)
    from gpucost_lab.simulate.config import trace_events

    for knobs in (
        {},
        {"steps": 7, "layers": 3, "eval_every": 2, "eval_batches": 3},
        {"steps": 9, "layers": 2, "checkpoint_every": 3, "item_sync": True, "num_workers": 0},
        {"steps": 6, "layers": 1, "eval_every": 3, "checkpoint_every": 2, "num_workers": 7},
    ):
        config = simulate.SimConfig(hidden=64, **{"steps": 4, **knobs})
        written = len(simulate.simulate(config)["traceEvents"])
        assert written <= trace_events(config) <= written * 1.02, (knobs, written, trace_events(config))


# ----------------------------------------------------------------------------------------------- issue 33: paths
@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["simulate", "-o", "{tmp}/t.json/", "--steps", "2"],
            "--output must name a file, not a folder (it ends in '/')",
        ),
        (["plan", "--report", ""], "--report must name a file or folder, got ''"),
        (["plan", "--registry", ""], "--registry must name a file or folder, got ''"),
        (["grade-class", ""], "SUBMITTED_DIR must name a file or folder, got ''"),
        (["simulate", "-o", "{tmp}/" + "n" * 231 + ".json"], "--output must end in a name of at most 230 bytes"),
        (["plan", "--registry", "{tmp}/r.json", "--report", "{tmp}/" + "n" * 240 + ".md"], "--report must end in"),
        (["analyze", "{tmp}/" + "n" * 300 + ".json"], "File name too long"),
        (["export-grades", "{tmp}/" + "n" * 300 + ".db", "--format", "csv"], "GRADEBOOK must end in a name of at most"),
        (["self-check", "{tmp}/" + "n" * 300 + ".ipynb"], "File name too long"),
    ],
)
def test_outputs_and_inputs_the_file_system_cannot_take_are_refused_before_any_work(tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert_one_line_error(*run_cli(capsys, *argv), message)
    assert os.listdir(tmp_path) == []  # nothing written, the registry included


def test_a_sqlite_file_that_is_no_gradebook_is_refused_and_left_unchanged(tmp_path, capsys):
    import sqlite3

    stray = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(stray)) as db:
        db.execute("CREATE TABLE notes (text)")
        db.commit()
    before = stray.read_bytes()
    code, out, err = run_cli(capsys, "export-grades", str(stray), "--format", "csv")
    assert_one_line_error(code, out, err, "is a sqlite file but not an nbgrader gradebook (no 'assignment' table)")
    assert stray.read_bytes() == before  # nbgrader would have added its tables
    (tmp_path / "noise.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 4096)
    assert_one_line_error(*run_cli(capsys, "export-grades", str(tmp_path / "noise.db"), "--format", "csv"), "sqlite")


def test_a_grades_csv_with_a_field_over_the_csv_limit_is_one_line(tmp_path, capsys):
    grades = tmp_path / "grades.csv"
    grades.write_text(
        "assignment,student_id,last_name,first_name,email,score,max_score,passed\n" + "x" * 131_073 + "\n"
    )
    code, out, err = run_cli(capsys, "export-grades", str(grades), "--format", "csv")
    assert_one_line_error(
        code, out, err, "GRADEBOOK is not a CSV `nbgrader export` wrote (field larger than field limit"
    )


def test_an_unexpected_error_is_one_line_naming_where_its_report_is(capsys, monkeypatch):
    def broken(args):
        raise TypeError("a bug\nover two lines")

    monkeypatch.setitem(cli.COMMANDS, "predict", dataclasses.replace(cli.COMMANDS["predict"], run=broken))
    code, out, err = run_cli(capsys, "predict", "--throughput-gain", "0.2", "--steps-change", "0.25")
    assert code == 70 and out == "" and err.count("\n") == 1, err
    assert err.startswith("gpucost-lab predict: internal error (not your input): TypeError: a bug; the full report")
    report = Path(err.rsplit(" ", 1)[-1].strip())
    assert "Traceback" in report.read_text() and "over two lines" in report.read_text()
    report.unlink()


# ----------------------------------------------------------------------------------------------- issue 33: temp files
def test_a_killed_writes_temporary_files_are_removed_by_the_next_write(tmp_path, capsys):
    import time

    target = tmp_path / "t.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = [tmp_path / f".t.json.{int(dead.stdout)}.0123abcd.tmp", tmp_path / f".t.json.{'ab' * 16}.tmp"]
    running = tmp_path / f".t.json.{os.getppid()}.89abcdef.tmp"  # its writer still runs: left, and named
    other = tmp_path / f".other.json.{int(dead.stdout)}.0123abcd.tmp"  # another target's: not this write's business
    for path in (*stale, running, other):
        path.write_bytes(b"x" * 1000)
        os.utime(path, (time.time() - 3600, time.time() - 3600))  # from before this process started
    code, out, err = run_cli(capsys, "simulate", "-o", str(target), "--steps", "2")
    assert code == 0
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in (target, running, other))
    assert err.count("\n") == 1 and "note: 1 temporary file of an earlier write" in err and running.name in err


def test_a_registry_staged_with_its_report_is_recorded_only_when_committed(tmp_path):
    from gpucost_lab.release import Registry
    from gpucost_lab.release.gate import CHECKS, Decision

    path = tmp_path / "registry.json"
    registry = Registry(path)
    decision = Decision("promote", "c", "c", "b", "b", ("ok",) * len(CHECKS), dict.fromkeys(CHECKS, True), None, None)
    _, pending = registry.prepare_record(decision)
    assert not path.exists() and len(os.listdir(tmp_path)) == 1  # only the temporary file
    pending.discard()  # the report could not be written: the decision is not recorded either
    assert os.listdir(tmp_path) == [] and registry.current() is None
    _, pending = registry.prepare_record(decision)
    pending.commit()
    assert registry.current() == "c" and os.listdir(tmp_path) == ["registry.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_fifo_trace_is_refused_without_waiting_for_a_writer(tmp_path, capsys):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    assert_one_line_error(*run_cli(capsys, "analyze", str(fifo)), "not a regular file (a FIFO")


def test_the_plans_registry_and_report_are_one_decision(tmp_path, capsys, monkeypatch):
    # the plan itself (minutes) is stood in for; what is checked is what the command writes around it
    from gpucost_lab.release import plan, report
    from gpucost_lab.release.gate import CHECKS, Decision

    decision = Decision("promote", "c", "c", "b", "b", ("ok",) * len(CHECKS), dict.fromkeys(CHECKS, True), None, None)

    class Planned:
        def to_dict(self):
            return {}

        def report_data(self):
            return None

    def planned(candidate, *, price_per_hour_usd, rounds, registry):
        registry.record(decision)
        return Planned()

    def full_disk(data, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plan, "run_plan", planned)
    monkeypatch.setattr(report, "write_report_pending", full_disk)
    registry, out = tmp_path / "registry.json", tmp_path / "report.md"
    code, stdout, err = run_cli(capsys, "plan", "--registry", str(registry), "--report", str(out))
    assert_one_line_error(code, stdout, err, f"--report '{out}' could not be written (No space left on device)")
    assert os.listdir(tmp_path) == []  # the decision was not recorded without its report, and no temporary file
