"""The text of ``gpucost-lab analyze DIR`` (a job's traces, one per rank): :func:`render_job` lays out
:func:`~gpucost_lab.timeline.analyze_ranks`'s dict (whose ``--json`` keeps the unrounded numbers), a row per rank,
then the straggler and, per step, the late arrivals at its collectives."""

from __future__ import annotations

from gpucost_lab.timeline.text import printable

_RANK_HEADS = (
    ("rank", "rank", "{:>4}"),
    ("span_ms", "span ms", "{:>10.3f}"),
    ("busy_ms", "busy ms", "{:>10.3f}"),
    ("idle_ms", "idle ms", "{:>10.3f}"),
    ("idle_host_wait_ms", "host wait", "{:>10.3f}"),
    ("idle_kernel_wait_ms", "kern wait", "{:>10.3f}"),
    ("idle_other_ms", "other idle", "{:>10.3f}"),
    ("computation_ms", "comp ms", "{:>10.3f}"),
    ("communication_ms", "comm ms", "{:>10.3f}"),
    ("memory_ms", "mem ms", "{:>9.3f}"),
    ("communication_share", "comm", "{:>6.1%}"),
    ("comm_comp_overlap_share", "overlap", "{:>8.1%}"),
    ("wait_ms", "wait ms", "{:>10.3f}"),
    ("transfer_ms", "transfer ms", "{:>12.3f}"),
)
_STEP_HEADS = (
    ("step", "step", "{:>8}"),
    ("collectives", "collectives", "{:>12}"),
    ("latest_rank", "latest", "{:>7}"),
    ("spread_max_ms", "max spread ms", "{:>14.3f}"),
    ("spread_mean_ms", "mean spread ms", "{:>15.3f}"),
    ("wait_mean_ms", "wait ms", "{:>10.3f}"),
    ("comm_time_ratio", "comm ratio", "{:>11.3f}"),
)


def _cell(fmt: str, value) -> str:
    width = int("".join(c for c in fmt.split(":")[1] if c.isdigit()).split(".")[0] or 0) if "." in fmt else None
    if value is None:  # a share without a denominator (no communication)
        return f"{'-':>{width or 6}}"
    return fmt.format(value)


def _table(heads: tuple, rows: list[dict]) -> list[str]:
    lines = ["  " + " ".join(f"{label:>{len(_cell(fmt, 0))}}" for _, label, fmt in heads)]
    lines += ["  " + " ".join(_cell(fmt, row[key]) for key, _, fmt in heads) for row in rows]
    return lines


def _interval(figure: dict, unit: str) -> str:
    if figure["ci95_low"] is None:
        return "no interval"
    return f"95% interval {figure['ci95_low']:.3f}-{figure['ci95_high']:.3f}{unit}"


def straggler_line(found: dict | None) -> str:
    """The job's straggler in a sentence (``analyze_ranks``' ``straggler``), or why there is none."""
    if found is None:
        return "straggler: none (one rank, or no collective every rank ran)"
    wait, ratio = found["wait_ms"], found["comm_time_ratio"]
    return (
        f"straggler: rank {found['rank']}, arriving {found['lateness_ms']:.3f} ms after the earliest rank on "
        f"average; the others wait {wait['value']:.3f} ms per collective for it ({_interval(wait, ' ms')}) over "
        f"{found['steps']} step{'s' * (found['steps'] != 1)} and {found['collectives']} collectives; their time "
        f"in the collectives over its own {ratio['value']:.3f}x ({_interval(ratio, 'x')}): {found['verdict']}"
    )


def render_job(result: dict) -> str:
    """The job as text: a heading (device, ranks loaded of the world size), a row per rank (times in ms; idle by
    cause summed over each rank's streams; comp / comm / mem: time with a kernel of that type running; comm: its
    share of busy; overlap: communication time overlapped by computation, HTA's comm_comp_overlap; wait and
    transfer: its time in the collectives every rank ran, split), each rank's file, how the clocks were aligned,
    the straggler, then per step the late-arrival spread of its collectives and the wait for the straggler."""
    ranks, steps = result["ranks"], result["stragglers"]
    world = "" if result["world_size"] is None else f" of a world of {result['world_size']}"
    lines = [
        f"{result['device']} job: {len(ranks)} rank{'s' * (len(ranks) != 1)}{world} "
        f"({result['definitions']} definitions)",
        *_table(_RANK_HEADS, ranks),
        "traces:",
        *(f"  rank {r['rank']}: {printable(r['path'])} (rank from its {r['rank_source']})" for r in ranks),
        f"clocks aligned by: {result['clock_alignment']}; communication kernels of a collective not every rank "
        f"ran: {result['unmatched_kernels']}",
        straggler_line(result["straggler"]),
    ]
    if not steps:
        lines.append("no step with a collective every rank ran: no late arrivals per step")
        return "\n".join(lines)
    lines += [
        "per step (spread: a collective's latest start - its earliest; wait: per collective, for the straggler; "
        "comm ratio: the others' time in the collectives over the straggler's):",
        *_table(_STEP_HEADS, steps),
    ]
    return "\n".join(lines)
