"""Measure the inputs of a training-memory ledger from a real ``torch.nn.Module``.

Static memory (parameters, buffers, gradients, optimizer state) is read off the tensors
after one real optimizer step on a deep copy of the model; activation memory is
the set of distinct storages autograd saves for backward during the forward
pass, minus the storages of the model's own parameters and buffers (a saved
weight, or a view of it such as ``weight.t()``, is static memory, counted once).
GB means 1e9 bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.memory.figures import DEFAULT_DEVICE_GB, DEFAULT_RESERVE_FRACTION

if TYPE_CHECKING:
    from gpucost_lab.memory.ledger import MemoryLedger

BYTES_PER_GB = 1e9

StorageKey = tuple[str, int]


def _storage(t: torch.Tensor) -> tuple[StorageKey, int]:
    """Return a (device, base address) key and the byte size of the storage behind ``t``."""
    try:
        s = t.untyped_storage()
        return (str(t.device), s.data_ptr()), s.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):  # sparse/nested/fake: no plain storage
        return ("id", id(t)), t.numel() * t.element_size()


def storage_bytes(tensors: Iterable[torch.Tensor], exclude: frozenset[StorageKey] = frozenset()) -> int:
    """Sum the bytes of the distinct storages behind ``tensors``, skipping keys in ``exclude``."""
    seen: dict[StorageKey, int] = {}
    for t in tensors:
        key, nbytes = _storage(t)
        if key not in exclude:
            seen[key] = nbytes
    return sum(seen.values())


def _forward_saving(model: nn.Module, inputs: tuple[Any, ...]) -> tuple[Any, int]:
    """Run ``model(*inputs)`` with grad enabled; return its output and the saved-for-backward bytes."""
    if not inputs:
        raise InputError("inputs", "inputs must hold at least one input for the forward pass, got ()")
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = model(*inputs)
    static = frozenset(_storage(t)[0] for t in (*model.parameters(), *model.buffers()))
    return output, storage_bytes(saved, exclude=static)


def activation_bytes(model: nn.Module, *inputs: Any) -> int:
    """Bytes of the distinct storages autograd saves for backward in ``model(*inputs)``.

    Saved inputs count (they stay resident until backward); saved parameters and
    buffers, or views of them, do not. The model's train/eval mode is used as is.
    """
    return _forward_saving(model, inputs)[1]


@dataclass(frozen=True)
class ModelMemory:
    """Measured training memory of one model; ``activation_bytes`` is at ``batch_size``."""

    parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    activation_bytes: int
    batch_size: int
    buffer_bytes: int = 0  # e.g. BatchNorm running statistics: resident, not trained
    # what backward holds above everything resident when it starts, at batch_size (None: not measured)
    backward_working_bytes: int | None = None

    @property
    def static_bytes(self) -> int:
        """Parameters + buffers + gradients + optimizer state: memory independent of the batch."""
        return self.parameter_bytes + self.buffer_bytes + self.gradient_bytes + self.optimizer_state_bytes

    @property
    def activation_bytes_per_sample(self) -> float:
        return self.activation_bytes / self.batch_size

    def ledger(
        self,
        device_gb: float = DEFAULT_DEVICE_GB,
        reserve_fraction: float = DEFAULT_RESERVE_FRACTION,
        blocks: int = 10,
        *,
        whole_step: bool = False,
        **kwargs,
    ) -> MemoryLedger:
        """The ``MemoryLedger`` these measurements feed, with bytes converted to GB (1e9).

        ``whole_step=True`` also passes the gradients (which ``zero_grad()`` frees between steps) and backward's
        working memory (:mod:`gpucost_lab.memory.ledger`, "The whole step"); it needs ``backward_working_bytes``
        (``measure_model_memory(..., backward_working=True)``). Other keywords go to ``MemoryLedger``.
        """
        from gpucost_lab.memory.ledger import MemoryLedger

        if whole_step:
            if self.backward_working_bytes is None:
                raise InputError(
                    "whole_step",
                    "whole_step=True needs backward_working_bytes, got None: measure with "
                    "measure_model_memory(..., backward_working=True)",
                )
            kwargs = dict(
                gradient_gb=self.gradient_bytes / BYTES_PER_GB,
                backward_working_gb_per_sample=self.backward_working_bytes / self.batch_size / BYTES_PER_GB,
                **kwargs,
            )
        return MemoryLedger(
            static_gb=self.static_bytes / BYTES_PER_GB,
            activation_gb_per_sample=self.activation_bytes_per_sample / BYTES_PER_GB,
            device_gb=device_gb,
            reserve_fraction=reserve_fraction,
            blocks=blocks,
            **kwargs,
        )

    def to_dict(self) -> dict[str, float]:
        return {
            **asdict(self),
            "static_bytes": self.static_bytes,
            "activation_bytes_per_sample": self.activation_bytes_per_sample,
        }


def measure_model_memory(
    model: nn.Module,
    inputs: tuple[Any, ...],
    *,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
    optimizer_factory: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] | None = None,
    batch_size: int | None = None,
    backward_working: bool = False,
) -> ModelMemory:
    """Measure ``model`` training on ``inputs``: one forward, backward and optimizer step.

    The step runs on a deep copy put in train mode, so the caller's model (its
    weights, grads and mode) is untouched; the copy needs as much memory again.
    ``loss_fn(output)`` defaults to ``output.float().pow(2).mean()``;
    ``optimizer_factory(parameters)`` defaults to ``AdamW(parameters, lr=1e-3)``.
    ``batch_size`` defaults to the first dimension of the first input.

    ``backward_working=True`` runs a second step and measures ``backward_working_bytes``: the peak memory during
    its backward over the memory allocated just before it (gradients resident, activations saved), read from
    ``torch.cuda.max_memory_allocated`` on CUDA and from the CPU profiler's memory events elsewhere.
    """
    inputs = tuple(inputs)
    if not inputs:
        raise InputError("inputs", "inputs must hold at least one input for the forward pass, got ()")
    if batch_size is None:
        first = inputs[0]
        if not isinstance(first, torch.Tensor) or first.dim() == 0:
            raise InputError(
                "batch_size", f"batch_size must be given when inputs[0] has no first dimension, got {first!r}"
            )
        batch_size = first.shape[0]
    batch_size = integer_at_least("batch_size", batch_size, 1)
    if not any(p.requires_grad for p in model.parameters()):
        raise InputError(
            "model", f"model must have at least one trainable parameter, got {type(model).__name__} with none"
        )

    work = copy.deepcopy(model).train()
    params = list(work.parameters())
    optimizer = (optimizer_factory or (lambda ps: torch.optim.AdamW(ps, lr=1e-3)))(work.parameters())
    output, saved_bytes = _forward_saving(work, inputs)
    loss = _loss(output, loss_fn)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise InputError("loss_fn", f"loss_fn must return a one-element tensor, got {loss!r}")
    loss.backward()
    optimizer.step()

    working = None
    if backward_working:
        del output, loss
        working = _backward_working_bytes(work, inputs, loss_fn)
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return ModelMemory(
        parameter_bytes=sum(p.numel() * p.element_size() for p in params),
        gradient_bytes=storage_bytes(p.grad for p in params if p.grad is not None),
        optimizer_state_bytes=storage_bytes(state),
        activation_bytes=saved_bytes,
        batch_size=batch_size,
        buffer_bytes=storage_bytes(work.buffers()),
        backward_working_bytes=working,
    )


def _loss(output: Any, loss_fn: Callable[[Any], torch.Tensor] | None) -> torch.Tensor:
    return loss_fn(output) if loss_fn is not None else output.float().pow(2).mean()


def _backward_working_bytes(model: nn.Module, inputs: tuple[Any, ...], loss_fn) -> int:
    """Peak bytes during one backward over the bytes allocated just before it (module doc of memory)."""
    device = next(model.parameters()).device
    if device.type == "cuda":
        loss = _loss(model(*inputs), loss_fn)
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        loss.backward()
        torch.cuda.synchronize(device)
        return max(0, torch.cuda.max_memory_allocated(device) - before)
    from torch.profiler import ProfilerActivity, profile, record_function

    from gpucost_lab.measure.profiling import quiet_profiler_log

    # the forward runs inside the profiler too: the profiler records no free of a block allocated before it started
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with quiet_profiler_log():  # `with profile(...)` without the profiler's log lines on stderr
        prof.start()
    try:
        loss = _loss(model(*inputs), loss_fn)
        with record_function("gpucost_lab: backward"):
            loss.backward()
    finally:
        with quiet_profiler_log():
            prof.stop()
    results = prof.profiler.kineto_results if prof.profiler is not None else None
    if results is None:  # a stopped profiler always holds its results
        raise RuntimeError("the CPU profiler recorded no results for the backward pass")
    events = list(results.events())
    start = next(e.start_ns() for e in events if e.name() == "gpucost_lab: backward")
    total, peak = 0, 0
    at_start: int | None = None  # the bytes allocated when backward started
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        if at_start is None and e.start_ns() >= start:
            at_start = peak = total
        total += e.nbytes()  # type: ignore[attr-defined]  # a memory event's bytes; torch's stub leaves it out
        if at_start is not None:
            peak = max(peak, total)
    return 0 if at_start is None else max(0, peak - at_start)
