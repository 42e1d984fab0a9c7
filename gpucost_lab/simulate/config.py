"""The knobs and hardware figures of the simulated training loop (chapter 02, "read the timeline").

:class:`SimConfig` is one simulated run (:func:`gpucost_lab.simulate.write.simulate`); each of its knobs creates one
recognisable bottleneck, and :data:`SCENARIOS` names them. The module-level figures are the simulator's model of
the machine: copy bandwidths, how close kernels get to the roofline bound, and the host's cost of each call.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_lab._validate import InputError, integer_at_least, non_negative, too_large
from gpucost_lab.roofline.bound import bytes_per_element, lookup

# Copies. PCIe 4.0 x16 moves 31.5 GB/s per direction in theory; CUDA's bandwidthTest reaches about 25 GB/s
# from pinned memory. Pageable memory is first copied by the driver into a pinned bounce buffer, which
# typically gives 6-12 GB/s (the A100 AlexNet fixture trace shows 4-11 GB/s); DtoH into pageable memory alike.
PINNED_COPY_BYTES_PER_S = 25e9
PAGEABLE_COPY_BYTES_PER_S = 8e9
COPY_LATENCY_US = 1.5  # DMA set-up of each copy on the GPU
# Checkpoint write: torch.save to a local PCIe 4.0 NVMe SSD (3-7 GB/s sequential), low end for serialisation.
DISK_WRITE_BYTES_PER_S = 3e9

# Kernels: real kernels reach about 60-90% of the roofline bound; one figure for all keeps the model readable.
ROOFLINE_EFFICIENCY = 0.7
KERNEL_LATENCY_US = 2.0  # fixed cost of every kernel on the GPU: ramp-up and the last wave's tail
ADAM_BYTES_PER_PARAM = 28  # fused Adam reads weight, grad, exp_avg, exp_avg_sq and writes 3 (fp32: 7 x 4 bytes;
#                            mixed: bf16 grad + bf16 weight copy + fp32 master, exp_avg, exp_avg_sq = 28 too)
STATE_BYTES_PER_PARAM = 16  # resident weight + grad + Adam state (fp32 4+4+8; mixed bf16 2+2, fp32 master 4, 8)
CHECKPOINT_STATES = ("weight", "exp_avg", "exp_avg_sq")  # saved per parameter, each fp32 (4 bytes); in mixed
#                                                        precision the weight saved is the fp32 master copy

# Host-side costs (typical of an x86 server with CUDA 12; each is jittered by CPU_JITTER).
LAUNCH_US = 5.0  # one cudaLaunchKernel
OP_OVERHEAD_US = 14.0  # Python, autograd and ATen dispatch around one launch (eager ops: 10-20 us), split in two
MEMCPY_CALL_US = 6.0  # a cudaMemcpyAsync that does not block
SYNC_CALL_US = 3.0  # a cudaStreamSynchronize on an idle stream
NEXT_OVERHEAD_US = 120.0  # DataLoader __next__: receive a ~10 MB batch from a worker, rebuild it from shared memory
LAUNCH_QUEUE_DEPTH = 1024  # pending GPU operations the driver queues; the next launch call blocks until one ends
CPU_JITTER = 0.05  # CPU durations are scaled by uniform(1 - 0.05, 1 + 0.05)
PREFETCH_FACTOR = 2  # torch DataLoader default: batches queued per worker

# Bounds of a run, so that writing its trace stays within about half a minute and 1.7 GB on the course's 2-core CPU:
# the simulator holds every event (about 700 bytes each) until it writes them, about 90,000 a second (1M events:
# 11 s and 780 MB peak RSS; 2M: 23 s and 1.7 GB, beside other work, benchmarks/bad_input_limits.py). The default
# model makes 292 events a step, so 2M events are about 6,800 steps; eval batches and checkpoints add theirs
# (trace_events counts them before the run).
MAX_TRACE_EVENTS = 2_000_000
# CPU time to decode one sample: real loaders take 0.1-10 ms an image; a second a sample is far beyond, and keeps
# every duration a finite float (1e308 us overflowed the simulated clock).
MAX_DECODE_US_PER_SAMPLE = 1e6


@dataclass(frozen=True)
class SimConfig:
    """The knobs of one simulated run. The defaults are the healthy run."""

    seed: int = 0  # seeds the CPU-duration jitter
    steps: int = 12  # training steps traced, one ProfilerStep#N each
    batch_size: int = 64  # samples per step
    num_workers: int = 4  # data-loader worker processes; 0 = the main thread decodes
    pin_memory: bool = True  # pinned batches copied non_blocking: the host does not wait; the copy queues on stream 7
    item_sync: bool = False  # loss.item() after every step: the host waits for the GPU
    eval_every: int = 0  # an eval phase after every k-th step; 0 = never
    eval_batches: int = 4  # forward-only batches per eval phase
    checkpoint_every: int = 0  # a checkpoint after every k-th step; 0 = never
    mixed_precision: bool = False  # bf16 kernels (bf16 peak, half the bytes) with fp32 master weights
    gpu: str = "A100 80GB"  # a catalog name or alias (gpucost_lab.roofline.bound.lookup)
    layers: int = 8  # the model: layers x Linear(hidden, hidden) + ReLU
    hidden: int = 2048  # width of every layer
    sample_bytes: int = 150_528  # host bytes per input sample: a 3 x 224 x 224 uint8 image crop
    decode_us_per_sample: float = 80.0  # CPU time to load and augment one sample in a worker

    def __post_init__(self) -> None:
        bounds = {
            "seed": (0, 2**63),
            "steps": (1, 10_000),
            "batch_size": (1, 65_536),
            "num_workers": (0, 64),
            "eval_every": (0, 10_000),
            "eval_batches": (1, 10_000),
            "checkpoint_every": (0, 10_000),
            "layers": (1, 512),
            "hidden": (1, 65_536),
            "sample_bytes": (1, 10**9),
        }
        for name, (low, high) in bounds.items():
            raw = getattr(self, name)
            try:
                value = integer_at_least(name, raw, low)
            except ValueError:
                value = None
            if value is None or value > high:
                raise InputError(name, f"{name} must be an integer in [{low}, {high}], got {raw!r}")
            object.__setattr__(self, name, value)  # 4.0 -> 4
        for name in ("pin_memory", "item_sync", "mixed_precision"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(name, f"{name} must be True or False, got {getattr(self, name)!r}")
        decode_us = non_negative("decode_us_per_sample", self.decode_us_per_sample)
        if decode_us > MAX_DECODE_US_PER_SAMPLE:
            raise InputError(
                "decode_us_per_sample",
                f"decode_us_per_sample must be in [0, {MAX_DECODE_US_PER_SAMPLE:g}] (microseconds to decode one "
                f"sample: real loaders take 100-10,000), got {self.decode_us_per_sample!r}",
            )
        object.__setattr__(self, "decode_us_per_sample", decode_us)
        try:
            accelerator = lookup(self.gpu)
        except InputError as err:  # the catalog names its own field; this one is gpu
            raise InputError("gpu", "gpu" + str(err)[len(err.field) :]) from None
        _check_events(self)
        params = self.layers * (self.hidden**2 + self.hidden)
        peak_bytes = params * STATE_BYTES_PER_PARAM + self.batch_size * (
            self.sample_bytes + (2 * self.layers + 1) * self.hidden * self.element_bytes
        )
        if peak_bytes > accelerator.memory_gb * 1e9:
            raise ValueError(
                f"layers, hidden and batch_size need {peak_bytes / 1e9:.1f} GB at peak, more than "
                f"the {accelerator.memory_gb:g} GB of the {accelerator.name}; make them smaller"
            )

    @property
    def dtype(self) -> str:
        """The kernels' element type: bfloat16 with mixed precision, else float32."""
        return "bfloat16" if self.mixed_precision else "float32"

    @property
    def element_bytes(self) -> int:
        """Bytes per element of :attr:`dtype` (activations, kernels' reads and writes)."""
        return bytes_per_element(self.dtype)


