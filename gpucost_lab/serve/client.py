"""One timed request to the model server (chapter 08, "Profile the service"): ``POST /infer`` over a keep-alive
HTTP/1.1 connection, with the client-side latency of each answer.

The standard library's ``http.client`` and nothing else: a connection is one socket that one thread uses at a time,
so a load generator keeps one per thread and server (:class:`ConnectionPool`). The latency is measured on
``time.perf_counter_ns`` from just before the request is written to the socket until the whole body has been read,
so it holds the network, the server's queue and work, and reading the answer, not the decoding of the JSON (which
:meth:`InferResponse.outputs` does on demand). Any failure (no server, no answer within the timeout, a status other
than 200, a reply that is not the contract's JSON) is an :class:`InferError` whose message is one line naming the URL.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from gpucost_lab._validate import InputError, positive

# A course request is answered in milliseconds; a minute is beyond any stall the chapter shows, and a run whose every
# request waits that long has no latency left to report.
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
_REPLY_SHOWN_CHARS = 120  # of an error reply's body, in the one-line message


class InferError(RuntimeError):
    """A request that got no usable answer; ``str(err)`` is one line naming the URL and what happened."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = " ".join(str(reason).split())  # one line, whatever the server or the system said
        super().__init__(f"POST {url}/infer: {self.reason}")

    def __reduce__(self):
        return type(self), (self.url, self.reason)


@dataclass(frozen=True)
class InferResponse:
    """One answer: its HTTP status, its body as received and the client-side latency (see the module docstring)."""

    status: int
    body: bytes
    latency_ms: float
    url: str

    def outputs(self) -> list[list[float]]:
        """The body's ``outputs``: one row of floats per input row."""
        try:
            document = json.loads(self.body)
            rows = document["outputs"]
        except (ValueError, TypeError, KeyError):
            raise InferError(self.url, f"reply is not JSON with 'outputs': {_shown(self.body)}") from None
        return rows


def _shown(body: bytes) -> str:
    text = body[:_REPLY_SHOWN_CHARS].decode("utf-8", "replace")
    return repr(text + ("..." if len(body) > _REPLY_SHOWN_CHARS else ""))


def base_url(url: object, name: str = "url") -> tuple[str, str, int, str]:
    """``url`` checked: ``(url without a trailing slash, host, port, path prefix)``; only ``http://host:port``."""
    if not isinstance(url, str) or not url:
        raise InputError(name, f"{name} must be an http://host:port address, got {url!r}")
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None or parts.query or parts.fragment:
        raise InputError(name, f"{name} must be an http://host:port address (a path prefix allowed), got {url!r}")
    path = parts.path.rstrip("/")
    return url.rstrip("/"), parts.hostname, port, path


