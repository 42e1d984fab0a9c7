"""How ``gpucost-lab`` reports bad input (gpucost_lab.cli.errors): the library's field shown as the flag typed, text
made safe to print, and the lines of a failed write, an empty path, deep nesting and memory run out, each written
out by hand. test_bad_input.py and test_bad_input_property.py check the same lines through every command.
"""

import argparse
import errno
import warnings

import pytest

from gpucost_lab import InputError
from gpucost_lab.cli.command import Command
from gpucost_lab.cli.errors import (
    EXIT_USAGE,
    check_inputs,
    error_line,
    failure,
    one_line_warnings,
    shown,
    writing,
)
from gpucost_lab.cli.main import main

FLAGS = {"price_per_hour_usd": "--price-per-hour", "baseline_hours": "--baseline-hours", "output": "--output"}


def cli_error(capsys, *argv):
    """The one stderr line of a refused command (exit status 2, nothing on stdout)."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1, captured
    return captured.err


@pytest.mark.parametrize(
    "argv, line",
    [
        # plan_fixes checks the price (gpucost_lab.memory.fixes), two calls below the command
        (
            ["fix-oom", "--global-batch", "60", "--price-per-hour", "0"],
            "gpucost-lab fix-oom: error: --price-per-hour must be > 0, got 0.0\n",
        ),
        # MemoryLedger checks the share selective recomputation saves, under the flag's own name
        (
            ["ledger", "--microbatch", "8", "--selective-saving", "1"],
            "gpucost-lab ledger: error: --selective-saving must be in [0, 1), got 1.0\n",
        ),
        (
            ["ledger", "--microbatch", "8", "--reserve", "-0.5"],
            "gpucost-lab ledger: error: --reserve must be in [0, 1), got -0.5\n",
        ),
    ],
)
def test_an_input_error_deep_inside_names_the_flag_typed(capsys, argv, line):
    assert cli_error(capsys, *argv) == line


def test_the_flag_comes_from_the_error_field_not_from_its_wording(capsys, monkeypatch):
    from gpucost_lab import cost

    def refuse(*args, **kwargs):
        raise InputError("price_per_hour_usd", "the price must be > 0 with baseline_hours=8.0, got -1.0")

    monkeypatch.setattr(cost, "predict", refuse)
    err = cli_error(capsys, "predict", "--throughput-gain", "0.2", "--steps-change", "0.25")
    assert err == (
        "gpucost-lab predict: error: --price-per-hour: the price must be > 0 with --baseline-hours=8.0, got -1.0\n"
    )


def test_a_plain_value_error_still_names_its_first_word_as_the_flag(capsys, monkeypatch):
    from gpucost_lab import cost

    def refuse(*args, **kwargs):
        raise ValueError("window_hours must be > 0, got 0.0")

    monkeypatch.setattr(cost, "predict", refuse)
    err = cli_error(capsys, "predict", "--throughput-gain", "0.2", "--steps-change", "0.25")
    assert err == "gpucost-lab predict: error: --window-hours must be > 0, got 0.0\n"


# ----------------------------------------------------------------------------------------------- the line itself
def test_shown_escapes_what_would_break_the_line_and_leaves_the_rest():
    assert shown("sampled_rank0_gpu.json µs") == "sampled_rank0_gpu.json µs"
    assert shown("a\nb\tc\x1b[31m\u202e") == r"a\nb\tc\x1b[31m\u202e"
    assert shown(3.5) == "3.5"


@pytest.mark.parametrize(
    "err, line",
    [
        (
            InputError("price_per_hour_usd", "price_per_hour_usd must be > 0, got 0"),
            "--price-per-hour must be > 0, got 0",
        ),
        # a field that only opens a longer name is not the field: the message follows the flag and a colon
        (InputError("output", "output_dir is not a folder"), "--output: output_dir is not a folder"),
        # a field no command types stays as the library named it
        (InputError("scenario.steps", "scenario.steps must be >= 1"), "scenario.steps must be >= 1"),
        (ValueError("trace.json: no such trace file"), "trace.json: no such trace file"),
        (
            InputError("baseline_hours", "baseline_hours must be <= 1e6 with price_per_hour_usd=2.1"),
            "--baseline-hours must be <= 1e6 with --price-per-hour=2.1",
        ),
    ],
)
def test_error_line_names_each_input_as_its_flag(err, line):
    assert error_line("predict", err, FLAGS) == f"gpucost-lab predict: error: {line}"


def test_a_failed_write_is_an_input_error_of_its_field():
    with pytest.raises(InputError) as caught, writing("output", "/data/t.json"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert caught.value.field == "output"
    assert str(caught.value) == (
        "output '/data/t.json' could not be written (No space left on device); allowed: a file path in an existing "
        "folder you may write to, on a disk with room"
    )


def _command(**kwargs) -> Command:
    return Command("analyze", lambda sub: sub.add_parser("analyze"), lambda args: ({}, ""), FLAGS, **kwargs)


def test_an_empty_path_is_refused_after_the_commands_own_checks():
    order = []
    command = _command(paths=("output", "before"), checks=(lambda args: order.append("checked"),))
    check_inputs(argparse.Namespace(output="t.json", before=["a.json", "b.json"]), command)  # nothing empty
    check_inputs(argparse.Namespace(output=None, before=[]), command)  # not given: nothing to check
    with pytest.raises(InputError) as caught:
        check_inputs(argparse.Namespace(output="t.json", before=["a.json", "  "]), command)
    assert (caught.value.field, str(caught.value)) == ("before", "before must name a file or folder, got '  '")
    assert order == ["checked"] * 3


def test_a_name_too_long_is_one_line_naming_the_flag_and_the_limit():
    args = argparse.Namespace(output="/tmp/" + "n" * 300)
    line, status = failure(_command(), args, OSError(errno.ENAMETOOLONG, "File name too long", args.output), FLAGS)
    assert status == EXIT_USAGE == 2
    assert line == (
        f"gpucost-lab analyze: error: --output {args.output!r}: File name too long; allowed: a path whose names "
        f"hold at most 255 bytes each"
    )


def test_nesting_too_deep_names_the_commands_nested_input():
    args = argparse.Namespace(output="deep.json")
    line, status = failure(_command(nested_input="output"), args, RecursionError(), FLAGS)
    assert status == 2
    assert line == (
        "gpucost-lab analyze: error: --output 'deep.json' is nested too deep to read; allowed: JSON nested at most "
        "64 levels"
    )


def test_memory_run_out_is_bad_input_too():
    line, status = failure(_command(), argparse.Namespace(), MemoryError(), FLAGS)
    assert status == 2 and line.startswith("gpucost-lab analyze: error: out of memory: ")


def test_a_warning_is_one_note_line(capsys):
    with warnings.catch_warnings():
        warnings.showwarning = one_line_warnings("simulate")
        warnings.warn("1 temporary file of an earlier write\nis still there", UserWarning, stacklevel=1)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "gpucost-lab simulate: note: 1 temporary file of an earlier write\n"