def trace_events(c: SimConfig) -> int:
    """How many events the trace of ``c`` holds, counted from the model's structure before it runs (exact, or a few
    too many when eval and checkpoint fall on the same steps): per step, with L layers, (6 L + 1) kernel launches of
    5 events (the op, the launch call, the kernel and its two flow events), the batch's copy, the allocator's
    ``[memory]`` events and the annotations (34 L + 20 in all); a loss read 7; an eval batch 14 L + 5; a checkpoint
    6 L copies of 5 and its write (30 L + 2); 3 lane names per thread and stream."""
    evals = c.steps // c.eval_every if c.eval_every else 0
    saves = c.steps // c.checkpoint_every if c.checkpoint_every else 0
    reads = c.steps if c.item_sync else evals + saves
    layers = c.layers
    return (
        c.steps * (34 * layers + 20)
        + 7 * reads
        + evals * (c.eval_batches * (14 * layers + 5) + 8)
        + saves * (30 * layers + 2)
        + 3 * (2 + c.num_workers)
    )


def _check_events(c: SimConfig) -> None:
    """InputError naming the knob to lower when the trace of ``c`` would pass :data:`MAX_TRACE_EVENTS`: the eval
    batches when evals make most of the events, else the steps, else the layers, with the largest value allowed."""
    total = trace_events(c)
    if total <= MAX_TRACE_EVENTS:
        return
    evals = c.steps // c.eval_every if c.eval_every else 0
    beyond = f"the trace passes {MAX_TRACE_EVENTS:,} events (about half a minute and 1.7 GB to write)"
    knobs = ("steps", "layers", "eval_every", "eval_batches", "checkpoint_every", "item_sync", "num_workers")

    def largest(name: str) -> int:  # the largest value of knob `name` within the budget, the others as given
        low, high = 0, getattr(c, name)
        while low < high:
            mid = (low + high + 1) // 2
            fits = trace_events(_unchecked(c, name, mid)) <= MAX_TRACE_EVENTS
            low, high = (mid, high) if fits else (low, mid - 1)
        return low

    names = ("eval_batches", "steps", "layers") if evals * c.eval_batches * (14 * c.layers + 5) * 2 > total else ()
    for name in (*names, "steps", "layers", "eval_batches"):
        limit = largest(name)
        if limit >= 1:
            given = ", ".join(f"{k}={getattr(c, k)!r}" for k in knobs if k != name)
            raise too_large(name, getattr(c, name), limit, given, beyond)


def _unchecked(c: SimConfig, name: str, value: int) -> SimConfig:
    """``c`` with ``name`` set to ``value``, not checked (for counting events only)."""
    copy = object.__new__(SimConfig)
    for field in SimConfig.__dataclass_fields__:
        object.__setattr__(copy, field, getattr(c, field))
    object.__setattr__(copy, name, value)
    return copy


SCENARIOS: dict[str, SimConfig] = {
    "healthy": SimConfig(),
    "dataloader_stall": SimConfig(num_workers=0),
    "pageable_copies": SimConfig(pin_memory=False),
    "item_sync": SimConfig(item_sync=True),
    # one checkpoint (0.4 GB of weights and Adam state, ~0.19 s) costs ~90 steps of this model: 80 steps, 1 save
    "eval_checkpoint_heavy": SimConfig(steps=80, eval_every=20, eval_batches=16, checkpoint_every=60),
    "mixed_precision": SimConfig(mixed_precision=True),
}


__all__ = [
    "ADAM_BYTES_PER_PARAM",
    "CHECKPOINT_STATES",
    "MAX_DECODE_US_PER_SAMPLE",
    "MAX_TRACE_EVENTS",
    "COPY_LATENCY_US",
    "CPU_JITTER",
    "DISK_WRITE_BYTES_PER_S",
    "KERNEL_LATENCY_US",
    "LAUNCH_QUEUE_DEPTH",
    "LAUNCH_US",
    "MEMCPY_CALL_US",
    "NEXT_OVERHEAD_US",
    "OP_OVERHEAD_US",
    "PAGEABLE_COPY_BYTES_PER_S",
    "PINNED_COPY_BYTES_PER_S",
    "PREFETCH_FACTOR",
    "ROOFLINE_EFFICIENCY",
    "SCENARIOS",
    "STATE_BYTES_PER_PARAM",
    "SYNC_CALL_US",
    "SimConfig",
    "trace_events",
]
