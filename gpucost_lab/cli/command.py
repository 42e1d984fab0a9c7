"""One ``gpucost-lab`` subcommand as a record: each group module lists its commands in ``COMMANDS`` and
:mod:`gpucost_lab.cli.main` assembles them, so that a new command is one module and one line in ``main``.

A :class:`Command` says everything the assembly needs: how to add its parser, how to run it, the flag each library
field is typed as (for the one-line error, :mod:`gpucost_lab.cli.errors`), the arguments that name a file, and its
exit status.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol


class Subcommands(Protocol):
    """The ``gpucost-lab`` parser's subcommands (what ``add_subparsers()`` returns): a command adds its parser."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def answered(out: dict) -> int:
    """Exit status 0 for every answer: a command whose result is not a verdict."""
    return 0


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand of ``gpucost-lab``.

    - ``name``: what the user types (``fix-oom``).
    - ``add_parser``: adds the subcommand's parser, ``--json`` last, and returns it.
    - ``run``: the parsed arguments to (the JSON object, the text printed without ``--json``).
    - ``flags``: the library's field names to the flag typed (``reserve_fraction`` to ``--reserve``); the CLI merges
      every command's into one map, so a field means one flag whatever command names it.
    - ``paths``: the arguments that name a file or folder, which may not be empty ("" would be read as ".").
    - ``nested_input``: the argument named when the command's input is nested too deep to read.
    - ``checks``: run on the arguments before the paths are checked and the command runs.
    - ``exit_status``: the answer's exit status (a grade: 0 when it passes, 1 when not).
    """

    name: str
    add_parser: Callable[[Subcommands], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], tuple[dict, str]]
    flags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    paths: tuple[str, ...] = ()
    nested_input: str = "input"
    checks: tuple[Callable[[argparse.Namespace], None], ...] = ()
    exit_status: Callable[[dict], int] = answered


def add_json_flag(parser: argparse.ArgumentParser, help_text: str = "print one JSON object") -> None:
    """The ``--json`` every command takes, added after its other arguments."""
    parser.add_argument("--json", action="store_true", help=help_text)
