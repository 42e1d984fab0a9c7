"""A seeded, simulated single-GPU training loop that writes a torch.profiler (Kineto) trace (chapter 02).

Most learners have no GPU, and a CPU-only torch trace has no kernels, copies or CUDA syncs. ``simulate`` runs a
small discrete-event model of one training process on a simulated clock (no sleeps, no torch) and returns the trace
a real ``torch.profiler`` export would hold, for ``gpucost_lab.timeline``, Perfetto or TensorBoard to read. Each
knob of :class:`SimConfig` creates one recognisable bottleneck; :data:`SCENARIOS` names them.

What it models:
- the main thread: one ``ProfilerStep#N`` per step holding the DataLoader's ``__next__``, the batch's
  host-to-device copy and the "forward", "backward" and "optimizer" phases, each kernel launched by a
  ``cudaLaunchKernel`` inside its ``aten::`` op; then the optional ``loss.item()`` sync, "eval" and "checkpoint";
- data-loader workers (one process each) decoding batches ahead, ``PREFETCH_FACTOR`` batches per worker handed
  out round-robin as torch's DataLoader does; with ``num_workers=0`` the main thread decodes each batch itself;
- one CUDA stream (7) running kernels and copies in launch order, none before its launch call ends; kernel time
  = max(FLOPs / peak, bytes / bandwidth) / ROOFLINE_EFFICIENCY + KERNEL_LATENCY_US, from the catalog's figures;
- pageable copies are staged and block the host for the whole copy at a lower bandwidth; pinned ones do not;
- the driver's launch queue: at most LAUNCH_QUEUE_DEPTH pending GPU operations, then the launch call blocks;
- a loss read (``loss.item()``: a sync) every step with ``item_sync``, otherwise only before eval and checkpoint,
  as a loop that logs its loss there does, so no queued training work leaks into those phases' annotations;
- ``[memory]`` events for the input batch, the activations and the gradient buffer; weights, gradients and Adam
  state are resident before the trace starts and only counted in "Total Allocated".

What it leaves out: the pin-memory thread, autograd's own backward thread, the caching allocator's reuse of
blocks, other streams, GPU-side variation (only CPU durations are jittered), eval data loading (the validation set
is taken to be resident on the GPU), PCIe generations other than 4.0, and kernel names of GPUs other than Ampere.
The same seed and knobs give a byte-identical file.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

from ._validate import integer_at_least, non_negative, output_file
from .atomic import atomic_write_bytes
from .roofline import bytes_per_element, linear_layer_cost, lookup

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

# Trace layout: process and thread ids, the CUDA stream, and the clock origin.
PID = 4242  # the training process; its main thread has the same id
WORKER_PID_BASE = 4300  # data-loader worker i is process 4300 + i
GPU_PID, DEVICE, STREAM = 0, 0, 7
TRACE_START_US = 1_000_000  # ts of the trace's first instant (the data-loader iterator is created then)
ALLOCATOR_ROUND_BYTES = 2 * 1024**2  # "Total Reserved" grows in 2 MiB segments
_NS_PER_US = 1000

# Kernel names as an A100 trace shows them (templates shortened): fp32 / bf16 matmuls by layout, then the rest.
_GEMM = {False: "ampere_sgemm_128x64_{}", True: "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_{}"}
_ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::{}, at::detail::Array<char*, {}> >"
_RELU = _ELEMENTWISE.format("clamp_min_scalar_kernel_impl", 2)
_RELU_BWD = _ELEMENTWISE.format("threshold_kernel_impl", 3)
_LOSS = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
_ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4> >"
_NEXT = "enumerate(DataLoader)#_{}DataLoaderIter.__next__"


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
                raise ValueError(f"{name} must be an integer in [{low}, {high}], got {raw!r}")
            object.__setattr__(self, name, value)  # 4.0 -> 4
        for name in ("pin_memory", "item_sync", "mixed_precision"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
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


def _ns(us: float) -> int:
    return round(us * _NS_PER_US)


def _ts(t_ns: int) -> float:
    """A simulated time (ns after the start) as the trace's ``ts``: microseconds with 3 decimals."""
    return (_ns(TRACE_START_US) + t_ns) / _NS_PER_US


