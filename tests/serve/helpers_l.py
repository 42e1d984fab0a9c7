"""A tiny stand-in for the model server, for the load side's tests: the HTTP contract's ``POST /infer`` and
``GET /health`` from the standard library's threading HTTP server on 127.0.0.1, in a thread of the test process.

Requests are served one at a time (a lock), as one worker serves them: with ``pause_every=N`` every N-th request,
counted from 1, holds the lock ``pause_ms`` before it is answered, so the requests that arrive meanwhile wait too (a
stop-the-world pause). ``service_ms`` is a fixed work time per request. The outputs are each row's sum, so a test can
check an answer by hand.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class StandIn:
    url: str
    server: ThreadingHTTPServer
    thread: threading.Thread
    served: list[int] = field(default_factory=lambda: [0])
    status: list[int] = field(default_factory=lambda: [200])  # what /infer answers (a test may set 500)
    connections: list[int] = field(default_factory=lambda: [0])  # TCP connections accepted

    @property
    def requests(self) -> int:
        return self.served[0]


def _handler(pause_every: int, pause_ms: float, service_ms: float, state: StandIn):
    lock = threading.Lock()  # one request at a time, as one worker
    count_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, Content-Length on every answer
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (Nagle and a delayed ACK)
        timeout = 5  # an idle keep-alive connection's thread ends after 5 s even if a client never closes it

        def log_message(self, format, *args):  # noqa: A002 - the base class's signature
            pass

        def setup(self):
            super().setup()
            with count_lock:
                state.connections[0] += 1

        def _answer(self, status: int, document: object) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/health":
                self._answer(200, {"ready": True})
            else:
                self._answer(404, {"error": "not found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            document = json.loads(self.rfile.read(length))
            with lock:
                state.served[0] += 1
                number = state.served[0]
                if service_ms:
                    time.sleep(service_ms / 1000)
                if pause_every and number % pause_every == 0:
                    time.sleep(pause_ms / 1000)
                status = state.status[0]
            if status != 200:
                self._answer(status, {"error": "stand-in told to fail"})
                return
            self._answer(200, {"outputs": [[float(sum(row))] for row in document["inputs"]]})

    return Handler


@contextlib.contextmanager
def stand_in_server(pause_every: int = 0, pause_ms: float = 0.0, service_ms: float = 0.0) -> Iterator[StandIn]:
    """Serve the stand-in on a free loopback port for the block; on leaving it the server is shut down and every
    thread it started is joined (a connection's thread ends when its client closes it, or after 5 idle seconds)."""

    class Server(ThreadingHTTPServer):
        daemon_threads = False
        request_queue_size = 256  # the listen backlog: a load run opens dozens of connections at once
        block_on_close = True  # server_close joins the connection threads

    server = Server(("127.0.0.1", 0), BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="stand-in")
    state = StandIn(url=f"http://127.0.0.1:{server.server_address[1]}", server=server, thread=thread)
    server.RequestHandlerClass = _handler(pause_every, pause_ms, service_ms, state)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def threads_named(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def _user_threads() -> list[threading.Thread]:
    """The threads a closed-loop run's users or a LoadGen client run in, left alive."""
    return [t for t in threading.enumerate() if t.name.startswith(("closed-loop-user", "loadgen-client"))]
