"""Retained autograd graphs: the memory leak that grows by one step's graph per step (chapter 06, "release the result").

A tensor that carries a ``grad_fn`` keeps its whole autograd graph alive: the graph's nodes and,
until ``backward()`` frees them, the activations the nodes saved for the backward pass. Keeping such a
tensor across steps is the classic leak:

- ``losses.append(loss)`` keeps one graph per step (with all its saved activations when backward never
  ran on it, as in an evaluation loop without ``torch.no_grad()``, or ran with ``retain_graph=True``);
- ``total_loss += loss`` chains every step's graph onto one tensor whose history grows without end.

``losses.append(loss.item())`` or ``loss.detach()`` keep the number and drop the graph.

:func:`detect_retained_graphs` runs a step repeatedly and, after each, counts what really grows: live
tensors with a ``grad_fn`` (found through the garbage collector), the autograd nodes reachable from
them, and the bytes of those tensors plus the saved tensors their graphs still hold (each storage once).
On CUDA it also records ``torch.cuda.memory_allocated``. A leak is a robust trend after a short warm-up
(growth in most steps *and* a positive least-squares slope), never one sample.
"""

from __future__ import annotations

import gc
import statistics
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from gpucost_lab._validate import fraction, integer_at_least


@dataclass(frozen=True)
class LeakSample:
    """What the graphs held after one step."""

    step: int  # 1-based step after which the sample was taken
    graph_tensors: int  # live Python tensors that carry a grad_fn
    graph_nodes: int  # distinct autograd nodes reachable from them
    graph_bytes: int  # bytes of their storages plus the saved tensors their graphs hold, each storage once
    saved_bytes: int  # the part of graph_bytes held as saved tensors (activations kept for backward)
    device_allocated_bytes: int | None  # torch.cuda.memory_allocated on a CUDA device; None on the CPU


@dataclass(frozen=True)
class LeakReport:
    """Whether a step leaves autograd graphs behind, how fast they pile up, and the likely cause."""

    leaking: bool  # a graph measure grew robustly after warm-up
    growth_bytes_per_step: float  # least-squares slope of graph_bytes after warm-up
    retained_graph_tensors_per_step: float  # slope of graph_tensors: 1.0 for losses.append(loss)
    retained_graph_nodes_per_step: float  # slope of graph_nodes: the graph of one step for total_loss += loss
    device_growth_bytes_per_step: float | None  # slope of memory_allocated on CUDA (reported, not decisive)
    likely_cause: str | None  # what the growth pattern points to, and the fix; None when not leaking
    samples: tuple[LeakSample, ...]  # one per step, warm-up included
    warmup_steps: int  # leading samples left out of the trend

    def to_dict(self) -> dict:
        d = asdict(self)
        d["samples"] = [asdict(s) for s in self.samples]
        return d


def _storage_key(t: torch.Tensor) -> tuple[str, int, int]:
    storage = t.untyped_storage()
    return (str(t.device), storage.data_ptr(), storage.nbytes())


def _saved_tensors(node) -> list[torch.Tensor]:
    """The tensors ``node`` still holds for the backward pass (none once backward freed them)."""
    found = []
    for name in dir(node):
        if not name.startswith("_saved_"):
            continue
        try:
            value = getattr(node, name)
        except RuntimeError:  # "saved tensors ... have already been freed": backward ran
            continue
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, torch.Tensor):
                found.append(item)
    return found


def _graph_census() -> tuple[int, int, int, int]:
    """(graph tensors, graph nodes, graph bytes, saved-only bytes) among the live objects gc tracks.

    A graph tensor is a live tensor with a ``grad_fn`` that no reachable graph holds as a saved tensor:
    a tensor the step's caller kept. (An intermediate a graph saved, such as a layer's output, keeps its
    Python object alive through the graph; it counts in the bytes, not as a kept tensor.)
    """
    with warnings.catch_warnings():  # isinstance on some lazily deprecated module attributes warns
        warnings.simplefilter("ignore")
        live = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    storages: dict[tuple[str, int, int], int] = {}
    for t in live:
        storages[_storage_key(t)] = t.untyped_storage().nbytes()
    saved_ids: set[int] = set()
    saved_keys: set[tuple[str, int, int]] = set()
    kept_alive: list[torch.Tensor] = []  # the saved tensors read during the walk, so their ids stay unique
    seen: dict[int, object] = {}  # id -> node, holding each node so its id stays unique during the walk
    stack = [t.grad_fn for t in live]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        for saved in _saved_tensors(node):
            key = _storage_key(saved)
            storages.setdefault(key, saved.untyped_storage().nbytes())
            saved_keys.add(key)
            saved_ids.add(id(saved))
            kept_alive.append(saved)
        stack.extend(nxt for nxt, _ in node.next_functions)
    kept = [t for t in live if id(t) not in saved_ids]
    saved_only = saved_keys - {_storage_key(t) for t in kept}
    return len(kept), len(seen), sum(storages.values()), sum(storages[k] for k in saved_only)


