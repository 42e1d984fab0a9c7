"""Input checks shared by every module: each error names the field, the value and what is allowed.

Every check raises :class:`InputError`, a ValueError that also carries the field's name (``err.field``), so a caller
that shows the error in its own terms (the CLI's flags, a widget's labels) need not read it out of the message.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path

FLOAT_MAX = sys.float_info.max  # the largest finite float, about 1.8e308


class InputError(ValueError):
    """A bad input: ``field`` names it (dotted or indexed for a nested one: ``scenario.steps``, ``runs[2].seed``),
    and the message, ``str(err)``, opens with that name, then says the value and what is allowed.

    A ValueError, so ``except ValueError`` and ``pytest.raises(ValueError, match=...)`` still catch it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self):  # pickles (to another process) with its field
        return type(self), (self.field, str(self))


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputError(name, f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise InputError(name, f"{name} must be a finite number, got {value!r}")
    return x


def positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise InputError."""
    x = _number(name, value)
    if x <= 0:
        raise InputError(name, f"{name} must be > 0, got {value!r}")
    return x


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and >= 0, else raise InputError."""
    x = _number(name, value)
    if x < 0:
        raise InputError(name, f"{name} must be >= 0, got {value!r}")
    return x


def greater_than(name: str, value: object, bound: float) -> float:
    """Return ``value`` as a float if it is finite and > ``bound``."""
    x = _number(name, value)
    if x <= bound:
        raise InputError(name, f"{name} must be > {bound:g}, got {value!r}")
    return x


def fraction(name: str, value: object, *, include_zero: bool = True, include_one: bool = False) -> float:
    """Return ``value`` if it lies in [0, 1), (0, 1], [0, 1] or (0, 1) as the flags say."""
    x = _number(name, value)
    low_ok = x >= 0 if include_zero else x > 0
    high_ok = x <= 1 if include_one else x < 1
    if not (low_ok and high_ok):
        interval = ("[" if include_zero else "(") + "0, 1" + ("]" if include_one else ")")
        raise InputError(name, f"{name} must be in {interval}, got {value!r}")
    return x


def integer_at_least(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum`` (and <= ``maximum`` when one is given)."""
    allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(name, f"{name} must be an integer {allowed}, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise InputError(name, f"{name} must be an integer {allowed}, got {value!r}")
    return int(value)


def too_large(name: str, value: object, limit: float, given: str, beyond: str) -> InputError:
    """The error for an input too large for a result: ``name`` must be <= ``limit`` with the ``given`` inputs,
    as ``beyond`` it a result overflows (or passes a stated bound)."""
    return InputError(name, f"{name} must be <= {limit:.6g} with {given}: beyond it {beyond}, got {value!r}")


def output_file(name: str, path: object) -> Path:
    """Return ``path`` as a Path if a file can be written (or replaced) there: not a folder nor a special file, in
    an existing folder that may be written to."""
    p = Path(path)  # type: ignore[arg-type]
    if p.is_dir():
        raise InputError(name, f"{name} must be a file path, not a folder, got {str(path)!r}")
    if p.exists() and not p.is_file():
        raise InputError(name, f"{name} must be a regular file (or a new one), got {str(path)!r}")
    if not p.parent.is_dir():
        raise InputError(name, f"{name} must be in an existing folder, got {str(path)!r}")
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise InputError(name, f"{name} must be in a folder you may write to, got {str(path)!r}")
    return p


def one_of(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise InputError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value  # type: ignore[return-value]
