"""How each benchmark's JSON line becomes a row of RESULTS.md's table: a figure and a verdict (``collect.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NOT_RUN = "not run"


# ----------------------------------------------------------------------------------------------------------------
# formatting


def ratio(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def times(x: float) -> str:
    return f"{x:,.1f}x" if x < 100 else f"{x:,.0f}x"


def pct(x: float) -> str:
    return "0" if x == 0 else f"{x * 100:+.2g}%".replace("-", "\u2212")


def seconds(x: float) -> str:
    return f"{x:.3g} s" if x < 100 else f"{x:,.0f} s"


def mb(x: float) -> str:
    return f"{x:,.0f} MB"


def verdict_of(ok: bool) -> str:
    return "pass" if ok else "short"


def span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return ratio(lo) if f"{lo:.3f}" == f"{hi:.3f}" else f"{ratio(lo)}\u2013{ratio(hi)}"


# ----------------------------------------------------------------------------------------------------------------
# what each benchmark's rows say (figure, verdict) from its JSON line


@dataclass(frozen=True)
class Row:
    comparison: str
    target: str
    read: Callable[[dict], tuple[str, str]]  # the benchmark's JSON line -> (figure, verdict)


def _by_workload(result: dict) -> dict:
    return {r["workload"]: r for r in result["results"]}


def timer_medians(result: dict) -> tuple[str, str]:
    w = _by_workload(result)
    lin, mlp = w["linear_worked_example"], w["mlp_training_step"]
    figure = (
        f"{ratio(lin['ours_over_timer_median'])} / {ratio(mlp['ours_over_timer_median'])} "
        f"({result['threads']} thread{'s' if result['threads'] != 1 else ''}; medians of "
        f"{lin['rounds']} alternating rounds)"
    )
    return figure, verdict_of(lin["medians_agree"] and mlp["medians_agree"])


def timer_overhead(result: dict) -> tuple[str, str]:
    fraction = result["overhead_over_fastest_step"]
    figure = (
        f"{fraction:.1e} of the faster step ({result['harness_overhead_s_per_step']:.1e} s per step; "
        f"Timer's empty statement {result['timer_empty_stmt_s']:.1e} s)"
    )
    return figure, verdict_of(fraction < result.get("overhead_target_fraction", 0.01))


def _synthetic(result: dict) -> dict:
    return next(r for r in result["results"] if r["trace"].startswith("synthetic_"))


def hta_busy_idle(result: dict) -> tuple[str, str]:
    s = _synthetic(result)
    ok = s["targets_met"]["busy_idle_equal_to_hta"]
    ours = s["ours"]
    if ok:
        figure = f"equal, both backends (busy {ours['busy_us']:,.0f} \u00b5s, idle {ours['idle_us']:,.0f} \u00b5s)"
    else:
        diffs = [
            f"{m.removeprefix('vs_')}: busy {pct(s[m]['busy_rel_diff'])}, idle {pct(s[m]['idle_rel_diff'])}"
            for m in ("vs_hta_fastest", "vs_hta_default")
        ]
        figure = "differ (" + "; ".join(diffs) + ")"
    return f"{figure}; {result['synthetic_events']:,} events", verdict_of(ok)


def hta_speed(result: dict) -> tuple[str, str]:
    s = _synthetic(result)
    fast, default = s["vs_hta_fastest"], s["vs_hta_default"]
    figure = (
        f"{times(fast['speedup_load_plus_breakdown'])} / {times(fast['speedup_process_wall'])} "
        f"({seconds(s['ours']['load_plus_breakdown_s'])} vs {seconds(s['hta_fastest']['load_plus_breakdown_s'])}); "
        f"vs HTA's default parser {times(default['speedup_load_plus_breakdown'])} / "
        f"{times(default['speedup_process_wall'])}; {s.get('profiler_steps', '?')} ProfilerSteps, "
        f"medians of {s['rounds']} interleaved rounds"
    )
    met = s["targets_met"]
    return figure, verdict_of(met["at_least_10x_load_plus_breakdown"] and met["at_least_10x_process_wall"])


def hta_speed_all_targets(result: dict) -> tuple[str, str]:
    figure, _ = hta_speed(result)
    s = _synthetic(result)
    extra = [] if s["targets_met"]["busy_idle_equal_to_hta"] else ["busy/idle NOT equal to HTA's"]
    extra.append(f"ours {mb(s['ours']['peak_rss_mb'])} peak RSS")
    return f"{figure}; {', '.join(extra)}", result["verdict"]


def hta_rss(result: dict) -> tuple[str, str]:
    s = _synthetic(result)
    figure = (
        f"{mb(s['ours']['peak_rss_mb'])} (HTA: {mb(s['hta_fastest']['peak_rss_mb'])} fastest, "
        f"{mb(s['hta_default']['peak_rss_mb'])} default)"
    )
    return figure, verdict_of(s["targets_met"]["ours_under_400mb"])


def hta_fixtures(result: dict) -> tuple[str, str]:
    rows = [r for r in result["results"] if not r["trace"].startswith("synthetic_")]
    if not rows:
        return "fixtures skipped in this run", NOT_RUN
    parts = []
    for r in rows:
        d = r["vs_hta_fastest"]
        parts.append(f"{r['trace'].removesuffix('.json.gz')} {pct(d['busy_rel_diff'])} / {pct(d['idle_rel_diff'])}")
    within = sum(bool(r.get("busy_idle_within_1pct")) for r in rows)
    return "; ".join(parts), f"reported: {within} of {len(rows)} within 1%"


def scale_rows(result: dict) -> list[dict]:
    return result["sizes"]


def _events(n: int) -> str:
    return f"{n / 1e6:.2g}M" if n < 1e6 else f"{n / 1e6:.0f}M"


def scale_linear(result: dict) -> tuple[str, str]:
    rows = scale_rows(result)
    slopes = ", ".join(f"{s:.2f}" for s in result["log_log_slopes"])
    per_m = " / ".join(f"{r['s_per_million_events']:.2f}" for r in rows)
    sizes = " / ".join(_events(r["events"]) for r in rows)
    return f"log-log slopes {slopes}; {per_m} s per million events at {sizes}", verdict_of(
        result["targets_met"]["linear_time"]
    )


def scale_memory(result: dict) -> tuple[str, str]:
    rows = scale_rows(result)
    beyond = " / ".join(f"{r['load_peak_beyond_imports_and_frame_mb']:,.0f}" for r in rows)
    frame = " / ".join(f"{r['frame_mb']:,.0f}" for r in rows)
    sizes = " / ".join(_events(r["events"]) for r in rows)
    return f"{beyond} MB beyond imports + frame ({frame} MB frame) at {sizes}", verdict_of(
        result["targets_met"]["memory_bounded_by_columns"]
    )


def scale_1m(result: dict) -> tuple[str, str]:
    at_1m = [r for r in scale_rows(result) if 0.9e6 <= r["events"] <= 1.1e6]
    if not at_1m:
        return "no 1M-event size in this run", NOT_RUN
    r = at_1m[0]
    return f"{seconds(r['load_plus_busy_idle_s'])}, {mb(r['peak_rss_mb'])} ({r['events']:,} events)", verdict_of(
        result["targets_met"]["at_1m_under_10s_and_400mb"]
    )


def bad_input_refusals(result: dict) -> tuple[str, str]:
    rows = result["refusals"]
    worst_s, worst_mb = max(r["seconds"] for r in rows), max(r["peak_rss_mb"] for r in rows)
    lines = "one line and exit 2 each" if all(r["exit"] == 2 and r["stderr_lines"] == 1 for r in rows) else "not all"
    return f"{len(rows)} cases, {lines}: at most {seconds(worst_s)}, {mb(worst_mb)}", verdict_of(
        result["targets_met"]["refusals_one_line_within_30s_and_1gb"]
    )


def bad_input_simulate(result: dict) -> tuple[str, str]:
    r = result["answers"][0]
    return f"{seconds(r['seconds'])}, {mb(r['peak_rss_mb'])}", verdict_of(
        result["targets_met"]["simulate_budget_within_60s_and_2gb"]
    )


def bad_input_10m(result: dict) -> tuple[str, str]:
    if "analyze_10m_events_within_3gb" not in result["targets_met"]:
        return "not measured in this run (--quick)", NOT_RUN
    r = result["answers"][1]
    return f"{seconds(r['seconds'])}, {mb(r['peak_rss_mb'])} ({r['file_mb']:,.0f} MB of JSON)", verdict_of(
        result["targets_met"]["analyze_10m_events_within_3gb"]
    )


def _per_model(result: dict, key: str) -> str | None:
    """``key`` of each model's row, "a / b / c (names, batch N)"; None when the run measured none."""
    rows = result["results"]
    if not rows:
        return None
    figure = " / ".join(f"{r[key]:.3f}" for r in rows)
    return f"{figure} ({' / '.join(r['model'] for r in rows)}, batch {rows[0]['batch']})"