def _trend(values: list[float], min_growth_share: float) -> tuple[bool, float]:
    """(growing, least-squares slope per step): a rise in >= ``min_growth_share`` of the steps and a positive slope."""
    slope = statistics.linear_regression(range(len(values)), values).slope
    diffs = [b - a for a, b in zip(values, values[1:])]
    share = sum(d > 0 for d in diffs) / len(diffs)
    return share >= min_growth_share and slope > 0, slope


def detect_retained_graphs(
    step: Callable[[], object],
    steps: int = 20,
    *,
    warmup_steps: int = 3,
    min_growth_share: float = 0.8,
    device: str | None = None,
) -> LeakReport:
    """Run ``step`` ``steps`` times and report whether autograd graphs pile up across steps.

    After each step the garbage collector runs and the census above is taken. Over the samples after
    ``warmup_steps`` (first steps create optimizer state and caches), a measure grows when it rose in at
    least ``min_growth_share`` of the steps and its least-squares slope is positive; the step leaks when
    the graph tensors, the graph nodes or the graph bytes grow. ``device`` ("cuda[:N]") also samples
    ``torch.cuda.memory_allocated``; the default does so when CUDA is initialised in this process. It is
    reported but does not decide: a loop that keeps ``loss.detach()`` grows it too, without a graph.

    Objects alive before the call are frozen out of the collector (``gc.freeze``) while it runs, so each
    census walks only what the steps created, and the collector is unfrozen afterwards. If the caller had
    already frozen objects, nothing more is frozen (and theirs stay frozen); the census is then slower.
    """
    integer_at_least("warmup_steps", warmup_steps, 0)
    integer_at_least("steps", steps, warmup_steps + 3)
    fraction("min_growth_share", min_growth_share, include_zero=False, include_one=True)
    if device is None:
        device = "cuda" if torch.cuda.is_available() and torch.cuda.is_initialized() else "cpu"
    on_cuda = str(device).startswith("cuda")
    samples = []
    # freeze only when nothing is frozen yet: gc.unfreeze() would also release what the caller froze
    freeze = gc.get_freeze_count() == 0
    gc.collect()
    if freeze:
        gc.freeze()
    try:
        for i in range(1, steps + 1):
            step()
            gc.collect()
            tensors, nodes, graph_bytes, saved_bytes = _graph_census()
            allocated = int(torch.cuda.memory_allocated(device)) if on_cuda else None
            samples.append(LeakSample(i, tensors, nodes, graph_bytes, saved_bytes, allocated))
    finally:
        if freeze:
            gc.unfreeze()
    fitted = samples[warmup_steps:]
    tensors_up, tensors_slope = _trend([s.graph_tensors for s in fitted], min_growth_share)
    nodes_up, nodes_slope = _trend([s.graph_nodes for s in fitted], min_growth_share)
    bytes_up, bytes_slope = _trend([s.graph_bytes for s in fitted], min_growth_share)
    saved_up, _ = _trend([s.saved_bytes for s in fitted], min_growth_share)
    device_bytes: list[float] = [s.device_allocated_bytes for s in fitted if s.device_allocated_bytes is not None]
    device_slope = _trend(device_bytes, min_growth_share)[1] if on_cuda else None  # every sample has bytes on CUDA
    leaking = tensors_up or nodes_up or bytes_up
    return LeakReport(
        leaking,
        bytes_slope,
        tensors_slope,
        nodes_slope,
        device_slope,
        _likely_cause(leaking, tensors_up, saved_up) if leaking else None,
        tuple(samples),
        warmup_steps,
    )


def _likely_cause(leaking: bool, tensors_up: bool, saved_up: bool) -> str:
    fix = "keep loss.item() (a Python float) or loss.detach() instead of the loss tensor"
    if tensors_up and saved_up:
        return (
            "a tensor with an autograd graph is kept every step and its graph still holds the saved "
            "activations (backward never ran on it, e.g. losses.append(loss) in a loop without "
            f"torch.no_grad(), or it ran with retain_graph=True): {fix}"
        )
    if tensors_up:
        return (
            "a tensor with an autograd graph is kept every step, e.g. losses.append(loss): backward freed "
            f"its saved activations but every graph's nodes stay alive: {fix}"
        )
    if saved_up:
        return (
            "one tensor's autograd history grows every step and holds each step's saved activations, e.g. "
            f"total_loss += loss with backward(retain_graph=True): {fix}"
        )
    return f"one tensor's autograd history grows every step, e.g. total_loss += loss: {fix}"
