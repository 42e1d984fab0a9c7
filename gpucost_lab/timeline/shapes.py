"""Operators' input shapes and Python call stacks from a trace (chapter 02, section 1; ``gpucost-lab analyze``).

A trace recorded with ``record_shapes=True`` carries each operator's input shapes (``args["Input Dims"]``; the
``input_dims`` column of :class:`~gpucost_lab.timeline.load.Trace`, compact JSON); one recorded with
``with_stack=True`` carries the Python functions that were running, as ``python_function`` events (kind
``"python"``) that enclose the operators they called (PyTorch, "torch.profiler", ``record_shapes`` and
``with_stack``). Neither is recorded by default: both add overhead.

- :func:`input_shapes`: for each operator name, its distinct input-shape signatures, most time first.
- :func:`python_stack`: the Python frames around one event, innermost first (the order of the profiler's own
  ``key_averages(group_by_stack_n=...)`` table).
- :func:`launching_ops`: for kernels (a CUDA trace's top operations), the ``cpu_op`` that launched each one: the
  innermost operator on the launching thread around the runtime call with the kernel's correlation id.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from gpucost_lab._validate import integer_at_least
from gpucost_lab.timeline.load import Trace
from gpucost_lab.timeline.views import gaps, select_events

SCAN_BACK = 64  # operators looked back over, per launch, for the innermost one still open
SAMPLED_LAUNCHES = 200  # kernels per name whose launching operator is looked up


def input_shapes(ops: pd.DataFrame, names, per_name: int = 3) -> dict[str, list[dict]]:
    """For each of ``names``, up to ``per_name`` distinct input-shape signatures among the ``ops`` rows (events
    frame rows of kind ``cpu_op``) of that name, most total time first: ``{"input_shapes": [[128, 256], ...],
    "count": calls, "total_us": their time}``. A name without recorded shapes maps to ``[]``."""
    integer_at_least("per_name", per_name, 1)
    names = list(names)
    rows = ops[ops["name"].isin(names) & (ops["input_dims"] != "")]
    out: dict[str, list[dict]] = {name: [] for name in names}
    if rows.empty:
        return out
    table = rows.groupby(["name", "input_dims"], sort=False).agg(count=("dur_us", "size"), total_us=("dur_us", "sum"))
    table = table.reset_index().sort_values(["name", "total_us", "input_dims"], ascending=[True, False, True])
    for name, group in table.groupby("name", sort=False):
        out[name] = [
            {"input_shapes": _parse(r.input_dims), "count": int(r.count), "total_us": float(r.total_us)}
            for r in group.head(per_name).itertuples(index=False)
        ]
    return out


def _parse(text: str):
    """The compact JSON of ``input_dims`` back as lists; a shortened one (ending "...") as its text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def python_stack(trace: Trace, row) -> list[str]:
    """The names of the ``python_function`` events on ``row``'s thread that enclose its start, innermost first
    (``row``: an events frame row, or its index label). ``[]`` when the trace holds no Python stack there."""
    ev = trace.events
    if not isinstance(row, pd.Series):
        row = ev.loc[row]
    py = ev[(ev["kind"] == "python") & (ev["pid"] == row["pid"]) & (ev["tid"] == row["tid"])]
    if py.empty:
        return []
    t = float(row["ts_us"])
    around = py[(py["ts_us"] <= t) & (py["ts_us"] + py["dur_us"] >= t)]
    return around.sort_values(["ts_us", "dur_us"], ascending=[False, True])["name"].tolist()


def _launch_index(trace: Trace) -> tuple[dict, dict]:
    """The runtime calls by correlation id (pid, tid, start), and each thread's operators sorted by start (starts,
    ends, labels)."""
    ev = trace.events
    runtime = ev[(ev["kind"] == "runtime") & ev["correlation"].notna()].drop_duplicates("correlation")
    calls = dict(
        zip(runtime["correlation"].tolist(), zip(runtime["pid"], runtime["tid"], runtime["ts_us"].astype(float)))
    )
    ops = ev[ev["kind"] == "cpu_op"]
    by_thread = {
        key: (g["ts_us"].to_numpy(float), (g["ts_us"] + g["dur_us"]).to_numpy(float), g.index.to_numpy())
        for key, g in ops.sort_values("ts_us", kind="stable").groupby(["pid", "tid"], sort=False)
    }
    return calls, by_thread


