"""The simulated trace's format: torch.profiler's (Kineto's) events, lanes and memory records (chapter 02, "read
the timeline").

:class:`TraceLog` is what the simulator (:mod:`gpucost_lab.simulate.run`) writes into: complete events ("X") on a
thread or the CUDA stream, the flow arrows ("s"/"f", ``ac2g``) from a runtime call to the GPU work it launched,
``[memory]`` instants with the allocator's running totals, and the process and thread names a trace viewer shows
as lanes. Times are kept in integer nanoseconds and written as microseconds with three decimals, so the same run
gives a byte-identical file.
"""

from __future__ import annotations

# Trace layout: process and thread ids, the CUDA stream, and the clock origin.
PID = 4242  # the training process; its main thread has the same id
WORKER_PID_BASE = 4300  # data-loader worker i is process 4300 + i
GPU_PID, DEVICE, STREAM = 0, 0, 7
TRACE_START_US = 1_000_000  # ts of the trace's first instant (the data-loader iterator is created then)
ALLOCATOR_ROUND_BYTES = 2 * 1024**2  # "Total Reserved" grows in 2 MiB segments
NS_PER_US = 1000  # the trace writes microseconds; the simulation counts whole nanoseconds


def ns(us: float) -> int:
    """Microseconds as the simulation's whole nanoseconds."""
    return round(us * NS_PER_US)


def _ts(t_ns: int) -> float:
    """A simulated time (ns after the start) as the trace's ``ts``: microseconds with 3 decimals."""
    return (ns(TRACE_START_US) + t_ns) / NS_PER_US


class TraceLog:
    """The trace so far: its events, the ids handed out, the allocator's totals and the main thread's clock."""

    def __init__(self, allocated: int):
        self.t = 0  # main thread clock, ns after TRACE_START_US
        self.events: list[tuple[int, int, int, dict]] = []  # (start ns, -dur ns, order, event)
        self.ids = 0  # correlation and External ids
        self.end = 0  # the latest end of any event so far
        self.allocated = allocated  # bytes resident before the trace starts
        self.reserved = -(-self.allocated // ALLOCATOR_ROUND_BYTES) * ALLOCATOR_ROUND_BYTES
        self.next_addr = 0x7F0000000000 + self.reserved
        self.live: dict[int, int] = {}  # address -> bytes of each block allocated in the trace

    def new_id(self) -> int:
        self.ids += 1
        return self.ids

    def emit(
        self, cat: str, name: str, start: int, end: int, args: dict | None = None, pid: int = PID, tid: int = PID
    ) -> None:
        event = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": _ts(start),
            "dur": (end - start) / NS_PER_US,
            **({} if args is None else {"args": args}),
        }
        self.events.append((start, start - end, len(self.events), event))
        self.end = max(self.end, end)

    def gpu_event(
        self, cat: str, name: str, start: int, end: int, corr: int, ext: int, rt_start: int, extra: dict
    ) -> None:
        args = {"External id": ext, "device": DEVICE, "context": 1, "stream": STREAM, "correlation": corr, **extra}
        self.emit(cat, name, start, end, args, GPU_PID, STREAM)
        for ph, ts, pid, tid in (("s", rt_start, PID, PID), ("f", start, GPU_PID, STREAM)):
            flow = {
                "ph": ph,
                "id": corr,
                "pid": pid,
                "tid": tid,
                "ts": _ts(ts),
                "cat": "ac2g",
                "name": "ac2g",
                **({"bp": "e"} if ph == "f" else {}),
            }
            self.events.append((ts, 0, len(self.events), flow))

    def memory(self, nbytes: int, addr: int | None = None) -> int:
        """Allocate ``nbytes`` (addr None) or free the block at ``addr``; a ``[memory]`` event at self.t."""
        if addr is None:
            addr, self.next_addr = self.next_addr, self.next_addr + nbytes
            self.live[addr] = nbytes
        else:
            nbytes = -self.live.pop(addr)
        self.allocated += nbytes
        self.reserved = max(self.reserved, -(-self.allocated // ALLOCATOR_ROUND_BYTES) * ALLOCATOR_ROUND_BYTES)
        args = {
            "Total Reserved": self.reserved,
            "Total Allocated": self.allocated,
            "Bytes": nbytes,
            "Addr": addr,
            "Device Id": DEVICE,
            "Device Type": 1,
        }
        event = {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": PID,
            "tid": PID,
            "ts": _ts(self.t),
            "args": args,
        }
        self.events.append((self.t, 0, len(self.events), event))
        return addr

    def metadata(self, num_workers: int) -> list[dict]:
        """Process and thread names, as Kineto writes them, for the main process, the GPU and each worker."""
        lanes = [
            (PID, PID, "python3", "CPU", f"thread {PID} (python3)"),
            (GPU_PID, STREAM, "python3", f"GPU {DEVICE}", f"stream {STREAM} "),
        ]
        lanes += [
            (pid, pid, f"pt_data_worker_{w}", "CPU", f"thread {pid} (pt_data_worker_{w})")
            for w, pid in enumerate(range(WORKER_PID_BASE, WORKER_PID_BASE + num_workers))
        ]
        rows = [
            row
            for pid, tid, process, label, thread in lanes
            for row in (
                (pid, 0, "process_name", {"name": process}),
                (pid, 0, "process_labels", {"labels": label}),
                (pid, tid, "thread_name", {"name": thread}),
            )
        ]
        return [
            {"name": name, "ph": "M", "ts": TRACE_START_US, "pid": pid, "tid": tid, "args": args}
            for pid, tid, name, args in rows
        ]

    def document(self, device: dict, sim_config: dict, num_workers: int) -> dict:
        """The whole trace, JSON-ready: ``device`` (its ``name`` and ``totalGlobalMem``), the run's knobs, the
        lanes' names, then every event in time order."""
        self.events.sort(key=lambda e: e[:3])
        return {
            "schemaVersion": 1,
            "deviceProperties": [{"id": DEVICE, **device}],
            "simConfig": sim_config,
            "traceEvents": self.metadata(num_workers) + [e[3] for e in self.events],
        }


__all__ = [
    "ALLOCATOR_ROUND_BYTES",
    "DEVICE",
    "GPU_PID",
    "NS_PER_US",
    "PID",
    "STREAM",
    "TRACE_START_US",
    "TraceLog",
    "WORKER_PID_BASE",
    "ns",
]
