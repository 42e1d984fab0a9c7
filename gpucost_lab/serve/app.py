"""The model server of chapter 08 ("Profile the service"): a Starlette ASGI app that times every request's phases.

HTTP: ``GET /health`` answers 200 ``{"ready": true}`` once the model is loaded and the cold start is over (503
``{"ready": false}`` before); ``POST /infer`` takes ``{"inputs": [[float, ...], ...]}`` (1 to
:data:`~gpucost_lab.serve.config.MAX_ROWS_PER_REQUEST` rows of ``input_width`` finite floats) and answers
``{"outputs": [[float, ...], ...]}``; a bad body gets 400 ``{"error": "..."}`` naming what is wrong, and a request
before the model is ready 503. ``GET /phases`` lists one record per request served since the last ``DELETE /phases``
(ordered by ``request``); ``GET /memory`` gives ``{"rss_bytes", "pid"}`` of the worker process.

The phases of a request tile the server's time for it, each from ``time.perf_counter`` stamps, so they sum to the
time between the app receiving the request and handing over the last byte of the response:

- ``receive_decode_ms``: from the app being called for the request (uvicorn has read its headers) through reading
  the body and parsing its JSON;
- ``preprocess_ms``: the rows checked and turned into a float32 tensor (and, with ``stall="pause"``, the pause);
- ``queue_ms``: waiting for the dynamic batcher: for the batch to fill (``max_batch`` requests) or its first request
  to have waited ``max_wait_ms``, and for the batch before to finish;
- ``model_ms``: the model's call on the whole batch (the same for every request in it; ``batch_size`` requests);
- ``serialize_ms``: from that call's end to the response body ready: the handler's next turn on the event loop and
  the outputs turned into JSON;
- ``send_ms``: the response handed to the server: Starlette sending the headers and the body, until uvicorn has
  taken the last byte (written to the socket or its buffer; a client that reads slowly makes it wait for room, but
  the bytes' way to the client is not in it). Timed by a small ASGI middleware around ``send``.

The batcher runs the model inline on the event loop, once per batch: a worker is given one core, so a thread would
only take turns with the loop on that core; inline, the profile shows the worker doing one thing at a time, as it
does. The first requests after the cold start are slower (torch's first calls allocate and pick kernels): the model
is not warmed up, so the chapter can see that in the phases. Records are kept for :data:`MAX_PHASE_RECORDS` requests
(the latest); errors (400, 503) are not recorded.

The faults: ``stall="serialize"`` builds the JSON one element at a time, reading each value out of the tensor in
Python (the source's per-request stall: data serialization, fixed in the code, not by a bigger instance), giving the
same bytes as the fast path; ``stall="pause"`` stops the whole worker (a blocking sleep, as a stop-the-world
collector or a compaction) for ``pause_ms`` while preprocessing every ``pause_every``-th request, counted from 1 since
the worker started (``request`` in the records, not reset by ``DELETE /phases``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import resource
import time
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import torch
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import MAX_ROWS_PER_REQUEST, ServeConfig
from gpucost_lab.serve.model import build_model, forward

# A body beyond 32 MB is more than the largest request allowed (256 rows x 2048 inputs of about 25 JSON bytes each,
# 13 MB): refused while it is read, before it is held.
MAX_BODY_BYTES = 32 * 2**20
# Inputs within +-1e6: with weights within +-1/sqrt(fan_in), a layer grows a value at most sqrt(width) <= 45 times,
# so 8 layers stay below 1e6 x 45^8 (about 2e19), far inside float32 (3.4e38): every output is finite JSON.
MAX_ABS_INPUT = 1e6
# 200,000 records of about 0.5 kB: 100 MB at most, several minutes at the chapter's rates.
MAX_PHASE_RECORDS = 200_000
PHASE_FIELDS = (
    "receive_decode_ms",
    "preprocess_ms",
    "queue_ms",
    "model_ms",
    "serialize_ms",
    "send_ms",
)
RECORD_FIELDS = ("request", "start_s", *PHASE_FIELDS, "batch_size")
_TIMING_KEY = "gpucost_lab.serve.timing"


class _BadRequest(Exception):
    """A request the server refuses: its HTTP status and the one-line reason sent back."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Timing:
    """One request's stamps (``time.perf_counter`` seconds) and, once its response is ready, its record."""

    arrive: float
    start_s: float
    record: dict[str, Any] | None = None
    serialized: float = 0.0


@dataclass
class _Pending:
    """A request waiting for the batcher: its rows, where its outputs go, when it was queued."""

    inputs: torch.Tensor
    done: asyncio.Future[tuple[torch.Tensor, float, float, int]]
    queued: float


