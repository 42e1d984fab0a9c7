"""Predict latency against offered load before measuring it (chapter 08): M/M/c with Erlang C, and M/D/c.

A service of ``servers`` identical instances (c), each taking ``service_ms`` on average (S, so each serves
mu = 1 / S requests per ms), receives requests at ``rate_per_s`` (lambda) as a Poisson process, the arrival pattern
LoadGen's Server scenario draws. The offered load is a = lambda x S erlangs and the utilisation rho = a / c. Below
rho = 1 the queue is stable; at or above it the queue grows without bound and every latency is infinite
(:func:`stability_note` says so in words, and :func:`latency_curve` marks the row).

**M/M/c** (exponential service times). A request waits with the Erlang C probability

    C(c, a) = [a^c / c! x c / (c - a)] / [sum_{k < c} a^k / k! + a^c / c! x c / (c - a)],

computed through the Erlang B recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)), C = B / (1 - rho (1 - B)),
which never forms a^c or c! and so never overflows. Under first-come first-served the wait W is 0 with probability
1 - C and otherwise exponential with rate theta = c mu - lambda, so

    P(W > t) = C exp(-(c mu - lambda) t),   E[W] = C / (c mu - lambda).

The latency (sojourn time) T = W + S' adds the request's own exponential service time S', independent of W, so
P(T > t) = (1 - C) e^(-mu t) + C P(Exp(theta) + Exp(mu) > t), a closed form (:func:`latency_exceedance`); its
quantiles are found by root finding. For c = 1 it reduces to T ~ Exp(mu - lambda): p99 = ln(100) / (mu - lambda).

**M/D/c** (a fixed service time, closer to a model server's forward pass). Its exact waiting-time distribution
(Crommelin 1932; Franx, "A simple solution for the M/D/c waiting time distribution", Operations Research Letters
29(5), 2001) needs the roots of a characteristic equation; the course uses an approximation instead, the
**Allen-Cunneen** two-moment approximation for the GI/G/c queue, E[W] ~ E[W(M/M/c)] x (ca^2 + cs^2) / 2, with the
squared coefficients of variation of inter-arrival times ca^2 = 1 (Poisson) and of service times cs^2 = 0 (fixed):
**half the M/M/c mean wait** (A. O. Allen, *Probability, Statistics, and Queueing Theory with Computer Science
Applications*, 2nd ed., Academic Press, 1990; W. Whitt, "Approximations for the GI/G/m queue", Production and
Operations Management 2(2), 1993). For c = 1 it is exact: the Pollaczek-Khinchine mean wait of M/D/1 is
rho S / (2 (1 - rho)), half the M/M/1 one. For the percentiles the course makes a further **stated assumption**:
the wait keeps the M/M/c shape (0 with probability 1 - C, else exponential) with its conditional mean halved, so
P(W > t) ~ C exp(-2 (c mu - lambda) t), and T = S + W exactly (the service time is fixed). Against seeded
simulations of M/D/1, M/D/2 and M/D/4 (400,000 requests each) its p99 lay between 7% low and 20% high from 30% to
90% utilisation, within 10% from 70% to 90%; it is furthest off, and high (the safe side), at light load on one
server, where Erlang C overstates the chance to wait. tests/serve/test_queueing.py keeps a few of those comparisons.

**The knee** (:func:`knee`): the offered rate above which the predicted quantile passes a threshold: ``factor``
times its value at no load (the service time's own quantile), or an SLO. For M/M/1 and factor k the p99 is
ln(100) / (mu - lambda) against ln(100) / mu at no load, so the knee sits at rho = 1 - 1/k (50% for k = 2).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Real

import pandas as pd

from gpucost_lab._validate import InputError, fraction, integer_at_least, non_negative, one_of, positive

#: The two queueing models: exponential service times (exact) and a fixed service time (Allen-Cunneen, above).
MODELS = ("M/M/c", "M/D/c")
#: More servers than any one deployment the course sizes; the Erlang B recursion over them takes a few ms.
MAX_SERVERS = 10_000
#: The most rates one :func:`latency_curve` takes: a chapter's table, not a sweep of millions.
MAX_CURVE_RATES = 10_000


@dataclass(frozen=True)
class _Queue:
    """One validated queue: what every prediction below derives from (times in ms, rates per ms)."""

    service_ms: float
    servers: int
    rate_per_s: float
    model: str

    @property
    def offered_load_erlangs(self) -> float:
        return self.rate_per_s * self.service_ms / 1000.0

    @property
    def stable(self) -> bool:
        return self.offered_load_erlangs < self.servers

    @property
    def p_wait(self) -> float:
        return erlang_c(self.servers, self.offered_load_erlangs)

    @property
    def wait_rate_per_ms(self) -> float:
        """The rate of the conditional wait's exponential: c mu - lambda (M/M/c), twice that (M/D/c)."""
        theta = (self.servers - self.offered_load_erlangs) / self.service_ms
        return theta if self.model == "M/M/c" else 2.0 * theta


