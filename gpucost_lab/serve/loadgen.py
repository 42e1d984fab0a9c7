"""MLPerf LoadGen as the load generator of chapter 08 ("Profile the service"): its SingleStream, Server and Offline
scenarios sent to the model server's instances over HTTP, its summary kept beside our own per-request latencies.

**The system under test.** LoadGen (``mlperf_loadgen``, the MLCommons bindings) calls our issue callback with each
query; the callback hands every sample to a thread pool and returns at once, so LoadGen's issuing thread never waits
for a server. A pool thread sends the request (``client.ConnectionPool``: a keep-alive connection per thread and
server, the servers taken in turn) and calls ``QuerySamplesComplete`` when the answer has been read, also when the
request failed (a failure is counted, and its latency left out of ours). The query sample library is a few seeded
input rows, encoded once before the run. A ``route`` (a function from a request's order, 0 for the first query
issued, to the index of a URL) replaces the round robin: an interleaved comparison of two services sends each request
to the side its block order names (``compare.compare_services``); either way ``LoadGenRun.served_by`` says which URL
answered each request.

**How LoadGen counts latency** (MLCommons inference, ``loadgen/loadgen.cc``, ``ResponseDelegateDetailed::
SampleComplete``; the scheduled times in ``loadgen/issue_query_controller.cc``, ``QueryScheduler``): from the query's
*scheduled* time to the call of ``QuerySamplesComplete``. In the Server scenario the scheduled time is the start plus
the query's offset in a Poisson schedule drawn before the run (``loadgen.cc``, ``ScheduleDistribution<Server>``:
exponential gaps at the target rate from ``std::mt19937(schedule_rng_seed)``), whenever the query was really issued;
in SingleStream it is the moment LoadGen issues the query (after the previous one completed); in Offline the start,
for every sample of its one query.

**What ours counts.** A pool thread stamps ``time.perf_counter_ns`` (the same monotonic clock LoadGen's own runs on)
after the answer's last byte has been read, just before ``QuerySamplesComplete``. The start is the scheduled send
time, as close as the Python bindings allow (they do not pass it): in Server, LoadGen's own schedule is recomputed
from its seed and rate (:func:`loadgen_schedule_ns`, the same 64-bit draws and the same arithmetic: a test checks it
against LoadGen's trace to the nanosecond) and placed on our clock at the latest origin consistent with every
query's arrival in our callback (no query can arrive before it is due), so our latency includes the time a query
waited for our callback (``issue_delay_ms``: a busy client's own coordinated omission) and falls short of LoadGen's
by at most the smallest such wait (tens of microseconds); in SingleStream and Offline the start is the callback's
entry, a few microseconds after LoadGen's.

**Settings for a course.** MLPerf's rules ask for 10 minutes and, for a Server p99, 270,336 queries; a course run
lasts ``duration_s`` seconds (LoadGen's ``min_duration_ms``) with at least ``min_queries`` queries
(``min_query_count``), so LoadGen's verdict on a short run is usually "INVALID" with "early stopping not satisfied":
too few queries for the tail, which is the point the chapter makes with it. Logs go to a temporary folder, removed
after the run (or to ``log_dir``, kept).
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpucost_lab._validate import InputError, fraction, integer_at_least, one_of, positive
from gpucost_lab.serve.client import DEFAULT_TIMEOUT_S, ConnectionPool, InferError, seeded_bodies
from gpucost_lab.serve.percentiles import (
    DEFAULT_QUANTILES,
    EarlyStopping,
    Percentile,
    early_stopping,
    latency_percentiles,
)

SCENARIOS = ("server", "single-stream", "offline")
_LOADGEN_SCENARIO = {"server": "Server", "single-stream": "SingleStream", "offline": "Offline"}

# Bounds of a course run: a minute at most (what a chapter cell or a CLI command can spend), rates a Python client on
# two shared cores can send (beyond a couple of thousand requests a second it measures itself, not the server), and
# the queries LoadGen draws before the run (each one about 500 bytes of LoadGen's memory, measured).
MIN_DURATION_S = 0.1
MAX_DURATION_S = 60.0
MAX_QPS = 2000.0
MAX_MIN_QUERIES = 100_000
MAX_SLO_MS = 60_000.0  # a bound beyond a minute is no latency bound a service states
DEFAULT_THREADS = 32  # requests in flight at once: enough for a 300 ms pause at 100 requests a second
MAX_THREADS = 256
# A Server run issues its schedule's queries for the duration, or min_queries if more: twice the most a minute at the
# highest rate holds on average leaves room for the Poisson draws.
MAX_SCHEDULED_QUERIES = MAX_MIN_QUERIES + 2 * int(MAX_QPS * MAX_DURATION_S)
MAX_SEED = 2**32 - 1  # std::mt19937 takes 32 bits of a seed, and so does the schedule recomputed here
# SingleStream: LoadGen draws 2 x duration / expected latency queries up front and ends early, "ran out of generated
# queries", if the server answers faster than that; no HTTP round trip through Python is faster than 0.5 ms, and a
# minute's run then draws 240,000 queries (about 120 MB of LoadGen's memory, measured).
SINGLE_STREAM_EXPECTED_LATENCY_NS = 500_000

_RUN_LOCK = threading.Lock()  # LoadGen keeps global state: one test at a time in a process


class LoadGenError(RuntimeError):
    """LoadGen missing, or a run that produced nothing to report; one line."""


def _loadgen() -> Any:
    try:
        import mlperf_loadgen
    except ImportError as err:
        raise LoadGenError(
            f"MLPerf LoadGen is not installed (import mlperf_loadgen failed: {err}); "
            "install the package mlcommons-loadgen"
        ) from None
    return mlperf_loadgen


@dataclass(frozen=True)
class LoadGenRun:
    """One LoadGen run: our per-request latencies (module docstring: from each request's scheduled send time) beside
    LoadGen's own figures from its summary, in milliseconds.

    ``qps_offered``: the Server target (Offline: the expected rate LoadGen sized its one query by; SingleStream: as
    achieved, one query at a time). ``qps_achieved``: LoadGen's completed samples per second (Server), samples per
    second (Offline), queries per second with its overhead (SingleStream). ``scheduled_s``: each request's scheduled
    send time from the first one's. ``served_by``: the index in the run's URLs of the server that answered each
    request, aligned with ``latencies_ms``. ``loadgen_latency_ms``: LoadGen's min, max, mean and p50, p90, p95, p97,
    p99, p99.9. ``result_valid``, ``early_stopping_met`` and ``early_stopping_text`` are LoadGen's verdicts and its
    sentence; ``loadgen_more_queries_needed`` the queries it says early stopping still needs.
    """

    scenario: str
    qps_offered: float
    qps_achieved: float
    slo_ms: float
    percentile: float
    duration_s: float
    min_queries: int
    latencies_ms: tuple[float, ...]
    scheduled_s: tuple[float, ...]
    issue_delay_ms: tuple[float, ...]
    errors: int
    first_error: str | None
    loadgen_latency_ms: dict[str, float]
    loadgen_queries: int
    loadgen_overlatency_count: int | None
    result_valid: bool
    early_stopping_met: bool
    early_stopping_text: str
    loadgen_more_queries_needed: int | None
    loadgen_early_stopping_estimate_ms: float | None
    loadgen_messages: tuple[str, ...] = field(default=())  # LoadGen's errors and warnings from its detail log
    loadgen_settings: dict[str, Any] = field(default_factory=dict)  # the TestSettings of the run (course_settings)
    served_by: tuple[int, ...] = field(default=())  # the URL index that answered each request, as latencies_ms

    @property
    def requests(self) -> int:
        """Requests answered (the latencies we have)."""
        return len(self.latencies_ms)

    @property
    def loadgen_p50_ms(self) -> float:
        return self.loadgen_latency_ms["p50"]

    @property
    def loadgen_p90_ms(self) -> float:
        return self.loadgen_latency_ms["p90"]

    @property
    def loadgen_p99_ms(self) -> float:
        return self.loadgen_latency_ms["p99"]

    def percentiles(self, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, Percentile]:
        """Our percentiles with their 95% intervals (``percentiles.latency_percentiles``)."""
        return latency_percentiles(self.latencies_ms, quantiles)

    def early_stopping(self) -> EarlyStopping:
        """LoadGen's Server early-stopping rule on our latencies, for our SLO and percentile."""
        return early_stopping(self.latencies_ms, self.slo_ms, self.percentile)

    def loadgen_summary(self) -> dict[str, Any]:
        """LoadGen's own figures, as the CLI's JSON shows them."""
        return {
            "p50_ms": self.loadgen_p50_ms,
            "p90_ms": self.loadgen_p90_ms,
            "p99_ms": self.loadgen_p99_ms,
            "result_valid": self.result_valid,
            "early_stopping_met": self.early_stopping_met,
            "early_stopping": self.early_stopping_text,
        }


def loadgen_schedule_ns(qps: float, count: int, seed: int = 0) -> np.ndarray:
    """LoadGen's Server schedule: the first ``count`` queries' offsets from the start, in integer nanoseconds.

    As ``loadgen.cc`` draws it with libstdc++: each gap is ``std::exponential_distribution(qps)`` of a
    ``std::mt19937(seed)``, that is ``-log(1 - u) / qps`` seconds with ``u = (a + b x 2^32) / 2^64`` from two
    consecutive 32-bit outputs (``std::generate_canonical<double, 53>``, kept below 1), cut to whole nanoseconds
    (``duration_cast``) and summed; the first query is due at 0. numpy's MT19937 seeded as the legacy RandomState
    seeds it is the same generator as ``std::mt19937(seed)``.
    """
    qps = positive("qps", qps)
    count = integer_at_least("count", count, 1, MAX_SCHEDULED_QUERIES)
    seed = integer_at_least("seed", seed, 0, MAX_SEED)
    bit_generator = np.random.MT19937()
    bit_generator.state = np.random.RandomState(seed).get_state(legacy=False)  # type: ignore[assignment]
    raw = bit_generator.random_raw(2 * (count - 1)).astype(np.float64) if count > 1 else np.zeros(0)
    uniform = np.minimum((raw[0::2] + raw[1::2] * 2.0**32) / 2.0**64, np.nextafter(1.0, 0.0))
    gaps_ns = np.trunc(-np.log(1.0 - uniform) / qps * 1e9).astype(np.int64)
    return np.concatenate(([0], np.cumsum(gaps_ns))).astype(np.int64)


@dataclass
class _Record:
    order: int
    entry_ns: int
    done_ns: int = 0
    error: str | None = None
    served_by: int = -1  # the index of the URL sent to (-1: none, the route failed)


class _SystemUnderTest:
    """The issue callback, the pool that sends each sample and the records of every request."""

    def __init__(
        self,
        lg: Any,
        pool: ConnectionPool,
        bodies: Sequence[bytes],
        threads: int,
        route: Callable[[int], int] | None = None,
    ) -> None:
        self._lg = lg
        self._pool = pool
        self._bodies = bodies
        self._route = route
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="loadgen-client")
        self.records: list[_Record] = []  # appended by LoadGen's issuing thread only, in issue order

    def issue(self, samples: Sequence[Any]) -> None:
        entry_ns = time.perf_counter_ns()
        for sample in samples:
            record = _Record(order=len(self.records), entry_ns=entry_ns)
            self.records.append(record)
            self._executor.submit(self._send, record, sample.id, sample.index)

    def flush(self) -> None:
        pass

    def _send(self, record: _Record, sample_id: int, sample_index: int) -> None:
        try:
            record.served_by = self._pool.next_index() if self._route is None else self._routed(record.order)
            self._pool.post_to(record.served_by, self._bodies[sample_index % len(self._bodies)])
        except InferError as err:
            record.error = str(err)
        except Exception as err:  # noqa: BLE001 - LoadGen waits for every sample: it must complete whatever happened
            record.error = f"{type(err).__name__}: {err}"
        finally:
            record.done_ns = time.perf_counter_ns()
            self._lg.QuerySamplesComplete([self._lg.QuerySampleResponse(sample_id, 0, 0)])

    def _routed(self, order: int) -> int:
        """The URL index the route gives the ``order``-th request; InputError (the request fails) for anything but
        an index of the run's URLs."""
        assert self._route is not None
        index = self._route(order)
        last = len(self._pool.urls) - 1
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index <= last:
            raise InputError("route", f"route({order}) must be an index in [0, {last}] of the urls, got {index!r}")
        return int(index)

    def close(self) -> None:
        self._executor.shutdown(wait=True)  # every pool thread joined
        self._pool.close()