@dataclass
class _Worker:
    """The state of one server process: the model, the batcher's queue, the request count and the records."""

    config: ServeConfig
    model: torch.nn.Module | None = None
    ready: bool = False
    load_error: str | None = None
    served: int = 0
    pending: collections.deque[_Pending] = field(default_factory=collections.deque)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    records: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=MAX_PHASE_RECORDS)
    )

    async def load(self) -> None:
        """Build the model off the event loop (so /health answers meanwhile), then wait the stated cold start."""
        try:
            self.model = await asyncio.to_thread(build_model, self.config)
        except Exception as err:  # noqa: BLE001 - said on /health and in the worker's log, never ready
            traceback.print_exc()
            self.load_error = f"{type(err).__name__}: {err}"
            return
        await asyncio.sleep(self.config.cold_start_ms / 1000.0)
        self.ready = True

    async def submit(self, inputs: torch.Tensor) -> tuple[torch.Tensor, float, float, int]:
        """Queue ``inputs`` for the batcher; its outputs, the model's start and end stamps and the batch's size."""
        done: asyncio.Future[tuple[torch.Tensor, float, float, int]] = asyncio.get_running_loop().create_future()
        self.pending.append(_Pending(inputs, done, time.perf_counter()))
        self.arrived.set()
        return await done

    async def _gather(self) -> list[_Pending]:
        """The next batch: wait for a first request, then until ``max_batch`` are queued or it has waited
        ``max_wait_ms`` (requests already queued join at once)."""
        while not self.pending:
            self.arrived.clear()
            await self.arrived.wait()
        deadline = self.pending[0].queued + self.config.max_wait_ms / 1000.0
        while len(self.pending) < self.config.max_batch:
            remaining_s = deadline - time.perf_counter()
            if remaining_s <= 0:
                break
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), remaining_s)
        count = min(self.config.max_batch, len(self.pending))
        return [self.pending.popleft() for _ in range(count)]

    async def batch_forever(self) -> None:
        """Run the model once per batch, inline, and hand every request its rows of the outputs."""
        while True:
            batch = await self._gather()
            batch = [p for p in batch if not p.done.done()]  # a client gone while queued
            if not batch:
                continue
            assert self.model is not None  # /infer refuses requests until ready
            started = time.perf_counter()
            try:
                outputs = forward(self.model, torch.cat([p.inputs for p in batch]))
            except Exception as err:  # noqa: BLE001 - the batcher must outlive a failed batch
                for p in batch:
                    p.done.set_exception(err)
                continue
            ended = time.perf_counter()
            row = 0
            for p in batch:
                rows = p.inputs.shape[0]
                p.done.set_result((outputs[row : row + rows], started, ended, len(batch)))
                row += rows

    def finish(self, timing: _Timing, sent: float) -> None:
        """Complete ``timing``'s record with its send phase and keep it."""
        assert timing.record is not None
        timing.record["send_ms"] = (sent - timing.serialized) * 1000.0
        self.records.append(timing.record)