def encode_rows(rows: Sequence[Sequence[float]]) -> bytes:
    """The request body ``{"inputs": rows}`` as UTF-8 JSON: encode once, send many times."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence) or not rows:
        raise InputError("rows", f"rows must be a non-empty list of rows of floats, got {rows!r}")
    try:
        return json.dumps({"inputs": [[float(v) for v in row] for row in rows]}, allow_nan=False).encode()
    except (TypeError, ValueError):
        raise InputError("rows", "rows must be rows of finite numbers") from None


class InferClient:
    """One keep-alive connection to one server, for one thread at a time; reopened after a failure.

    ``post(body)`` sends a pre-encoded body, ``infer(rows)`` encodes rows first; both return an
    :class:`InferResponse` with the latency. A connection the server closed while idle (keep-alive timeout) is
    retried once on a fresh one, the latency still counted from the first attempt.
    """

    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.url, self._host, self._port, self._path = base_url(url)
        self.timeout_s = positive("timeout_s", timeout_s)
        if self.timeout_s > MAX_TIMEOUT_S:
            raise InputError("timeout_s", f"timeout_s must be <= {MAX_TIMEOUT_S:g} seconds, got {timeout_s!r}")
        self._connection: http.client.HTTPConnection | None = None
        self._used = False  # whether the open connection has carried a request (a stale one may be retried)

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)
            self._used = False
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> InferClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def infer(self, rows: Sequence[Sequence[float]]) -> InferResponse:
        return self.post(encode_rows(rows))

    def post(self, body: bytes) -> InferResponse:
        """``POST {url}/infer`` with ``body`` (JSON bytes); the answer, timed, or an InferError."""
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        start_ns = time.perf_counter_ns()
        for attempt in (1, 2):
            connection = self._connect()
            reused = self._used
            try:
                connection.request("POST", self._path + "/infer", body=body, headers=headers)
                self._used = True
                reply = connection.getresponse()
                data = reply.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as err:
                self.close()
                if reused and attempt == 1:
                    continue  # the server dropped an idle keep-alive connection: once more, on a new one
                raise InferError(self.url, f"connection lost ({type(err).__name__})") from None
            except TimeoutError:
                self.close()
                raise InferError(self.url, f"no answer within {self.timeout_s:g} s") from None
            except ConnectionRefusedError:
                self.close()
                raise InferError(self.url, "connection refused (is the server running?)") from None
            except (OSError, http.client.HTTPException) as err:
                self.close()
                raise InferError(self.url, f"{type(err).__name__}: {err}") from None
            latency_ms = (time.perf_counter_ns() - start_ns) / 1e6
            if reply.status != 200:
                raise InferError(self.url, f"HTTP {reply.status} {reply.reason}: {_shown(data)}")
            if reply.will_close:
                self.close()
            return InferResponse(status=reply.status, body=data, latency_ms=latency_ms, url=self.url)
        raise AssertionError("unreachable")  # pragma: no cover


def infer(url: str, rows: Sequence[Sequence[float]], timeout_s: float = DEFAULT_TIMEOUT_S) -> InferResponse:
    """One request on a connection of its own, closed after: the simplest timed call."""
    with InferClient(url, timeout_s) as client:
        return client.infer(rows)


class ConnectionPool:
    """Keep-alive connections to several servers for many threads: each thread gets its own :class:`InferClient`
    per URL on first use, and :meth:`post` sends each request to the next URL in turn (round robin across all
    threads; :meth:`post_to` to the URL a caller names). :meth:`close` closes every connection any thread opened."""

    def __init__(self, urls: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if isinstance(urls, str) or not isinstance(urls, Sequence) or not urls:
            raise InputError("urls", f"urls must be a non-empty list of http://host:port addresses, got {urls!r}")
        self.urls = tuple(base_url(u, f"urls[{i}]")[0] for i, u in enumerate(urls))
        self.timeout_s = positive("timeout_s", timeout_s)
        if self.timeout_s > MAX_TIMEOUT_S:
            raise InputError("timeout_s", f"timeout_s must be <= {MAX_TIMEOUT_S:g} seconds, got {timeout_s!r}")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._clients: list[InferClient] = []
        self._next = 0

    def next_index(self) -> int:
        """The index in :attr:`urls` of the next URL in turn (round robin across all threads)."""
        with self._lock:
            index = self._next % len(self.urls)
            self._next += 1
        return index

    def next_url(self) -> str:
        return self.urls[self.next_index()]

    def client(self, url: str) -> InferClient:
        """This thread's client for ``url``."""
        clients = getattr(self._local, "clients", None)
        if clients is None:
            clients = self._local.clients = {}
        if url not in clients:
            clients[url] = InferClient(url, self.timeout_s)
            with self._lock:
                self._clients.append(clients[url])
        return clients[url]

    def post(self, body: bytes) -> InferResponse:
        return self.client(self.next_url()).post(body)

    def post_to(self, index: int, body: bytes) -> InferResponse:
        """``body`` sent to ``urls[index]`` (a caller that routes requests itself), on this thread's connection."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.urls):
            raise InputError("index", f"index must be an integer in [0, {len(self.urls) - 1}], got {index!r}")
        return self.client(self.urls[index]).post(body)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()

    def __enter__(self) -> ConnectionPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Rows a load run cycles through: a handful is enough (every request does the same work), and a QSL of more than a
# few thousand rows of the widest model would hold tens of MB of JSON for nothing.
MAX_SAMPLES = 4096
MAX_INPUT_WIDTH = 2048  # the widest model the server builds


def seeded_bodies(samples: int, input_width: int, seed: int = 0) -> tuple[bytes, ...]:
    """``samples`` request bodies of one seeded row each (``input_width`` floats uniform in [-1, 1), rounded to 6
    decimals), encoded once before a run so that no request pays for its encoding."""
    import numpy as np

    from gpucost_lab._validate import integer_at_least

    samples = integer_at_least("samples", samples, 1, MAX_SAMPLES)
    input_width = integer_at_least("input_width", input_width, 1, MAX_INPUT_WIDTH)
    seed = integer_at_least("seed", seed, 0, 2**63 - 1)
    rows = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(samples, input_width)).round(6)
    return tuple(encode_rows([row.tolist()]) for row in rows)
