"""The memory ledger's activation bytes against activation memory measured while training, for three models.

Models: an MLP (784-1024-1024-10), a small CNN (three Conv2d+ReLU+MaxPool2d blocks on 3x32x32, then a Linear) and a
small transformer (``nn.TransformerEncoder``, 2 layers, d_model 128, 4 heads, sequence 64, mean-pooled into a
Linear head). All float32, AdamW, batch ``--batch``; every batch owns its storage (``.clone()``).

- ledger: ``gpucost_lab.memory.from_model.measure_model_memory(...).activation_bytes_per_sample`` (the storages autograd
  saves for backward).
- independent: the CPU profiler's ``[memory]`` events (``profile_memory=True``) during a real training step after
  two warm-up steps. Activation bytes = the allocator's running total just after the forward returns minus the
  total just before the batch is cloned (so the batch, which the first layer saves, counts; parameters, grads and
  optimizer state, allocated earlier, do not), minus the output logits and loss (held by the caller, not saved
  by the model). Divided by the batch size. The peak during the forward, over the same baseline, is reported
  beside it (it also holds temporaries freed before the forward returns).

Target: ledger within 10% of the independent figure for each model. Also reported: the "4x parameters"
weights-only estimate (parameters + grads + two AdamW moments) against the measured training total
(4x parameters + measured activations at the batch): how far the weights-only figure undershoots.

Peaks (``peak_results``): the ledger's peak, ``MemoryLedger.peak_gb`` (static + activations at the microbatch, or
with full recomputation what (blocks - 1) blocks keep + one recomputed block) against the peak of a whole training
step measured by the profiler, for two stacks of 8 equal blocks: 8 ``nn.TransformerEncoderLayer`` (d_model 128, 4
heads, feed-forward 512, dropout 0, sequence 64) and 8 feed-forward blocks (Linear 256-1024, ReLU, Linear
1024-256). Each is trained as one microbatch per optimizer step and with gradient accumulation (4 microbatches,
each cloned from the data as a loader would hand it over, loss / 4), without and with full recomputation
(``torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)`` around every block), AdamW, float32,
``zero_grad()`` (gradients freed between steps). Ledger inputs from ``measure_model_memory(...,
backward_working=True)`` on the plain model at the microbatch: static bytes, activation bytes per sample, blocks = 8,
the kept share = a block's input bytes / a block's activation bytes, and for the whole-step ledger
(``ModelMemory.ledger(whole_step=True)``, the one the target applies to) the gradient bytes and backward's working
memory (measured in one plain step with the gradients resident, no recomputation). The simplified ledger (the
course's budget: static + activations) is reported beside it. Measured: the model, optimizer,
one warm-up step and the measured step all run inside
the profiler; the peak of the allocator's running total during the measured step, over the total before the model
was built. The residual is also given in blocks' activations (measured - ledger, over one block's activations).
Target: within 10%. With ``--device cuda`` (``benchmarks/gpu_check.sh``) only the peaks run, on the GPU, measured
with ``torch.cuda.max_memory_allocated`` over the memory allocated before the model was built.

    .venv/bin/python benchmarks/ledger_accuracy.py [--batch 64] [--no-peaks] [--device cuda]

Prints one JSON line; exit 0 even when short.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import tempfile

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from gpucost_lab.measure.contract import cpu_model
from gpucost_lab.memory.from_model import measure_model_memory


class TinyTransformer(nn.Module):
    def __init__(self, d_model: int = 128, classes: int = 10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=4 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(dim=1))


def models() -> dict:
    torch.manual_seed(0)
    mlp = nn.Sequential(
        nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    cnn = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(128 * 4 * 4, 10),
    )
    return {"mlp": (mlp, (784,)), "cnn": (cnn, (3, 32, 32)), "transformer": (TinyTransformer(), (64, 128))}


def _loss(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()


def profiled_activation_bytes(model: nn.Module, source: torch.Tensor) -> tuple[int, int, int]:
    """(held after forward, peak during forward, output+loss bytes), from the profiler's [memory] events."""
    from torch.profiler import ProfilerActivity, profile, record_function

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()

    def step(x):
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = _loss(out)
        loss.backward()
        opt.step()

    for _ in range(2):  # grads and optimizer state exist before the measured step
        step(source.clone())
    opt.zero_grad(set_to_none=False)  # keep grads resident: nothing static is freed or allocated in the window
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("BEGIN"):
            pass
        x = source.clone()
        out = model(x)
        with record_function("FORWARD_DONE"):
            pass
        loss = _loss(out)
        with record_function("LOSS_DONE"):
            pass
        loss.backward()
        opt.step()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    marks = {e["name"]: e["ts"] for e in events if e.get("name") in ("BEGIN", "FORWARD_DONE", "LOSS_DONE")}
    mem = sorted(
        (e["ts"], e["args"]["Total Allocated"])
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0
    )

    def total_at(ts: float) -> int:
        before = [a for t, a in mem if t <= ts]
        return before[-1] if before else 0

    base = total_at(marks["BEGIN"])
    held = total_at(marks["FORWARD_DONE"]) - base
    peak = max((a for t, a in mem if marks["BEGIN"] <= t <= marks["FORWARD_DONE"]), default=base) - base
    caller_bytes = out.numel() * out.element_size()
    return held, peak, caller_bytes