def _queue(service_ms: float, servers: int, rate_per_s: float, model: str) -> _Queue:
    return _Queue(
        positive("service_ms", service_ms),
        integer_at_least("servers", servers, 1, MAX_SERVERS),
        non_negative("rate_per_s", rate_per_s),
        one_of("model", model, MODELS),
    )


def _quantile(quantile: float) -> float:
    return fraction("quantile", quantile, include_zero=False, include_one=False)


def utilisation(service_ms: float, servers: int, rate_per_s: float) -> float:
    """rho = lambda x S / c: the share of the servers' time the offered load keeps busy (1 or more: unstable)."""
    q = _queue(service_ms, servers, rate_per_s, "M/M/c")
    return q.offered_load_erlangs / q.servers


def erlang_c(servers: int, offered_load_erlangs: float) -> float:
    """The Erlang C probability that an arriving request waits, for c servers offered a erlangs (1.0 when a >= c).

    Through the Erlang B recursion (see the module's docstring), so large c neither overflows nor loses digits.
    """
    c = integer_at_least("servers", servers, 1, MAX_SERVERS)
    a = non_negative("offered_load_erlangs", offered_load_erlangs)
    if a >= c:
        return 1.0
    if a == 0:
        return 0.0
    blocking = 1.0
    for k in range(1, c + 1):
        blocking = a * blocking / (k + a * blocking)
    return blocking / (1.0 - (a / c) * (1.0 - blocking))


def stability_note(service_ms: float, servers: int, rate_per_s: float) -> str:
    """ "" when the queue is stable; else why every latency it predicts is infinite."""
    q = _queue(service_ms, servers, rate_per_s, "M/M/c")
    if q.stable:
        return ""
    a = q.offered_load_erlangs
    return (
        f"unstable: the offered load {a:.4g} erlangs ({rate_per_s:g}/s x {service_ms:g} ms) is at least the "
        f"{q.servers} server(s) (utilisation {a / q.servers:.0%}): the queue grows without bound, every latency is inf"
    )


def mean_wait_ms(service_ms: float, servers: int, rate_per_s: float, model: str = "M/M/c") -> float:
    """E[W] = C / (c mu - lambda) for M/M/c, half that for M/D/c (Allen-Cunneen); inf when unstable."""
    q = _queue(service_ms, servers, rate_per_s, model)
    if not q.stable:
        return math.inf
    return q.p_wait / q.wait_rate_per_ms


def mean_latency_ms(service_ms: float, servers: int, rate_per_s: float, model: str = "M/M/c") -> float:
    """E[T] = S + E[W] (both models: the mean service time is S); inf when unstable."""
    return float(service_ms) + mean_wait_ms(service_ms, servers, rate_per_s, model)


def wait_exceedance(wait_ms: float, service_ms: float, servers: int, rate_per_s: float, model: str = "M/M/c") -> float:
    """P(W > t) = C exp(-theta t): theta = c mu - lambda (M/M/c) or twice it (M/D/c, the stated assumption)."""
    t = non_negative("wait_ms", wait_ms)
    q = _queue(service_ms, servers, rate_per_s, model)
    if not q.stable:
        return 1.0
    return q.p_wait * math.exp(-q.wait_rate_per_ms * t)


def wait_quantile_ms(
    service_ms: float, servers: int, rate_per_s: float, quantile: float = 0.99, model: str = "M/M/c"
) -> float:
    """The wait no more than ``quantile`` of requests exceed: 0 when C <= 1 - q, else ln(C / (1 - q)) / theta."""
    p = _quantile(quantile)
    q = _queue(service_ms, servers, rate_per_s, model)
    if not q.stable:
        return math.inf
    c_wait = q.p_wait
    if c_wait <= 1.0 - p:
        return 0.0
    return math.log(c_wait / (1.0 - p)) / q.wait_rate_per_ms


def _relative_expm1(x: float) -> float:
    """(1 - e^-x) / x, 1 at x = 0, without the cancellation of the plain formula near 0."""
    return 1.0 if x == 0 else -math.expm1(-x) / x


