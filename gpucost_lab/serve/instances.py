"""N model-server processes on the loopback interface, started and always stopped (chapter 08, "Profile the service").

``with serve_instances(config, instances=N) as service:`` starts N worker processes, each one uvicorn server of
:func:`gpucost_lab.serve.app.make_app` on its own port of 127.0.0.1, each on one torch thread (``OMP_NUM_THREADS=1``:
an instance is given one core, as a container with a CPU request of 1 would be), waits until every ``/health`` says
ready, and yields a :class:`Service`. On leaving the block, whatever ends it (an exception, KeyboardInterrupt), every
process gets SIGTERM (uvicorn stops gracefully), then SIGKILL after :data:`STOP_GRACE_S`; an ``atexit`` guard stops
any left at interpreter exit, and each worker watches its parent and stops itself once the parent is gone (killed
outright, no ``finally`` ran), so no server outlives the program that started it. ``with serve_many([a, b, c]) as
(sa, sb, sc):`` does the same for several configurations at once: every worker of every one is started before any is
waited for, so their imports overlap, and all are stopped together.

Ports are taken by binding them here (port 0: a free one the kernel picks) and handing the bound socket to the worker
(uvicorn serves it), so no other program can take a port between its choice and its use. A failure to start raises
:class:`ServeError` in one line naming the instance, its port and what happened.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gpucost_lab._validate import InputError, integer_at_least, positive
from gpucost_lab.serve.config import ServeConfig

if TYPE_CHECKING:
    import pandas as pd

HOST = "127.0.0.1"  # loopback only: the servers are never reachable from another machine
# Each worker holds torch and its model: about 200-300 MB resident, so 8 stay within about 2 GB beside the client.
MAX_INSTANCES = 8
# A worker imports torch and builds its model in 2-10 s on a busy 2-core machine; a minute is the default limit, 10
# minutes the most (beyond it a course run has failed anyway).
START_TIMEOUT_S = 60.0
MAX_START_TIMEOUT_S = 600.0
STOP_GRACE_S = 5.0  # after SIGTERM, the time a worker has to finish its requests before SIGKILL
_GRACEFUL_SHUTDOWN_S = 3  # uvicorn's own limit on open connections at shutdown, within STOP_GRACE_S
_POLL_S = 0.05  # how often /health is asked while starting
_HEALTH_TIMEOUT_S = 2.0  # one /health question
REQUEST_TIMEOUT_S = 30.0  # one /phases, /memory question of a Service
_PARENT_WATCH_S = 0.5  # how often a worker checks that its parent lives
_LOG_TAIL_LINES = 3  # lines of a worker's log in a ServeError
_LOG_TAIL_CHARS = 400
_CONFIG_ENV = "GPUCOST_LAB_SERVE_CONFIG"
_FD_ENV = "GPUCOST_LAB_SERVE_FD"
_PARENT_ENV = "GPUCOST_LAB_SERVE_PARENT"

_LIVE: set[subprocess.Popen[bytes]] = set()  # every worker started and not yet stopped, for the atexit guard
_GUARD = threading.Lock()
_guard_registered = False


class ServeError(RuntimeError):
    """A server instance that could not start or answer: one line naming the instance, its port and what happened."""

    def __init__(self, message: str, instance: int | None = None, port: int | None = None) -> None:
        super().__init__(" ".join(message.split()))  # one line, whatever a log held
        self.instance = instance
        self.port = port


@dataclass(frozen=True)
class Service:
    """The running instances: their base URLs (``http://127.0.0.1:PORT``), ports and process ids, in instance order."""

    urls: tuple[str, ...]
    ports: tuple[int, ...]
    pids: tuple[int, ...]
    config: ServeConfig

    def _ask(self, index: int, method: str, path: str) -> Any:
        """The JSON answer of instance ``index`` to ``method path``; ServeError if it does not answer 200."""
        port = self.ports[index]
        try:
            status, body = _request(port, method, path, REQUEST_TIMEOUT_S)
        except (OSError, http.client.HTTPException) as err:
            raise ServeError(f"instance {index} on port {port}: {method} {path} failed: {err}", index, port) from None
        if status != 200:
            raise ServeError(f"instance {index} on port {port}: {method} {path} answered {status}", index, port)
        return json.loads(body)

    def phases(self) -> pd.DataFrame:
        """Every instance's phase records (``GET /phases``) in one DataFrame, an ``instance`` column first (0 to N-1);
        the record fields of :data:`gpucost_lab.serve.app.RECORD_FIELDS` after it, also when it is empty."""
        import pandas as pd

        from gpucost_lab.serve.app import RECORD_FIELDS

        rows = [
            {"instance": index, **record}
            for index in range(len(self.ports))
            for record in self._ask(index, "GET", "/phases")
        ]
        return pd.DataFrame(rows, columns=["instance", *RECORD_FIELDS])

    def clear_phases(self) -> None:
        """Forget every instance's records (``DELETE /phases``): the next :meth:`phases` holds only later requests."""
        for index in range(len(self.ports)):
            self._ask(index, "DELETE", "/phases")

    def memory_bytes(self) -> list[int]:
        """Each instance's resident memory now (``GET /memory``), in bytes, in instance order."""
        return [int(self._ask(index, "GET", "/memory")["rss_bytes"]) for index in range(len(self.ports))]


def _request(port: int, method: str, path: str, timeout_s: float) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@dataclass
class _Instance:
    index: int
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    ready: bool = False
    label: str = ""  # what names the instance's configuration in a message ("configs[1] "), "" for one alone

    def where(self) -> str:
        return f"{self.label}instance {self.index} on port {self.port}"

    def log_tail(self) -> str:
        """The last lines of the worker's log, joined in one line ("" when it wrote none)."""
        try:
            text = self.log_path.read_bytes()[-8192:].decode(errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        tail = " | ".join(lines[-_LOG_TAIL_LINES:])
        return tail if len(tail) <= _LOG_TAIL_CHARS else "..." + tail[-_LOG_TAIL_CHARS:]


def _check(config: object, instances: object, start_timeout_s: object, ports: object) -> tuple[int, float, list[int]]:
    """The arguments checked: the instance count, the start limit in seconds and each instance's port (0: free)."""
    if not isinstance(config, ServeConfig):
        raise InputError("config", f"config must be a ServeConfig, got {type(config).__name__}")
    count = integer_at_least("instances", instances, 1, MAX_INSTANCES)
    timeout_s = positive("start_timeout_s", start_timeout_s)
    if timeout_s > MAX_START_TIMEOUT_S:
        raise InputError(
            "start_timeout_s",
            f"start_timeout_s must be in (0, {MAX_START_TIMEOUT_S:g}] seconds, got {start_timeout_s!r}",
        )
    if ports is None:
        return count, timeout_s, [0] * count
    if isinstance(ports, (str, bytes)) or not isinstance(ports, Sequence) or len(ports) != count:
        raise InputError("ports", f"ports must be a list of {count} port numbers (one per instance), got {ports!r}")
    chosen = [integer_at_least(f"ports[{i}]", p, 0, 65535) for i, p in enumerate(ports)]
    given = [p for p in chosen if p != 0]
    if len(set(given)) != len(given):
        raise InputError("ports", f"ports must be distinct (0 for a free one), got {ports!r}")
    return count, timeout_s, chosen


def _bind(index: int, port: int, label: str = "") -> socket.socket:
    """A TCP socket bound to HOST:``port`` (0: a free port), not yet listening; ServeError when the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a port in TIME_WAIT is free
        sock.bind((HOST, port))
    except OSError as err:
        sock.close()
        reason = "port in use" if err.errno == errno.EADDRINUSE else f"cannot bind it ({err.strerror or err})"
        raise ServeError(f"{label}instance {index} on port {port}: {reason}", index, port) from None
    return sock


def _spawn(instance: _Instance, sock: socket.socket, config: ServeConfig, log: IO[bytes]) -> None:
    """Start ``instance``'s worker process, handing it ``sock``; its output goes to ``log``."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the code that starts the worker is the code it runs
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.update(
        {
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            _CONFIG_ENV: json.dumps(config.to_dict()),
            _FD_ENV: str(sock.fileno()),
            _PARENT_ENV: str(os.getpid()),
        }
    )
    instance.process = subprocess.Popen(
        [sys.executable, "-m", "gpucost_lab.serve.instances"],
        env=env,
        pass_fds=(sock.fileno(),),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped by us, not by a terminal's Ctrl-C mid-request
    )
    _LIVE.add(instance.process)


def _wait_ready(instances: list[_Instance], timeout_s: float) -> None:
    """Poll every instance's /health until all are ready; ServeError for the first that exits or runs out of time."""
    deadline = time.monotonic() + timeout_s
    while not all(i.ready for i in instances):
        for instance in instances:
            if instance.ready:
                continue
            assert instance.process is not None
            status = instance.process.poll()
            if status is not None:
                raise ServeError(
                    f"{instance.where()} exited with status {status} before it was ready; its log ends: "
                    f"{instance.log_tail() or '(empty)'}",
                    instance.index,
                    instance.port,
                )
            with contextlib.suppress(OSError, ValueError, http.client.HTTPException):
                code, body = _request(instance.port, "GET", "/health", _HEALTH_TIMEOUT_S)
                instance.ready = code == 200 and json.loads(body).get("ready") is True
        if all(i.ready for i in instances):
            return
        if time.monotonic() > deadline:
            late = next(i for i in instances if not i.ready)
            tail = late.log_tail()
            raise ServeError(
                f"{late.where()} did not answer /health ready within {timeout_s:g} s"
                + (f"; its log ends: {tail}" if tail else ""),
                late.index,
                late.port,
            )
        time.sleep(_POLL_S)


def _signal(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)  # its own group (start_new_session): the worker and anything it started


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every process, SIGKILL to those still running after STOP_GRACE_S, each one waited for."""
    for process in processes:
        if process.poll() is None:
            _signal(process, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            process.wait()
        _LIVE.discard(process)


def _stop_leftovers() -> None:
    """The atexit guard: stop every worker a block did not (a program ended inside the block)."""
    _stop(list(_LIVE))


def _register_guard() -> None:
    global _guard_registered
    with _GUARD:
        if not _guard_registered:
            atexit.register(_stop_leftovers)
            _guard_registered = True


@dataclass(frozen=True)
class _Group:
    """The instances of one configuration: its knobs, its ports (0: a free one) and the prefix that names them."""

    config: ServeConfig
    ports: list[int]
    label: str = ""


@contextlib.contextmanager
def _serving(groups: Sequence[_Group], timeout_s: float) -> Iterator[tuple[Service, ...]]:
    """Every group's workers started (every port bound before any worker starts, every worker spawned before any is
    waited for, so their imports overlap), all ready, one :class:`Service` per group; all stopped on leaving."""
    _register_guard()
    started: list[list[_Instance]] = [[] for _ in groups]
    with tempfile.TemporaryDirectory(prefix="gpucost-lab-serve-") as logs, contextlib.ExitStack() as files:
        try:
            with contextlib.ExitStack() as bound:  # every port taken before any worker starts; the workers hold copies
                sockets = [
                    [bound.enter_context(_bind(index, port, group.label)) for index, port in enumerate(group.ports)]
                    for group in groups
                ]
                for number, (group, group_sockets) in enumerate(zip(groups, sockets)):
                    for index, sock in enumerate(group_sockets):
                        log_path = Path(logs) / f"service-{number}-instance-{index}.log"
                        instance = _Instance(index, sock.getsockname()[1], log_path, label=group.label)
                        started[number].append(instance)
                        _spawn(instance, sock, group.config, files.enter_context(open(instance.log_path, "wb")))
            _wait_ready([instance for group_started in started for instance in group_started], timeout_s)
            yield tuple(
                Service(
                    urls=tuple(f"http://{HOST}:{i.port}" for i in group_started),
                    ports=tuple(i.port for i in group_started),
                    pids=tuple(i.process.pid for i in group_started if i.process is not None),
                    config=group.config,
                )
                for group, group_started in zip(groups, started)
            )
        finally:
            _stop([i.process for group_started in started for i in group_started if i.process is not None])


@contextlib.contextmanager
def serve_instances(
    config: ServeConfig,
    instances: int = 1,
    start_timeout_s: float = START_TIMEOUT_S,
    ports: Sequence[int] | None = None,
) -> Iterator[Service]:
    """Serve ``config``'s model from ``instances`` worker processes on 127.0.0.1 (free ports, or the ``ports``
    given, 0 for a free one) for the ``with`` block; every one is stopped when the block ends, however it ends
    (module docstring).

    Raises InputError for a bad argument and :class:`ServeError` when a port is taken, a worker exits before it is
    ready, or one is not ready within ``start_timeout_s`` seconds (the cold start counts).
    """
    _, timeout_s, chosen = _check(config, instances, start_timeout_s, ports)
    with _serving([_Group(config, chosen)], timeout_s) as (service,):
        yield service


@contextlib.contextmanager
def serve_many(
    configs: Sequence[ServeConfig],
    instances: int = 1,
    start_timeout_s: float = START_TIMEOUT_S,
) -> Iterator[tuple[Service, ...]]:
    """Serve several configurations at once, ``instances`` worker processes each, for the ``with`` block: one
    :class:`Service` per configuration, in the order given. Every worker of every configuration is started before
    any is waited for, so their imports and model builds overlap (a chapter comparing three or four servers waits
    for about the slowest, not the sum); every one is stopped when the block ends, however it ends, as with
    :func:`serve_instances`. At most :data:`MAX_INSTANCES` processes in all.

    A ServeError names the configuration and the instance (``configs[1] instance 0 on port N ...``). Raises
    InputError for a bad argument (no configurations, one that is not a ServeConfig, too many processes).
    """
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence) or not configs:
        raise InputError("configs", f"configs must be a non-empty list of ServeConfig, got {configs!r}")
    for i, config in enumerate(configs):
        if not isinstance(config, ServeConfig):
            raise InputError(f"configs[{i}]", f"configs[{i}] must be a ServeConfig, got {type(config).__name__}")
    if len(configs) > MAX_INSTANCES:
        raise InputError(
            "configs",
            f"configs must hold at most {MAX_INSTANCES} configurations (a process each), got {len(configs)}",
        )
    most = MAX_INSTANCES // len(configs)  # the processes' memory bound (MAX_INSTANCES) over all configurations
    try:
        count = integer_at_least("instances", instances, 1, most)
    except InputError:
        raise InputError(
            "instances",
            f"instances must be an integer in [1, {most}] with {len(configs)} configurations (at most "
            f"{MAX_INSTANCES} worker processes in all), got {instances!r}",
        ) from None
    _, timeout_s, _ = _check(configs[0], count, start_timeout_s, None)
    groups = [_Group(config, [0] * count, f"configs[{i}] ") for i, config in enumerate(configs)]
    with _serving(groups, timeout_s) as services:
        yield services


def _watch_parent(parent_pid: int) -> None:
    """Stop this worker (SIGTERM to itself, then exit outright) once the process that started it is gone."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(_PARENT_WATCH_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(STOP_GRACE_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _worker_main() -> None:
    """One instance: the app of the configuration in the environment, served by uvicorn on the socket handed over."""
    import torch
    import uvicorn

    from gpucost_lab.serve.app import make_app

    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    config = ServeConfig(**json.loads(os.environ[_CONFIG_ENV]))
    sock = socket.socket(fileno=int(os.environ[_FD_ENV]))  # family and type read from the socket itself
    _watch_parent(int(os.environ[_PARENT_ENV]))
    server_config = uvicorn.Config(
        make_app(config),
        loop="asyncio",  # uvicorn's own dependencies only (no uvloop, no httptools): the same stack everywhere
        http="h11",
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
    )
    uvicorn.Server(server_config).run(sockets=[sock])


if __name__ == "__main__":
    _worker_main()
