"""What a benchmark records about its run: when, on which machine, with which versions, beside how much load.

Every benchmark adds ``"run": Run.start().finish()`` (or ``started.finish()`` after timing) to its JSON line:

- ``started`` / ``finished``: UTC date and time;
- ``load_average_1_5_15_start`` / ``_end``: ``os.getloadavg()`` when the run began and ended (the 1-minute figure at
  the start is the machine's load before the benchmark added its own);
- ``cpu_model`` (the contract's ``cpu_model``), ``cpu_cores``, ``gpu`` (the CUDA device's name, or None);
- ``python``, ``torch`` and any reference tool's version asked for (``packages``), read from the installed
  distributions, so nothing is imported for them.

Run as a script it prints the same fields for the interpreter that runs it, plus the versions of the distributions
named on the command line (``benchmarks/collect.py`` asks each benchmark's interpreter this way):

    .venv/bin/python benchmarks/machine.py [DISTRIBUTION ...]

Standard library only at import time (the HTA child of ``trace_vs_hta.py`` runs where gpucost_lab is not).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def version_of(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        from gpucost_lab.measure.contract import cpu_model as contract_cpu_model
    except ImportError:  # not importable here: what the platform module says
        return platform.processor() or platform.machine() or "unknown"
    return contract_cpu_model()


def gpu_name() -> str | None:
    """The first CUDA device's name: from torch when it is already imported, else from the NVIDIA driver's
    /proc entry (no import, no subprocess); None without one."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        except Exception:  # noqa: BLE001 -- a broken driver is "no GPU" for this record
            return None
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info) as f:
                for line in f:
                    if line.startswith("Model:"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    return None


def machine(packages: tuple[str, ...] = ()) -> dict:
    versions = {"python": platform.python_version(), "torch": version_of("torch")}
    versions.update({name: version_of(name) for name in packages})
    return {"cpu_model": cpu_model(), "cpu_cores": os.cpu_count(), "gpu": gpu_name(), "versions": versions}


@dataclass
class Run:
    """``Run.start()`` before measuring, ``.finish()`` after: the ``"run"`` record of a benchmark's JSON line."""

    started: str
    load_start: tuple[float, float, float]
    packages: tuple[str, ...] = field(default=())

    @classmethod
    def start(cls, *packages: str) -> Run:
        return cls(utc_now(), os.getloadavg(), tuple(packages))

    def finish(self) -> dict:
        return {
            "started": self.started,
            "finished": utc_now(),
            "load_average_1_5_15_start": [round(x, 2) for x in self.load_start],
            "load_average_1_5_15_end": [round(x, 2) for x in os.getloadavg()],
            **machine(self.packages),
        }


if __name__ == "__main__":
    if version_of("torch"):
        try:  # the GPU's name as torch sees it
            import torch  # noqa: F401
        except ImportError:
            pass
    print(json.dumps(machine(tuple(sys.argv[1:]))))