def check_run(
    scenario: str,
    qps: float,
    slo_ms: float,
    percentile: float,
    duration_s: float,
    min_queries: int,
    threads: int,
    seed: int,
) -> tuple[str, float, float, float, float, int, int, int]:
    """:func:`run_loadgen`'s settings checked (InputError naming the first bad one), as floats and ints."""
    scenario = one_of("scenario", scenario, SCENARIOS)
    qps = positive("qps", qps)
    if qps > MAX_QPS:
        raise InputError("qps", f"qps must be in (0, {MAX_QPS:g}] requests per second, got {qps!r}")
    slo_ms = positive("slo_ms", slo_ms)
    if slo_ms > MAX_SLO_MS:
        raise InputError("slo_ms", f"slo_ms must be in (0, {MAX_SLO_MS:g}] milliseconds, got {slo_ms!r}")
    percentile = fraction("percentile", percentile, include_zero=False)
    duration_s = positive("duration_s", duration_s)
    if not MIN_DURATION_S <= duration_s <= MAX_DURATION_S:
        raise InputError(
            "duration_s", f"duration_s must be in [{MIN_DURATION_S:g}, {MAX_DURATION_S:g}] seconds, got {duration_s!r}"
        )
    min_queries = integer_at_least("min_queries", min_queries, 1, MAX_MIN_QUERIES)
    threads = integer_at_least("threads", threads, 1, MAX_THREADS)
    seed = integer_at_least("seed", seed, 0, MAX_SEED)
    return scenario, qps, slo_ms, percentile, duration_s, min_queries, threads, seed


