"""Every bad input gets one line (README, "CLI reference"), found by search rather than by listing cases.

- Every flag of every command, given a value drawn from the awkward ones (negative, zero, NaN, infinities, 1e308,
  1e-320, 10**30, other scripts' digits, control characters, empty, ...), and every path argument given an awkward
  path (missing, a folder, a FIFO, a name longer than the file system allows, one ending in "/", empty): the command
  either answers (exit 0, its answer checked against a hand computation) or prints exactly one line on stderr and
  exits with status 2. Never a traceback, never the internal-error status, never a hang or more than 2 GB (each case
  runs under a minute's alarm and an address-space cap of 2 GB above the process's size).
  The commands that measure (profile-to-cost, pipeline, plan) stop where their measuring starts: what they accepted
  must lie within the bounds the README states.
- Generated traces, bad and good, read with the trace limits scaled down (so that the boundaries are reachable in
  bytes rather than megabytes): each is loaded (the events written, counted by the generator) or refused in one line
  for a reason the generator knows it broke (a string, a run of whitespace or an event over its limit, nesting over
  64, more JSON than the cap, a file cut short).
- In a child process under a memory cap (RLIMIT_AS): the issue's traces that exhausted memory or hung (a long name,
  whitespace between events, a gzip "bomb", a FIFO) and the simulator's largest runs, each one line and exit 2 within
  a minute. The full-size cases (a 10 GB bomb, 10M events) are in benchmarks/bad_input_limits.py.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucost_lab import timeline as tl
from gpucost_lab._validate import MAX_PRICE_PER_HOUR_USD, MIN_PRICE_PER_HOUR_USD
from gpucost_lab.timeline import framing, load

from .helpers import Accepted, _flag_values, _options, check_outcome
from .helpers import run_capped as run

pytestmark = pytest.mark.slow

SIM_EVENTS = 20_000  # the simulator's event budget here (2,000,000 in use: up to half a minute a run)
COMMANDS = ("ledger", "fix-oom", "predict", "profile-to-cost", "analyze", "diff", "simulate", "plan", "pipeline")
GRADING = ("grade", "self-check", "grade-class", "export-grades")
SMALL_TRACE = Path(tl.example_trace("cpu_only_small"))


@pytest.fixture(scope="module")
def places():
    """Awkward paths: missing, a folder, a FIFO, a name too long, ending in "/", empty, a control character."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "folder.json").mkdir()
        fifo = tmp / "fifo.json"
        os.mkfifo(fifo)
        paths = {
            "missing": str(tmp / "missing.json"),
            "folder": str(tmp / "folder.json"),
            "fifo": str(fifo),
            "long": str(tmp / ("n" * 300 + ".json")),
            "slash": str(tmp / "t.json") + "/",
            "empty": "",
            "control": str(tmp / "a\x1bb\n.json"),
            "in a file": str(SMALL_TRACE / "t.json"),
        }
        yield tmp, paths


@st.composite
def invocations(draw, command: str, places: dict) -> list[str]:
    """``gpucost-lab COMMAND`` with one to three flags (or path arguments) given awkward values."""
    options = [a for a in _options(command) if a.option_strings]
    chosen = draw(st.lists(st.sampled_from(options), min_size=1, max_size=3, unique_by=lambda a: a.dest))
    argv = [command]
    for action in chosen:
        flag = action.option_strings[-1]
        if action.dest in ("output", "registry", "report", "feedback_dir", "feedback", "source_root"):
            value = draw(st.sampled_from(sorted(places.values())))
        else:
            value = draw(_flag_values(command, action))
        argv += [flag] if value is None else [flag, value]
    given = {a.dest for a in chosen}
    path = st.sampled_from(sorted(places.values()))
    positional = {
        "analyze": lambda: [draw(st.sampled_from([str(SMALL_TRACE), *places.values()]))],
        "diff": lambda: [str(SMALL_TRACE), "--after", draw(st.sampled_from([str(SMALL_TRACE), *places.values()]))],
        "grade": lambda: [draw(path)],
        "self-check": lambda: [draw(path)],
        "grade-class": lambda: [draw(path)],
        "export-grades": lambda: [draw(path)],
    }
    argv += positional.get(command, lambda: [])()
    required = {
        "fix-oom": {"global_batch": ["--global-batch", "60"]},
        "predict": {"throughput_gain": ["--throughput-gain", "0.2"], "steps_change": ["--steps-change", "0.25"]},
        "simulate": {"output": ["-o", "OUT"]},
        "export-grades": {"format": ["--format", "csv"]},
    }
    for dest, args in required.get(command, {}).items():
        if dest not in given:
            argv += args
    if command == "ledger" and not given & {"microbatch", "global_batch"}:
        argv += ["--microbatch", "32"]
    return [*argv, "--json"]


