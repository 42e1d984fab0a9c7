"""gpucost_lab.serve.queueing: Erlang C, the M/M/c and M/D/c latency predictions and the knee, against hand
computations, scipy's Poisson distribution and a seeded simulation of the queue.

Hand computations used below (S = 10 ms, so mu = 0.1 per ms):
- c = 1 (M/M/1), lambda = 50/s = 0.05 per ms, rho = 0.5: P(wait) = rho = 0.5, E[W] = rho / (mu - lambda)
  = 0.5 / 0.05 = 10 ms; the latency is Exp(mu - lambda), so p99 = ln(100) / 0.05 = 92.103 ms, p50 = ln(2) / 0.05
  = 13.863 ms. No load: p99 = ln(100) x 10 = 46.052 ms. Knee at 2 x that: mu - lambda = mu / 2, lambda = 50/s.
- c = 2, lambda = 100/s, a = lambda S = 1 erlang, rho = 0.5: C = [a^2/2! x 2/(2-1)] / [1 + a + a^2/2! x 2/(2-1)]
  = (0.5 x 2) / (1 + 1 + 1) = 1/3. E[W] = C / (c mu - lambda) = (1/3) / (0.2 - 0.1) = 10/3 ms. Wait p99: ln(C / 0.01)
  / 0.1 = 10 ln(33.33) = 35.066 ms; wait p50 = 0 (C = 1/3 < 0.5). Here theta = c mu - lambda = 0.1 = mu, so
  P(Exp(mu) + Exp(mu) > t) = (1 + mu t) e^(-mu t) and P(T > t) = (2/3) e^(-mu t) + (1/3)(1 + mu t) e^(-mu t); at
  t = 10 ms: e^-1 (2/3 + 2/3) = 0.49052.
- c = 2, lambda = 50/s, a = 0.5: C = (0.125 x 2/1.5) / (1 + 0.5 + 0.125 x 2/1.5) = 0.16667 / 1.66667 = 0.1;
  theta = 0.2 - 0.05 = 0.15 per ms; P(T > 10) = 0.9 e^-1 + 0.1 (0.15 e^-1 - 0.1 e^-1.5) / 0.05 = 0.39683.
- c = 3, a = 2: C = (8/6 x 3/1) / (1 + 2 + 2 + 4) = 4/9.
- M/D/1, rho = 0.5: the Pollaczek-Khinchine mean wait rho S / (2 (1 - rho)) = 0.5 x 10 / 1 = 5 ms, half M/M/1's 10;
  p99 = S + ln(rho / 0.01) / (2 (mu - lambda)) = 10 + ln(50) / 0.1 = 49.120 ms.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from gpucost_lab._validate import InputError
from gpucost_lab.serve import queueing as q

# -- Erlang C ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "servers,load,expected",
    [(1, 0.5, 0.5), (1, 0.9, 0.9), (2, 1.0, 1 / 3), (3, 2.0, 4 / 9), (2, 0.5, 0.1), (4, 0.0, 0.0), (2, 2.0, 1.0)],
)
def test_erlang_c_hand_values(servers, load, expected):
    assert q.erlang_c(servers, load) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("servers,load", [(10, 7.5), (100, 90.0), (1000, 980.0), (5000, 4900.0)])
def test_erlang_c_matches_scipy_poisson_for_many_servers(servers, load):
    # Erlang B(c, a) = Poisson pmf(c; a) / cdf(c; a) (the Poisson identity), C = B / (1 - rho (1 - B))
    blocking = stats.poisson.pmf(servers, load) / stats.poisson.cdf(servers, load)
    expected = blocking / (1 - load / servers * (1 - blocking))
    assert q.erlang_c(servers, load) == pytest.approx(expected, rel=1e-9)


def test_one_server_reduces_to_m_m_1():
    assert q.erlang_c(1, 0.5) == 0.5
    assert q.mean_wait_ms(10, 1, 50) == pytest.approx(10.0)
    assert q.mean_latency_ms(10, 1, 50) == pytest.approx(20.0)  # 1 / (mu - lambda)
    assert q.latency_quantile_ms(10, 1, 50, 0.99) == pytest.approx(math.log(100) / 0.05, rel=1e-9)
    assert q.latency_quantile_ms(10, 1, 50, 0.5) == pytest.approx(math.log(2) / 0.05, rel=1e-9)


@pytest.mark.parametrize("rho", [0.1, 0.3, 0.7, 0.95])
def test_m_m_1_p99_closed_form(rho):
    service_ms = 4.0
    rate_per_s = rho / service_ms * 1000
    mu_minus_lambda = (1 - rho) / service_ms
    assert q.latency_quantile_ms(service_ms, 1, rate_per_s, 0.99) == pytest.approx(
        math.log(100) / mu_minus_lambda, rel=1e-9
    )


def test_two_servers_at_half_load_by_hand():
    assert q.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert q.utilisation(10, 2, 100) == pytest.approx(0.5)
    assert q.mean_wait_ms(10, 2, 100) == pytest.approx(10 / 3)
    assert q.wait_exceedance(0, 10, 2, 100) == pytest.approx(1 / 3)
    assert q.wait_exceedance(10, 10, 2, 100) == pytest.approx(math.exp(-1) / 3)
    assert q.wait_quantile_ms(10, 2, 100, 0.99) == pytest.approx(10 * math.log(100 / 3))
    assert q.wait_quantile_ms(10, 2, 100, 0.5) == 0.0
    # theta = mu: the equal-rates case of the latency's closed form
    assert q.latency_exceedance(10, 10, 2, 100) == pytest.approx(math.exp(-1) * 4 / 3, rel=1e-12)


def test_latency_tail_with_unequal_rates_by_hand():
    expected = 0.9 * math.exp(-1) + 0.1 * (0.15 * math.exp(-1) - 0.1 * math.exp(-1.5)) / 0.05
    assert q.latency_exceedance(10, 10, 2, 50) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.39683, abs=1e-5)


@given(
    servers=st.integers(1, 8),
    rho=st.floats(0.01, 0.98),
    t_ms=st.floats(0.0, 500.0),
)
def test_latency_tail_forms_agree_near_equal_rates(servers, rho, t_ms):
    # the code switches between two algebraically equal forms; each side of the switch matches the plain formula
    service_ms = 10.0
    rate_per_s = rho * servers / service_ms * 1000
    mu, theta = 0.1, (servers - rho * servers) / service_ms
    c_wait = q.erlang_c(servers, rho * servers)
    if abs(theta - mu) > 1e-6:
        both = (theta * math.exp(-mu * t_ms) - mu * math.exp(-theta * t_ms)) / (theta - mu)
    else:
        both = (1 + mu * t_ms) * math.exp(-mu * t_ms)
    expected = (1 - c_wait) * math.exp(-mu * t_ms) + c_wait * both
    assert q.latency_exceedance(t_ms, service_ms, servers, rate_per_s) == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_m_d_1_mean_wait_is_pollaczek_khinchine():
    assert q.mean_wait_ms(10, 1, 50, "M/D/c") == pytest.approx(5.0)
    assert q.latency_quantile_ms(10, 1, 50, 0.99, "M/D/c") == pytest.approx(10 + math.log(50) / 0.1)
    assert q.latency_quantile_ms(10, 1, 0.4, 0.5, "M/D/c") == 10.0  # below the fixed service time: never


def test_no_load_is_the_service_time_alone():
    assert q.latency_quantile_ms(10, 3, 0, 0.99) == pytest.approx(10 * math.log(100))
    assert q.latency_quantile_ms(10, 3, 0, 0.99, "M/D/c") == 10.0
    assert q.mean_wait_ms(10, 3, 0) == 0.0


# -- stability --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate_per_s", [200.0, 250.0, 1e9])
@pytest.mark.parametrize("model", q.MODELS)
def test_unstable_load_is_inf_and_says_so(rate_per_s, model):
    # 2 servers of 10 ms serve at most 200/s
    assert q.latency_quantile_ms(10, 2, rate_per_s, 0.99, model) == math.inf
    assert q.mean_wait_ms(10, 2, rate_per_s, model) == math.inf
    assert q.erlang_c(2, rate_per_s * 10 / 1000) == 1.0
    assert "unstable" in q.stability_note(10, 2, rate_per_s)
    assert q.stability_note(10, 2, 199.0) == ""


def test_latency_curve_table():
    table = q.latency_curve(10, 2, [0, 100, 150, 200, 300], quantile=0.99)
    assert list(table.columns) == [
        "rate_per_s",
        "utilisation",
        "p_wait",
        "mean_wait_ms",
        "mean_latency_ms",
        "latency_p99_ms",
        "stable",
        "note",
    ]
    assert table["utilisation"].tolist() == pytest.approx([0, 0.5, 0.75, 1.0, 1.5])
    assert table.loc[1, "p_wait"] == pytest.approx(1 / 3)
    assert table.loc[1, "mean_wait_ms"] == pytest.approx(10 / 3)
    assert table["stable"].tolist() == [True, True, True, False, False]
    assert table.loc[3, "latency_p99_ms"] == math.inf and "unstable" in table.loc[3, "note"]
    assert table.loc[0, "note"] == ""
    assert "latency_p99.9_ms" in q.latency_curve(10, 2, [50], quantile=0.999).columns


# -- properties -------------------------------------------------------------------------------------------------------


@given(
    servers=st.integers(1, 16),
    low=st.floats(0.0, 0.99),
    high=st.floats(0.0, 0.99),
    model=st.sampled_from(q.MODELS),
)
def test_latency_rises_with_load(servers, low, high, model):
    low, high = sorted((low, high))
    service_ms = 7.0
    rates = [rho * servers / service_ms * 1000 for rho in (low, high)]
    for quantile in (0.5, 0.9, 0.99):
        a, b = (q.latency_quantile_ms(service_ms, servers, r, quantile, model) for r in rates)
        assert a <= b * (1 + 1e-9)
    a, b = (q.erlang_c(servers, rho * servers) for rho in (low, high))
    assert a <= b + 1e-12
    a, b = (q.mean_wait_ms(service_ms, servers, r, model) for r in rates)
    assert a <= b * (1 + 1e-9) + 1e-12


@given(servers=st.integers(1, 16), rho=st.floats(0.0, 0.99), model=st.sampled_from(q.MODELS))
def test_quantiles_are_ordered_and_solve_the_tail(servers, rho, model):
    service_ms = 5.0
    rate = rho * servers / service_ms * 1000
    p50, p90, p99 = (q.latency_quantile_ms(service_ms, servers, rate, p, model) for p in (0.5, 0.9, 0.99))
    assert service_ms * (model == "M/D/c") <= p50 <= p90 <= p99
    if model == "M/M/c":  # the root found: exactly 1% of requests take longer than the p99
        assert q.latency_exceedance(p99, service_ms, servers, rate, model) == pytest.approx(0.01, rel=1e-6)


# -- against a seeded simulation of the queue -------------------------------------------------------------------------


def simulate_latencies_ms(servers, service_ms, rate_per_s, requests, fixed, seed=0):
    """First-come first-served c-server queue, Poisson arrivals; exponential or fixed service; warm-up dropped."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1000 / rate_per_s, requests))
    services = np.full(requests, service_ms) if fixed else rng.exponential(service_ms, requests)
    free = [0.0] * servers
    latencies = np.empty(requests)
    for i in range(requests):
        start = max(arrivals[i], heapq.heappop(free))
        heapq.heappush(free, start + services[i])
        latencies[i] = start + services[i] - arrivals[i]
    return latencies[requests // 10 :]


@pytest.mark.parametrize("servers,rho", [(2, 0.5), (3, 0.6)])
def test_m_m_c_prediction_matches_a_simulation(servers, rho):
    service_ms = 10.0
    rate = rho * servers / service_ms * 1000
    latencies = simulate_latencies_ms(servers, service_ms, rate, 120_000, fixed=False)
    for quantile in (0.5, 0.99):
        measured = np.percentile(latencies, quantile * 100)
        assert q.latency_quantile_ms(service_ms, servers, rate, quantile) == pytest.approx(measured, rel=0.05)
    assert q.mean_wait_ms(service_ms, servers, rate) == pytest.approx(latencies.mean() - service_ms, rel=0.1)


@pytest.mark.parametrize("servers,rho", [(1, 0.8), (2, 0.7), (4, 0.8)])
def test_m_d_c_approximation_within_its_stated_band(servers, rho):
    # the module's docstring: within 10% of a simulation from 70% to 90% utilisation (and high rather than low)
    service_ms = 10.0
    rate = rho * servers / service_ms * 1000
    measured = np.percentile(simulate_latencies_ms(servers, service_ms, rate, 120_000, fixed=True), 99)
    predicted = q.latency_quantile_ms(service_ms, servers, rate, 0.99, "M/D/c")
    assert 0.97 * measured <= predicted <= 1.12 * measured


# -- the knee ---------------------------------------------------------------------------------------------------------


def test_knee_of_m_m_1_at_twice_the_no_load_p99():
    knee = q.knee(10, 1, 0.99, factor=2)
    assert knee.rate_per_s == pytest.approx(50.0, rel=1e-9)  # rho = 1 - 1/2
    assert knee.utilisation == pytest.approx(0.5, rel=1e-9)
    assert knee.no_load_latency_ms == pytest.approx(10 * math.log(100))
    assert knee.threshold_ms == pytest.approx(20 * math.log(100))
    assert "50 requests/s" in knee.reason
    assert q.knee(10, 1, 0.99, factor=4).utilisation == pytest.approx(0.75, rel=1e-9)  # rho = 1 - 1/4


def test_knee_at_an_slo():
    assert q.knee(10, 1, 0.99, slo_ms=math.log(100) / 0.05).rate_per_s == pytest.approx(50.0, rel=1e-9)
    mdc = q.knee(10, 1, 0.99, slo_ms=10 + math.log(50) / 0.1, model="M/D/c")
    assert mdc.rate_per_s == pytest.approx(50.0, rel=1e-9)


def test_knee_with_an_overhead_is_the_knee_of_the_slo_less_the_overhead():
    # M/D/1 of 10 ms: p99 = 10 + ln(100 rho)/(2 (mu - lambda)); at 50/s, rho = 0.5: 10 + ln(50)/0.1 = 49.12 ms.
    # With 5 ms beyond the server, the SLO that puts the knee at 50/s is 5 ms higher
    shifted = q.knee(10, 1, 0.99, slo_ms=15 + math.log(50) / 0.1, model="M/D/c", overhead_ms=5.0)
    assert shifted.rate_per_s == pytest.approx(50.0, rel=1e-9)
    assert shifted.no_load_latency_ms == pytest.approx(15.0) and "+ 5.0 ms beyond the server" in shifted.reason
    # an overhead that alone passes the SLO (a busy machine's client): no load meets it, and no error
    late = q.knee(10, 1, 0.9, slo_ms=50, model="M/D/c", overhead_ms=170.0)
    assert late.rate_per_s == 0.0 and "no offered load meets it" in late.reason
    assert "at no load + 170.0 ms beyond the server, 180 ms" in late.reason  # the p90 of a fixed 10 ms, plus 170
    with pytest.raises(InputError):
        q.knee(10, 1, 0.9, slo_ms=50, overhead_ms=-1.0)


def test_knee_below_the_no_load_value_is_zero():
    knee = q.knee(10, 2, 0.99, slo_ms=40)  # the no-load p99 is 46 ms
    assert knee.rate_per_s == 0.0 and "no offered load meets it" in knee.reason


# -- bad input --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: q.latency_quantile_ms(0, 1, 10), "service_ms"),
        (lambda: q.latency_quantile_ms(10, 0, 10), "servers"),
        (lambda: q.latency_quantile_ms(10, 1.5, 10), "servers"),
        (lambda: q.latency_quantile_ms(10, q.MAX_SERVERS + 1, 10), "servers"),
        (lambda: q.latency_quantile_ms(10, 1, -1), "rate_per_s"),
        (lambda: q.latency_quantile_ms(10, 1, math.nan), "rate_per_s"),
        (lambda: q.latency_quantile_ms(10, 1, 10, 1.0), "quantile"),
        (lambda: q.latency_quantile_ms(10, 1, 10, 0.99, "M/G/1"), "model"),
        (lambda: q.erlang_c(2, -0.1), "offered_load_erlangs"),
        (lambda: q.latency_curve(10, 1, "10,20"), "rates_per_s"),
        (lambda: q.latency_curve(10, 1, []), "rates_per_s"),
        (lambda: q.latency_curve(10, 1, [10, -5]), "rates_per_s[1]"),
        (lambda: q.knee(10, 1), "factor"),
        (lambda: q.knee(10, 1, factor=2, slo_ms=50), "factor"),
        (lambda: q.knee(10, 1, factor=1.0), "factor"),
        (lambda: q.knee(10, 1, slo_ms=0), "slo_ms"),
        (lambda: q.wait_exceedance(-1, 10, 1, 10), "wait_ms"),
    ],
)
def test_bad_input_names_its_field(call, field):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field
    assert str(err.value).startswith(field)
