"""Test helpers for the server's tests: an in-process ASGI client, a look at this process's children, and the app
of a small config served to a scenario.

:class:`AsgiClient` drives an ASGI app by the ASGI 3.0 spec alone (the lifespan's startup and shutdown, one HTTP
request as ``http.request`` in, ``http.response.*`` out), so the app is tested without a socket or an extra client
library; each request's latency is measured around the app's call, as a client would see it on a zero-cost wire.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from gpucost_lab.serve.app import make_app
from gpucost_lab.serve.model import example_inputs


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    latency_ms: float
    sent_s: float  # time.time() just before the request
    answered_s: float  # time.time() just after the answer

    def json(self) -> Any:
        return json.loads(self.body)


class AsgiClient:
    """``async with AsgiClient(app) as client``: the app's lifespan started, requests sent, the lifespan stopped."""

    def __init__(self, app) -> None:
        self.app = app
        self._to_app: asyncio.Queue = asyncio.Queue()
        self._from_app: asyncio.Queue = asyncio.Queue()
        self._task: asyncio.Task | None = None

    async def __aenter__(self) -> AsgiClient:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.create_task(self.app(scope, self._to_app.get, self._from_app.put))
        await self._to_app.put({"type": "lifespan.startup"})
        message = await self._from_app.get()
        assert message["type"] == "lifespan.startup.complete", message
        return self

    async def __aexit__(self, *exc) -> None:
        await self._to_app.put({"type": "lifespan.shutdown"})
        message = await self._from_app.get()
        assert message["type"] == "lifespan.shutdown.complete", message
        await self._task

    async def request(self, method: str, path: str, payload: object = None) -> Reply:
        body = b"" if payload is None else json.dumps(payload).encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
            + [(b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 80),
        }
        answered = asyncio.Event()
        sent_body = False
        messages: list[dict] = []

        async def receive():
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            messages.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()

        sent_s = time.time()
        start = time.perf_counter()
        await self.app(scope, receive, send)
        latency_ms = (time.perf_counter() - start) * 1000.0
        answered_s = time.time()
        status = next(m["status"] for m in messages if m["type"] == "http.response.start")
        content = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
        return Reply(status, content, latency_ms, sent_s, answered_s)

    async def wait_ready(self, timeout_s: float = 30.0) -> float:
        """Poll /health until ready; the seconds it took."""
        start = time.perf_counter()
        while (await self.request("GET", "/health")).status != 200:
            assert time.perf_counter() - start < timeout_s, "not ready in time"
            await asyncio.sleep(0.01)
        return time.perf_counter() - start


def child_pids() -> set[int]:
    """The pids of this process's living children (from /proc; zombies not counted)."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(name)": state, ppid, ...
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` still names a process (os.kill with signal 0), a zombie not counted."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --------------------------------------------------------------------- the model server's app, on a small config

SMALL = dict(input_width=8, hidden_width=16, layers=2, output_width=6, seed=3)


def _serve(config, scenario):
    """Run ``scenario(client)`` against ``config``'s app once it is ready; its result."""

    async def main():
        async with AsgiClient(make_app(config)) as client:
            await client.wait_ready()
            return await scenario(client)

    return asyncio.run(main())


def _rows(config, rows, seed):
    """``rows`` example input rows for ``config`` (seeded), as plain lists."""
    return example_inputs(config, rows=rows, seed=seed).tolist()


async def _infer(client, rows):
    """POST ``rows`` to /infer and check the answer is 200; the reply."""
    reply = await client.request("POST", "/infer", {"inputs": rows})
    assert reply.status == 200, reply.body
    return reply
