"""The memory ledger's activation bytes against activation memory measured while training, for three models.

Models: an MLP (784-1024-1024-10), a small CNN (three Conv2d+ReLU+MaxPool2d blocks on 3x32x32, then a Linear) and a
small transformer (``nn.TransformerEncoder``, 2 layers, d_model 128, 4 heads, sequence 64, mean-pooled into a
Linear head). All float32, AdamW, batch ``--batch``; every batch owns its storage (``.clone()``).

- ledger: ``gpucost_lab.model_memory.measure_model_memory(...).activation_bytes_per_sample`` (the storages autograd
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

    .venv/bin/python benchmarks/ledger_accuracy.py [--batch 64]

Prints one JSON line; exit 0 even when short.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import tempfile

import torch
from torch import nn

from gpucost_lab.model_memory import measure_model_memory


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
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                        nn.Linear(1024, 10))
    cnn = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(128 * 4 * 4, 10))
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
    mem = sorted((e["ts"], e["args"]["Total Allocated"]) for e in events
                 if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0)

    def total_at(ts: float) -> int:
        before = [a for t, a in mem if t <= ts]
        return before[-1] if before else 0

    base = total_at(marks["BEGIN"])
    held = total_at(marks["FORWARD_DONE"]) - base
    peak = max((a for t, a in mem if marks["BEGIN"] <= t <= marks["FORWARD_DONE"]), default=base) - base
    caller_bytes = out.numel() * out.element_size()
    return held, peak, caller_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    rows = []
    for name, (model, shape) in models().items():
        g = torch.Generator().manual_seed(1)
        source = torch.randn(args.batch, *shape, generator=g)
        ledger = measure_model_memory(model, (source.clone(),), loss_fn=_loss)
        held, peak, out_bytes = profiled_activation_bytes(model, source)
        measured = held - out_bytes
        param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        four_x = 4 * param_bytes
        total = four_x + measured
        ratio = ledger.activation_bytes_per_sample / (measured / args.batch)
        rows.append({
            "model": name, "parameters": sum(p.numel() for p in model.parameters()), "batch": args.batch,
            "ledger_activation_bytes_per_sample": ledger.activation_bytes_per_sample,
            "measured_activation_bytes_per_sample": measured / args.batch,
            "measured_peak_during_forward_bytes_per_sample": (peak - out_bytes) / args.batch,
            "ledger_over_measured": ratio, "within_10pct": abs(ratio - 1) <= 0.10,
            "ledger_static_bytes": ledger.static_bytes,
            "four_x_parameters_bytes": four_x, "measured_training_total_bytes": total,
            "four_x_over_measured_total": four_x / total,
        })
    print(json.dumps({
        "benchmark": "ledger_accuracy", "cpu_model": _cpu_model(), "cpu_cores": os.cpu_count(),
        "python": platform.python_version(), "torch": torch.__version__, "results": rows,
        "targets": {"activation_bytes_per_sample": "ledger within 10% of the profiler-measured figure"},
        "verdict": "pass" if all(r["within_10pct"] for r in rows) else "short"}))


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
