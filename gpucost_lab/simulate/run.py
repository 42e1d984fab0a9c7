"""The simulated training process, event by event (chapter 02, "read the timeline").

:class:`SimRun` is the discrete-event model :func:`gpucost_lab.simulate.write.simulate` runs (its module docstring says
what it models and what it leaves out): the main thread's clock, the CUDA stream's, the data-loader workers', and
the calls of one training step (next batch, host-to-device copy, forward, backward, optimizer, the optional loss
read, eval and checkpoint), each written into the trace (:class:`gpucost_lab.simulate.trace.TraceLog`) as a real
``torch.profiler`` run records it. ``phase_ns`` keeps the main thread's time per phase: the ground truth that
:func:`gpucost_lab.simulate.write.phase_totals_us` reports.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import asdict

from gpucost_lab.roofline.bound import linear_layer_cost, lookup
from gpucost_lab.simulate.config import (
    ADAM_BYTES_PER_PARAM,
    CHECKPOINT_STATES,
    COPY_LATENCY_US,
    CPU_JITTER,
    DISK_WRITE_BYTES_PER_S,
    KERNEL_LATENCY_US,
    LAUNCH_QUEUE_DEPTH,
    LAUNCH_US,
    MEMCPY_CALL_US,
    NEXT_OVERHEAD_US,
    OP_OVERHEAD_US,
    PAGEABLE_COPY_BYTES_PER_S,
    PINNED_COPY_BYTES_PER_S,
    PREFETCH_FACTOR,
    ROOFLINE_EFFICIENCY,
    STATE_BYTES_PER_PARAM,
    SYNC_CALL_US,
    SimConfig,
)
from gpucost_lab.simulate.trace import WORKER_PID_BASE, TraceLog, ns

# Kernel names as an A100 trace shows them (templates shortened): fp32 / bf16 matmuls by layout, then the rest.
_GEMM = {False: "ampere_sgemm_128x64_{}", True: "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_{}"}
_ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::{}, at::detail::Array<char*, {}> >"
_RELU = _ELEMENTWISE.format("clamp_min_scalar_kernel_impl", 2)
_RELU_BWD = _ELEMENTWISE.format("threshold_kernel_impl", 3)
_LOSS = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
_ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4> >"
_NEXT = "enumerate(DataLoader)#_{}DataLoaderIter.__next__"


class SimRun(TraceLog):
    """The simulation's state: the main thread's clock, the stream's, the workers' and the trace so far."""

    def __init__(self, c: SimConfig):
        super().__init__(allocated=c.layers * (c.hidden**2 + c.hidden) * STATE_BYTES_PER_PARAM)
        self.c, self.acc, self.rng = c, lookup(c.gpu), random.Random(c.seed)
        self.gpu_free = 0  # when stream 7 has finished everything queued
        self.queued: deque[int] = deque()  # end times of the GPU operations queued, oldest first
        self.phase_ns = dict.fromkeys(
            ("data", "h2d_copy", "forward", "backward", "optimizer", "item_sync", "eval", "checkpoint"), 0
        )
        self.peak_flops_per_s = self.acc.peak_flops_per_s(c.dtype)
        gemm = linear_layer_cost(c.batch_size, c.hidden, c.hidden, c.dtype, bias=False)  # one matmul, no bias
        self.gemm_us = self.kernel_us(gemm.flops, gemm.bytes_moved)
        self.act_bytes = c.batch_size * c.hidden * c.element_bytes  # one layer's output
        self.worker_free = [0] * c.num_workers  # when each data-loader worker is free again
        self.ready: dict[int, int] = {}  # batch -> when its worker has decoded it
        for k in range(min(PREFETCH_FACTOR * c.num_workers, c.steps)):
            self.dispatch(k, 0)

    def cpu(self, us: float) -> int:
        """A CPU duration of ``us`` microseconds, jittered, in ns."""
        return ns(us * self.rng.uniform(1 - CPU_JITTER, 1 + CPU_JITTER))

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
        k_start = self.enqueue(self.t, ns(gpu_us))
        self.gpu_event("kernel", kernel, k_start, self.gpu_free, corr, ext, rt_start, {"queued": 0})
        self.t += self.cpu(OP_OVERHEAD_US / 2)
        self.emit("cpu_op", op, start, self.t, {"External id": ext})
        return addr

    def copy(self, direction: str, nbytes: int, pinned: bool, blocking: bool, ext: int | None = None) -> None:
        """An ``aten::copy_`` issuing one cudaMemcpyAsync (a bare call inside the op ``ext`` when given); a
        blocking one returns when the copy has ended."""
        start, op = self.t, ext is None
        if ext is None:
            ext = self.new_id()
            self.t += self.cpu(OP_OVERHEAD_US / 2)
        rt_start, corr = self.t, self.new_id()
        self.wait_for_queue_slot()
        bandwidth = PINNED_COPY_BYTES_PER_S if pinned else PAGEABLE_COPY_BYTES_PER_S
        copy_ns = ns(nbytes / bandwidth * 1e6 + COPY_LATENCY_US)
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
            assert pre is not None and out is not None  # both allocate their output
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

    def run(self) -> dict:
        """Run every step; the whole trace, as :func:`gpucost_lab.simulate.write.simulate` returns it."""
        for k in range(self.c.steps):
            self.train_step(k)
        device = {"name": (self.acc.aliases or (self.acc.name,))[0], "totalGlobalMem": int(self.acc.memory_gb * 1e9)}
        return self.document(device, asdict(self.c), self.c.num_workers)


__all__ = ["SimRun"]