@pytest.fixture
def measuring_stops(monkeypatch):
    """The commands that measure stop, where the measuring starts, with what they accepted."""
    from gpucost_lab.course import profile_to_cost
    from gpucost_lab.pipeline import loader as pipeline
    from gpucost_lab.release import plan
    from gpucost_lab.simulate import config as sim_config

    def at_profile(step, contract, **kwargs):
        raise Accepted({"repeats": contract.repeats})

    def at_pipeline(config, **kwargs):
        raise Accepted({"config": config, **kwargs})

    def at_plan(name, config):
        raise Accepted({})

    monkeypatch.setattr(sim_config, "MAX_TRACE_EVENTS", SIM_EVENTS)  # the simulator's accepted runs stay small
    monkeypatch.setattr(profile_to_cost, "measure", at_profile)
    monkeypatch.setattr(pipeline, "measure_pipeline", at_pipeline)
    monkeypatch.setattr(plan, "measure_config", at_plan)
    from gpucost_lab.grading import autograde

    monkeypatch.setattr(autograde, "require_sandbox", lambda *a, **k: None, raising=False)  # not the subject here


def _given(argv: list[str], flag: str, default: float) -> float:
    return float(argv[argv.index(flag) + 1]) if flag in argv else default


def check_answer(command: str, argv: list[str], out: str, accepted: dict | None, output: Path | None) -> None:
    """The answer of an accepted command, checked against a hand computation (or, for the commands that measure,
    what they accepted against the README's bounds)."""
    from gpucost_lab.course import profile_to_cost
    from gpucost_lab.pipeline import loader as pipeline
    from gpucost_lab.release import plan

    if accepted is not None:
        price = _given(argv, "--price-per-hour", 2.10)
        assert MIN_PRICE_PER_HOUR_USD <= price <= MAX_PRICE_PER_HOUR_USD, argv
        if command == "profile-to-cost":
            assert 2 <= accepted["repeats"] <= profile_to_cost.MAX_REPEATS
        elif command == "pipeline":
            c = accepted["config"]
            assert 1 <= c.batch_size <= pipeline.MAX_BATCH_SIZE and 1 <= accepted["batches"] <= pipeline.MAX_BATCHES
            assert 2 <= accepted["repeats"] <= pipeline.MAX_REPEATS
            assert 0 <= accepted["decode_passes"] <= pipeline.MAX_DECODE_PASSES
            assert c.prefetch_factor is None or 1 <= c.prefetch_factor <= pipeline.MAX_PREFETCH_FACTOR
        elif command == "plan":
            assert 2 <= _given(argv, "--rounds", 10) <= plan.MAX_ROUNDS
        return
    result = json.loads(out)
    if command == "ledger":
        device, reserve = _given(argv, "--device-gb", 24.0), _given(argv, "--reserve", 0.10)
        assert math.isclose(result["budget_gb"], device * (1 - reserve), rel_tol=1e-12)
        assert result["fits"] == (result["peak_gb"] <= result["budget_gb"] + 1e-9)
        assert math.isclose(result["headroom_gb"], result["budget_gb"] - result["peak_gb"], rel_tol=1e-9, abs_tol=1e-9)
    elif command == "fix-oom":
        assert all(f["peak_gb"] <= result["budget_gb"] + 1e-9 for f in result["fixes"])
    elif command == "predict":
        gain, change = _given(argv, "--throughput-gain", 0.2), _given(argv, "--steps-change", 0.25)
        assert math.isclose(result["relative_cost"], (1 + change) / (1 + gain), rel_tol=1e-12)
    elif command == "simulate":  # the file written, within the events the run was allowed
        assert output is not None and output.stat().st_size == result["bytes"]
        assert len(json.loads(output.read_bytes())["traceEvents"]) <= SIM_EVENTS
    elif command in ("analyze",):
        assert result["busy_ms"] is None or result["busy_ms"] <= result["span_ms"] + 1e-9
    elif command == "diff":
        assert result["lines"] and all(line["better_when"] == "lower" for line in result["lines"])


