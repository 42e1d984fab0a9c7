"""Input checks shared by every module: each error names the field, the value and what is allowed."""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise ValueError."""
    x = _number(name, value)
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and >= 0, else raise ValueError."""
    x = _number(name, value)
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return x


def greater_than(name: str, value: object, bound: float) -> float:
    """Return ``value`` as a float if it is finite and > ``bound``."""
    x = _number(name, value)
    if x <= bound:
        raise ValueError(f"{name} must be > {bound:g}, got {value!r}")
    return x


def fraction(name: str, value: object, *, include_zero: bool = True, include_one: bool = False) -> float:
    """Return ``value`` if it lies in [0, 1), (0, 1], [0, 1] or (0, 1) as the flags say."""
    x = _number(name, value)
    low_ok = x >= 0 if include_zero else x > 0
    high_ok = x <= 1 if include_one else x < 1
    if not (low_ok and high_ok):
        interval = ("[" if include_zero else "(") + "0, 1" + ("]" if include_one else ")")
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return x


def integer_at_least(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def one_of(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value  # type: ignore[return-value]
