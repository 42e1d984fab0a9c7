"""Latency of the course widgets: time from setting a slider to the outputs being redrawn.

Without a frontend, ipywidgets runs observers synchronously, so timing the assignment
``slider.value = v`` measures the whole redraw (validation, ledger or prediction, HTML/SVG strings).
For each widget: warm-up changes, then ``--changes`` timed changes sweeping the slider's range (for the ledger, also
with bf16-mixed, selective recomputation and K = 4, and changes of those settings themselves).
Prints one JSON line with the median and p95 in ms per widget and a verdict, "pass" when every median is
under the target (30 ms by default, the budget for a slider that feels live while dragged), else "short".

As a reference measured in the same run, it also times what the widgets avoid: redrawing the same
stacked bar with matplotlib (Agg, rendered to PNG, as an ``Output`` + ``plt.show()`` would), and
reports each widget's median as a ratio to it.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time

from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.widgets import cost_predictor_widget, memory_ledger_widget


def _time_changes(set_value, values: list, warmup: int) -> list[float]:
    for v in values[:warmup]:
        set_value(v)
    times_ms = []
    for v in values[warmup:]:
        t0 = time.perf_counter()
        set_value(v)
        times_ms.append((time.perf_counter() - t0) * 1e3)
    return times_ms


def _sweep(candidates: list, n: int) -> list:
    """``n`` values cycling through ``candidates`` with no two neighbours equal (each one is a change)."""
    return [candidates[i % len(candidates)] for i in range(n)]


def _matplotlib_bar_ms(repeats: int) -> list[float]:
    """Reference: one redraw of the ledger's stacked bar with matplotlib, rendered to PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def draw(microbatch: int) -> None:
        activations_gb = 0.34 * microbatch
        fig, ax = plt.subplots(figsize=(6, 0.6))
        ax.barh([0], [3.2], color="#555555")
        ax.barh([0], [activations_gb], left=[3.2], color="#1f77b4")
        ax.barh([0], [2.4], left=[21.6], color="#bdbdbd")
        ax.axvline(21.6, ls="--", color="k")
        ax.axvline(24.0, color="k")
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)

    return _time_changes(draw, _sweep(list(range(1, 129)), 3 + repeats), 3)


def _summary(times_ms: list[float]) -> dict:
    ordered = sorted(times_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(ordered), "p95_ms": p95, "max_ms": ordered[-1], "changes": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--target-ms", type=float, default=30.0)
    args = parser.parse_args()
    run = Run.start("ipywidgets", "matplotlib")

    ledger = memory_ledger_widget()
    predictor = cost_predictor_widget()
    microbatches = list(range(1, 129))  # crosses the budget (55+) and back
    fractions = [round(-0.5 + 0.01 * i, 2) for i in range(151)]

    def set_microbatch(v):
        ledger.slider.value = v

    def set_gain(v):
        predictor.gain.value = v

    n = args.warmup + args.changes
    results = {"memory_ledger": _summary(_time_changes(set_microbatch, _sweep(microbatches, n), args.warmup))}
    # a change of precision, recomputation or K redraws too, and moves the slider's end (1..128 up to 1..570)
    settings = [(p, r, k) for p in ("fp32", "bf16-mixed") for r in ("none", "selective", "full") for k in (1, 4)]

    def set_settings(v):
        ledger.precision.value, ledger.recompute.value, ledger.accumulation.value = v

    results["memory_ledger_settings"] = _summary(_time_changes(set_settings, _sweep(settings, n), args.warmup))
    set_settings(("bf16-mixed", "selective", 4))
    results["memory_ledger_bf16_selective_k4"] = _summary(
        _time_changes(set_microbatch, _sweep(list(range(1, ledger.slider.max + 1)), n), args.warmup)
    )
    set_settings(("fp32", "full", 1))
    results["memory_ledger_checkpointing"] = _summary(
        _time_changes(set_microbatch, _sweep(microbatches[::-1], n), args.warmup)
    )
    results["cost_predictor"] = _summary(_time_changes(set_gain, _sweep(fractions, n), args.warmup))
    reference_ms = statistics.median(_matplotlib_bar_ms(20))
    for r in results.values():
        r["ratio_to_matplotlib_reference"] = r["median_ms"] / reference_ms
    # the outputs really were redrawn: the last value set is the one shown
    assert ledger.result is not None and ledger.result.microbatch == _sweep(microbatches[::-1], n)[-1]
    assert predictor.prediction["throughput_gain"] == _sweep(fractions, n)[-1]

    over = [name for name, r in results.items() if r["median_ms"] > args.target_ms]
    print(
        json.dumps(
            {
                "benchmark": "widget_latency",
                "target_median_ms": args.target_ms,
                "matplotlib_bar_reference_median_ms": reference_ms,
                "widgets": results,
                "run": run.finish(),
                "verdict": "short" if over else "pass",
            }
        )
    )
    return 0  # the verdict says whether the target was met; a non-zero status means the benchmark itself broke


if __name__ == "__main__":
    sys.exit(main())