def ledger_activations(result: dict) -> tuple[str, str]:
    figure = _per_model(result, "ledger_over_measured")
    if figure is None:
        return "not measured in this run", NOT_RUN
    return figure, verdict_of(all(r["within_10pct"] for r in result["results"]))


def ledger_four_x(result: dict) -> tuple[str, str]:
    figure = _per_model(result, "four_x_over_measured_total")
    return ("not measured in this run", NOT_RUN) if figure is None else (figure, "reported")


def ledger_peaks(result: dict) -> tuple[str, str]:
    rows = result.get("peak_results") or []
    if not rows:
        return "not measured in this run (--no-peaks)", NOT_RUN
    within = sum(bool(r["within_10pct"]) for r in rows)
    figure = f"{span([r['ledger_over_measured'] for r in rows])} ({within} of {len(rows)} within 10%)"
    simplified = [r["simplified_over_measured"] for r in rows if "simplified_over_measured" in r]
    if simplified:
        figure += f"; simplified budget {span(simplified)}"
    device = rows[0].get("device", "cpu")
    if device != "cpu":
        figure += f" (on {device})"
    return figure, verdict_of(within == len(rows))


def accumulation(result: dict) -> tuple[str, str]:
    f64 = result["overhead_fraction_by_batch"].get("64")
    figure = f"worst error {result['worst_model_error'] * 100:.1f}%"
    if f64 is not None:
        figure += f"; f at batch 64 = {f64:.3f}"
    return figure, verdict_of(result["worst_model_error"] <= 0.10)


