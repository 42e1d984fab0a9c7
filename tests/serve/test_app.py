"""The model server's app, driven in process by the ASGI spec (tests/serve/helpers_s.py): its outputs against the
model called directly, its phase records, the dynamic batcher and the serialization stall. (The pause fault and the
cold start, which wait on the real clock: tests/serve/test_app_waits.py.)
"""

import asyncio
import json
import statistics

import pytest
import torch

from gpucost_lab._validate import InputError
from gpucost_lab.serve.app import PHASE_FIELDS, RECORD_FIELDS, make_app, serialize
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.model import build_model

from .helpers_s import SMALL, _infer, _rows, _serve


def test_outputs_are_the_models_own_exactly():
    config = ServeConfig(**SMALL)
    inputs = [_rows(config, 1, 0), _rows(config, 3, 1), [[0.1, -2.5, 3.0, 0.0, 1e-3, 7.25, -1.0, 0.5]]]

    async def scenario(client):
        return [(await _infer(client, rows)).json()["outputs"] for rows in inputs]

    served = _serve(config, scenario)
    reference = build_model(config)  # built anew here: the same seed, the model called directly
    for rows, outputs in zip(inputs, served):
        with torch.inference_mode():
            expected = reference(torch.tensor(rows, dtype=torch.float32)).tolist()
        assert outputs == expected


def test_one_record_per_request_with_phases_that_fit_in_the_latency():
    config = ServeConfig(**SMALL)

    async def scenario(client):
        replies = [await _infer(client, _rows(config, 1 + i % 2, i)) for i in range(6)]
        return replies, (await client.request("GET", "/phases")).json()

    replies, records = _serve(config, scenario)
    assert [r["request"] for r in records] == [1, 2, 3, 4, 5, 6]
    for reply, record in zip(replies, records):
        assert set(record) == set(RECORD_FIELDS)
        assert all(record[name] >= 0 for name in PHASE_FIELDS)
        assert sum(record[name] for name in PHASE_FIELDS) <= reply.latency_ms
        assert reply.sent_s <= record["start_s"] <= reply.answered_s
        assert record["batch_size"] == 1


def test_delete_clears_the_records_and_errors_are_not_recorded():
    config = ServeConfig(**SMALL)

    async def scenario(client):
        await _infer(client, _rows(config, 1, 0))
        assert (await client.request("DELETE", "/phases")).status == 200
        bad = [
            await client.request("POST", "/infer", {"inputs": [[1.0] * 7]}),  # one value short
            await client.request("POST", "/infer", {"rows": []}),
            await client.request("POST", "/infer", {"inputs": [["a"] * 8]}),
            await client.request("POST", "/infer", {"inputs": [[1e300] * 8]}),
            await client.request("POST", "/infer", {"inputs": []}),
        ]
        await _infer(client, _rows(config, 1, 1))
        return bad, (await client.request("GET", "/phases")).json()

    bad, records = _serve(config, scenario)
    assert [reply.status for reply in bad] == [400] * 5
    assert all("inputs" in reply.json()["error"] for reply in bad)
    assert [r["request"] for r in records] == [2]  # the first cleared, the refused ones never counted


def test_batching_runs_four_concurrent_requests_as_one_batch():
    # max_batch 4 and a wait far longer than four in-process submissions: the batch fills, and runs at once
    config = ServeConfig(**SMALL, max_batch=4, max_wait_ms=1000)
    inputs = [_rows(config, 1, i) for i in range(4)]

    async def scenario(client):
        replies = await asyncio.gather(*[_infer(client, rows) for rows in inputs])
        return replies, (await client.request("GET", "/phases")).json()

    replies, records = _serve(config, scenario)
    assert [r["batch_size"] for r in records] == [4, 4, 4, 4]
    assert len({r["model_ms"] for r in records}) == 1  # one model call for the four
    assert all(r["queue_ms"] < config.max_wait_ms for r in records)  # ran when full, not at the deadline
    reference = build_model(config)
    for rows, reply in zip(inputs, replies):  # batched: equal to float32 rounding (module docstring)
        expected = reference(torch.tensor(rows))
        torch.testing.assert_close(torch.tensor(reply.json()["outputs"]), expected)


def test_without_batching_every_batch_is_one_request():
    config = ServeConfig(**SMALL, max_batch=1)

    async def scenario(client):
        await asyncio.gather(*[_infer(client, _rows(config, 1, i)) for i in range(4)])
        return (await client.request("GET", "/phases")).json()

    assert [r["batch_size"] for r in _serve(config, scenario)] == [1, 1, 1, 1]


def test_serialize_stall_gives_the_same_bytes():
    outputs = torch.randn(3, 17, generator=torch.Generator().manual_seed(0))
    assert serialize(outputs, "serialize") == serialize(outputs, "none")
    assert json.loads(serialize(outputs, "none"))["outputs"] == outputs.tolist()


def _median_phases(stall):
    config = ServeConfig(stall=stall, output_width=2048, seed=1)  # wide outputs: a stall well above the noise
    inputs = [_rows(config, 1, i) for i in range(7)]

    async def scenario(client):
        await _infer(client, inputs[0])  # the first call after the cold start is slower: not compared
        await client.request("DELETE", "/phases")
        for rows in inputs:
            await _infer(client, rows)
        return (await client.request("GET", "/phases")).json()

    records = _serve(config, scenario)
    return {name: statistics.median(r[name] for r in records) for name in PHASE_FIELDS}


def test_serialize_stall_is_the_largest_phase_and_larger_than_without():
    stalled, plain = _median_phases("serialize"), _median_phases("none")
    assert max(stalled, key=stalled.get) == "serialize_ms"
    assert stalled["serialize_ms"] > plain["serialize_ms"]


def test_make_app_takes_a_config_only():
    with pytest.raises(InputError) as caught:
        make_app({"max_batch": 1})
    assert caught.value.field == "config"
