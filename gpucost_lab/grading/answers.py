"""Answers as plain data: how a graded answer leaves the learner's kernel and is read back by the grader.

The learner's kernel runs the learner's code, so anything it holds may be forged: a float subclass whose
comparisons always succeed, a patched library class, a replaced module. Nothing of it reaches the grader but
**JSON text**, carried as base64 (:func:`send`) and read within stated bounds (:mod:`.wire`). :func:`dumps` (run in
the kernel) writes a value as JSON made of exact ``int``, ``float``, ``str``,
``bool``, ``None``, lists and objects; :func:`loads` (run in the grader) reads it back with ``json`` and builds
values only from that, so whatever the kernel did, the grader sees plain data or the few course types in
:func:`course_types`, rebuilt by their own constructors in the grader's process from plain fields.

A value of any other type, a subclass of a plain type included, is not sent: it arrives as :class:`Rejected`,
which names the type, and every check that reads it fails with that message. numpy scalars are sent as the
Python number they hold (an honest ``np.float64`` is a number). A learner's function is not sent either: it
becomes a :class:`LearnerFunction` whose calls the grader sends back to the kernel, arguments and result crossing
as plain data again (:mod:`gpucost_lab.grading.checks`).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
from collections.abc import Callable
from typing import Any

from gpucost_lab.grading.wire import MAX_ANSWER_CHARS, MAX_ANSWER_VALUES, WireError, bounded_json

#: Deepest nesting of lists, tuples and objects accepted.
MAX_DEPTH = 32
_PLAIN = (type(None), bool, int, str)
_NUMBERS = (int, float)  # exactly these types (not bool, not a subclass)


@functools.lru_cache(maxsize=1)
def course_types() -> dict[str, type]:
    """The course types an answer may be, by qualified name; each is rebuilt by its constructor from plain fields."""
    import pandas as pd

    from gpucost_lab.loop.phases import PhaseTimer
    from gpucost_lab.measure.compare import Comparison
    from gpucost_lab.measure.contract import BenchmarkContract
    from gpucost_lab.measure.timing import Measurement
    from gpucost_lab.memory.ledger import MemoryLedger
    from gpucost_lab.quality.parity import ParityReport
    from gpucost_lab.release import CandidateResult, Decision
    from gpucost_lab.simulate.config import SimConfig
    from gpucost_lab.stats import Estimate, Interval, RatioVerdict

    return {
        f"{t.__module__}.{t.__qualname__}": t
        for t in (
            BenchmarkContract,
            Comparison,
            RatioVerdict,
            MemoryLedger,
            PhaseTimer,
            ParityReport,
            CandidateResult,
            Decision,
            SimConfig,
            Estimate,
            Interval,
            Measurement,
            pd.DataFrame,
        )
    }


def _special(cls: type) -> str | None:
    """The course types that are not plain dataclasses, by how they are sent."""
    import pandas as pd

    from gpucost_lab.loop.phases import PhaseTimer
    from gpucost_lab.stats import Estimate, Interval

    return {pd.DataFrame: "frame", PhaseTimer: "timer", Interval: "interval", Estimate: "estimate"}.get(cls)


@dataclasses.dataclass(frozen=True)
class Rejected:
    """An answer that could not be sent as plain data; ``why`` says what it was."""

    name: str
    why: str

    def message(self) -> str:
        return f"`{self.name}` was not graded: {self.why}"


@dataclasses.dataclass(frozen=True)
class LearnerFunction:
    """A function defined in the learner's kernel; calling it asks the kernel (``call`` is set by the grader)."""

    name: str
    call: Callable[[str, tuple, dict], Any] | None = None

    def __call__(self, *args, **kwargs):
        if self.call is None:
            raise RuntimeError(f"{self.name}: the learner's kernel is not reachable")
        return self.call(self.name, args, kwargs)


class _NotPlain(Exception):
    pass


# ---------------------------------------------------------------------------------------------- in the kernel


