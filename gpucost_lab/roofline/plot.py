"""Draw an accelerator's roofline and place kernels on it (chapter 04).

:func:`plot_roofline` draws the two roofs on log-log axes: the memory roof (intensity x bandwidth)
rising to the ridge point, then the flat compute roof (the dense peak for the dtype). Each point is a
kernel at its arithmetic intensity, drawn on the roof (the most it could attain) and, when a measured
rate is given, at that rate too: a measured point above the roof is impossible. :func:`roofline_table`
is the same information as text, to read beside the picture. Each figure records its alt text, what it shows in one
sentence, every roofline drawn on it included (:func:`gpucost_lab.formatting.figure` shows it with the picture).

A point is ``(label, intensity)`` or ``(label, intensity, measured_flops_per_s)``, where ``intensity``
is FLOP per byte, or a :class:`~gpucost_lab.roofline.bound.LayerCost` (from ``linear_layer_cost``), which also
gives the kernel's FLOPs and so the shortest time it could take on this accelerator.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from gpucost_lab._validate import positive
from gpucost_lab.formatting import describe
from gpucost_lab.roofline.bound import Accelerator, LayerCost, Roofline, dtype_name, lookup

TABLE_COLUMNS = [
    "accelerator",
    "label",
    "dtype",
    "intensity_flops_per_byte",
    "ridge_point_flops_per_byte",
    "bound",
    "attainable_tflops",
]
FLOPS_COLUMNS = ["flops", "min_time_us"]  # added when a point is a LayerCost
MEASURED_COLUMNS = ["measured_tflops", "fraction_of_attainable", "impossible"]  # added when a point has a rate
DTYPE_COLOURS = {"float32": "tab:blue", "tf32": "tab:purple", "float16": "tab:orange", "bfloat16": "tab:red"}
MEMORY_ROOF_COLOUR = "dimgray"
_DRAWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per figure, what each call drew, for its alt text


@dataclass(frozen=True)
class _Point:
    label: str
    intensity_flops_per_byte: float
    flops: int | None
    measured_flops_per_s: float | None


def _accelerator(accelerator: Accelerator | str) -> Accelerator:
    return accelerator if isinstance(accelerator, Accelerator) else lookup(accelerator)


def _points(points: Iterable[Sequence]) -> list[_Point]:
    allowed = "(label, intensity) or (label, intensity, measured_flops_per_s)"
    parsed = []
    for i, point in enumerate(points):
        if isinstance(point, (str, bytes)) or not isinstance(point, Sequence) or len(point) not in (2, 3):
            raise ValueError(f"points[{i}] must be {allowed}, got {point!r}")
        label, intensity, *measured = point
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"points[{i}] label must be a non-empty string, got {label!r}")
        flops = None
        if isinstance(intensity, LayerCost):
            flops, intensity = intensity.flops, intensity.intensity_flops_per_byte
        intensity = positive(f"points[{i}] intensity_flops_per_byte", intensity)
        rate = positive(f"points[{i}] measured_flops_per_s", measured[0]) if measured else None
        parsed.append(_Point(label, intensity, flops, rate))
    return parsed


def roofline_table(
    accelerator: Accelerator | str, dtype: str | torch.dtype = "float32", points: Iterable[Sequence] = ()
) -> pd.DataFrame:
    """One row per point: its intensity, the ridge point, memory- or compute-bound, and the attainable rate.

    The last column, ``peak_source``, names where the peak comes from. With a ``LayerCost`` as the
    intensity, ``flops`` and ``min_time_us`` (FLOPs / attainable rate) are added; with a measured rate,
    ``measured_tflops``, ``fraction_of_attainable`` and ``impossible`` (measured above the roof: the
    usual cause is timing without synchronizing the device).
    """
    acc = _accelerator(accelerator)
    roof = acc.roofline(dtype)
    parsed = _points(points)
    rows = []
    for p in parsed:
        attainable = roof.attainable_flops_per_s(p.intensity_flops_per_byte)
        row = {
            "accelerator": acc.name,
            "label": p.label,
            "dtype": dtype_name(dtype),
            "intensity_flops_per_byte": p.intensity_flops_per_byte,
            "ridge_point_flops_per_byte": roof.ridge_point_flops_per_byte,
            "bound": roof.bound(p.intensity_flops_per_byte),
            "attainable_tflops": attainable / 1e12,
            "peak_source": acc.peak_source(dtype),
        }
        if p.flops is not None:
            row.update(flops=p.flops, min_time_us=p.flops / attainable * 1e6)
        if p.measured_flops_per_s is not None:
            row.update(
                measured_tflops=p.measured_flops_per_s / 1e12,
                fraction_of_attainable=p.measured_flops_per_s / attainable,
                impossible=p.measured_flops_per_s > attainable,
            )
        rows.append(row)
    columns = list(TABLE_COLUMNS)
    if any(p.flops is not None for p in parsed):
        columns += FLOPS_COLUMNS
    if any(p.measured_flops_per_s is not None for p in parsed):
        columns += MEASURED_COLUMNS
    columns.append("peak_source")  # where the dense peak comes from
    return pd.DataFrame(rows, columns=columns)


def _decade_range(values: Iterable[float]) -> tuple[float, float]:
    """Whole powers of ten enclosing every value with a factor of 4 to spare on each side."""
    values = list(values)
    return 10.0 ** math.floor(math.log10(min(values) / 4)), 10.0 ** math.ceil(math.log10(max(values) * 4))


def _tflops(x: float) -> str:
    return f"{x / 1e12:.3g} TFLOP/s"


def plot_roofline(
    accelerator: Accelerator | str, dtype: str | torch.dtype = "float32", points: Iterable[Sequence] = (), ax=None
):
    """The roofline of ``accelerator`` in ``dtype``, with ``points`` on it; returns the Figure.

    Log-log axes: intensity (FLOP/byte) across, TFLOP/s up. The memory roof (grey, labelled with the
    bandwidth) runs up to the ridge point, where the compute roof (labelled with the dense peak) takes
    over; the ridge point is marked. Each point is a filled marker on the roof and, with a measured
    rate, a hollow marker at that rate joined to it by a dotted line. Call it again with the same
    ``ax`` to compare dtypes: the memory roof is the same line, the compute roof and ridge move.
    """
    import matplotlib.pyplot as plt

    acc = _accelerator(accelerator)
    roof: Roofline = acc.roofline(dtype)
    name = dtype_name(dtype)
    parsed = _points(points)
    lo, hi = _decade_range([roof.ridge_point_flops_per_byte, *(p.intensity_flops_per_byte for p in parsed)])
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.5))
    earlier = any(line.get_gid() == "compute-roof" for line in ax.lines)  # a roofline drawn before on this ax
    previous = (ax.get_xlim(), ax.get_ylim()) if earlier else None
    colour = DTYPE_COLOURS.get(name, "tab:green")
    _draw_roofs(ax, acc, roof, name, colour, (lo, hi))
    for p in parsed:
        _draw_point(ax, roof, p, colour)
    _frame(ax, acc, roof, parsed, (lo, hi), previous)
    drawn = _DRAWN.setdefault(ax.figure, [])
    drawn.append(_roof_alt(roof, name, parsed))
    return describe(
        ax.figure,
        f"{acc.name} roofline on log-log axes (arithmetic intensity in FLOP/byte across, TFLOP/s up; memory roof "
        f"{acc.memory_bandwidth_gb_per_s:g} GB/s times the intensity): {'; '.join(drawn)}.",
    )


def _roof_alt(roof: Roofline, name: str, parsed: list[_Point]) -> str:
    """One roofline's part of the alt text: its compute roof and ridge point, and where each point sits."""
    points = []
    for p in parsed:
        x = p.intensity_flops_per_byte
        where = f"{p.label} at {x:.4g} FLOP/byte, {roof.bound(x)}, on the roof at "
        where += _tflops(roof.attainable_flops_per_s(x))
        if p.measured_flops_per_s is not None:
            where += f", measured {_tflops(p.measured_flops_per_s)}"
        points.append(where)
    return (
        f"{name} compute roof {_tflops(roof.peak_flops_per_s)}, ridge point {roof.ridge_point_flops_per_byte:.4g} "
        f"FLOP/byte" + "".join(f", {w}" for w in points)
    )


