"""A job's rank traces read on a Dask distributed cluster, each where it lies (chapter 02, section 6:
``load_ranks(..., scheduler=...)``, ``gpucost-lab analyze DIR/ --scheduler ADDRESS``, ``diff`` of two folders).

Dask (``distributed``, the optional extra ``cluster``) is imported here only, when a scheduler is named. The client
connects to the scheduler at ``ADDRESS`` (``tcp://host:8786``; :data:`SCHEDULER_TIMEOUT_S` to reach it), or starts a
:class:`distributed.LocalCluster` for ``"local"``; either is closed when the work ends, on an error or an interrupt
too. Each rank is one task, run on a worker: it reads its trace there and returns only the rank's figures, so the
traces never cross the network and the client holds the figures alone, whatever the number of ranks.

Where the files lie (:func:`where_files_lie`): every worker resolves the paths itself (a folder, a file, a glob
pattern such as ``/local/traces/rank*.json``). When every worker lists the same files, they are one shared folder
and each file is read once, by any worker; otherwise each worker reads the files it lists (traces written on the
node that ran them), named ``host:path``. The workers need this package installed (``pip install gpucost-lab``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.timeline.rank_files import path_items, trace_files

LOCAL = "local"
# Seconds to reach a scheduler before the command gives up: a scheduler on the same network answers in well under a
# second; ten allow for a busy one without leaving a mistyped address hanging.
SCHEDULER_TIMEOUT_S = 10
# Worker processes a local cluster starts at most: one per core serves best, and a machine of 64 cores is a large one;
# each is a Python process of about 100 MB before it reads a trace.
MAX_LOCAL_WORKERS = 64


@dataclass(frozen=True)
class Placed:
    """A trace file and the worker that reads it (None: any worker, the folder being shared)."""

    path: str
    worker: str | None = None

    @property
    def label(self) -> str:
        """The file as the job names it: ``host:path`` when it lies on one worker's node, else its path."""
        return self.path if self.worker is None else f"{urlsplit(self.worker).hostname}:{self.path}"


_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")  # distributed's network protocols


def scheduler_address(scheduler) -> str:
    """``scheduler`` when it is "local" or reads as a scheduler's address (``tcp://host:8786``; the scheme defaults
    to tcp), else InputError naming it, before anything is started or reached."""
    allowed = "allowed: 'local' (a LocalCluster here) or a Dask scheduler's address such as tcp://host:8786"
    if not isinstance(scheduler, str) or not scheduler.isprintable() or not scheduler.strip():
        raise InputError("scheduler", f"scheduler must be 'local' or an address, got {scheduler!r}; {allowed}")
    if scheduler == LOCAL:
        return scheduler
    parts = urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in _SCHEMES or not parts.hostname or port is None or not 0 < port < 65536 or " " in scheduler:
        raise InputError(
            "scheduler", f"scheduler must be 'local' or a scheme://host:port address, got {scheduler!r}; {allowed}"
        )
    return scheduler


def _client(scheduler: str):
    """A client of the scheduler at ``scheduler``, or InputError naming it when it cannot be reached in time."""
    from distributed import Client

    try:
        return Client(scheduler, timeout=SCHEDULER_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(
            "scheduler",
            f"scheduler must be 'local' or the address of a running Dask scheduler (tcp://host:8786), reached within "
            f"{SCHEDULER_TIMEOUT_S} s; could not reach {scheduler!r} ({detail})",
        ) from None


def _need_dask() -> None:
    """InputError naming the extra to install when Dask's ``distributed`` is not importable."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        raise InputError(
            "scheduler", 'scheduler needs Dask\'s distributed, not installed here: pip install "gpucost-lab[cluster]"'
        )


@contextmanager
def open_cluster(scheduler: str, workers: int | None = None) -> Iterator[Any]:
    """A Dask client for ``scheduler`` (module doc), closed on leaving, with the LocalCluster it started (``workers``
    processes of one thread, default one per core)."""
    address = scheduler_address(scheduler)
    _need_dask()
    if address != LOCAL:
        if workers is not None:
            raise InputError(
                "workers", f"workers applies to a local cluster (the scheduler has its own), got {workers}"
            )
        with _client(scheduler) as client:
            yield client
        return
    from distributed import Client, LocalCluster

    n = (os.cpu_count() or 1) if workers is None else integer_at_least("workers", workers, 1, MAX_LOCAL_WORKERS)
    with (
        LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


def _listing(paths) -> list[str] | str:
    """On a worker: the trace files ``paths`` names there (none where they do not exist), or why it cannot tell."""
    try:
        return [str(p) for p in trace_files(paths, missing_ok=True)]
    except ValueError as exc:
        return str(exc)


def where_files_lie(client, paths) -> list[Placed]:
    """The trace files ``paths`` names, each with the worker that reads it (module doc); ValueError naming the
    paths when no worker holds any."""
    path_items(paths)  # bad paths are refused here, before any worker is asked
    listings = client.run(_listing, paths)
    found = {w: files for w, files in sorted(listings.items()) if isinstance(files, list) and files}
    if not found:
        said = "; ".join(f"{w}: {v or 'nothing there'}" for w, v in sorted(listings.items())) or "no workers"
        raise ValueError(f"{paths}: no worker of the cluster holds a trace there ({said})")
    lists = list(found.values())
    if len(found) == len(listings) and all(files == lists[0] for files in lists):
        return [Placed(p) for p in lists[0]]  # one folder every worker sees
    return [Placed(p, w) for w, files in found.items() for p in files]


def _call(func: Callable, path: str, args: tuple) -> Any:
    """On a worker: ``func(path, *args)``; a ValueError (an unreadable file) said again naming the worker."""
    try:
        return func(path, *args)
    except ValueError as exc:
        from distributed import get_worker

        raise ValueError(f"on worker {get_worker().address}: {exc}") from None


def on_workers(client, func: Callable, placed: list[Placed], *args, each: list[tuple] | None = None) -> list:
    """``func(path, *each[i], *args)`` for each placed file, a task each on its worker (any worker for a shared
    folder), the results in order; the first error, in file order, is raised and the tasks left are cancelled."""
    extra = each if each is not None else [()] * len(placed)
    futures = [
        client.submit(
            _call,
            func,
            p.path,
            (*more, *args),
            workers=None if p.worker is None else [p.worker],
            allow_other_workers=False,
            pure=False,
        )
        for p, more in zip(placed, extra)
    ]
    try:
        return [f.result() for f in futures]
    finally:
        client.cancel(futures)