def launching_ops(trace: Trace, kernels: pd.DataFrame, _index: tuple | None = None) -> pd.Series:
    """For each row of ``kernels`` (events frame rows), the index label of the ``cpu_op`` that launched it, or
    <NA> when the trace cannot tell (no runtime call with its correlation id, no operator open around it)."""
    calls, by_thread = _index or _launch_index(trace)
    found = []
    for corr in kernels["correlation"]:
        label = pd.NA
        call = None if pd.isna(corr) else calls.get(corr)
        if call is not None:
            pid, tid, t = call
            starts, ends, labels = by_thread.get((pid, tid), (np.empty(0), np.empty(0), []))
            i = int(np.searchsorted(starts, t, side="right")) - 1
            for j in range(i, max(i - SCAN_BACK, -1), -1):
                if ends[j] >= t:
                    label = labels[j]
                    break
        found.append(label)
    return pd.Series(found, index=kernels.index, dtype=object)


def top_op_details(trace: Trace, names, *, start_us: float | None = None, end_us: float | None = None) -> dict:
    """For each of ``names`` (top_ops' names: kernels on a CUDA trace, operators on a CPU one): ``{"operator":
    the operator whose shapes these are, "input_shapes": :func:`input_shapes`' signatures, "stack": the Python
    stack, innermost first, around the longest call}``; empty lists when the trace recorded neither. On a CPU trace
    the operator is the name itself and each signature's count and time are its calls'. A kernel's operator is the
    one that launched most of its first SAMPLED_LAUNCHES launches; each signature counts those kernels and their
    time on the device, and the stack is the one around the launch of the longest."""
    ev = select_events(trace, start_us, end_us)
    names = list(names)
    if not trace.accelerated:
        ops = ev[ev["kind"] == "cpu_op"]
        shapes = input_shapes(ops, names)
        details = {}
        for name in names:
            calls = ops[ops["name"] == name]
            longest = calls.loc[calls["dur_us"].idxmax()] if len(calls) else None
            stack = [] if longest is None else python_stack(trace, longest)
            details[name] = {"operator": name, "input_shapes": shapes[name], "stack": stack}
        return details
    details, index = {}, _launch_index(trace)
    all_kernels = ev[ev["kind"] == "kernel"]
    for name in names:
        sample = all_kernels[all_kernels["name"] == name].head(SAMPLED_LAUNCHES)
        launchers = launching_ops(trace, sample, index).dropna()
        if launchers.empty:
            details[name] = {"operator": None, "input_shapes": [], "stack": []}
            continue
        op_rows = trace.events.loc[launchers.to_numpy(), ["name", "input_dims"]]
        launched = pd.DataFrame(  # one row per kernel: its launcher's name and shapes, the kernel's own time
            {**{c: op_rows[c].to_numpy() for c in op_rows}, "dur_us": sample.loc[launchers.index, "dur_us"].to_numpy()},
            index=launchers.index,
        )
        operator = launched["name"].value_counts().index[0]
        mine = launched[launched["name"] == operator]
        details[name] = {
            "operator": operator,
            "input_shapes": input_shapes(mine, [operator])[operator],
            "stack": python_stack(trace, launchers[mine["dur_us"].idxmax()]),
        }
    return details


GAP_CALLER_COLUMNS = ["start_us", "duration_us", "after", "operator", "input_shapes", "stack"]


def gap_callers(trace: Trace, top: int = 3) -> pd.DataFrame:
    """The ``top`` widest gaps (as :func:`~gpucost_lab.timeline.gaps` ranks them, indexed by ``rank``) and what
    ended each: ``after`` (the operation that starts the busy time again), ``operator`` (that operation, or on a
    CUDA trace the operator that launched the kernel), its ``input_shapes`` (the signature as recorded, a list) and
    its Python ``stack``, innermost frame first: what the program was about to do when the gap ended, and which of
    its functions asked for it. Empty lists where the trace recorded no shapes or stacks."""
    table = gaps(trace, top=top)
    ev = trace.events
    kind = "kernel" if trace.accelerated else "cpu_op"
    rows = []
    for _, gap in table.iterrows():
        end = float(gap["start_us"] + gap["duration_us"])
        hit = ev[(ev["kind"] == kind) & (ev["name"] == gap["after"]) & np.isclose(ev["ts_us"], end, rtol=0, atol=1e-3)]
        label = hit.index[0] if len(hit) else None
        if label is not None and kind == "kernel":
            launched = launching_ops(trace, hit.iloc[:1])
            label = None if launched.isna().iloc[0] else launched.iloc[0]
        op = None if label is None else ev.loc[label]
        rows.append(
            {
                "start_us": gap["start_us"],
                "duration_us": gap["duration_us"],
                "after": gap["after"],
                "operator": None if op is None else op["name"],
                "input_shapes": [] if op is None or op["input_dims"] == "" else _parse(op["input_dims"]),
                "stack": [] if op is None else python_stack(trace, op),
            }
        )
    out = pd.DataFrame(rows, columns=GAP_CALLER_COLUMNS, index=table.index)
    return out


__all__ = ["GAP_CALLER_COLUMNS", "gap_callers", "input_shapes", "launching_ops", "python_stack", "top_op_details"]