def _draw_roofs(ax, acc: Accelerator, roof: Roofline, name: str, colour: str, span: tuple[float, float]) -> None:
    """The memory roof from ``span``'s low end to the ridge point, the compute roof on to its high end, the ridge
    point, and their labels."""
    lo, hi = span
    ridge = roof.ridge_point_flops_per_byte
    peak_t = roof.peak_flops_per_s / 1e12
    ax.plot(
        [lo, ridge],
        [lo * roof.bandwidth_bytes_per_s / 1e12, peak_t],
        color=MEMORY_ROOF_COLOUR,
        lw=2,
        label=f"memory roof: {acc.memory_bandwidth_gb_per_s:g} GB/s x intensity",
        gid="memory-roof",
    )
    ax.plot(
        [ridge, hi],
        [peak_t, peak_t],
        color=colour,
        lw=2,
        label=f"{name} compute roof: {_tflops(roof.peak_flops_per_s)}",
        gid="compute-roof",
    )
    ax.plot(
        [ridge],
        [peak_t],
        marker="D",
        color=colour,
        ls="none",
        ms=7,
        gid="ridge-point",
        label=f"{name} ridge point: {ridge:.4g} FLOP/byte",
    )
    small = {"textcoords": "offset points", "fontsize": 8}
    ax.annotate(f"ridge {ridge:.4g} FLOP/B", (ridge, peak_t), xytext=(-6, 8), ha="right", color=colour, **small)
    ax.annotate(
        f"{name} peak {_tflops(roof.peak_flops_per_s)}", (hi, peak_t), xytext=(-4, 5), ha="right", color=colour, **small
    )
    ax.annotate(
        f"{acc.memory_bandwidth_gb_per_s:g} GB/s",
        (lo * 2, 2 * lo * roof.bandwidth_bytes_per_s / 1e12),
        xytext=(-2, 6),
        ha="left",
        color=MEMORY_ROOF_COLOUR,
        rotation=30,
        rotation_mode="anchor",
        **small,
    )


