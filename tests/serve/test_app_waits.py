"""The model server's app, driven in process by the ASGI spec (tests/serve/helpers_s.py), where it waits on the real
clock: the pause fault (250 ms) falls on every fifth request, and a cold start (300 ms) answers /health not ready, then
ready. (The outputs, the phase records, the batcher and the serialization stall: tests/serve/test_app.py.)
"""

import asyncio

import pytest

from gpucost_lab.serve.app import PHASE_FIELDS, make_app
from gpucost_lab.serve.config import ServeConfig

from .helpers_s import SMALL, AsgiClient, _infer, _rows, _serve

pytestmark = pytest.mark.slow


def test_pause_falls_on_every_fifth_request():
    config = ServeConfig(**SMALL, stall="pause", pause_every=5, pause_ms=250)

    async def scenario(client):
        for i in range(10):
            await _infer(client, _rows(config, 1, i))
        return (await client.request("GET", "/phases")).json()

    for record in _serve(config, scenario):
        longest_ms = max(record[name] for name in PHASE_FIELDS)
        if record["request"] % 5 == 0:
            assert record["preprocess_ms"] >= config.pause_ms
        else:
            assert longest_ms < config.pause_ms


def test_cold_start_health_answers_not_ready_then_ready():
    config = ServeConfig(**SMALL, cold_start_ms=300)

    async def main():
        async with AsgiClient(make_app(config)) as client:
            first = await client.request("GET", "/health")
            early = await client.request("POST", "/infer", {"inputs": _rows(config, 1, 0)})
            waited_s = await client.wait_ready()
            ready = await client.request("GET", "/health")
            memory = await client.request("GET", "/memory")
            return first, early, waited_s, ready, memory

    first, early, waited_s, ready, memory = asyncio.run(main())
    assert (first.status, first.json()) == (503, {"ready": False})
    assert early.status == 503
    assert waited_s >= config.cold_start_ms / 1000
    assert (ready.status, ready.json()) == (200, {"ready": True})
    assert memory.json()["rss_bytes"] > 0 and memory.json()["pid"] > 0
