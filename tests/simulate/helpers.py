"""Helpers shared by the simulator's tests: a small run, the trace's events by kind, times in whole nanoseconds."""

from gpucost_lab.simulate.config import SimConfig

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