def course_settings(
    scenario: str,
    qps: float,
    slo_ms: float,
    percentile: float,
    duration_s: float,
    min_queries: int,
    samples: int,
    seed: int,
) -> dict[str, Any]:
    """The LoadGen ``TestSettings`` of a course run, by their LoadGen names (what a chapter prints to say so):
    performance mode, ``min_duration_ms`` and ``min_query_count`` of a short run, the seeds, and the scenario's
    target (Server: rate, latency bound and percentile; SingleStream: the expected latency and percentile; Offline:
    the expected rate). Arguments as :func:`run_loadgen` takes them, already checked."""
    settings: dict[str, Any] = {
        "scenario": _LOADGEN_SCENARIO[scenario],
        "mode": "PerformanceOnly",
        "min_duration_ms": int(round(duration_s * 1000)),
        "min_query_count": min_queries,
        "performance_sample_count_override": samples,
        "qsl_rng_seed": seed,
        "sample_index_rng_seed": seed,
        "schedule_rng_seed": seed,
    }
    if scenario == "server":
        settings.update(
            server_target_qps=qps,
            server_target_latency_ns=int(round(slo_ms * 1e6)),
            server_target_latency_percentile=percentile,
        )
    elif scenario == "single-stream":
        settings.update(
            single_stream_expected_latency_ns=SINGLE_STREAM_EXPECTED_LATENCY_NS,
            single_stream_target_latency_percentile=percentile,
        )
    else:
        settings["offline_expected_qps"] = qps
    return settings