class _PhaseTiming:
    """ASGI middleware: stamps each HTTP request's arrival and the moment its last response byte is handed over."""

    def __init__(self, app: ASGIApp, worker: _Worker) -> None:
        self.app = app
        self.worker = worker

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        timing = _Timing(arrive=time.perf_counter(), start_s=time.time())
        scope[_TIMING_KEY] = timing

        async def timed_send(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                if timing.record is not None:
                    self.worker.finish(timing, time.perf_counter())

        await self.app(scope, receive, timed_send)


async def _read_body(request: Request) -> bytes:
    """The request's body, refused (413) once it passes :data:`MAX_BODY_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _BadRequest(413, f"body must be at most {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_body(body: bytes) -> object:
    """The body's ``inputs``: a JSON object holding it, else 400."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise _BadRequest(400, f"body must be JSON: {err}") from None
    if not isinstance(payload, dict) or "inputs" not in payload:
        raise _BadRequest(400, 'body must be a JSON object {"inputs": [[float, ...], ...]}')
    return payload["inputs"]


def preprocess_inputs(inputs: object, width: int) -> torch.Tensor:
    """``inputs`` as a float32 tensor of 1 to MAX_ROWS_PER_REQUEST rows of ``width`` finite values, else 400."""
    allowed = f"1 to {MAX_ROWS_PER_REQUEST} rows of {width} numbers within +-{MAX_ABS_INPUT:g}"
    if not isinstance(inputs, list) or not 1 <= len(inputs) <= MAX_ROWS_PER_REQUEST:
        raise _BadRequest(400, f"inputs must be a list of {allowed}")
    if not all(isinstance(row, list) and len(row) == width for row in inputs):
        raise _BadRequest(400, f"inputs must be {allowed}: a row is not a list of {width}")
    try:
        tensor = torch.tensor(inputs, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise _BadRequest(400, f"inputs must be {allowed}: a value is not a number") from None
    if tensor.ndim != 2:
        raise _BadRequest(400, f"inputs must be {allowed}: a value is not a number")
    if not bool(torch.isfinite(tensor).all()) or float(tensor.abs().max()) > MAX_ABS_INPUT:
        raise _BadRequest(400, f"inputs must be {allowed}: a value is not finite or too large")
    return tensor.to(torch.float32)


def serialize(outputs: torch.Tensor, stall: str) -> bytes:
    """The response body for ``outputs``: ``json.dumps`` of the list, or with ``stall="serialize"`` the same bytes
    built one element at a time (each value read out of the tensor and dumped on its own: the stall)."""
    if stall != "serialize":
        return json.dumps({"outputs": outputs.tolist()}, allow_nan=False).encode()
    rows = []
    for i in range(outputs.shape[0]):
        cells = [json.dumps(outputs[i, j].item(), allow_nan=False) for j in range(outputs.shape[1])]
        rows.append("[" + ", ".join(cells) + "]")
    return ('{"outputs": [' + ", ".join(rows) + "]}").encode()


def rss_bytes() -> int:
    """This process's resident memory: /proc/self/statm's resident pages (Linux), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def _error(err: _BadRequest) -> JSONResponse:
    return JSONResponse({"error": str(err)}, status_code=err.status)


def _routes(worker: _Worker) -> list[Route]:
    """The endpoints of the HTTP contract, bound to ``worker``."""

    async def health(request: Request) -> JSONResponse:
        if worker.load_error is not None:
            return JSONResponse({"ready": False, "error": worker.load_error}, status_code=503)
        return JSONResponse({"ready": worker.ready}, status_code=200 if worker.ready else 503)

    async def infer(request: Request) -> Response:
        timing: _Timing = request.scope[_TIMING_KEY]
        config = worker.config
        try:
            if not worker.ready:
                raise _BadRequest(503, "model not ready: cold start in progress")
            inputs = decode_body(await _read_body(request))
            decoded = time.perf_counter()
            tensor = preprocess_inputs(inputs, config.input_width)
        except _BadRequest as err:
            return _error(err)
        worker.served += 1
        number = worker.served
        if config.stall == "pause" and number % config.pause_every == 0:
            time.sleep(config.pause_ms / 1000.0)  # blocks the whole worker: a stop-the-world pause
        preprocessed = time.perf_counter()
        try:
            outputs, started, ended, batch_size = await worker.submit(tensor)
            body = serialize(outputs, config.stall)
        except ValueError as err:  # an output that is not finite (json refuses it)
            return JSONResponse({"error": f"outputs not finite: {err}"}, status_code=500)
        timing.serialized = time.perf_counter()
        timing.record = {
            "request": number,
            "start_s": timing.start_s,
            "receive_decode_ms": (decoded - timing.arrive) * 1000.0,
            "preprocess_ms": (preprocessed - decoded) * 1000.0,
            "queue_ms": (started - preprocessed) * 1000.0,
            "model_ms": (ended - started) * 1000.0,
            "serialize_ms": (timing.serialized - ended) * 1000.0,
            "batch_size": batch_size,
        }
        return Response(body, media_type="application/json")

    async def phases(request: Request) -> JSONResponse:
        if request.method == "DELETE":
            worker.records.clear()
            return JSONResponse({"cleared": True})
        return JSONResponse(sorted(worker.records, key=lambda r: r["request"]))

    async def memory(request: Request) -> JSONResponse:
        return JSONResponse({"rss_bytes": rss_bytes(), "pid": os.getpid()})

    return [
        Route("/health", health, methods=["GET"]),
        Route("/infer", infer, methods=["POST"]),
        Route("/phases", phases, methods=["GET", "DELETE"]),
        Route("/memory", memory, methods=["GET"]),
    ]


def make_app(config: ServeConfig) -> Starlette:
    """The ASGI app serving ``config``'s model (see the module's docstring). Its lifespan starts the model's load
    (ready after the cold start) and the batcher, and stops both."""
    if not isinstance(config, ServeConfig):
        raise InputError("config", f"config must be a ServeConfig, got {type(config).__name__}")
    worker = _Worker(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        worker.arrived = asyncio.Event()  # bound to this loop
        worker.pending.clear()
        tasks = [asyncio.create_task(worker.load()), asyncio.create_task(worker.batch_forever())]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    return Starlette(routes=_routes(worker), middleware=[Middleware(_PhaseTiming, worker=worker)], lifespan=lifespan)