def _transformer_stack() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True) for _ in range(8)])


def _feed_forward_stack() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)) for _ in range(8)])


# name: (model factory, sample shape, microbatches)
STACKS = {
    "transformer x8": (_transformer_stack, (64, 128), (16, 48)),
    "feed-forward x8": (_feed_forward_stack, (256,), (512, 2048)),
}
PEAK_CASES = ((1, False), (4, False), (1, True), (4, True))  # (accumulation steps, full recomputation)


def _train_step(
    model: nn.Module, opt: torch.optim.Optimizer, source: torch.Tensor, microbatch: int, k: int, recompute: bool
) -> None:
    opt.zero_grad()
    for i in range(k):
        x = source[i * microbatch : (i + 1) * microbatch].clone()  # one microbatch, as a loader hands it over
        if recompute:
            for block in model:
                x = checkpoint(block, x, use_reentrant=False)
        else:
            x = model(x)
        loss = _loss(x) / k
        del x
        loss.backward()
        del loss
    opt.step()


def profiled_step_peak(make_model, source: torch.Tensor, microbatch: int, k: int, recompute: bool) -> int:
    """Peak bytes of one training step (after a warm-up step), everything allocated inside the profiler."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model = make_model().train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        _train_step(model, opt, source, microbatch, k, recompute)  # gradients and optimizer state exist after it
        with record_function("BEGIN"):
            pass
        _train_step(model, opt, source, microbatch, k, recompute)
        with record_function("END"):
            pass
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    marks = {e["name"]: e["ts"] for e in events if e.get("name") in ("BEGIN", "END")}
    mem = sorted(
        (e for e in events if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0),
        key=lambda e: e["ts"],
    )
    # the running total carries over from earlier profiling sessions: start from the total before the first event
    base = mem[0]["args"]["Total Allocated"] - mem[0]["args"]["Bytes"]
    return max(e["args"]["Total Allocated"] for e in mem if marks["BEGIN"] <= e["ts"] <= marks["END"]) - base


def cuda_step_peak(make_model, source: torch.Tensor, microbatch: int, k: int, recompute: bool) -> int:
    """Peak bytes of one training step (after a warm-up step) on CUDA: ``torch.cuda.max_memory_allocated`` over the
    memory allocated before the model was built."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    model = make_model().to(source.device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    _train_step(model, opt, source, microbatch, k, recompute)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    _train_step(model, opt, source, microbatch, k, recompute)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del model, opt
    torch.cuda.empty_cache()
    return peak