def _test_settings(lg: Any, values: dict[str, Any]) -> Any:
    """LoadGen's ``TestSettings`` holding ``values`` (``course_settings``)."""
    settings = lg.TestSettings()
    for name, value in values.items():
        if name == "scenario":
            value = getattr(lg.TestScenario, value)
        elif name == "mode":
            value = getattr(lg.TestMode, value)
        setattr(settings, name, value)
    return settings


def _log_settings(lg: Any, folder: Path, trace: bool) -> Any:
    """Logs to ``folder``, none copied to the terminal; the trace only when asked for."""
    log_settings = lg.LogSettings()
    output = {"outdir": str(folder), "copy_summary_to_stdout": False, "copy_detail_to_stdout": False}
    for name, value in output.items():
        setattr(log_settings.log_output, name, value)
    setattr(log_settings, "enable_trace", bool(trace))  # noqa: B010 - a binding's field, set as the others are
    return log_settings


def run_loadgen(
    urls: Sequence[str],
    scenario: str = "server",
    *,
    qps: float = 40.0,
    slo_ms: float = 200.0,
    percentile: float = 0.99,
    duration_s: float = 5.0,
    min_queries: int = 64,
    input_width: int = 64,
    samples: int = 8,
    seed: int = 0,
    threads: int = DEFAULT_THREADS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    log_dir: str | Path | None = None,
    trace: bool = False,
    route: Callable[[int], int] | None = None,
) -> LoadGenRun:
    """Run LoadGen's ``scenario`` ("server", "single-stream" or "offline") against ``urls`` (round robin, or to the
    index ``route(order)`` gives the ``order``-th request issued, 0-based: module docstring) for about
    ``duration_s`` seconds and at least ``min_queries`` queries; see the module docstring for what is counted.

    ``qps`` is the Server target rate (Poisson arrivals) and the Offline expected rate (its one query holds
    ``max(min_queries, 1.1 x duration_s x qps)`` samples); ``slo_ms`` and ``percentile`` are the Server latency
    bound. ``samples`` seeded rows of ``input_width`` floats are the inputs. ``log_dir``: keep LoadGen's logs there
    (``trace``: with its trace) instead of a temporary folder removed after the run. Every pool thread is joined and
    every connection closed before this returns, however the run ends; LoadGen's test itself cannot be cut short
    (its C++ loop holds the main thread), so an interrupt takes effect when the run's ``duration_s`` is over.

    Raises InputError for a bad argument and :class:`LoadGenError` when LoadGen is missing or no request was
    answered; requests that failed otherwise are counted in ``errors``.
    """
    scenario, qps, slo_ms, percentile, duration_s, min_queries, threads, seed = check_run(
        scenario, qps, slo_ms, percentile, duration_s, min_queries, threads, seed
    )
    if route is not None and not callable(route):
        raise InputError("route", f"route must be a function from a request's order to a URL index, got {route!r}")
    pool = ConnectionPool(urls, timeout_s)
    bodies = seeded_bodies(samples, input_width, seed)
    lg = _loadgen()
    values = course_settings(scenario, qps, slo_ms, percentile, duration_s, min_queries, len(bodies), seed)
    settings = _test_settings(lg, values)
    with contextlib.ExitStack() as stack:
        folder = Path(log_dir) if log_dir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        sut = _SystemUnderTest(lg, pool, bodies, threads, route)
        stack.callback(sut.close)
        with _RUN_LOCK:
            _start(lg, sut, settings, _log_settings(lg, folder, trace), len(bodies), folder)
        summary = (folder / "mlperf_log_summary.txt").read_text()
        detail = (folder / "mlperf_log_detail.txt").read_text()
    return _result(scenario, qps, slo_ms, percentile, duration_s, min_queries, values, sut.records, summary, detail)


