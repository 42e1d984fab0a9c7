"""Which JSON decoder ``load_trace`` uses, on evidence: each candidate decodes the same synthetic trace
(``timeline_scale.write_trace``, plain JSON) in its own child process, rounds interleaved, medians reported with
each child's peak RSS.

Candidates (each reads the whole file, decompression aside, and stops at the decoded events; none builds a frame):

- ``ijson_yajl2_c``: ijson's C backend yields ``traceEvents`` items one dict at a time (what the loader used);
- ``ijson_yajl2_c_ts_only``: the same parser yielding only each event's ``ts`` (its tightest path: one number per
  event, what any ijson loader would pay at least);
- ``stdlib_json`` / ``orjson`` / ``msgspec_untyped``: the whole document into dicts (orjson only if installed:
  it is not a dependency);
- ``msgspec_typed_whole``: the whole document into typed structs of the needed fields (the loader's ``_Event``);
- ``msgspec_typed_segments``: the same a segment of about 1 MB at a time, as the loader does (framing and the depth
  check included);
- ``load_trace``: the whole loader (segments, columns, frame).

    .venv/bin/python benchmarks/trace_decoders.py [--events 1000000] [--rounds 3]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CANDIDATES = (
    "ijson_yajl2_c",
    "ijson_yajl2_c_ts_only",
    "stdlib_json",
    "orjson",
    "msgspec_untyped",
    "msgspec_typed_whole",
    "msgspec_typed_segments",
    "load_trace",
)


def child(mode: str, path: str) -> None:
    import msgspec

    from gpucost_lab.timeline import framing, reader
    from gpucost_lab.timeline.load import load_trace

    document = msgspec.defstruct("Document", [("traceEvents", list[reader._Event], [])])  # other keys skipped
    t0 = time.perf_counter()
    if mode.startswith("ijson_yajl2_c"):
        import ijson

        prefix = "traceEvents.item.ts" if mode.endswith("ts_only") else "traceEvents.item"
        with open(path, "rb") as f:
            n = sum(1 for _ in ijson.get_backend("yajl2_c").items(f, prefix, use_float=True))
    elif mode in ("stdlib_json", "orjson", "msgspec_untyped"):
        loads = {"stdlib_json": json.loads, "msgspec_untyped": msgspec.json.decode}.get(mode)
        if loads is None:
            import orjson

            loads = orjson.loads
        with open(path, "rb") as f:
            n = len(loads(f.read())["traceEvents"])
    elif mode == "msgspec_typed_whole":
        with open(path, "rb") as f:
            n = len(msgspec.json.decode(f.read(), type=document).traceEvents)
    elif mode == "msgspec_typed_segments":
        with open(path, "rb") as f:
            n = sum(len(reader._DECODE(segment)) for segment in framing.segments(f, path))
    else:
        n = len(load_trace(path).events)
    elapsed = time.perf_counter() - t0
    print(
        json.dumps({"s": elapsed, "items": n, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(HERE))
    from importlib.util import find_spec

    from timeline_scale import write_trace

    modes = tuple(m for m in CANDIDATES if m != "orjson" or find_spec("orjson"))
    load_before, runs = os.getloadavg(), {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        n = write_trace(str(path), args.events, gzipped=False)
        env = dict(os.environ, PYTHONPATH=str(HERE.parent))
        for r in range(args.rounds):
            for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:  # each goes first in turn
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, str(path)],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                )
                runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        size_mb = path.stat().st_size / 1e6
    results = {
        m: {
            "median_s": statistics.median(r["s"] for r in rs),
            "rounds_s": [round(r["s"], 3) for r in rs],
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
            "items": rs[0]["items"],
        }
        for m, rs in runs.items()
    }
    print(
        json.dumps(
            {
                "benchmark": "trace_decoders",
                "events": n,
                "file_mb": round(size_mb, 1),
                "load_average_1_5_15_before": load_before,
                "load_average_1_5_15_after": os.getloadavg(),
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
