"""How each record of ``benchmarks/gpu_check.sh`` becomes a row of RESULTS.md's table (``collect.py``).

Each function takes a record's ``result`` (the benchmark's JSON line, or for ``gpu_tests`` the tests' outcomes read
by ``gpu_record.py``) and returns (figure, verdict), as the functions of ``figures.py`` do; ``collect.py`` names the
GPU in the row. A result whose part failed on the GPU machine says which part and why.
"""

from __future__ import annotations

from figures import NOT_RUN, times, verdict_of


def gpu_tests(result: dict) -> tuple[str, str]:
    labels = {"passed": "passed", "failed": "failed", "error": "errors", "skipped": "skipped"}
    counts = ", ".join(f"{result[k]} {label}" for k, label in labels.items())
    bad = [t["id"].split("::", 1)[-1] for t in result["tests"] if t["outcome"] != "passed"]
    figure = counts + (f" (not passed: {', '.join(bad)})" if bad else "")
    return figure, result["verdict"]


def profile_to_cost(result: dict) -> tuple[str, str]:
    sps = result["samples_per_second"]
    figure = f"{sps['geomean']:,.0f} samples/s (95% CI {sps['ci95_low']:,.0f} to {sps['ci95_high']:,.0f})"
    check = result.get("plausibility")
    if check is None:  # a GPU the catalog does not hold: no bound to hold it against
        return f"{figure}; no catalog bound for this GPU", "reported"
    return f"{figure}; {check['message']}", verdict_of(not check["impossible"])


def sync_vs_unsync(result: dict) -> tuple[str, str]:
    synced, unsynced = result["synchronized_samples_per_second"], result["unsynchronized_samples_per_second"]
    figure = (
        f"{times(result['unsynchronized_over_synchronized'])} ({synced['geomean']:,.0f} samples/s synchronized, "
        f"{unsynced['geomean']:,.0f} unsynchronized)"
    )
    check = result.get("roofline_check_unsynchronized")
    if check:
        figure += f"; unsynchronized: {check['message']}"
    return figure, "reported"


TF32_RECORDED = {"highest": ("ieee", "float32"), "high": ("tf32", "tf32")}  # precision: (recorded field, peak)


def tf32(result: dict) -> tuple[str, str]:
    parts, ok = [], True
    for precision, (recorded, peak) in TF32_RECORDED.items():
        row = result[precision]
        text = f"{precision}: {row['float32_matmul']}, {row['measured_tflops']:.1f} TFLOP/s"
        ok = ok and row["float32_matmul"] == recorded and row["peak"] == peak
        if "bound_tflops" in row:
            text += f" of the {row['bound_tflops']:.1f} {row['peak']} bound"
            ok = ok and row["measured_tflops"] <= row["bound_tflops"]
        parts.append(text)
    figure = "; ".join(parts)
    if result.get("catalog_entry") is None:
        return f"{figure}; no catalog bound for this GPU", "reported" if ok else "short"
    return figure, verdict_of(ok)


def _errors(result: dict) -> str | None:
    failed = result.get("errors") or []
    if not failed:
        return None
    parts = [result["copies"].get(p) or result.get(p) or {} for p in failed]
    return "; ".join(f"{name} failed ({p.get('error', '?')})" for name, p in zip(failed, parts))


def pinned_copies(result: dict) -> tuple[str, str]:
    errors = _errors(result)
    if errors:
        return errors, "short"
    parts = []
    for key, label in (("large", "64 MiB"), ("batch", "one batch, 96 KiB")):
        c = result["copies"][key]
        r = c["pinned_over_pageable_time"]
        parts.append(
            f"{label}: pinned + non_blocking {c['pinned_non_blocking_gb_per_s']:.1f} GB/s, pageable "
            f"{c['pageable_gb_per_s']:.1f} GB/s (time {r['time_ratio']:.3f}, 95% CI {r['ci95_low']:.3f} to "
            f"{r['ci95_high']:.3f})"
        )
    a = result["asynchrony"]
    parts.append(
        f"a non_blocking copy returns at {a['pinned']['returned_share']['geomean']:.1%} of its time from pinned "
        f"memory, {a['pageable']['returned_share']['geomean']:.1%} from pageable"
    )
    change = result["chapter"]["pin_memory_and_non_blocking"]
    parts.append(f"chapter 07's loader, pin_memory + non_blocking: {change['verdict']} ({change['time_ratio']:.3f})")
    return "; ".join(parts), result["verdict"]


def compile_price(result: dict) -> tuple[str, str]:
    c, cold, warm = result["comparison"], result["cold"], result["warm"]
    be = result["break_even_steps"]
    figure = (
        f"compiled / eager step {c['time_ratio']:.3f} (95% CI {c['ci95_low']:.3f} to {c['ci95_high']:.3f}; "
        f"{result['eager_step_s'] * 1e6:,.0f} to {result['compiled_step_s'] * 1e6:,.0f} \u00b5s); cold compile "
        f"{cold['compile_s']:.1f} s, from the cache {warm['compile_s']:.2f} s"
        + ("" if warm["cache_hit"] else " (no cache hit)")
        + "; break-even "
        + ("never" if be["value"] is None else f"{be['value']:,.0f} steps")
        + f"; over {result['steps']:,} steps: {result['verdict_over_steps']}"
    )
    if not result["same_function"]:
        figure += f"; NOT the same function (difference {cold['max_abs_difference']:.1e})"
    return figure, result["verdict"]


def no_result(record: dict) -> tuple[str, str]:
    """The row of a step that left no result: why, from its record."""
    why = "stopped at its limit" if record.get("timed_out") else f"exit status {record.get('exit_status', '?')}"
    return f"no result ({why}); see the check's output", NOT_RUN
