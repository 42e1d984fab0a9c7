"""Profile a training loop by phase and turn the balance into a decision (chapter 05, "profile to decision", and
the lab "Profile a Training Loop").

A training loop spends its wall time in a few phases, :data:`PHASES`: "data" (waiting for the next batch),
"forward_backward" (the step itself), "eval", "checkpoint" and "logging". :class:`PhaseTimer` wraps each in ``with
timer.phase(name):`` and synchronizes the device before *both* clock reads, so queued GPU work is charged to the
phase that launched it, not to whichever phase happens to wait for it. Those synchronizations are sync points:
the host waits for the device at every boundary, so the timer removes the host/device overlap of the loop it
times (:mod:`gpucost_lab.loop.phase_timing` measures the cost and the alternative: events and one synchronize). Phases
partition time: they cannot nest, and wall time outside every phase shows up as an "unaccounted" row instead of
vanishing.

The balance (:func:`balance_table`, the one table every balance in the course is built by) answers "where does
the money go?" (seconds x the price per accelerator-hour, a stated assumption);
:func:`what_if` answers "what is a lever worth?" the way Amdahl's law does: removing a fraction f of a phase that
takes a share s of the wall time saves f x s of it, so optimising a 3% phase can never save more than 3%.
:data:`LEVERS` names the usual lever for each canonical phase. :func:`latency_percentiles` and
:class:`MemorySampler` are the two other probes the lab uses.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, fraction, positive
from gpucost_lab.cost import DEFAULT_PRICE_PER_HOUR_USD, SECONDS_PER_HOUR
from gpucost_lab.measure import device as _device

PHASES = ("data", "forward_backward", "eval", "checkpoint", "logging")  # a training loop's canonical phases
DATA, FORWARD_BACKWARD, EVAL, CHECKPOINT, LOGGING = PHASES
UNACCOUNTED = "unaccounted"  # the balance's row for wall time outside every phase; not a valid phase name
# Gaps smaller than this share of the wall time are float rounding of adjacent phases, not time outside them.
UNACCOUNTED_REL_TOL = 1e-9
BALANCE_COLUMNS = ["phase", "seconds", "share", "calls", "cost_usd"]
INTERVAL_COLUMNS = ["phase", "start_s", "end_s", "duration_s"]

LEVERS: dict[str, str] = {
    DATA: "more data-loader workers, prefetching and pinned memory: the next batch ready before it is asked for",
    FORWARD_BACKWARD: "a larger batch or fused kernels if launch-bound; mixed precision if compute-bound",
    EVAL: "evaluate less often, or on a smaller held-out subset",
    CHECKPOINT: "checkpoint less often, or asynchronously (snapshot to host memory, write in the background)",
    LOGGING: "log less often; do not call .item() (a device sync) every step",
}


def balance_table(
    seconds: Mapping[str, float],
    calls: Mapping[str, int],
    wall_s: float,
    price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD,
) -> pd.DataFrame:
    """The phase balance: one row per phase of ``seconds`` (entered ``calls[phase]`` times), most seconds first
    (equal seconds keep ``seconds``' order), then "unaccounted" (``wall_s`` outside every phase) when there is any:
    ``phase, seconds, share, calls, cost_usd``. share = seconds / ``wall_s``; cost_usd = seconds x
    ``price_per_hour_usd`` / 3600, the price being the stated assumption.

    :meth:`PhaseTimer.balance` and the simulated loop's window balance
    (:meth:`gpucost_lab.loop.simulated.SimulatedTrainingLoop.window_balance`) are both this table.
    """
    price = positive("price_per_hour_usd", price_per_hour_usd)
    if not isinstance(seconds, Mapping) or not seconds:
        raise InputError("seconds", f"seconds must be a non-empty mapping of phase -> seconds, got {seconds!r}")
    if not isinstance(calls, Mapping) or set(calls) != set(seconds):
        raise InputError(
            "calls", f"calls must map the same phases as seconds ({', '.join(map(repr, seconds))}), got {calls!r}"
        )
    for name, s in seconds.items():
        if not isinstance(name, str) or not name or name == UNACCOUNTED:
            raise InputError("phase", f"phase name must be a non-empty string other than {UNACCOUNTED!r}, got {name!r}")
        if isinstance(s, bool) or not isinstance(s, Real) or not math.isfinite(s) or s < 0:
            raise ValueError(f"seconds[{name!r}] must be a finite number >= 0, got {s!r}")
        n = calls[name]
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
            raise ValueError(f"calls[{name!r}] must be an integer >= 0, got {n!r}")
    if isinstance(wall_s, bool) or not isinstance(wall_s, Real) or not wall_s > 0 or not math.isfinite(wall_s):
        raise InputError("wall_s", f"wall_s must be > 0 to share it out, got {wall_s!r}: the clock did not advance")
    rows = sorted(((name, float(s), int(calls[name])) for name, s in seconds.items()), key=lambda r: -r[1])  # stable
    unaccounted = wall_s - sum(r[1] for r in rows)
    if unaccounted > UNACCOUNTED_REL_TOL * wall_s:
        rows.append((UNACCOUNTED, unaccounted, 0))
    frame = pd.DataFrame(rows, columns=["phase", "seconds", "calls"]).astype({"seconds": float, "calls": int})
    frame["share"] = frame["seconds"] / wall_s
    frame["cost_usd"] = frame["seconds"] * price / SECONDS_PER_HOUR
    return frame[BALANCE_COLUMNS]


def suggest_lever(phase: str) -> str:
    """The usual lever for one of the canonical phases in :data:`LEVERS`."""
    if phase not in LEVERS:
        raise InputError("phase", f"phase must be one of {', '.join(map(repr, LEVERS))}, got {phase!r}")
    return LEVERS[phase]


class PhaseTimer:
    """Wall time per phase of a loop, synchronized: ``with timer.phase("data"): ...``.

    ``clock`` returns seconds (default ``time.perf_counter``; a simulated loop passes its own clock).
    ``synchronize`` is called before every clock read; by default it is
    ``gpucost_lab.measure.device.synchronizer(device)`` (``torch.cuda.synchronize`` on CUDA, a no-op on the CPU).
    Every interval is kept (:attr:`intervals`); per-phase seconds and call counts are derived from them.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        synchronize: Callable[[], None] | None = None,
        device: str = "cpu",
    ):
        if not callable(clock):
            raise InputError("clock", f"clock must be a callable returning seconds, got {clock!r}")
        if synchronize is None:
            synchronize = _device.synchronizer(_device.resolve_device(device))
        elif not callable(synchronize):
            raise InputError("synchronize", f"synchronize must be a callable or None, got {synchronize!r}")
        self._clock, self._synchronize = clock, synchronize
        self._records: list[tuple[str, float, float]] = []
        self._active: str | None = None

    def _read(self) -> float:
        self._synchronize()
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, Real) or not math.isfinite(now):
            raise InputError("clock", f"clock must return a finite number of seconds, got {now!r}")
        return float(now)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase ``name``; the time is recorded even if the block raises."""
        if not isinstance(name, str) or not name or name == UNACCOUNTED:
            raise InputError("phase", f"phase name must be a non-empty string other than {UNACCOUNTED!r}, got {name!r}")
        if self._active is not None:
            raise InputError(
                "phase",
                f"phase {name!r} was started inside phase {self._active!r}: phases partition the wall "
                f"time and cannot nest; end {self._active!r} first",
            )
        self._active = name
        try:
            start = self._read()
            try:
                yield
            finally:
                end = self._read()
                if end < start:
                    raise InputError("clock", f"clock went backwards in phase {name!r}: {start!r} s, then {end!r} s")
                self._records.append((name, start, end))
        finally:
            self._active = None

    # -- raw records and what is derived from them ------------------------------------------------------------
    @property
    def intervals(self) -> pd.DataFrame:
        """Every phase interval in the order recorded: ``phase, start_s, end_s, duration_s``."""
        frame = pd.DataFrame(self._records, columns=INTERVAL_COLUMNS[:3]).astype({"start_s": float, "end_s": float})
        frame["duration_s"] = frame["end_s"] - frame["start_s"]
        return frame

    @property
    def seconds(self) -> dict[str, float]:
        """Total seconds per phase, phases in the order first recorded."""
        out: dict[str, float] = {}
        for name, start, end in self._records:
            out[name] = out.get(name, 0.0) + (end - start)
        return out

    @property
    def calls(self) -> dict[str, int]:
        """How many times each phase was entered, phases in the order first recorded."""
        out: dict[str, int] = {}
        for name, _, _ in self._records:
            out[name] = out.get(name, 0) + 1
        return out

    @property
    def wall_s(self) -> float:
        """Last phase end - first phase start (0.0 before any phase has ended)."""
        return self._records[-1][2] - self._records[0][1] if self._records else 0.0

    def dominant(self) -> str:
        """The phase with the most seconds (on a tie, the one recorded first)."""
        seconds = self.seconds
        if not seconds:
            raise InputError(
                "timer", "timer has recorded no phases yet; time the loop with `with timer.phase(name):` first"
            )
        return max(seconds, key=seconds.__getitem__)  # max keeps the first of equal keys

    def balance(self, price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD) -> pd.DataFrame:
        """One row per phase, most seconds first (on a tie, the one recorded first), then "unaccounted" (wall time
        outside every phase) when there is any: ``phase, seconds, share, calls, cost_usd``, by
        :func:`balance_table`. share = seconds / wall_s; cost_usd = seconds x ``price_per_hour_usd`` / 3600."""
        price = positive("price_per_hour_usd", price_per_hour_usd)
        if not self._records:
            raise InputError(
                "timer", "timer has recorded no phases yet; time the loop with `with timer.phase(name):` first"
            )
        return balance_table(self.seconds, self.calls, self.wall_s, price)


@dataclass(frozen=True)
class WhatIf:
    """What removing ``fraction_removed`` of one phase's time saves (Amdahl: the rest of the run is unchanged)."""

    phase: str
    seconds_saved: float
    new_wall_s: float
    wall_reduction_share: float  # seconds_saved / the old wall time: at most the phase's share
    cost_saved_usd: float  # seconds_saved x price_per_hour_usd / 3600
    fraction_removed: float
    price_per_hour_usd: float  # the stated assumption

    def to_dict(self) -> dict:
        return asdict(self)