def _draw_point(ax, roof: Roofline, p: _Point, colour: str) -> None:
    """One kernel: a filled marker on the roof and, with a measured rate, a hollow one at that rate, joined by a
    dotted line and labelled "measured" or "impossible"."""
    x = p.intensity_flops_per_byte
    attainable_t = roof.attainable_flops_per_s(x) / 1e12
    ax.plot([x], [attainable_t], marker="o", color=colour, ls="none", ms=7, gid="point-attainable")
    ax.annotate(
        f"{p.label}: {attainable_t:.3g} TFLOP/s",
        (x, attainable_t),
        textcoords="offset points",
        xytext=(6, -12),
        fontsize=8,
    )
    if p.measured_flops_per_s is None:
        return
    measured_t = p.measured_flops_per_s / 1e12
    ax.plot([x] * 2, [attainable_t, measured_t], ls=":", color=colour, lw=1)
    ax.plot([x], [measured_t], marker="o", mfc="white", color=colour, ls="none", ms=7, gid="point-measured")
    verdict = "impossible" if p.measured_flops_per_s > roof.attainable_flops_per_s(x) else "measured"
    ax.annotate(
        f"{verdict}: {measured_t:.3g} TFLOP/s", (x, measured_t), textcoords="offset points", xytext=(6, 2), fontsize=8
    )


def _frame(
    ax,
    acc: Accelerator,
    roof: Roofline,
    parsed: list[_Point],
    span: tuple[float, float],
    previous: tuple[tuple[float, float], tuple[float, float]] | None,
) -> None:
    """Log axes spanning the roofs and every measured point (and ``previous``, the limits of a roofline drawn
    before on this ``ax``), labels, title, a legend with one entry per label, and the grid."""
    lo, hi = span
    ax.set_xscale("log")
    ax.set_yscale("log")
    measured_t = [p.measured_flops_per_s / 1e12 for p in parsed if p.measured_flops_per_s is not None]
    peak_t = roof.peak_flops_per_s / 1e12
    xlim = (lo, hi)
    ylim = (min([lo * roof.bandwidth_bytes_per_s / 1e12, *measured_t]) / 1.5, 2.5 * max([peak_t, *measured_t]))
    if previous is not None:  # keep what was drawn before in view
        previous_xlim, previous_ylim = previous
        xlim = (min(xlim[0], previous_xlim[0]), max(xlim[1], previous_xlim[1]))
        ylim = (min(ylim[0], previous_ylim[0]), max(ylim[1], previous_ylim[1]))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable (TFLOP/s)")
    ax.set_title(f"{acc.name} roofline (dense peaks, from the catalog)")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # the memory roof is one line however many dtypes are drawn
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)