def latency_exceedance(
    latency_ms: float, service_ms: float, servers: int, rate_per_s: float, model: str = "M/M/c"
) -> float:
    """P(T > t) for the latency T = W + service.

    M/M/c: (1 - C) e^(-mu t) + C P(Exp(theta) + Exp(mu) > t), where the sum of two independent exponentials exceeds
    t with probability e^(-mu t) (1 + mu t (1 - e^(-(theta - mu) t)) / ((theta - mu) t)) (equal rates included).
    M/D/c: 1 below the fixed service time, P(W > t - S) from it on.
    """
    t = non_negative("latency_ms", latency_ms)
    q = _queue(service_ms, servers, rate_per_s, model)
    if not q.stable:
        return 1.0
    if model == "M/D/c":
        return 1.0 if t < q.service_ms else wait_exceedance(t - q.service_ms, service_ms, servers, rate_per_s, model)
    mu, theta, c_wait = 1.0 / q.service_ms, q.wait_rate_per_ms, q.p_wait
    x = (theta - mu) * t
    if abs(x) < 1.0:  # theta near mu: the form without cancellation
        both = math.exp(-mu * t) * (1.0 + mu * t * _relative_expm1(x))
    else:  # the plain form, which cannot overflow where the other could
        both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1.0 - c_wait) * math.exp(-mu * t) + c_wait * both


def latency_quantile_ms(
    service_ms: float, servers: int, rate_per_s: float, quantile: float = 0.99, model: str = "M/M/c"
) -> float:
    """The latency no more than ``1 - quantile`` of requests exceed (p99 for 0.99); inf when unstable.

    M/D/c: S + the wait's quantile (exact for a fixed service time). M/M/c: the root of P(T > t) = 1 - q, which lies
    between the service time's own quantile and that plus the wait's (the sum of the two quantiles bounds it).
    """
    p = _quantile(quantile)
    q = _queue(service_ms, servers, rate_per_s, model)
    if not q.stable:
        return math.inf
    if model == "M/D/c":
        return q.service_ms + wait_quantile_ms(service_ms, servers, rate_per_s, p, model)
    from scipy.optimize import brentq  # here, not at import: scipy takes a while to load

    def excess(t: float) -> float:
        return latency_exceedance(t, service_ms, servers, rate_per_s, model) - (1.0 - p)

    low = -math.log1p(-p) * q.service_ms  # the service time's own quantile: T >= S' everywhere
    if excess(low) <= 0:
        return low
    high = low + wait_quantile_ms(service_ms, servers, rate_per_s, p, model) + q.service_ms
    while excess(high) > 0:
        high *= 2.0
    return float(brentq(excess, low, high, xtol=1e-12 * high, rtol=1e-12))


def _rates(rates_per_s: Iterable[float]) -> list[float]:
    if isinstance(rates_per_s, (str, bytes)):
        raise InputError("rates_per_s", f"rates_per_s must be numbers of requests per second, got {rates_per_s!r}")
    try:
        rates = list(rates_per_s)
    except TypeError:
        raise InputError("rates_per_s", f"rates_per_s must be an iterable of rates, got {rates_per_s!r}") from None
    if not 1 <= len(rates) <= MAX_CURVE_RATES:
        raise InputError("rates_per_s", f"rates_per_s must hold 1 to {MAX_CURVE_RATES} rates, got {len(rates)}")
    for i, r in enumerate(rates):
        if isinstance(r, bool) or not isinstance(r, Real) or not math.isfinite(r) or r < 0:
            raise InputError(f"rates_per_s[{i}]", f"rates_per_s[{i}] must be a finite rate >= 0 per s, got {r!r}")
    return [float(r) for r in rates]


def quantile_label(quantile: float) -> str:
    """0.99 -> "p99", 0.5 -> "p50", 0.999 -> "p99.9": the name a column or a figure gives the quantile."""
    return f"p{_quantile(quantile) * 100:.10g}"


def latency_curve(
    service_ms: float, servers: int, rates_per_s: Iterable[float], quantile: float = 0.99, model: str = "M/M/c"
) -> pd.DataFrame:
    """The predicted latency against offered load, one row per rate: ``rate_per_s, utilisation, p_wait,
    mean_wait_ms, mean_latency_ms, latency_<pNN>_ms, stable, note`` (``note`` says why an unstable row is inf)."""
    rates = _rates(rates_per_s)
    p = _quantile(quantile)
    _queue(service_ms, servers, 0.0, model)
    rows = [
        (
            rate,
            utilisation(service_ms, servers, rate),
            erlang_c(servers, rate * service_ms / 1000.0),
            mean_wait_ms(service_ms, servers, rate, model),
            mean_latency_ms(service_ms, servers, rate, model),
            latency_quantile_ms(service_ms, servers, rate, p, model),
            rate * service_ms / 1000.0 < servers,
            stability_note(service_ms, servers, rate),
        )
        for rate in rates
    ]
    columns = ["rate_per_s", "utilisation", "p_wait", "mean_wait_ms", "mean_latency_ms"]
    return pd.DataFrame(rows, columns=[*columns, f"latency_{quantile_label(p)}_ms", "stable", "note"])


