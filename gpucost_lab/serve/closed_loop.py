"""A closed-loop client (chapter 08, "Profile the service"), kept only to show coordinated omission.

``users`` threads each send a request, wait for its answer, wait ``think_ms`` more, and send the next, until
``duration_s`` has passed: the way many benchmarks and most hand-written load scripts work. Each latency is counted
from the moment its request is sent, which here *is* its scheduled time: a user has nothing to send while it waits.
So when the server stops for 300 ms, each user records one slow request and none of the requests it would have sent
meanwhile; under open-loop arrivals (LoadGen's Server scenario, ``loadgen.py``) those requests arrive anyway and wait,
and the pause reaches the tail. The same server measured both ways gives a low closed-loop p99 and a high open-loop
one (wrk2's and HdrHistogram's "coordinated omission"): the closed loop measures the client's patience, not the
service.

A user stops at its first failed request (the error is kept); the others go on. An interrupt (Ctrl-C) stops every
user after its request in flight; all are joined before it propagates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gpucost_lab._validate import InputError, integer_at_least, non_negative, positive
from gpucost_lab.serve.client import DEFAULT_TIMEOUT_S, ConnectionPool, InferError, seeded_bodies
from gpucost_lab.serve.percentiles import DEFAULT_QUANTILES, Percentile, latency_percentiles

# Bounds of a course run: a minute at most, as many users as threads a Python client keeps busy on two cores, and a
# think time up to a minute (beyond it a run of a minute sends one request per user).
MAX_DURATION_S = 60.0
MAX_USERS = 256
MAX_THINK_MS = 60_000.0


class ClosedLoopError(RuntimeError):
    """A closed-loop run in which no request was answered; one line with the first error."""


@dataclass(frozen=True)
class ClosedLoopRun:
    """One closed-loop run: every answered request's latency (from its send) and send time (from the run's start),
    in send order."""

    users: int
    duration_s: float
    think_ms: float
    latencies_ms: tuple[float, ...]
    sent_s: tuple[float, ...]
    elapsed_s: float  # from the start to the last answer
    errors: int
    first_error: str | None

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    @property
    def qps_achieved(self) -> float:
        """Answered requests per second over the run."""
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def percentiles(self, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, Percentile]:
        return latency_percentiles(self.latencies_ms, quantiles)


def _user(
    pool: ConnectionPool,
    bodies: Sequence[bytes],
    first: int,
    deadline_ns: int,
    think_s: float,
    stop: threading.Event,
    out: list[tuple[int, int]],
    failures: list[str],
) -> None:
    """One user: send, wait for the answer, think, again, until the deadline or ``stop``; (sent, answered) stamps
    to ``out``."""
    index = first
    while time.perf_counter_ns() < deadline_ns and not stop.is_set():
        sent_ns = time.perf_counter_ns()
        try:
            pool.post(bodies[index % len(bodies)])
        except InferError as err:
            failures.append(str(err))
            return
        out.append((sent_ns, time.perf_counter_ns()))
        index += 1
        if think_s:  # think, but not past the deadline
            stop.wait(min(think_s, max(0.0, (deadline_ns - time.perf_counter_ns()) / 1e9)))


def run_closed_loop(
    urls: Sequence[str],
    *,
    users: int = 1,
    duration_s: float = 5.0,
    think_ms: float = 0.0,
    input_width: int = 64,
    samples: int = 8,
    seed: int = 0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ClosedLoopRun:
    """``users`` closed-loop users against ``urls`` (each request to the next server in turn) for ``duration_s``
    seconds, each waiting ``think_ms`` after an answer; every thread is joined and every connection closed before
    this returns. Raises :class:`ClosedLoopError` when no request was answered."""
    users = integer_at_least("users", users, 1, MAX_USERS)
    duration_s = positive("duration_s", duration_s)
    if duration_s > MAX_DURATION_S:
        raise InputError("duration_s", f"duration_s must be in (0, {MAX_DURATION_S:g}] seconds, got {duration_s!r}")
    think_ms = non_negative("think_ms", think_ms)
    if think_ms > MAX_THINK_MS:
        raise InputError("think_ms", f"think_ms must be in [0, {MAX_THINK_MS:g}] milliseconds, got {think_ms!r}")
    bodies = seeded_bodies(samples, input_width, seed)
    stamps: list[list[tuple[int, int]]] = [[] for _ in range(users)]
    stop = threading.Event()
    failures: list[str] = []
    with ConnectionPool(urls, timeout_s) as pool:
        start_ns = time.perf_counter_ns()
        deadline_ns = start_ns + int(duration_s * 1e9)
        threads = [
            threading.Thread(
                target=_user,
                args=(pool, bodies, i, deadline_ns, think_ms / 1000, stop, stamps[i], failures),
                name=f"closed-loop-user-{i}",
            )
            for i in range(users)
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:  # also on KeyboardInterrupt: the users stop after their request in flight, and are joined
            stop.set()
            for thread in threads:
                if thread.ident is not None:
                    thread.join()
    merged = sorted(s for user in stamps for s in user)
    if not merged:
        raise ClosedLoopError(f"no request was answered; the first error: {failures[0] if failures else 'none'}")
    return ClosedLoopRun(
        users=users,
        duration_s=duration_s,
        think_ms=think_ms,
        latencies_ms=tuple((done - sent) / 1e6 for sent, done in merged),
        sent_s=tuple((sent - start_ns) / 1e9 for sent, _ in merged),
        elapsed_s=(max(done for _, done in merged) - start_ns) / 1e9,
        errors=len(failures),
        first_error=failures[0] if failures else None,
    )
