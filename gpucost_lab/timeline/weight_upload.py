"""Which host-to-device copies of a trace are the model's weights being uploaded (chapter 02, the A100 trace).

A trace of a short benchmark often starts with ``model.cuda()``: one copy per parameter tensor, from the pageable
memory the model was built in, each a blocking ``aten::to`` (``cudaMemcpyAsync``, then ``cudaStreamSynchronize``).
Those copies happen once per process, not once per batch, so pinning the data loader's batches does nothing for
them. :func:`weight_copies` lines a trace's host-to-device copies up with a model's parameter tensors, in
registration order (the order ``Module.cuda()`` moves them), so a learner can check the claim byte for byte.

:func:`alexnet` is the model of the course's ``a100_alexnet_train`` trace: torchvision's AlexNet, layer for layer
(torchvision, ``torchvision/models/alexnet.py``, class ``AlexNet``: five convolutions, three linear layers,
61,100,840 parameters at 1000 classes), built here without torchvision, by default on the ``meta`` device so that
no memory is allocated for its weights.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from gpucost_lab._validate import InputError
from gpucost_lab.timeline.load import Trace

COLUMNS = ["copy", "bytes", "parameter", "shape", "parameter_bytes", "same_bytes", "annotation"]


def alexnet(num_classes: int = 1000, device: str | torch.device = "meta") -> nn.Module:
    """torchvision's AlexNet (``features``, ``avgpool``, ``classifier``), float32, on ``device``."""
    with torch.device(device):
        model = nn.Module()
        model.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        model.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        model.classifier = nn.Sequential(
            nn.Dropout(),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )
    return model


def _enclosing_annotation(events: pd.DataFrame, tid: str, ts_us: float) -> str:
    """The innermost user annotation on thread ``tid`` that holds the instant ``ts_us`` ("" when none)."""
    ann = events[(events["kind"] == "annotation") & (events["tid"] == tid)]
    ann = ann[(ann["ts_us"] <= ts_us) & (ann["ts_us"] + ann["dur_us"] >= ts_us)]
    return "" if ann.empty else str(ann.loc[ann["dur_us"].idxmin(), "name"])


def weight_copies(trace: Trace, model: nn.Module) -> pd.DataFrame:
    """The trace's host-to-device copies, in time order, beside ``model``'s parameters in registration order.

    One row per copy (indexed from 1): ``copy`` (its name, with the host memory it came from), ``bytes``,
    ``parameter`` and ``shape`` (the parameter in the same place; empty past the last one), ``parameter_bytes``
    (numel x element size), ``same_bytes`` and ``annotation`` (the innermost user annotation around the host call
    that issued the copy, matched by correlation id). All ``same_bytes`` True, with as many copies as parameter
    tensors, is the signature of ``model.cuda()``.
    """
    if not isinstance(trace, Trace):
        raise InputError("trace", f"trace must be a loaded Trace (timeline.load_trace), got {type(trace).__name__}")
    if not isinstance(model, nn.Module):
        raise InputError("model", f"model must be a torch.nn.Module, got {type(model).__name__}")
    ev = trace.events
    copies = ev[(ev["kind"] == "memcpy") & ev["name"].str.contains("HtoD", regex=False)].sort_values("ts_us")
    runtime = ev[(ev["kind"] == "runtime") & ev["correlation"].notna()].drop_duplicates("correlation")
    launch = runtime.set_index("correlation")[["tid", "ts_us"]]
    params = list(model.named_parameters())
    rows = []
    for i, (_, copy) in enumerate(copies.iterrows()):
        name, p = params[i] if i < len(params) else ("", None)
        nbytes = None if p is None else p.numel() * p.element_size()
        corr = copy["correlation"]
        host = launch.loc[corr] if pd.notna(corr) and corr in launch.index else None
        rows.append(
            {
                "copy": copy["name"],
                "bytes": int(copy["bytes"]) if pd.notna(copy["bytes"]) else None,
                "parameter": name,
                "shape": "" if p is None else str(tuple(p.shape)),
                "parameter_bytes": nbytes,
                "same_bytes": nbytes is not None and pd.notna(copy["bytes"]) and int(copy["bytes"]) == nbytes,
                "annotation": "" if host is None else _enclosing_annotation(ev, host["tid"], float(host["ts_us"])),
            }
        )
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.index = pd.RangeIndex(1, len(table) + 1, name="rank")
    return table


__all__ = ["COLUMNS", "alexnet", "weight_copies"]