@dataclass(frozen=True)
class Knee:
    """Where queueing takes over: above ``rate_per_s`` the predicted ``quantile`` of latency passes ``threshold_ms``
    (``criterion`` says which threshold: ``factor`` x the no-load value, or the SLO)."""

    model: str
    service_ms: float
    servers: int
    quantile: float
    threshold_ms: float
    no_load_latency_ms: float  # the quantile at no load: the service time's own quantile (plus the overhead)
    rate_per_s: float  # 0.0 when even an idle service passes the threshold
    criterion: str
    overhead_ms: float = 0.0  # a fixed time per request beyond the server's: the client's, the connection's

    @property
    def utilisation(self) -> float:
        return self.rate_per_s * self.service_ms / 1000.0 / self.servers

    @property
    def reason(self) -> str:
        label = quantile_label(self.quantile)
        extra = f" + {self.overhead_ms:.1f} ms beyond the server" if self.overhead_ms else ""
        if self.rate_per_s == 0:
            return (
                f"{self.model}: the {label} at no load{extra}, {self.no_load_latency_ms:.4g} ms, already reaches "
                f"{self.threshold_ms:.4g} ms ({self.criterion}): no offered load meets it"
            )
        return (
            f"{self.model}, {self.servers} server(s) of {self.service_ms:g} ms{extra}: the predicted {label} passes "
            f"{self.threshold_ms:.4g} ms ({self.criterion}) above {self.rate_per_s:.4g} requests/s "
            f"(utilisation {self.utilisation:.0%})"
        )


def knee(
    service_ms: float,
    servers: int,
    quantile: float = 0.99,
    *,
    factor: float | None = None,
    slo_ms: float | None = None,
    model: str = "M/M/c",
    overhead_ms: float = 0.0,
) -> Knee:
    """The offered rate at which the predicted ``quantile`` (plus ``overhead_ms``, a fixed time per request no
    server phase holds) reaches ``factor`` x its no-load value or ``slo_ms`` (give exactly one). The quantile rises
    with the rate (C rises, c mu - lambda falls), so the rate is the one root in [0, c mu), found with Brent's method
    (scipy.optimize.brentq); 0.0 when the no-load value, overhead included, already reaches the threshold."""
    if (factor is None) == (slo_ms is None):
        raise InputError(
            "factor", f"factor or slo_ms: give exactly one of the two, got factor={factor!r}, slo_ms={slo_ms!r}"
        )
    p = _quantile(quantile)
    q = _queue(service_ms, servers, 0.0, model)
    extra = non_negative("overhead_ms", overhead_ms)
    no_load = latency_quantile_ms(service_ms, servers, 0.0, p, model) + extra
    if factor is not None:
        if positive("factor", factor) <= 1:
            raise InputError("factor", f"factor must be > 1 (the no-load value itself is the floor), got {factor!r}")
        threshold, criterion = no_load * factor, f"{factor:g} x the no-load value"
    else:
        threshold, criterion = positive("slo_ms", slo_ms), f"the SLO of {slo_ms:g} ms"
    if no_load >= threshold:
        return Knee(model, q.service_ms, q.servers, p, threshold, no_load, 0.0, criterion, extra)
    from scipy.optimize import brentq

    capacity_per_s = q.servers / q.service_ms * 1000.0
    for halvings in range(1, 64):  # the quantile grows without bound towards capacity: a rate past the threshold
        high = capacity_per_s * (1.0 - 0.5**halvings)
        if latency_quantile_ms(service_ms, servers, high, p, model) + extra > threshold:
            break
    else:
        return Knee(model, q.service_ms, q.servers, p, threshold, no_load, high, criterion, extra)
    rate = brentq(
        lambda r: latency_quantile_ms(service_ms, servers, r, p, model) + extra - threshold,
        0.0,
        high,
        xtol=1e-12,
        rtol=1e-12,
    )
    return Knee(model, q.service_ms, q.servers, p, threshold, no_load, float(rate), criterion, extra)


__all__ = [
    "MAX_SERVERS",
    "MODELS",
    "Knee",
    "erlang_c",
    "knee",
    "latency_curve",
    "latency_exceedance",
    "latency_quantile_ms",
    "mean_latency_ms",
    "mean_wait_ms",
    "quantile_label",
    "stability_note",
    "utilisation",
    "wait_exceedance",
    "wait_quantile_ms",
]