@pytest.mark.parametrize("command", COMMANDS + GRADING)
def test_every_flag_given_an_awkward_value_answers_or_says_one_line(command, places, measuring_stops):
    tmp, paths = places

    @settings(
        max_examples=25 if command in GRADING else 40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(invocations(command, paths))
    def case(argv):
        with tempfile.TemporaryDirectory(dir=tmp) as scratch:
            output = Path(scratch) / "t.json"
            argv = [str(output) if a == "OUT" else a for a in argv]
            code, out, err, accepted = run(argv)
            check_outcome(command, argv, code, out, err)
            if code == 0:
                flag = next((f for f in ("-o", "--output") if f in argv), None)
                written = Path(argv[argv.index(flag) + 1]) if flag and command == "simulate" else None
                check_answer(command, argv, out, accepted, written)

    case()


# ----------------------------------------------------------------------------------------------- generated traces
# The trace limits scaled down, so that a generated trace can reach and pass each of them in a few hundred bytes.
STRING, SPACE, EVENT, BLOCK, CAP = 96, 64, 400, 32, 1000


def _kernel(name: str, depth: int, pad: int = 0) -> bytes:
    """A kernel event named ``name`` whose args hold lists nested to ``depth`` levels of the document, and ``pad``
    numbers (2 bytes each: a length without a long string or deeper nesting)."""
    shape = "[" * max(depth - 4, 0) + "]" * max(depth - 4, 0)
    extra = (f',"shape":{shape}' if depth > 4 else "") + (f',"pad":[{",".join("1" * pad)}]' if pad else "")
    return (
        f'{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":1,"dur":2,"args":{{"stream":7{extra}}}}}'
    ).encode()


@st.composite
def traces(draw) -> tuple[bytes, bool, set, int]:
    """(file bytes, gzipped, the reasons it must be refused for (empty: loadable), the events it holds)."""
    reasons: set[str] = set()
    n = draw(st.integers(1, 5))
    body, elements = [], []
    for i in range(n):
        name = "k" * draw(st.integers(0, STRING + 8))
        depth = draw(st.sampled_from([3] * 12 + [5, 40, 64, 64, 65, 70]))  # mostly flat: one reason at a time
        gap = b" " * draw(st.integers(0, SPACE + 8))
        event = _kernel(name, depth, draw(st.integers(0, 110)))
        if len(name) + 1 > STRING:  # the string's bytes from its opening quote (as the loader counts them)
            reasons.add("string")
        if len(gap) > SPACE:
            reasons.add("whitespace")
        if depth > 64:
            reasons.add("nested")
        elements.append((i > 0) + len(gap) + len(event))  # from the comma before it (none for the first)
        body.append(b"," * (i > 0) + gap + event)
    elements[-1] += 1  # the last runs to the "]" that closes the array
    if max(elements) > EVENT:
        reasons.add("event")
    junk = "j" * draw(st.integers(0, STRING + 8))  # a string outside the events
    if len(junk) + 1 > STRING:
        reasons.add("string")
    doc = b'{"junk":"' + junk.encode() + b'","traceEvents":[' + b"".join(body) + b"]}"
    if draw(st.booleans()):
        doc, reasons = doc[: draw(st.integers(1, len(doc) - 1))], reasons | {"truncated"}
    if len(doc) > CAP:
        reasons.add("cap")
    gzipped = draw(st.booleans())
    return (gzip.compress(doc, mtime=0) if gzipped else doc), gzipped, reasons, n


REFUSALS = {  # what the one line says for each reason
    "string": "a string (an event's name, category or argument) of more than",
    "whitespace": "whitespace between trace events of more than",
    "event": "a trace event with the whitespace around it of more than",
    "nested": "JSON nested more than 64 levels deep",
    "cap": "bytes of JSON; allowed: at most",
    "truncated": "",  # malformed or cut short: any one line naming the file
}


@settings(max_examples=150, deadline=None)
@given(traces())
def test_generated_traces_load_or_are_refused_for_what_they_break(tmp_path_factory, generated):
    data, gzipped, reasons, events = generated
    path = tmp_path_factory.mktemp("trace") / ("t.json.gz" if gzipped else "t.json")
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in (
            ("MAX_STRING_BYTES", STRING),
            ("MAX_WHITESPACE_BYTES", SPACE),
            ("MAX_EVENT_BYTES", EVENT),
            ("FAST_SEGMENT", min(STRING, SPACE)),
            ("BLOCK", BLOCK),
        ):
            mp.setattr(framing, name, value)
        mp.setattr(load, "MAX_TRACE_BYTES", CAP)
        code, out, err, _ = run(["analyze", str(path), "--json"])
        check_outcome("analyze", ["analyze", str(path)], code, out, err)
        if not reasons:
            assert code == 0, err
            assert len(tl.load_trace(path).events) == events
        else:
            assert code == 2 and str(path) in err, (reasons, err)
            assert any(REFUSALS[r] in err for r in reasons), (reasons, err)


# ----------------------------------------------------------------------------------------------- under a memory cap
MEMORY_CAP = 1536 * 2**20  # address space: the CLI needs about 0.7 GB of it (torch); the old loader needed > 2 GB


def _capped_cli(*argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    return subprocess.run(
        [sys.executable, "-m", "gpucost_lab", *argv],
        capture_output=True,
        text=True,
        preexec_fn=bounded,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def _gzip_members(head: bytes, middle: bytes, copies: int, tail: bytes) -> bytes:
    """A gzip file of several members (one compressed ``middle`` repeated): decompresses to ``copies`` x ``middle``
    between ``head`` and ``tail`` for the cost of compressing it once."""
    one = gzip.compress(middle, compresslevel=1, mtime=0)
    return gzip.compress(head, mtime=0) + one * copies + gzip.compress(tail, mtime=0)


EVENT_JSON = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7}}'


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and FIFOs as on Linux")
@pytest.mark.parametrize(
    "name, content, words",
    [
        (
            "name.json",
            lambda: b'{"traceEvents":[' + EVENT_JSON + b',{"ph":"X","name":"' + b"a" * (40 * 2**20) + b'"}]}',
            "a string (an event's name, category or argument) of more than 2,097,152 bytes",
        ),
        (
            "gap.json",
            lambda: b'{"traceEvents":[' + EVENT_JSON + b"," + b" " * (40 * 2**20) + EVENT_JSON + b"]}",
            "whitespace between trace events of more than 2,097,152 bytes",
        ),
        (  # decompresses to 4 GB of one string: refused after 2 MB of it
            "bomb.json.gz",
            lambda: _gzip_members(b'{"traceEvents":[{"ph":"X","name":"', b"a" * 2**24, 256, b'"}]}'),
            "a string (an event's name, category or argument) of more than",
        ),
        (  # 4 GB of whitespace, outside the events and between them
            "spaces.json.gz",
            lambda: _gzip_members(b'{"traceEvents":[' + EVENT_JSON + b",", b" " * 2**24, 256, EVENT_JSON + b"]}"),
            "whitespace between trace events",
        ),
        (  # a number of 100 MB outside the events, which ijson would hold whole
            "number.json.gz",
            lambda: _gzip_members(b'{"n":1', b"1" * 2**24, 6, b',"traceEvents":[' + EVENT_JSON + b"]}"),
            "a number or literal of more than",
        ),
    ],
)
def test_traces_that_exhausted_memory_are_one_line_under_a_memory_cap(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content())
    proc = _capped_cli("analyze", str(path))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_fifo_as_the_trace_is_refused_before_it_is_read(tmp_path):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    proc = _capped_cli("analyze", str(fifo), timeout=60)  # the old loader waited for a writer for good
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a regular file" in proc.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as on Linux")
@pytest.mark.parametrize(
    "argv, words",
    [
        (["--steps", "10000", "--eval-every", "1", "--eval-batches", "10000"], "--steps must be <= 1 with"),
        (["--steps", "10000", "--checkpoint-every", "1"], "--steps must be <= 3696 with"),
        (["--steps", "10000"], "--steps must be <= 6849 with"),
        (["--decode-us-per-sample", "1e308"], "--decode-us-per-sample must be in [0, 1e+06]"),
    ],
)
def test_simulator_runs_past_its_bounds_are_one_line_before_any_work(tmp_path, argv, words):
    proc = _capped_cli("simulate", *argv, "-o", str(tmp_path / "t.json"), timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []
