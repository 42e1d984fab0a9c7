"""The knobs and hardware figures of the simulated training loop (chapter 02, "read the timeline").

:class:`SimConfig` is one simulated run (:func:`gpucost_lab.simulate.simulate`); each of its knobs creates one
recognisable bottleneck, and :data:`SCENARIOS` names them. The module-level figures are the simulator's model of
the machine: copy bandwidths, how close kernels get to the roofline bound, and the host's cost of each call.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import InputError, integer_at_least, non_negative
from .roofline import bytes_per_element, lookup

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


@dataclass(frozen=True)
class SimConfig:
    """The knobs of one simulated run. The defaults are the healthy run."""

    seed: int = 0  # seeds the CPU-duration jitter
    steps: int = 12  # training steps traced, one ProfilerStep#N each
    batch_size: int = 64  # samples per step
    num_workers: int = 4  # data-loader worker processes; 0 = the main thread decodes
    pin_memory: bool = True  # batches in pinned memory: asynchronous, full-bandwidth copies
    item_sync: bool = False  # loss.item() after every step: the host waits for the GPU
    eval_every: int = 0  # an eval phase after every k-th step; 0 = never
    eval_batches: int = 4  # forward-only batches per eval phase
    checkpoint_every: int = 0  # a checkpoint after every k-th step; 0 = never
    mixed_precision: bool = False  # bf16 kernels (bf16 peak, half the bytes) with fp32 master weights
    gpu: str = "A100 80GB"  # a catalog name or alias (gpucost_lab.roofline.lookup)
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
        object.__setattr__(
            self, "decode_us_per_sample", non_negative("decode_us_per_sample", self.decode_us_per_sample)
        )
        accelerator = lookup(self.gpu)  # unknown names raise the catalog's own error
        params = self.layers * (self.hidden**2 + self.hidden)
        peak_bytes = params * STATE_BYTES_PER_PARAM + self.batch_size * (
            self.sample_bytes + (2 * self.layers + 1) * self.hidden * self._element_bytes
        )
        if peak_bytes > accelerator.memory_gb * 1e9:
            raise ValueError(
                f"layers, hidden and batch_size need {peak_bytes / 1e9:.1f} GB at peak, more than "
                f"the {accelerator.memory_gb:g} GB of the {accelerator.name}; make them smaller"
            )

    @property
    def _dtype(self) -> str:
        return "bfloat16" if self.mixed_precision else "float32"

    @property
    def _element_bytes(self) -> int:
        return bytes_per_element(self._dtype)


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
]