def what_if(
    balance: pd.DataFrame, phase: str, fraction_removed: float, price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD
) -> WhatIf:
    """Remove ``fraction_removed`` (in (0, 1]) of ``phase``'s seconds from a :meth:`PhaseTimer.balance`.

    The old wall time is the balance's total seconds ("unaccounted" included). A run of 100 s with eval 30 s:
    removing 75% of eval saves 22.5 s, leaving 77.5 s (22.5% less), $0.013125 at $2.10/h.
    """
    if not isinstance(balance, pd.DataFrame) or not {"phase", "seconds"} <= set(balance.columns):
        raise InputError(
            "balance",
            f"balance must be a DataFrame with columns 'phase' and 'seconds' (PhaseTimer.balance()), "
            f"got {type(balance).__name__}",
        )
    phases = list(balance["phase"])
    if phase not in phases:
        raise InputError(
            "phase", f"phase must be one of the balance's phases {', '.join(map(repr, phases))}, got {phase!r}"
        )
    f = fraction("fraction_removed", fraction_removed, include_zero=False, include_one=True)
    price = positive("price_per_hour_usd", price_per_hour_usd)
    wall = float(balance["seconds"].sum())
    if not wall > 0:
        raise ValueError(f"balance's seconds must add up to > 0, got {wall!r}")
    saved = float(balance.loc[balance["phase"] == phase, "seconds"].sum()) * f
    return WhatIf(phase, saved, wall - saved, saved / wall, saved * price / SECONDS_PER_HOUR, f, price)


