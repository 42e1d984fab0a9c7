"""How ``gpucost-lab`` reports bad input, for the commands of every chapter (README, "CLI reference"): one line on
stderr that names the flag the user typed, the value and what is allowed.

The library raises :class:`~gpucost_lab.InputError`, which names the Python field (``err.field``):
:data:`FLAGS` turns it into the flag (``price_per_hour_usd`` into ``--price-per-hour``), and every other input the
message names (``with activation_gb_per_sample=0.34``) is shown as its flag too. Another ValueError keeps the older
reading: the first word of its message is taken for the input's name.
"""

from __future__ import annotations

import re

from . import cli_grading, cli_memory
from ._validate import InputError
from .simulate import SimConfig

# Library errors name the Python field (InputError.field); the CLI user typed the flag. The memory and grading
# commands bring their own; a command added later (cli_export) adds its flags here.
FLAGS = {
    **{
        name: "--" + name.replace("_", "-")
        for name in (
            *("throughput_gain", "steps_change", "baseline_hours", "window_hours", "repeats", "rounds", "device"),
            *("top", "scenario", "candidate", "registry", "report", *SimConfig.__dataclass_fields__),
            *("output", "student", "learner", "assignment", "source_root"),  # output: simulate -o
        )
    },
    "price_per_hour_usd": "--price-per-hour",
    "timeout_s": "--timeout",
    **cli_memory.FLAGS,  # ledger, fix-oom
    **cli_grading.FLAGS,  # grade-class
}


def shown(value: object) -> str:
    """``value`` as text safe to print: control and other unprintable characters (a newline, an escape sequence,
    a right-to-left override) are escaped, ``\\n``, ``\\x1b``, ``\\u202e``, so every name stays on its line."""
    text = str(value)
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    )


def _named_inputs() -> re.Pattern:
    """The inputs named inside a message: a snake_case word (never English) or any input given as "name=value"."""
    return re.compile(
        r"\b(?:"
        + "|".join(re.escape(k) for k in FLAGS if "_" in k)
        + r")\b|\b(?:"
        + "|".join(re.escape(k) for k in FLAGS)
        + r")(?==)"
    )


def error_line(command: str, err: ValueError) -> str:
    """The line bad input prints: ``gpucost-lab COMMAND: error:``, the input as the flag typed, then the message
    with every other input it names as its flag.

    An InputError's message opens with its field, which the flag replaces (``--price-per-hour must be > 0, got
    0.0``); one opening otherwise follows the flag and a colon. For another ValueError the message's first word is
    taken for the input's name (a file path, a trace's field), shown as its flag when it is one."""
    text = str(err)
    if isinstance(err, InputError):
        field, rest = err.field, text[len(err.field) :]
        if not text.startswith(field) or rest[:1].isalnum() or rest[:1] == "_":
            rest = f": {text}"
    else:
        field, _, rest = text.partition(" ")
        rest = " " + rest
    rest = _named_inputs().sub(lambda m: FLAGS[m[0]], rest)
    return shown(f"gpucost-lab {command}: error: {FLAGS.get(field, field)}{rest}")
