"""``gpucost-lab``: the course's tools on the command line. Every command takes ``--json``.

Bad input prints one line on stderr and exits with status 2. A library's :class:`~gpucost_lab.InputError` names
its field (``err.field``), which the line shows as the flag typed (``price_per_hour_usd`` as ``--price-per-hour``).

This module only assembles the commands: each group module (one per course concept) lists its own in ``COMMANDS``
(:class:`~gpucost_lab.cli.command.Command` records), so that a new command is its module plus one line below.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence

# Set before the commands' modules below import torch, which reads it as it loads. The profiler would warn that
# blocks allocated before it started are freed inside its window; the CPU peak already accounts for them (resident
# bytes are added separately), so the warning would only clutter stderr.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

from gpucost_lab.cli import export, grading, memory, pipeline, pricing, release, serve, timeline
from gpucost_lab.cli.command import Command
from gpucost_lab.cli.errors import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    check_inputs,
    error_line,
    failure,
    internal_error,
    one_line_warnings,
)

# Every command, in the order `gpucost-lab --help` lists them.
COMMANDS: dict[str, Command] = {
    command.name: command
    for command in (
        *memory.COMMANDS,  # ledger, fix-oom
        *pricing.COMMANDS,  # predict, profile-to-cost
        *timeline.COMMANDS,  # analyze, diff, simulate
        *release.COMMANDS,  # plan
        *grading.COMMANDS,  # grade, self-check, grade-class
        *export.COMMANDS,  # export-grades
        *pipeline.COMMANDS,  # pipeline
        *serve.COMMANDS,  # serve-bench
    )
}
# Library field to the flag typed, for every command: a field names one flag whichever command reports it.
FLAGS: dict[str, str] = {field: flag for command in COMMANDS.values() for field, flag in command.flags.items()}


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, without the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """``gpucost-lab``'s parser: a subcommand per entry of :data:`COMMANDS`."""
    parser = _Parser(prog="gpucost-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = COMMANDS[args.command]
    with warnings.catch_warnings():
        warnings.showwarning = one_line_warnings(command.name)
        try:
            check_inputs(args, command)
            out, text = command.run(args)
        except ValueError as err:
            print(error_line(command.name, err, FLAGS), file=sys.stderr)
            return EXIT_USAGE
        except Exception as err:  # noqa: BLE001 - a file the system refuses, nesting, memory, or a bug: one line
            line, status = failure(command, args, err, FLAGS)
            print(line, file=sys.stderr)
            return status
        try:
            printed = json.dumps(out, allow_nan=False) if args.json else text
        except ValueError as err:  # a result that is not a finite number: the package's error, not the input's
            print(internal_error(command.name, err), file=sys.stderr)
            return EXIT_INTERNAL
    return _printed(printed, command.exit_status(out))


def _printed(text: str, status: int) -> int:
    """Print the result; a reader that stopped early (``| head``) ends the command quietly, as ``cat`` does: the
    rest is dropped (stdout pointed at /dev/null so that the interpreter's final flush raises nothing)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return status


if __name__ == "__main__":
    sys.exit(main())
