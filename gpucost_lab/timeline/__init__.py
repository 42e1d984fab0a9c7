"""Load a Kineto / Chrome profiler trace and read its timeline (chapter 02: walk the timeline from wide gaps inward).

``load_trace`` streams the file's ``traceEvents`` a segment of about 1 MB at a time (msgspec decodes only the
needed fields; bounded memory: only those fields are kept, in numpy columns) into a :class:`Trace`, one row per
complete event and per ``[memory]`` instant. Every analysis takes that trace (and optional absolute
``start_us``/``end_us``, in the file's clock, which keep the events overlapping the window, clipped to it) and
returns a DataFrame with explicit columns or a frozen dataclass; :func:`analyze` gathers them into the plain dict
behind the CLI's ``--json``.

Definitions:

- **busy / idle on a CUDA trace** (basis ``"gpu"``), as HolisticTraceAnalysis's temporal breakdown: busy is the
  union of kernel, memcpy and memset intervals over all streams; the span runs from the first one's start to the
  last one's end; idle = span - busy. When the trace holds two or more ``ProfilerStep#N``, GPU work launched (its
  correlated runtime call starts) after the last step began is left out, as HTA does by default (the last step
  may be cut short); ``include_last_step=True`` keeps it. Unlike HTA, ``cuda_sync`` events ("Stream Sync",
  "Stream Wait Event") are not busy: they mark a stream waiting, not working.
- **busy / idle on a CPU-only trace** (basis ``"main thread"``): the main thread is the (pid, tid) whose
  ``ProfilerStep#N`` and ``cpu_op`` events add up to the most time. Busy is the union of its ``cpu_op`` intervals;
  the span runs from the first start to the last end among its steps and cpu_ops, so time at the start or end of
  a step with no operator running (a data-loading sleep, say) is idle.
- **sync points**: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize calls and
  ``aten::item`` / ``aten::_local_scalar_dense`` on the host; ``cuda_sync`` events and device-to-host memcpys
  on the device. Host events that nest or overlap on one thread are one sync point, named by the outermost
  (earliest start, longest); a device event overlapping a host sync point belongs to it; device events left over
  are sync points of their own (overlapping ones on one stream merged). N ``.item()`` calls are N sync points.
"""

from gpucost_lab.timeline.allocations import allocations_by_phase
from gpucost_lab.timeline.copies import COPY_COLUMNS, copy_queueing
from gpucost_lab.timeline.devices import DEVICES
from gpucost_lab.timeline.diff import DIFF_VERDICTS, TraceDiff, diff
from gpucost_lab.timeline.idle import IDLE_CATEGORIES, idle_breakdown, idle_gaps
from gpucost_lab.timeline.kernels import KERNEL_TYPES, kernel_breakdown, kernel_type, kernels_by_name
from gpucost_lab.timeline.load import EVENT_COLUMNS, EXAMPLE_TRACES, BusyIdle, Trace, example_trace, load_trace
from gpucost_lab.timeline.ranks import (
    COLLECTIVE_COLUMNS,
    RANK_COLUMNS,
    STRAGGLER_COLUMNS,
    Job,
    analyze_ranks,
    collectives,
    load_ranks,
    rank_table,
    straggler,
    stragglers,
)
from gpucost_lab.timeline.ranks_diff import diff_ranks
from gpucost_lab.timeline.reader import KINDS
from gpucost_lab.timeline.shapes import GAP_CALLER_COLUMNS, gap_callers, input_shapes, python_stack
from gpucost_lab.timeline.summary import COMPARE_COLUMNS, GAP_FLOOR_US, analyze, compare
from gpucost_lab.timeline.views import (
    annotations,
    busy_idle,
    gaps,
    memcpy_summary,
    memory_over_time,
    peak_memory_bytes,
    phases,
    steps,
    sync_points,
    top_ops,
)

__all__ = [
    "analyze",
    "annotations",
    "busy_idle",
    "BusyIdle",
    "compare",
    "COMPARE_COLUMNS",
    "EVENT_COLUMNS",
    "example_trace",
    "EXAMPLE_TRACES",
    "GAP_FLOOR_US",
    "gaps",
    "KINDS",
    "load_trace",
    "memcpy_summary",
    "memory_over_time",
    "peak_memory_bytes",
    "phases",
    "steps",
    "sync_points",
    "top_ops",
    "Trace",
    "IDLE_CATEGORIES",
    "idle_breakdown",
    "idle_gaps",
    "KERNEL_TYPES",
    "kernel_breakdown",
    "kernel_type",
    "kernels_by_name",
    "DIFF_VERDICTS",
    "TraceDiff",
    "diff",
    "allocations_by_phase",
    "COPY_COLUMNS",
    "copy_queueing",
    "GAP_CALLER_COLUMNS",
    "gap_callers",
    "input_shapes",
    "python_stack",
    "DEVICES",
    "Job",
    "RANK_COLUMNS",
    "STRAGGLER_COLUMNS",
    "analyze_ranks",
    "load_ranks",
    "rank_table",
    "straggler",
    "stragglers",
    "collectives",
    "COLLECTIVE_COLUMNS",
    "diff_ranks",
]