def _start(lg: Any, sut: _SystemUnderTest, settings: Any, log_settings: Any, samples: int, folder: Path) -> None:
    """LoadGen's test, its SUT and QSL destroyed after, also when it fails; the audit file is one that never exists
    (LoadGen reads ``audit.config`` from the working folder otherwise)."""
    sut_handle = lg.ConstructSUT(sut.issue, sut.flush)
    try:
        qsl_handle = lg.ConstructQSL(samples, samples, lambda _: None, lambda _: None)
        try:
            lg.StartTestWithLogSettings(sut_handle, qsl_handle, settings, log_settings, str(folder / "no-audit"))
        finally:
            lg.DestroyQSL(qsl_handle)
    finally:
        lg.DestroySUT(sut_handle)


def _timing(scenario: str, qps: float, seed: int, records: list[_Record]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request: the scheduled send time on our clock, the latency from it and the wait for our callback (ns)."""
    entry = np.array([r.entry_ns for r in records], dtype=np.int64)
    done = np.array([r.done_ns for r in records], dtype=np.int64)
    if scenario == "server":
        offsets = loadgen_schedule_ns(qps, len(records), seed)
        origin = int(np.min(entry - offsets))  # the latest start no query arrived before
        scheduled = origin + offsets
    else:
        scheduled = entry
    return scheduled, done - scheduled, entry - scheduled


def _result(
    scenario: str,
    qps: float,
    slo_ms: float,
    percentile: float,
    duration_s: float,
    min_queries: int,
    values: dict[str, Any],
    records: list[_Record],
    summary_text: str,
    detail_text: str,
) -> LoadGenRun:
    if not records:
        raise LoadGenError("LoadGen issued no query; its summary says: " + " ".join(summary_text.split())[:300])
    summary = parse_summary(summary_text)
    detail = parse_detail(detail_text)
    scheduled, latency, delay = _timing(scenario, qps, values["schedule_rng_seed"], records)
    ok = np.array([r.error is None for r in records])
    errors = [r.error for r in records if r.error is not None]
    if not ok.any():
        raise LoadGenError(f"every one of {len(records)} requests failed; the first: {errors[0]}")
    achieved_key = {
        "server": "Completed samples per second",
        "offline": "Samples per second",
        "single-stream": "QPS w/ loadgen overhead",
    }[scenario]
    achieved = float(summary[achieved_key])
    return LoadGenRun(
        scenario=scenario,
        qps_offered=qps if scenario != "single-stream" else achieved,
        qps_achieved=achieved,
        slo_ms=slo_ms,
        percentile=percentile,
        duration_s=duration_s,
        min_queries=min_queries,
        latencies_ms=tuple((latency[ok] / 1e6).tolist()),
        scheduled_s=tuple(((scheduled[ok] - scheduled[0]) / 1e9).tolist()),
        issue_delay_ms=tuple((delay[ok] / 1e6).tolist()),
        errors=len(errors),
        first_error=errors[0] if errors else None,
        loadgen_latency_ms=_loadgen_latencies(summary),
        loadgen_queries=int(detail.get("result_query_count", len(records))),
        loadgen_overlatency_count=_optional_int(detail.get("result_overlatency_query_count")),
        result_valid=summary["Result is"] == "VALID",
        early_stopping_met=summary.get("Early stopping satisfied", "Yes") == "Yes",
        early_stopping_text=summary.get("early_stopping_text", ""),
        loadgen_more_queries_needed=_more_needed(summary.get("early_stopping_text", "")),
        loadgen_early_stopping_estimate_ms=_early_estimate_ms(summary.get("early_stopping_text", ""), percentile),
        loadgen_messages=tuple(detail.get("messages", ())),
        loadgen_settings=dict(values),
        served_by=tuple(r.served_by for r in records if r.error is None),
    )


def _optional_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


_PERCENTILE_LINE = re.compile(r"^(\d+\.\d+) percentile latency \(ns\)$")


def _loadgen_latencies(summary: dict[str, str]) -> dict[str, float]:
    """LoadGen's min, max, mean and percentiles from its summary, nanoseconds to milliseconds."""
    figures = {name: float(summary[f"{name.title()} latency (ns)"]) / 1e6 for name in ("min", "max", "mean")}
    for key, value in summary.items():
        match = _PERCENTILE_LINE.match(key)
        if match:
            name = "p" + match.group(1).rstrip("0").rstrip(".")
            figures[name] = float(value) / 1e6
    return figures


def parse_summary(text: str) -> dict[str, str]:
    """LoadGen's ``mlperf_log_summary.txt`` as ``{key: value}`` (the text before and after each line's first
    colon, stripped; a key seen twice keeps its first value), and ``early_stopping_text``: the lines under "Early
    Stopping Result:" joined into one sentence, their bullets dropped."""
    figures: dict[str, str] = {}
    lines = text.splitlines()
    early: list[str] = []
    in_early = False
    for line in lines:
        stripped = line.strip()
        if stripped == "Early Stopping Result:":
            in_early = True
            continue
        if in_early:
            if not stripped or stripped.startswith("="):
                in_early = False
            else:
                early.append(stripped.lstrip("*").strip())
                continue
        if ":" in stripped and not stripped.startswith("*"):
            key, _, value = stripped.partition(":")
            figures.setdefault(key.strip(), value.strip())
    figures["early_stopping_text"] = " ".join(early)
    return figures


def parse_detail(text: str) -> dict[str, Any]:
    """The ``:::MLLOG {json}`` records of LoadGen's ``mlperf_log_detail.txt`` as ``{key: value}``, and
    ``messages``: the text of every record LoadGen flagged as an error or a warning."""
    values: dict[str, Any] = {}
    messages: list[str] = []
    for line in text.splitlines():
        if not line.startswith(":::MLLOG "):
            continue
        try:
            record = json.loads(line[len(":::MLLOG ") :])
        except ValueError:
            continue
        values.setdefault(record.get("key"), record.get("value"))
        metadata = record.get("metadata") or {}
        if metadata.get("is_error") or metadata.get("is_warning"):
            messages.append(f"{record.get('key')}: {record.get('value')}")
    values["messages"] = messages
    return values


def _more_needed(sentence: str) -> int | None:
    """The queries LoadGen says early stopping still needs: Server's "would need to run at least N more queries",
    SingleStream's "only processed P queries ... need to process at least N queries" (N - P)."""
    more = re.search(r"at least (\d+) more queries", sentence)
    if more:
        return int(more.group(1))
    total = re.search(r"Only processed (\d+) queries\..*?Need to process at least (\d+) queries", sentence)
    if total:
        return int(total.group(2)) - int(total.group(1))
    return None


def _early_estimate_ms(sentence: str, percentile: float) -> float | None:
    """SingleStream's "Early stopping Nth percentile estimate: X" (ns) for the run's percentile, in ms."""
    for name, value in re.findall(r"Early stopping ([\d.]+)th percentile estimate: (\d+)", sentence):
        if abs(float(name) - percentile * 100) < 1e-6:
            return float(value) / 1e6
    return None