def _encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise _NotPlain(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if kind is list:
        return [_encode(v, depth + 1) for v in value]
    if kind is tuple:
        return {"__tuple__": [_encode(v, depth + 1) for v in value]}
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise _NotPlain("a dict whose keys are not all str")
        return {"__dict__": {k: _encode(v, depth + 1) for k, v in value.items()}}
    module = getattr(kind, "__module__", "") or ""
    if module == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _encode(value.item(), depth + 1)  # a numpy scalar: the number it holds
    name = f"{module}.{kind.__qualname__}"
    if course_types().get(name) is not kind:
        raise _NotPlain(f"it is a {name}; answers must be int, float, str, bool, None, or lists/dicts of those")
    special = _special(kind)
    if special == "frame":
        return {
            "__type__": name,
            "columns": _encode(list(value.columns), depth + 1),
            "rows": [[_encode(v, depth + 2) for v in row] for row in value.itertuples(index=False)],
        }
    if special == "timer":
        return {"__type__": name, "records": [[str(p), float(a), float(b)] for p, a, b in value._records]}
    if special == "interval":
        return {"__type__": name, "fields": {k: _encode(v, depth + 1) for k, v in value._asdict().items()}}
    if special == "estimate":
        return {"__type__": name, "fields": {"values": _encode(tuple(value.values), depth + 1)}}
    fields = {f.name: _encode(_field(getattr(value, f.name)), depth + 1) for f in dataclasses.fields(value) if f.init}
    return {"__type__": name, "fields": fields}


def _field(value: Any) -> Any:
    """A field of a course record as plain data: a mapping as a dict, a str or number subclass from a library
    (``torch.__version__`` is a ``TorchVersion``) as the plain value. Safe: the record is rebuilt by its own
    constructor from whatever arrives, so a forged field is only a different answer."""
    from collections.abc import Mapping

    if isinstance(value, Mapping) and type(value) is not dict:
        return dict(value)
    for plain in (str, int, float):
        if isinstance(value, plain) and type(value) is not plain and type(value) is not bool:
            return plain(value)
    return value


def dumps(namespace: dict, name: str) -> str:
    """The answer ``name`` of ``namespace`` as JSON text (run in the learner's kernel)."""
    if name not in namespace:
        return json.dumps({"__missing__": name})
    value = namespace[name]
    if type(value).__name__ in ("function", "method", "builtin_function_or_method"):
        return json.dumps({"__function__": name})
    return dumps_value(value)


def dumps_value(value: Any) -> str:
    try:
        return json.dumps({"value": _encode(value)}, allow_nan=False)
    except _NotPlain as why:
        return json.dumps({"__rejected__": str(why)})
    except Exception as err:  # a value that breaks while being read (a property raising, say)
        return json.dumps({"__rejected__": f"it could not be read ({type(err).__name__})"})


def call_dumps(namespace: dict, name: str, arguments: str) -> str:
    """Call the learner's function ``name`` with arguments sent as plain JSON; the result as JSON (in the kernel)."""
    args, kwargs = loads_value(arguments, name)
    return dumps_value(namespace[name](*args, **kwargs))


def send(namespace: dict, name: str) -> str:
    """:func:`dumps` as base64 text, the form an answer crosses in (:func:`gpucost_lab.grading.wire.answer_text`)."""
    return base64.b64encode(dumps(namespace, name).encode("utf-8")).decode("ascii")


def call_send(namespace: dict, name: str, arguments: str) -> str:
    """:func:`call_dumps` as base64 text."""
    return base64.b64encode(call_dumps(namespace, name, arguments).encode("utf-8")).decode("ascii")


# ---------------------------------------------------------------------------------------------- in the grader


def loads(text: str, name: str) -> Any:
    """Read the answer ``name`` sent by :func:`dumps`: a value, :class:`Rejected`, or :class:`LearnerFunction`."""
    if not isinstance(text, str):
        return Rejected(name, "the kernel sent no readable answer")
    try:
        sent = bounded_json(text, MAX_ANSWER_CHARS, MAX_ANSWER_VALUES, "its JSON")
    except WireError as why:
        return Rejected(name, str(why))
    if not isinstance(sent, dict) or len(sent) != 1:
        return Rejected(name, "the kernel sent no readable answer")
    if "__missing__" in sent:
        return Rejected(name, "it is not defined; run the cell that sets it")
    if "__function__" in sent:
        return LearnerFunction(name)
    if "__rejected__" in sent:
        return Rejected(name, str(sent["__rejected__"])[:300])
    try:
        return _decode(sent["value"], 0)
    except (KeyError, TypeError, ValueError, RecursionError, ArithmeticError) as err:  # an int too large for a float
        return Rejected(name, f"it could not be rebuilt ({type(err).__name__}: {str(err)[:200]})")


def loads_value(text: str, name: str) -> Any:
    value = loads(text, name)
    if isinstance(value, Rejected):
        raise ValueError(value.message())
    return value


def _decode(node: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is list:
        return [_decode(v, depth + 1) for v in node]
    if type(node) is not dict or len(node) not in (1, 2, 3):
        raise ValueError("an object of an unknown shape")
    if set(node) == {"__float__"}:
        text = node["__float__"]
        if text not in ("nan", "inf", "-inf"):
            raise ValueError(f"not a float: {text!r}")
        return float(text)
    if set(node) == {"__tuple__"}:
        return tuple(_decode(v, depth + 1) for v in _list(node["__tuple__"]))
    if set(node) == {"__dict__"}:
        items = node["__dict__"]
        if type(items) is not dict:
            raise ValueError("a dict sent as something else")
        return {k: _decode(v, depth + 1) for k, v in items.items()}
    return _rebuild(node, depth)


def _list(node: Any) -> list:
    if type(node) is not list:
        raise ValueError("a sequence sent as something else")
    return node


def _rebuild(node: dict, depth: int) -> Any:
    name = node.get("__type__")
    if not isinstance(name, str) or name not in course_types():
        raise ValueError(f"not a course type: {str(name)[:80]!r}")
    cls = course_types()[name]
    special = _special(cls)
    if special == "frame":
        columns = [_decode(c, depth + 1) for c in _list(node["columns"])]
        rows = [[_decode(v, depth + 2) for v in _list(row)] for row in _list(node["rows"])]
        if any(len(row) != len(columns) for row in rows) or not all(type(c) is str for c in columns):
            raise ValueError("a table whose rows and columns do not match")
        return cls(rows, columns=columns)
    if special == "timer":
        timer = cls(clock=lambda: 0.0, synchronize=lambda: None)
        records = []
        for record in _list(node["records"]):  # thousands in a long loop: checked without a generator per record
            phase, start, end = _list(record)
            if (
                type(phase) is not str
                or type(start) not in _NUMBERS
                or type(end) not in _NUMBERS
                or not (math.isfinite(start) and math.isfinite(end))
                or end < start
            ):
                raise ValueError("a phase record that is not (name, start s, end s)")
            records.append((phase, float(start), float(end)))
        timer._records = records
        return timer
    fields = node["fields"]
    if type(fields) is not dict:
        raise ValueError("fields sent as something else")
    return cls(**{k: _decode(v, depth + 1) for k, v in fields.items()})