class _Run:
    """The simulation's state: the main thread's clock, the stream's, the workers' and the trace so far."""

    def __init__(self, c: SimConfig):
        self.c, self.acc, self.rng = c, lookup(c.gpu), random.Random(c.seed)
        self.t = 0  # main thread clock, ns after TRACE_START_US
        self.gpu_free = 0  # when stream 7 has finished everything queued
        self.queued: deque[int] = deque()  # end times of the GPU operations queued, oldest first
        self.events: list[tuple[int, int, int, dict]] = []  # (start ns, -dur ns, order, event)
        self.ids = 0  # correlation and External ids
        self.phase_ns = dict.fromkeys(
            ("data", "h2d_copy", "forward", "backward", "optimizer", "item_sync", "eval", "checkpoint"), 0
        )
        self.peak_flops_per_s = self.acc.peak_flops_per_s(c._dtype)
        gemm = linear_layer_cost(c.batch_size, c.hidden, c.hidden, c._dtype, bias=False)  # one matmul, no bias
        self.gemm_us = self.kernel_us(gemm.flops, gemm.bytes_moved)
        self.act_bytes = c.batch_size * c.hidden * c._element_bytes  # one layer's output
        self.end = 0  # the latest end of any event so far
        self.allocated = c.layers * (c.hidden**2 + c.hidden) * STATE_BYTES_PER_PARAM
        self.reserved = -(-self.allocated // ALLOCATOR_ROUND_BYTES) * ALLOCATOR_ROUND_BYTES
        self.next_addr, self.live = 0x7F0000000000 + self.reserved, {}
        self.worker_free, self.ready = [0] * c.num_workers, {}
        for k in range(min(PREFETCH_FACTOR * c.num_workers, c.steps)):
            self.dispatch(k, 0)

    # -- trace events --------------------------------------------------------------------------------------
    def new_id(self) -> int:
        self.ids += 1
        return self.ids

    def cpu(self, us: float) -> int:
        return _ns(us * self.rng.uniform(1 - CPU_JITTER, 1 + CPU_JITTER))

    def emit(
        self, cat: str, name: str, start: int, end: int, args: dict | None = None, pid: int = PID, tid: int = PID
    ) -> None:
        event = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": _ts(start),
            "dur": (end - start) / _NS_PER_US,
            **({} if args is None else {"args": args}),
        }
        self.events.append((start, start - end, len(self.events), event))
        self.end = max(self.end, end)

    def gpu_event(
        self, cat: str, name: str, start: int, end: int, corr: int, ext: int, rt_start: int, extra: dict
    ) -> None:
        args = {"External id": ext, "device": DEVICE, "context": 1, "stream": STREAM, "correlation": corr, **extra}
        self.emit(cat, name, start, end, args, GPU_PID, STREAM)
        for ph, ts, pid, tid in (("s", rt_start, PID, PID), ("f", start, GPU_PID, STREAM)):
            flow = {
                "ph": ph,
                "id": corr,
                "pid": pid,
                "tid": tid,
                "ts": _ts(ts),
                "cat": "ac2g",
                "name": "ac2g",
                **({"bp": "e"} if ph == "f" else {}),
            }
            self.events.append((ts, 0, len(self.events), flow))

    def memory(self, nbytes: int, addr: int | None = None) -> int:
        """Allocate ``nbytes`` (addr None) or free the block at ``addr``; a ``[memory]`` event at self.t."""
        if addr is None:
            addr, self.next_addr = self.next_addr, self.next_addr + nbytes
            self.live[addr] = nbytes
        else:
            nbytes = -self.live.pop(addr)
        self.allocated += nbytes
        self.reserved = max(self.reserved, -(-self.allocated // ALLOCATOR_ROUND_BYTES) * ALLOCATOR_ROUND_BYTES)
        args = {
            "Total Reserved": self.reserved,
            "Total Allocated": self.allocated,
            "Bytes": nbytes,
            "Addr": addr,
            "Device Id": DEVICE,
            "Device Type": 1,
        }
        event = {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": PID,
            "tid": PID,
            "ts": _ts(self.t),
            "args": args,
        }
        self.events.append((self.t, 0, len(self.events), event))
        return addr

    # -- main-thread actions -------------------------------------------------------------------------------
    def enqueue(self, start: int, dur_ns: int) -> int:
        """Queue a GPU operation at ``start`` or later, behind the stream's work; returns its start."""
        start = max(start, self.gpu_free)
        self.gpu_free = start + dur_ns
        self.queued.append(self.gpu_free)
        return start

    def wait_for_queue_slot(self) -> None:
        while self.queued and self.queued[0] <= self.t:
            self.queued.popleft()
        if len(self.queued) >= LAUNCH_QUEUE_DEPTH:
            self.t = self.queued.popleft()

    def kernel_us(self, flops: float, nbytes: float) -> float:
        bound_s = max(flops / self.peak_flops_per_s, nbytes / self.acc.memory_bandwidth_bytes_per_s)
        return bound_s * 1e6 / ROOFLINE_EFFICIENCY + KERNEL_LATENCY_US

    def launch(self, op: str, kernel: str, gpu_us: float, alloc: int = 0, free: tuple = ()) -> int | None:
        """``op`` launching ``kernel``; allocates ``alloc`` bytes and frees ``free``; returns the new address."""
        start, ext = self.t, self.new_id()
        self.t += self.cpu(OP_OVERHEAD_US / 2)
        addr = self.memory(alloc) if alloc else None
        for old in free:
            self.memory(0, old)
        rt_start, corr = self.t, self.new_id()
        self.wait_for_queue_slot()
        self.t += self.cpu(LAUNCH_US)
        self.emit(
            "cuda_runtime", "cudaLaunchKernel", rt_start, self.t, {"External id": ext, "cbid": 211, "correlation": corr}
        )
        k_start = self.enqueue(self.t, _ns(gpu_us))
        self.gpu_event("kernel", kernel, k_start, self.gpu_free, corr, ext, rt_start, {"queued": 0})
        self.t += self.cpu(OP_OVERHEAD_US / 2)
        self.emit("cpu_op", op, start, self.t, {"External id": ext})
        return addr

    def copy(self, direction: str, nbytes: int, pinned: bool, blocking: bool, ext: int | None = None) -> None:
        """An ``aten::copy_`` issuing one cudaMemcpyAsync (a bare call inside the op ``ext`` when given); a
        blocking one returns when the copy has ended."""
        start, op = self.t, ext is None
        if op:
            ext = self.new_id()
            self.t += self.cpu(OP_OVERHEAD_US / 2)
        rt_start, corr = self.t, self.new_id()
        self.wait_for_queue_slot()
        bandwidth = PINNED_COPY_BYTES_PER_S if pinned else PAGEABLE_COPY_BYTES_PER_S
        copy_ns = _ns(nbytes / bandwidth * 1e6 + COPY_LATENCY_US)
        if blocking:  # staged through a bounce buffer: the call returns when the copy has ended
            c_start = self.enqueue(self.t + self.cpu(MEMCPY_CALL_US / 2), copy_ns)
            self.t = self.gpu_free + self.cpu(MEMCPY_CALL_US / 2)
        else:
            self.t += self.cpu(MEMCPY_CALL_US)
            c_start = self.enqueue(self.t, copy_ns)
        self.emit(
            "cuda_runtime", "cudaMemcpyAsync", rt_start, self.t, {"External id": ext, "cbid": 41, "correlation": corr}
        )
        host = "Pinned" if pinned else "Pageable"
        name = f"Memcpy HtoD ({host} -> Device)" if direction == "HtoD" else f"Memcpy DtoH (Device -> {host})"
        self.gpu_event(
            "gpu_memcpy",
            name,
            c_start,
            self.gpu_free,
            corr,
            ext,
            rt_start,
            {"bytes": nbytes, "memory bandwidth (GB/s)": round(nbytes / (self.gpu_free - c_start), 3)},
        )
        if op:
            self.t += self.cpu(OP_OVERHEAD_US / 2)
            self.emit("cpu_op", "aten::copy_", start, self.t, {"External id": ext})

    def item(self) -> None:
        """``loss.item()``: a 4-byte DtoH copy, then cudaStreamSynchronize until the stream has drained."""
        start, ext = self.t, self.new_id()
        self.t += self.cpu(OP_OVERHEAD_US / 2)
        inner, inner_ext = self.t, self.new_id()
        self.copy("DtoH", 4, pinned=False, blocking=False, ext=inner_ext)
        rt_start, corr = self.t, self.new_id()
        self.t = max(self.t + self.cpu(SYNC_CALL_US), self.gpu_free + self.cpu(SYNC_CALL_US / 2))
        self.emit(
            "cuda_runtime",
            "cudaStreamSynchronize",
            rt_start,
            self.t,
            {"External id": inner_ext, "cbid": 131, "correlation": corr},
        )
        self.emit("cpu_op", "aten::_local_scalar_dense", inner, self.t, {"External id": inner_ext})
        self.t += self.cpu(OP_OVERHEAD_US / 2)
        self.emit("cpu_op", "aten::item", start, self.t, {"External id": ext})

    def annotate(self, name: str, start: int, phase: str | None = None) -> None:
        self.emit("user_annotation", name, start, self.t, {"External id": self.new_id()})
        if phase:
            self.phase_ns[phase] += self.t - start

    # -- the data loader -----------------------------------------------------------------------------------
    def dispatch(self, k: int, at: int) -> None:
        """Batch ``k`` goes to worker k mod num_workers at ``at`` and is decoded when that worker is free."""
        w = k % self.c.num_workers
        start = max(at, self.worker_free[w])
        self.worker_free[w] = self.ready[k] = start + self.cpu(self.c.decode_us_per_sample * self.c.batch_size)
        self.emit(
            "cpu_op",
            "decode_batch",
            start,
            self.ready[k],
            {"batch": k, "samples": self.c.batch_size},
            WORKER_PID_BASE + w,
            WORKER_PID_BASE + w,
        )

    def next_batch(self, k: int) -> None:
        start, c = self.t, self.c
        if c.num_workers == 0:
            self.t += self.cpu(NEXT_OVERHEAD_US / 2)
            decode_start, self.t = self.t, self.t + self.cpu(c.decode_us_per_sample * c.batch_size)
            self.emit("cpu_op", "decode_batch", decode_start, self.t, {"batch": k, "samples": c.batch_size})
            self.t += self.cpu(NEXT_OVERHEAD_US / 2)
        else:
            self.t = max(self.t, self.ready.pop(k)) + self.cpu(NEXT_OVERHEAD_US)
            if k + PREFETCH_FACTOR * c.num_workers < c.steps:
                self.dispatch(k + PREFETCH_FACTOR * c.num_workers, self.t)
        self.annotate(_NEXT.format("SingleProcess" if c.num_workers == 0 else "MultiProcessing"), start, "data")

    # -- phases ----------------------------------------------------------------------------------------------
    def forward(self, keep: bool) -> list[int]:
        """Every layer's addmm and ReLU, then the loss; ``keep`` the activations for backward or free them."""
        c, act_bytes = self.c, self.act_bytes
        kept: list[int] = []
        for _ in range(c.layers):
            pre = self.launch(
                "aten::addmm",
                _GEMM[c.mixed_precision].format("tn"),
                self.gemm_us,
                alloc=act_bytes,
                free=() if keep or not kept else (kept.pop(),),
            )
            out = self.launch(
                "aten::relu",
                _RELU,
                self.kernel_us(act_bytes, 2 * act_bytes),
                alloc=act_bytes,
                free=() if keep else (pre,),
            )
            kept += [pre, out] if keep else [out]
        self.launch(
            "aten::mse_loss", _LOSS, self.kernel_us(2 * act_bytes, 2 * act_bytes), free=() if keep else (kept.pop(),)
        )
        return kept

    def backward(self, kept: list[int], input_addr: int) -> None:
        """Per layer, last first: ReLU's gradient, then the input's and the weight's gradient matmuls."""
        c, act_bytes, grad = self.c, self.act_bytes, None
        for layer in reversed(range(c.layers)):
            out, pre = kept.pop(), kept.pop()
            new_grad = self.launch(
                "aten::threshold_backward",
                _RELU_BWD,
                self.kernel_us(2 * act_bytes, 3 * act_bytes),
                alloc=0 if grad else act_bytes,
                free=(out,),
            )
            grad = grad or new_grad  # one gradient buffer, reused down the layers
            self.launch("aten::mm", _GEMM[c.mixed_precision].format("nn"), self.gemm_us)
            self.launch(
                "aten::mm",
                _GEMM[c.mixed_precision].format("nt"),
                self.gemm_us,
                free=(pre,) if layer else (pre, grad, input_addr),
            )

    def checkpoint(self) -> None:
        """Copy every parameter's weight and Adam moments back (pageable, blocking), then write them to disk."""
        c = self.c
        for _ in range(c.layers):
            for n in (c.hidden**2, c.hidden):  # weight, bias
                for _state in CHECKPOINT_STATES:
                    self.copy("DtoH", n * 4, pinned=False, blocking=True)
        state_bytes = c.layers * (c.hidden**2 + c.hidden) * 4 * len(CHECKPOINT_STATES)
        start, self.t = self.t, self.t + self.cpu(state_bytes / DISK_WRITE_BYTES_PER_S * 1e6)
        self.emit("cpu_op", "checkpoint_write", start, self.t, {"External id": self.new_id(), "bytes": state_bytes})

    def train_step(self, k: int) -> None:
        c, step_start = self.c, self.t
        self.next_batch(k)
        t0, input_addr = self.t, self.memory(c.batch_size * c.sample_bytes)
        self.copy("HtoD", c.batch_size * c.sample_bytes, pinned=c.pin_memory, blocking=not c.pin_memory)
        self.phase_ns["h2d_copy"] += self.t - t0
        t0, kept = self.t, self.forward(keep=True)
        self.annotate("forward", t0, "forward")
        t0 = self.t
        self.backward(kept, input_addr)
        self.annotate("backward", t0, "backward")
        t0 = self.t
        for _ in range(c.layers):  # one fused Adam kernel per layer, memory-bound
            self.launch("aten::_fused_adam_", _ADAM, self.kernel_us(0, (c.hidden**2 + c.hidden) * ADAM_BYTES_PER_PARAM))
        self.annotate("optimizer", t0, "optimizer")
        evaluate = c.eval_every and (k + 1) % c.eval_every == 0
        save = c.checkpoint_every and (k + 1) % c.checkpoint_every == 0
        if c.item_sync or evaluate or save:  # the loop logs its loss every step, or before eval and checkpoint
            t0 = self.t
            self.item()
            self.phase_ns["item_sync"] += self.t - t0
        if evaluate:
            t0 = self.t
            for _ in range(c.eval_batches):
                self.forward(keep=False)
            self.item()  # the eval loop reads its metric
            self.annotate("eval", t0, "eval")
        if save:
            t0 = self.t
            self.checkpoint()
            self.annotate("checkpoint", t0, "checkpoint")
        self.annotate(f"ProfilerStep#{k}", step_start)

    def metadata(self) -> list[dict]:
        """Process and thread names, as Kineto writes them, for the main process, the GPU and each worker."""
        lanes = [
            (PID, PID, "python3", "CPU", f"thread {PID} (python3)"),
            (GPU_PID, STREAM, "python3", f"GPU {DEVICE}", f"stream {STREAM} "),
        ]
        lanes += [
            (pid, pid, f"pt_data_worker_{w}", "CPU", f"thread {pid} (pt_data_worker_{w})")
            for w, pid in enumerate(range(WORKER_PID_BASE, WORKER_PID_BASE + self.c.num_workers))
        ]
        rows = [
            row
            for pid, tid, process, label, thread in lanes
            for row in (
                (pid, 0, "process_name", {"name": process}),
                (pid, 0, "process_labels", {"labels": label}),
                (pid, tid, "thread_name", {"name": thread}),
            )
        ]
        return [
            {"name": name, "ph": "M", "ts": TRACE_START_US, "pid": pid, "tid": tid, "args": args}
            for pid, tid, name, args in rows
        ]

    def run(self) -> dict:
        for k in range(self.c.steps):
            self.train_step(k)
        self.events.sort(key=lambda e: e[:3])
        return {
            "schemaVersion": 1,
            "deviceProperties": [
                {
                    "id": DEVICE,
                    "name": (self.acc.aliases or (self.acc.name,))[0],
                    "totalGlobalMem": int(self.acc.memory_gb * 1e9),
                }
            ],
            "simConfig": asdict(self.c),
            "traceEvents": self.metadata() + [e[3] for e in self.events],
        }


def simulate(config: SimConfig = SimConfig()) -> dict:
    """The whole trace of one simulated run, as a JSON-ready dict in torch.profiler's (Kineto's) format."""
    return _Run(config).run()


def phase_totals_us(config: SimConfig = SimConfig()) -> dict[str, float]:
    """Ground truth: main-thread microseconds in each phase, and "wall", from the trace's start to the end of
    its last event on any thread or stream. "data" is the DataLoader's ``__next__`` (waiting and, with no
    workers, decoding); "h2d_copy" the batch's copy call; "forward", "backward", "optimizer", "eval" and
    "checkpoint" their annotations; "item_sync" the loss reads (``loss.item()``) between optimizer and eval.
    While the GPU runs behind, a phase's main-thread time is its launch time, not its GPU time."""
    run = _Run(config)
    run.run()
    return {**{name: ns / _NS_PER_US for name, ns in run.phase_ns.items()}, "wall": run.end / _NS_PER_US}


def trace_bytes(config: SimConfig = SimConfig(), compress: bool = False) -> bytes:
    """The trace file's exact bytes: compact JSON, gzipped with mtime 0 and no file name when ``compress``."""
    data = json.dumps(simulate(config), separators=(",", ":")).encode()
    if not compress:
        return data
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as f:  # same header on every Python
        f.write(data)
    return buffer.getvalue()


def trace_path(path: str | os.PathLike, name: str = "path") -> Path:
    """``path`` as a Path if a trace can be written there; else ValueError naming ``name`` (see ``output_file``)."""
    if not Path(path).name.endswith((".json", ".json.gz")):
        raise ValueError(f"{name} must end with .json or .json.gz, got {str(path)!r}")
    return output_file(name, path)


def write_trace(config: SimConfig, path: str | os.PathLike) -> Path:
    """Write the trace to ``path`` (``.json`` or ``.json.gz``) atomically (:mod:`gpucost_lab.atomic`).
    Returns the path."""
    path = trace_path(path)
    return atomic_write_bytes(path, trace_bytes(config, compress=path.name.endswith(".gz")))


__all__ = ["SCENARIOS", "SimConfig", "phase_totals_us", "simulate", "trace_bytes", "trace_path", "write_trace"]