def peak_rows(device: str = "cpu") -> list[dict]:
    rows = []
    step_peak = cuda_step_peak if device == "cuda" else profiled_step_peak
    for name, (make_model, shape, batches) in STACKS.items():
        for microbatch in batches:
            source = torch.randn(4 * microbatch, *shape, generator=torch.Generator().manual_seed(1)).to(device)
            mm = measure_model_memory(
                make_model().to(device), (source[:microbatch].clone(),), loss_fn=_loss, backward_working=True
            )
            blocks = len(make_model())
            block_gb = mm.activation_bytes_per_sample / blocks / 1e9  # one block's activations per sample
            keep = math.prod(shape) * 4 / 1e9 / block_gb  # a block's input over its activations
            simple = mm.ledger(device_gb=1000.0, blocks=blocks, checkpoint_keep_fraction=keep)
            ledger = mm.ledger(device_gb=1000.0, blocks=blocks, checkpoint_keep_fraction=keep, whole_step=True)
            for k, recompute in PEAK_CASES:
                measured = step_peak(make_model, source, microbatch, k, recompute)
                mode = "full" if recompute else "none"
                predicted = ledger.peak_gb(microbatch, recompute=mode, accumulation_steps=k) * 1e9
                simplified = simple.peak_gb(microbatch, recompute=mode) * 1e9
                rows.append(
                    {
                        "model": name,
                        "device": device,
                        "microbatch": microbatch,
                        "accumulation_steps": k,
                        "global_batch": microbatch * k,
                        "recompute": "full" if recompute else "none",
                        "static_bytes": mm.static_bytes,
                        "kept_share": keep,
                        "backward_working_bytes": mm.backward_working_bytes,
                        "ledger_peak_bytes": predicted,
                        "measured_peak_bytes": measured,
                        "simplified_ledger_peak_bytes": simplified,
                        "simplified_over_measured": simplified / measured,
                        "ledger_over_measured": predicted / measured,
                        "within_10pct": abs(predicted / measured - 1) <= 0.10,
                        "residual_blocks": (measured - predicted) / (block_gb * 1e9 * microbatch),
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-peaks", action="store_true", help="skip the whole-step peak comparison")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cuda: only the peaks, measured with torch.cuda.max_memory_allocated",
    )
    args = parser.parse_args()
    rows = []
    for name, (model, shape) in models().items() if args.device == "cpu" else ():
        g = torch.Generator().manual_seed(1)
        source = torch.randn(args.batch, *shape, generator=g)
        ledger = measure_model_memory(model, (source.clone(),), loss_fn=_loss)
        held, peak, out_bytes = profiled_activation_bytes(model, source)
        measured = held - out_bytes
        param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        four_x = 4 * param_bytes
        total = four_x + measured
        ratio = ledger.activation_bytes_per_sample / (measured / args.batch)
        rows.append(
            {
                "model": name,
                "parameters": sum(p.numel() for p in model.parameters()),
                "batch": args.batch,
                "ledger_activation_bytes_per_sample": ledger.activation_bytes_per_sample,
                "measured_activation_bytes_per_sample": measured / args.batch,
                "measured_peak_during_forward_bytes_per_sample": (peak - out_bytes) / args.batch,
                "ledger_over_measured": ratio,
                "within_10pct": abs(ratio - 1) <= 0.10,
                "ledger_static_bytes": ledger.static_bytes,
                "four_x_parameters_bytes": four_x,
                "measured_training_total_bytes": total,
                "four_x_over_measured_total": four_x / total,
            }
        )
    peaks = [] if args.no_peaks else peak_rows(args.device)
    print(
        json.dumps(
            {
                "benchmark": "ledger_accuracy",
                "device": args.device,
                "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
                "cpu_model": cpu_model(),
                "cpu_cores": os.cpu_count(),
                "python": platform.python_version(),
                "torch": torch.__version__,
                "results": rows,
                "peak_results": peaks,
                "targets": {
                    "activation_bytes_per_sample": "ledger within 10% of the profiler-measured figure",
                    "peak": "ledger's whole-step peak within 10% of the profiler-measured peak",
                },
                "verdict": "pass" if all(r["within_10pct"] for r in rows + peaks) else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
