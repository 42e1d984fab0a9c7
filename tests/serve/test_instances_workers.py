"""serve_instances and serve_many: N real uvicorn workers on loopback, each stopped whatever ends the block (also at
exit, and when the program that started them is killed), and a one-line ServeError for a timeout or an early exit.
(A port taken and bad arguments, before any worker starts: tests/serve/test_instances.py.)
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gpucost_lab.serve import instances as instances_module
from gpucost_lab.serve.app import PHASE_FIELDS
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import ServeError, serve_instances, serve_many

from .helpers_s import alive, child_pids

pytestmark = pytest.mark.slow

SMALL = ServeConfig(input_width=8, hidden_width=16, layers=2, output_width=6)


def _infer(port, rows):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        started = time.perf_counter()
        connection.request("POST", "/infer", json.dumps({"inputs": rows}), {"Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read()
        return response.status, json.loads(body), (time.perf_counter() - started) * 1000
    finally:
        connection.close()


def _wait_dead(pids, within_s):
    deadline = time.monotonic() + within_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def test_two_instances_serve_on_their_own_ports_and_stop():
    with serve_instances(SMALL, instances=2) as service:
        assert len(set(service.ports)) == 2 and len(set(service.pids)) == 2
        assert set(service.pids) <= child_pids()
        latencies = []
        for port in service.ports:
            status, body, latency_ms = _infer(port, [[0.5] * 8])
            assert status == 200 and len(body["outputs"][0]) == 6
            latencies.append(latency_ms)
        phases = service.phases()
        memory = service.memory_bytes()
        service.clear_phases()
        assert service.phases().empty
        pids = service.pids
    assert list(phases["instance"]) == [0, 1] and list(phases["request"]) == [1, 1]
    for latency_ms, (_, row) in zip(latencies, phases.iterrows()):  # the server's phases within the client's time
        assert all(row[name] >= 0 for name in PHASE_FIELDS)
        assert sum(row[name] for name in PHASE_FIELDS) <= latency_ms
    assert len(memory) == 2 and all(m > 0 for m in memory)
    assert not any(alive(pid) for pid in pids)


def test_every_process_stops_when_the_block_is_interrupted():
    pids = ()
    with pytest.raises(KeyboardInterrupt):
        with serve_instances(SMALL, instances=1) as service:
            pids = service.pids
            raise KeyboardInterrupt
    assert pids and not any(alive(pid) for pid in pids)


def test_a_start_timeout_is_one_line_and_leaves_nothing():
    before = child_pids()
    with pytest.raises(ServeError) as caught:
        with serve_instances(ServeConfig(cold_start_ms=30_000), instances=1, start_timeout_s=1.5):
            pass
    message = str(caught.value)
    assert "\n" not in message and message.startswith("instance 0 on port ")
    assert "did not answer /health ready within 1.5 s" in message
    assert child_pids() <= before


def test_a_worker_that_exits_is_named_with_its_status_and_log(monkeypatch):
    # the parent hands the configuration under another name: the worker finds none and fails
    monkeypatch.setattr(instances_module, "_CONFIG_ENV", "GPUCOST_LAB_SERVE_CONFIG_ELSEWHERE")
    with pytest.raises(ServeError) as caught:
        with serve_instances(SMALL, instances=1):
            pass
    message = str(caught.value)
    assert "\n" not in message and "instance 0 on port" in message
    assert "exited with status 1" in message and "KeyError: 'GPUCOST_LAB_SERVE_CONFIG'" in message


_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from gpucost_lab.serve.config import ServeConfig
    from gpucost_lab.serve.instances import serve_instances
    block = serve_instances(ServeConfig(input_width=4, hidden_width=4, layers=1, output_width=2), instances=1)
    service = block.__enter__()  # never left: only the exit guard or the parent watch can stop it
    print(*service.pids, flush=True)
    if sys.argv[1] == "wait":
        time.sleep(60)
    """
)


def _script_pids(how):
    process = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, how],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        pids = [int(p) for p in process.stdout.readline().split()]
        if how == "wait":
            process.send_signal(signal.SIGKILL)  # no finally, no atexit
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return pids


def test_the_exit_guard_stops_a_block_never_left():
    pids = _script_pids("end")
    assert pids and _wait_dead(pids, within_s=1) == []


def test_workers_stop_when_their_parent_is_killed():
    pids = _script_pids("wait")
    assert pids and _wait_dead(pids, within_s=15) == []  # the parent watch (0.5 s) and uvicorn's stop


def _health(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_serve_many_starts_each_config_and_stops_them_all(monkeypatch):
    waited = []
    real_wait = instances_module._wait_ready

    def recording_wait(started, timeout_s):  # every worker of every config spawned before the first wait
        waited.append([(i.label, i.process is not None and i.process.poll() is None) for i in started])
        real_wait(started, timeout_s)

    monkeypatch.setattr(instances_module, "_wait_ready", recording_wait)
    wide = ServeConfig(input_width=8, hidden_width=16, layers=2, output_width=3)
    with serve_many([SMALL, wide], instances=2) as services:
        assert [s.config for s in services] == [SMALL, wide]
        assert all(len(s.urls) == len(s.pids) == 2 for s in services)
        pids = [pid for s in services for pid in s.pids]
        assert len(set(pids)) == 4 and set(pids) <= child_pids()
        for service in services:
            for port in service.ports:
                assert _health(port) == (200, {"ready": True})
        widths = [len(_infer(s.ports[1], [[0.5] * 8])[1]["outputs"][0]) for s in services]
    assert waited == [[("configs[0] ", True)] * 2 + [("configs[1] ", True)] * 2]  # one wait, for all four
    assert widths == [6, 3]  # each service serves its own model
    assert not any(alive(pid) for pid in pids)


def test_serve_many_stops_every_process_when_the_block_raises():
    pids = []
    with pytest.raises(RuntimeError, match="the block failed"):
        with serve_many([SMALL, SMALL]) as services:
            pids = [pid for s in services for pid in s.pids]
            raise RuntimeError("the block failed")
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)


def test_serve_many_names_the_config_that_did_not_start_and_leaves_nothing():
    before = child_pids()
    with pytest.raises(ServeError) as caught:
        with serve_many([ServeConfig(cold_start_ms=30_000), SMALL], start_timeout_s=3):
            pass
    message = str(caught.value)
    assert "\n" not in message and message.startswith("configs[0] instance 0 on port ")
    assert "did not answer /health ready within 3 s" in message
    assert child_pids() <= before  # the other config's worker stopped too
