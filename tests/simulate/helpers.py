"""Helpers shared by the simulator's tests: a small run, the trace's events by kind, times in whole nanoseconds, and
a run written and loaded."""

from gpucost_lab import timeline
from gpucost_lab.simulate.config import SimConfig
from gpucost_lab.simulate.write import write_trace

SMALL = SimConfig(steps=3, layers=2, hidden=256, batch_size=8)


def ns(us: float) -> int:
    """Compare times in whole nanoseconds: the trace writes microseconds with 3 decimals."""
    return round(us * 1000)


def events(trace: dict, cat: str | None = None, name: str | None = None) -> list[dict]:
    return [
        e
        for e in trace["traceEvents"]
        if e.get("ph") == "X" and (cat is None or e["cat"] == cat) and (name is None or e["name"] == name)
    ]


def load(config: SimConfig, tmp_path, name: str = "trace.json.gz") -> timeline.Trace:
    """``config``'s run written to ``tmp_path/name`` and loaded back."""
    return timeline.load_trace(write_trace(config, tmp_path / name))
