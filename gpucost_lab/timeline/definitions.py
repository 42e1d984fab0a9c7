"""Whose definitions a figure follows: the course's (the default) or HolisticTraceAnalysis's (``definitions="hta"``).

The course's busy, idle, idle-by-cause and kernel-type figures follow HTA's temporal, idle-time and kernel
breakdowns (traceinsight 0.6.1) but for the rules in :data:`RULES`, chosen on purpose. ``definitions="hta"``
computes the same figures as HTA does, on :func:`hta_view` of the trace, for a practitioner who reconciles the two;
``analyze(...)["definitions"]`` names each rule that differs.

:func:`hta_view` is the trace as HTA's loader leaves it (read in hta/common/trace_parser.py, trace.py and
trace_filter.py):

- **integer microseconds**: a trace with fractional timestamps (any event's, a ``[memory]`` instant's too) has each
  event's start rounded up and its end rounded down (``round_down_time_stamps``: ts = ceil(ts), end = floor(ts +
  dur)); HTA decides on every event of the file, flows and metadata included, which the loader does not keep;
- **device rows**: every complete event whose ``args.stream`` is a number (kernels, copies, fills, ``cuda_sync``
  events, a ``gpu_user_annotation`` with a stream, an MTIA's device events), whatever its category; a stream
  written as a string (ROCm's runtime calls write ``"0x0"``) is no stream to HTA, so runtime calls are never device
  rows here;
- **the last step**: with two or more distinct ``ProfilerStep#N`` names, a device row with a correlation id is kept
  only when a host row with that id starts before the last ``ProfilerStep#N`` starts (``include_last_profiler_step
  =False``); a device row without one is kept when it itself starts before then. HTA's MTIA-specific filter (MTIA
  traces of two or more steps) is not reproduced: such a trace is refused under ``definitions="hta"``.

The view's device rows carry the kind ``"kernel"``, so the course's analyses measure them all; its other rows are
kept as they were (rounded), so steps, phases and launches still read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError
from gpucost_lab.timeline.load import Trace

DEFINITIONS = ("course", "hta")
_STEP = r"^ProfilerStep#\d+"
# the categories whose events HTA's idle-time breakdown measures (get_idle_time_breakdown's kernel_cats)
IDLE_CATEGORIES = ("kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events")


@dataclass(frozen=True)
class Rule:
    """A rule where the course's definitions and HTA's differ: what each does and why the course chose its own."""

    name: str
    course: str
    hta: str
    why: str


RULES = (
    Rule(
        "stream waits",
        "a cuda_sync event (Stream Sync, Stream Wait Event) or an MTIA event_wait is idle time",
        "every event carrying a stream is busy time, waits included",
        "a stream waiting for another does no work; counting the wait as busy hides the gap the wait opened",
    ),
    Rule(
        "device work only",
        "busy time and kernel types count kernels, copies and fills",
        "any event with a stream counts, a gpu_user_annotation with a stream as computation",
        "an annotation marks a span of the host's code, not work the device did",
    ),
    Rule(
        "sub-microsecond times",
        "timestamps and durations are kept as the trace writes them",
        "a trace with fractional timestamps is rounded to whole microseconds, starts up and ends down",
        "rounding shortens every event by up to 2 us, which on short kernels is most of their time",
    ),
    Rule(
        "launch of the last step",
        "GPU work is left out when its first runtime launch starts after the last ProfilerStep begins",
        "GPU work is left out unless some host event with its correlation id starts before the last step begins",
        "the launch is the runtime call: an operator sharing the id is not when the work was issued",
    ),
)


def check_definitions(value: object) -> str:
    """``value`` when it is one of :data:`DEFINITIONS`, else InputError naming the field and what is allowed."""
    if value not in DEFINITIONS:
        raise InputError(
            "definitions", f"definitions must be one of {', '.join(map(repr, DEFINITIONS))}, got {value!r}"
        )
    return str(value)


def rules_differing() -> list[dict]:
    """The rules where the two definitions differ, as JSON-ready dicts (``name``, ``course``, ``hta``, ``why``)."""
    return [asdict(rule) for rule in RULES]


def _rounded(events: pd.DataFrame) -> pd.DataFrame:
    """Starts up and ends down to whole microseconds when any start is fractional (HTA's ns rounding)."""
    ts = events["ts_us"].to_numpy(float)
    if np.all(ts == np.floor(ts)):
        return events
    end = np.floor(ts + events["dur_us"].to_numpy(float))
    start = np.ceil(ts)
    return events.assign(ts_us=start, dur_us=end - start)


def _kept_rows(events: pd.DataFrame, device: np.ndarray) -> np.ndarray:
    """HTA's last-step filter (module doc): which rows stay."""
    names = events["name"].astype(str)
    steps = names.str.match(_STEP).to_numpy()
    if names[steps].nunique() < 2:
        return np.ones(len(events), bool)
    correlated = device & events["correlation"].notna().to_numpy()
    host = ~correlated
    ts = events["ts_us"].to_numpy(float)
    last_start = ts[steps & host].max()
    early_ids = set(events.loc[host & (ts < last_start), "correlation"].dropna().astype("int64"))
    ids = events["correlation"].to_numpy("int64", na_value=-1)
    launched = np.fromiter((i in early_ids for i in ids), bool, len(ids))
    return np.where(correlated, launched, ts < last_start)


def hta_view(trace: Trace, *, idle: bool = False) -> Trace:
    """The trace as HTA's loader leaves it (module doc): rounded, device rows as kernels, the last step's work left
    out; ``idle=True``: as HTA's idle-time breakdown reads it, whose device rows are only those of the categories in
    :data:`IDLE_CATEGORIES` (its ``kernel_cats``: no cuda_sync, no annotation). ValueError for an MTIA trace of two
    or more steps (HTA filters those its own way)."""
    # rounded when any start is fractional, a [memory] instant's too (HTA rounds before it drops them), then HTA
    # keeps complete events only
    events = _rounded(trace.events)
    events = events[events["kind"] != "memory"]
    stream = events["stream"]
    device = (stream.notna() & (stream != -1) & (events["kind"] != "runtime")).to_numpy()
    if trace.device == "mtia" and events["name"].astype(str).str.match(_STEP)[~device].sum() >= 2:
        raise ValueError(
            f"{trace.path}: an MTIA trace of two or more steps, which HTA filters by its own MTIA rule; "
            "allowed under definitions='hta': MTIA traces of at most one step"
        )
    keep = _kept_rows(events, device)
    measured = device & events["cat"].isin(IDLE_CATEGORIES).to_numpy() if idle else device
    kinds = np.where(measured, "kernel", np.where(device, "other", events["kind"].to_numpy(object)))
    view = events.assign(kind=pd.array(kinds, dtype="str"))[keep]
    return replace(trace, events=view.reset_index(drop=True))


def with_definitions(trace: Trace, definitions: str, *, idle: bool = False) -> tuple[Trace, bool]:
    """``(the trace to measure, whether the last-step rule is already applied)`` under ``definitions``
    (``idle``: for the idle-time breakdown, :func:`hta_view`)."""
    if check_definitions(definitions) == "course":
        return trace, False
    return hta_view(trace, idle=idle), True
