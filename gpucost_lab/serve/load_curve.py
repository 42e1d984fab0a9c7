"""Latency against offered load, predicted first and then measured (chapter 08, "Profile the service").

- :func:`service_time_ms`: what one request keeps the worker busy, from the server's own phase records: every phase
  but ``queue`` (the worker runs decode, preprocess, the model, serialization and the send one request at a time on
  its event loop, so these phases are its service time and the queue is the wait). The mean is what the queueing
  formulas take (``queueing``: E[S]); the squared coefficient of variation says how close the service is to a fixed
  one (0 for M/D/c, 1 for M/M/c).
- :func:`measure_load_curve`: one LoadGen Server run (Poisson arrivals) per offered rate against a running service,
  each rate's p50 and p99 with their 95% intervals and the p99's verdict against the SLO
  (``sizing.slo_verdict``), the points ``sizing.max_sustainable_qps`` reads.
- :func:`with_prediction`: the measured table beside the queueing model's p99 at the same rates.
- :func:`plot_load_curve`: the predicted curve, the measured p99s with their intervals and the SLO; its text twin is
  the table of :func:`with_prediction`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from gpucost_lab._validate import InputError, fraction, integer_at_least, non_negative, positive
from gpucost_lab.serve import queueing
from gpucost_lab.serve.app import PHASE_FIELDS
from gpucost_lab.serve.percentiles import quantile_name
from gpucost_lab.serve.sizing import LoadPoint, slo_verdict

#: The most rates one curve measures: each is a LoadGen run of ``duration_s``; a chapter measures a handful.
MAX_RATES = 20
_BUSY = tuple(f for f in PHASE_FIELDS if f != "queue_ms")


@dataclass(frozen=True)
class ServiceTime:
    """The worker's busy time per request (every phase but the queue), over ``requests`` records, in ms."""

    mean_ms: float
    median_ms: float
    cv2: float  # the squared coefficient of variation: variance / mean^2
    requests: int
    with_queue_median_ms: float  # the median of the server's whole time per request, its wait for the model included

    @property
    def text(self) -> str:
        return (
            f"service time {self.mean_ms:.2f} ms mean, {self.median_ms:.2f} ms median over {self.requests} requests "
            f"(squared coefficient of variation {self.cv2:.2f}: 0 is a fixed service, M/D/c; 1 is M/M/c)"
        )


def service_time_ms(phases: pd.DataFrame) -> ServiceTime:
    """The service time of the requests in ``phases`` (``Service.phases()``: one row per request)."""
    if not isinstance(phases, pd.DataFrame) or any(f not in phases.columns for f in _BUSY):
        raise InputError("phases", f"phases must be a DataFrame with the columns {list(_BUSY)} (Service.phases())")
    busy = phases[list(_BUSY)].sum(axis=1)
    if busy.empty:
        raise InputError("phases", "phases must hold at least one request's record, got none")
    mean = float(busy.mean())
    cv2 = float(busy.var(ddof=0)) / mean**2 if mean > 0 else 0.0
    whole = busy + phases["queue_ms"] if "queue_ms" in phases.columns else busy
    return ServiceTime(mean, float(busy.median()), cv2, int(busy.size), float(whole.median()))


def client_overhead_ms(light: LoadCurve, service: ServiceTime) -> float:
    """What a request's latency holds beyond the server's own time at the lightest rate of ``light``: its p50 less
    the median of the server's whole time per request (``service``, from the same run's records), queue included,
    so that a light load the machine cannot keep up with (a busy machine) puts its queueing on the server's side
    and not into the overhead; 0 when the server's time is the larger."""
    if not isinstance(light, LoadCurve) or not isinstance(service, ServiceTime):
        raise InputError("light", "client_overhead_ms takes a LoadCurve and the ServiceTime of the same run")
    return max(0.0, float(light.table()["p50_ms"].iloc[0]) - service.with_queue_median_ms)


@dataclass(frozen=True)
class LoadCurve:
    """One LoadGen Server run per offered rate: ``runs`` (``loadgen.LoadGenRun``) by rising rate."""

    slo_ms: float
    quantile: float  # the SLO's quantile: 0.99 for a p99 bound
    runs: tuple[Any, ...]

    @property
    def name(self) -> str:
        """``p99`` for 0.99, ``p90`` for 0.9: the prefix of the SLO quantile's columns."""
        return quantile_name(self.quantile)

    def table(self) -> pd.DataFrame:
        """``qps_offered, qps_achieved, requests, p50_ms, pNN_ms, pNN_ci95_low_ms, pNN_ci95_high_ms, slo_verdict``
        (pNN the SLO's quantile; its interval's top is inf where too few requests bound it)."""
        rows = []
        for run in self.runs:
            found = run.percentiles(tuple(dict.fromkeys((0.5, self.quantile))))  # p50 once, when it is the SLO's
            p50, tail = found["p50"], found[self.name]
            rows.append(
                {
                    "qps_offered": run.qps_offered,
                    "qps_achieved": run.qps_achieved,
                    "requests": run.requests,
                    "p50_ms": p50.value,
                    f"{self.name}_ms": tail.value,
                    f"{self.name}_ci95_low_ms": tail.ci95_low,
                    f"{self.name}_ci95_high_ms": tail.ci95_high,
                    "slo_verdict": slo_verdict(tail.ci95_low, tail.ci95_high, self.slo_ms),
                }
            )
        return pd.DataFrame(rows)

    def points(self) -> list[LoadPoint]:
        """Each rate's SLO quantile with its interval, as ``sizing.max_sustainable_qps`` takes them."""
        t, n = self.table(), self.name
        return [
            LoadPoint(q, v, lo, hi)
            for q, v, lo, hi in zip(t["qps_offered"], t[f"{n}_ms"], t[f"{n}_ci95_low_ms"], t[f"{n}_ci95_high_ms"])
        ]


