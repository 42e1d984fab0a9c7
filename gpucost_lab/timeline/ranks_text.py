"""The text of ``gpucost-lab analyze DIR`` (a job's traces, one per rank): :func:`render_job` lays out
:func:`~gpucost_lab.timeline.analyze_ranks`'s dict (whose ``--json`` keeps the unrounded numbers), a row per rank,
then the slowest rank of each step."""

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
)
_STEP_HEADS = (
    ("step", "step", "{:>8}"),
    ("slowest_rank", "slowest", "{:>8}"),
    ("slowest_ms", "its ms", "{:>10.3f}"),
    ("fastest_rank", "fastest", "{:>8}"),
    ("fastest_ms", "its ms", "{:>10.3f}"),
    ("wait_max_ms", "max wait ms", "{:>12.3f}"),
    ("wait_mean_ms", "mean wait ms", "{:>13.3f}"),
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


def render_job(result: dict) -> str:
    """The job as text: a heading (device, ranks loaded of the world size), a row per rank (times in ms; idle by
    cause summed over each rank's streams; comp / comm / mem: time with a kernel of that type running; comm: its
    share of busy; overlap: communication time overlapped by computation, HTA's comm_comp_overlap), each rank's
    file, then per step the slowest and fastest rank by ProfilerStep duration and the wait for the slowest."""
    ranks, steps = result["ranks"], result["stragglers"]
    world = "" if result["world_size"] is None else f" of a world of {result['world_size']}"
    lines = [
        f"{result['device']} job: {len(ranks)} rank{'s' * (len(ranks) != 1)}{world} "
        f"({result['definitions']} definitions)",
        *_table(_RANK_HEADS, ranks),
        "traces:",
        *(f"  rank {r['rank']}: {printable(r['path'])} (rank from its {r['rank_source']})" for r in ranks),
    ]
    if not steps:
        lines.append("no ProfilerStep#N common to every rank: no straggler per step")
        return "\n".join(lines)
    lines += [
        "straggler per step (ProfilerStep duration; wait: slowest - the others, largest and mean):",
        *_table(_STEP_HEADS, steps),
    ]
    return "\n".join(lines)
