"""Helpers of the tests in tests/cli/: a command's JSON answer, a refusal in one line, the installed script, and a
command run in this process on awkward values under a time and a memory cap."""

import contextlib
import io
import json
import resource
import signal
import sys
from pathlib import Path

from hypothesis import strategies as st

from gpucost_lab.cli import main as cli
from gpucost_lab.cli.main import main

SCRIPT = Path(sys.executable).with_name("gpucost-lab")
ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
LAB = "profile_training_loop"  # the lab `gpucost-lab grade-class` grades by default
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"  # what learners receive
MALFORMED = '{"cells": [ {"cell_type": "code", "source": "x = '  # a notebook cut short: not valid notebook JSON
DEEP = 100_000  # a trace's nesting, 200 KB of brackets: without a limit the parser's prefixes need about 25 GB


def run_json(capsys, *argv):
    """The JSON object ``gpucost-lab ARGV --json`` prints in this process (exit status 0, one line)."""
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def assert_one_line_naming(capsys, argv, flag):
    """``gpucost-lab ARGV`` refused: exit status 2, nothing on stdout, one stderr line naming ``flag``; that line."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors (missing or unparsable flags) exit directly
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in captured.err
    return lines[0]


# -------------------------------------------------- awkward values (test_bad_input_property.py, test_serve_property.py)
AWKWARD = [
    "-1",
    "0",
    "-0",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e-320",
    "1e400",
    str(10**30),
    str(-(10**30)),
    str(2**63),
    "٣",  # ARABIC-INDIC DIGIT THREE: Python's int() reads it as 3
    "²",
    "½",
    "0x10",
    "1_000",
    " 5 ",
    "",
    " ",
    "\x1b[31m",
    "a\nb",
    "\u202e",
    "9" * 400,
]


class Accepted(BaseException):
    """Raised where a command that measures starts measuring: everything it was given has been accepted."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail (in the command, which reports it as an internal error) if a case runs longer than ``seconds``: a hang
    detector, far above any case's time on any machine."""

    def expired(signum, frame):
        raise TimeoutError(f"a case ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


CASE_MEMORY = 2 * 2**30  # address space a case may add to this process's (RLIMIT_AS): far above any case's need


@contextlib.contextmanager
def memory_cap(extra: int):
    """Cap this process's address space at its current size + ``extra`` (the soft limit, restored after), so that a
    case that would need more fails (its command then says "out of memory", which the checks refuse)."""
    try:
        size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
    except (OSError, StopIteration):  # not Linux: no cap
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_capped(argv: list[str]) -> tuple[int, str, str, dict | None]:
    """(exit status, stdout, stderr, what a measuring command accepted) of ``gpucost-lab ARGV`` in this process,
    under a time cap and a memory cap."""
    out, err, accepted = io.StringIO(), io.StringIO(), None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), deadline(60), memory_cap(CASE_MEMORY):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse's own errors
            code = exit_.code
        except Accepted as a:
            code, accepted = 0, a.args[0]
    return code, out.getvalue(), err.getvalue(), accepted


def _options(command: str) -> list:
    """The argparse actions of ``gpucost-lab COMMAND``, but for --help and --json."""
    import argparse

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if a.dest not in ("help", "json")]


def _flag_values(command: str, action) -> st.SearchStrategy:
    """Awkward values for ``action``'s flag: none for a switch, its choices or awkward words for a flag with choices,
    else awkward numbers and text."""
    if action.nargs == 0:  # a switch
        return st.just(None)
    if action.choices:
        return st.sampled_from([*action.choices, *AWKWARD[:6], ""])
    return st.one_of(
        st.sampled_from(AWKWARD),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(-(10**40), 10**40).map(str),
        st.text(max_size=8),
    )


def check_outcome(command: str, argv: list[str], code, out: str, err: str) -> None:
    """Exit status 0 with at most notes on stderr, or 2 with one error line and nothing on stdout; never a traceback
    or "out of memory"."""
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err and "out of memory" not in err, (argv, err)
    lines = err.splitlines()
    assert all(line.startswith(f"gpucost-lab {command}: ") for line in lines), (argv, err)
    if code == 2:
        assert out == "" and len(lines) == 1 and ": error: " in lines[0], (argv, err)
    else:
        assert all(": note: " in line for line in lines), (argv, err)