def _rates(rates_qps: Sequence[float]) -> list[float]:
    if isinstance(rates_qps, (str, bytes)) or not isinstance(rates_qps, Sequence) or not rates_qps:
        raise InputError("rates_qps", f"rates_qps must be a non-empty list of requests per second, got {rates_qps!r}")
    if len(rates_qps) > MAX_RATES:
        raise InputError("rates_qps", f"rates_qps must hold at most {MAX_RATES} rates, got {len(rates_qps)}")
    rates = [positive(f"rates_qps[{i}]", r) for i, r in enumerate(rates_qps)]
    if len(set(rates)) != len(rates):
        raise InputError("rates_qps", f"rates_qps must not repeat a rate, got {list(rates_qps)!r}")
    return sorted(rates)


def measure_load_curve(
    urls: Sequence[str],
    rates_qps: Sequence[float],
    *,
    duration_s: float,
    slo_ms: float,
    quantile: float = 0.99,
    seed: int = 0,
) -> LoadCurve:
    """A LoadGen Server run of ``duration_s`` at each rate of ``rates_qps`` against ``urls``, lowest rate first, every
    run with the same seed (so the arrivals at two rates differ only in their rate); the SLO is ``slo_ms`` at
    ``quantile``."""
    from gpucost_lab.serve.loadgen import run_loadgen

    slo = positive("slo_ms", slo_ms)
    q = fraction("quantile", quantile, include_zero=False, include_one=False)
    runs = tuple(
        run_loadgen(urls, "server", qps=r, slo_ms=slo, percentile=q, duration_s=duration_s, min_queries=1, seed=seed)
        for r in _rates(rates_qps)
    )
    return LoadCurve(slo, q, runs)


def with_prediction(
    curve: LoadCurve,
    service: ServiceTime | float,
    servers: int = 1,
    model: str = "M/D/c",
    overhead_ms: float = 0.0,
) -> pd.DataFrame:
    """The measured table with ``predicted_pNN_ms`` (the queueing ``model``'s SLO quantile at each offered rate plus
    ``overhead_ms``, the client's and the connection's own time per request, which no server phase holds; inf where
    the service cannot keep up) and the utilisation each rate asks of ``servers`` instances."""
    mean_ms = service.mean_ms if isinstance(service, ServiceTime) else positive("service", service)
    count = integer_at_least("servers", servers, 1, queueing.MAX_SERVERS)
    extra = non_negative("overhead_ms", overhead_ms)
    table = curve.table()
    predicted = queueing.latency_curve(mean_ms, count, table["qps_offered"], curve.quantile, model)
    table.insert(3, "utilisation", predicted["utilisation"].to_numpy())
    table.insert(6, f"predicted_{curve.name}_ms", predicted[f"latency_{curve.name}_ms"].to_numpy() + extra)
    return table


def plot_load_curve(
    table: pd.DataFrame,
    service_ms: float,
    servers: int,
    slo_ms: float,
    quantile: float = 0.99,
    model: str = "M/D/c",
    overhead_ms: float = 0.0,
):
    """The queueing model's ``quantile`` (plus ``overhead_ms``) against offered load up to 97% of capacity, the
    measured ones with their 95% intervals (an unbounded top drawn to the top of the axes) and the SLO line; returns
    the Axes."""
    import matplotlib.pyplot as plt
    import numpy as np

    from gpucost_lab.formatting import describe

    capacity = servers * 1000.0 / positive("service_ms", service_ms)
    grid = np.linspace(capacity * 0.02, capacity * 0.97, 60)
    n = quantile_name(quantile)
    curve = queueing.latency_curve(service_ms, servers, grid, quantile, model)
    value = table[f"{n}_ms"]
    top = max(3 * slo_ms, float(value.max()) * 1.2)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(grid, curve[f"latency_{n}_ms"] + non_negative("overhead_ms", overhead_ms), label=f"{model} {n}, predicted")
    low = value - table[f"{n}_ci95_low_ms"]
    high = np.minimum(table[f"{n}_ci95_high_ms"], top) - value
    ax.errorbar(table["qps_offered"], value, yerr=[low, high], fmt="o", capsize=3, label=f"{n}, measured")
    ax.axhline(slo_ms, linestyle="--", color="grey", label=f"SLO {slo_ms:g} ms")
    ax.set(xlabel="offered load (requests/s)", ylabel=f"latency {n} (ms)", ylim=(0, top))
    ax.legend(loc="upper left")
    measured = ", ".join(f"{q:g}/s: {p:.1f} ms" for q, p in zip(table["qps_offered"], value))
    describe(
        fig,
        f"{n} latency against offered load: the {model} prediction rises towards capacity {capacity:.0f}/s; "
        f"measured {n} {measured}; the SLO is {slo_ms:g} ms",
    )
    return ax


def capacity_qps(service_ms: float, servers: int = 1) -> float:
    """The rate at which ``servers`` instances of ``service_ms`` are busy all the time (utilisation 1)."""
    return integer_at_least("servers", servers, 1, queueing.MAX_SERVERS) * 1000.0 / positive("service_ms", service_ms)


__all__ = [
    "MAX_RATES",
    "LoadCurve",
    "ServiceTime",
    "capacity_qps",
    "client_overhead_ms",
    "measure_load_curve",
    "plot_load_curve",
    "service_time_ms",
    "with_prediction",
]