def latency_percentiles(latencies_s: Iterable[float]) -> dict:
    """``p50_s``, ``p90_s``, ``p99_s``, ``mean_s`` and ``count`` of per-call latencies in seconds.

    Percentiles use numpy's default linear interpolation between the two nearest ranks (``method="linear"``):
    the q-th percentile of n sorted values sits at position q/100 x (n - 1), so for 1..100 ms the p90 is
    90 + 0.1 x (91 - 90) = 90.1 ms.
    """
    if isinstance(latencies_s, (str, bytes)):
        raise InputError("latencies_s", f"latencies_s must be numbers of seconds, got {latencies_s!r}")
    try:
        values = list(latencies_s)
    except TypeError:
        raise InputError("latencies_s", f"latencies_s must be an iterable of seconds, got {latencies_s!r}") from None
    if not values:
        raise InputError("latencies_s", "latencies_s must hold at least one latency, got none")
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, Real) or not math.isfinite(v) or v < 0:
            raise ValueError(f"latencies_s[{i}] must be a finite number of seconds >= 0, got {v!r}")
    array = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(array, [50, 90, 99], method="linear")
    return {
        "p50_s": float(p50),
        "p90_s": float(p90),
        "p99_s": float(p99),
        "mean_s": float(array.mean()),
        "count": int(array.size),
    }


class MemorySampler:
    """Allocated device memory at labelled points: ``sample(label)`` records ``(label, time_s, allocated_bytes)``
    from ``torch.cuda.memory_allocated`` (what live tensors hold, not what the caching allocator reserved).

    On the CPU torch reports no such figure: :attr:`available` is False and ``sample`` records nothing.
    """

    def __init__(self, device: str = "auto", clock: Callable[[], float] = time.perf_counter):
        if not callable(clock):
            raise InputError("clock", f"clock must be a callable returning seconds, got {clock!r}")
        self.device = _device.resolve_device(device)
        self.available = self.device.startswith("cuda")
        self._clock = clock
        self._samples: list[tuple[str, float, int]] = []

    def sample(self, label: str) -> int | None:
        """Record and return the allocated bytes now; None (nothing recorded) where the device does not report."""
        if not isinstance(label, str) or not label:
            raise InputError("label", f"label must be a non-empty string, got {label!r}")
        if not self.available:
            return None
        import torch

        allocated = int(torch.cuda.memory_allocated(self.device))
        self._samples.append((label, float(self._clock()), allocated))
        return allocated

    @property
    def samples(self) -> pd.DataFrame:
        """``label, time_s, allocated_bytes``, one row per sample (empty on the CPU)."""
        return pd.DataFrame(self._samples, columns=["label", "time_s", "allocated_bytes"]).astype(
            {"time_s": float, "allocated_bytes": "int64"}
        )


__all__ = [
    "BALANCE_COLUMNS",
    "LEVERS",
    "MemorySampler",
    "PHASES",
    "PhaseTimer",
    "UNACCOUNTED",
    "WhatIf",
    "balance_table",
    "latency_percentiles",
    "suggest_lever",
    "what_if",
]