WIDGETS = (
    ("memory_ledger", "ledger"),
    ("memory_ledger_settings", "a change of its settings"),
    ("memory_ledger_bf16_selective_k4", "bf16, selective, K 4"),
    ("memory_ledger_checkpointing", "full recomputation"),
    ("cost_predictor", "cost predictor"),
)


def widgets(result: dict) -> tuple[str, str]:
    w = result["widgets"]
    parts = [
        f"{label} {w[key]['median_ms']:.2f} ms ({w[key]['ratio_to_matplotlib_reference']:.3f})"
        for key, label in WIDGETS
        if key in w
    ]
    figure = (
        "; ".join(parts) + f" (in brackets: over a matplotlib redraw of the same bar, "
        f"{result['matplotlib_bar_reference_median_ms']:.0f} ms in the same run)"
    )
    return figure, result["verdict"]


def course(result: dict) -> tuple[str, str]:
    rows = result["notebooks"]
    slowest = max(rows, key=lambda r: r["total_s"])
    figure = (
        f"slowest {slowest['total_s']:.1f} s ({slowest['notebook']}); whole course {result['course_s']:.1f} s, "
        f"{len(rows)} notebooks; failed: {', '.join(result['failed']) or 'none'}"
    )
    return figure, result["verdict"]


def grading(result: dict) -> tuple[str, str]:
    workers = f"{result['workers']} workers; " if "workers" in result else ""
    figure = (
        f"{result['ratio_grade_class_to_reference']:.2f}x ({workers}{result['grade_class_per_min']:.1f} vs "
        f"{result['reference_per_min']:.1f} submissions/min; {result['n_submissions']} graded, "
        f"{result['reference_sample']} one by one); verdicts right for {result['verdicts_correct']} of "
        f"{result['n_submissions']}"
    )
    return figure, result["verdict"]


def async_device(result: dict) -> tuple[str, str]:
    figure = f"{times(result['unsynchronized_over_synchronized_throughput'])}"
    if not result.get("synchronized_at_least_the_work", True):
        figure += " (synchronized time below the work queued: the clock is wrong)"
    return figure, result["verdict"]


def compare_load(result: dict) -> tuple[str, str]:
    if "aa_called_a_direction" not in result:  # a record of the fixed 10-round design, before the sequential one
        n = len(result["aa_runs"])
        return (
            f"A/A {result['aa_inconclusive_or_contains_1']}/{n}, A/B {result['ab_slower_inside_1.5_2.7']}/"
            f"{len(result['ab_runs'])} ({result['rounds']} rounds of {result['measured_steps']}-step blocks)",
            result["verdict"],
        )
    n_aa, n_ab = len(result["aa_runs"]), len(result["ab_runs"])
    verdicts = ", ".join(f"{k} {v}" for k, v in result["aa_verdicts"].items() if v)
    pair = "/".join(v["verdict"] for v in result["stall_pair"].values())
    return (
        f"A/A {result['aa_called_a_direction']}/{n_aa} called a direction ({verdicts}); A/B "
        f"{result['ab_slower_holding_2']}/{n_ab} slower holding 2; median rounds (s) A/A "
        f"{result['aa_median_rounds']:g} ({result['aa_median_seconds']:.1f}), A/B {result['ab_median_rounds']:g} "
        f"({result['ab_median_seconds']:.1f}); stall pair step/busy/idle {pair}",
        result["verdict"],
    )
