"""gpucost_lab.serve.client against the stand-in server of tests/serve/helpers_l.py: one request answers the contract,
its latency holds the server's work, a client keeps one connection alive and a pool takes servers in turn, and refusals
and bad input are one line. (An error status and a timeout, in real time: tests/serve/test_client_timeout.py.)
"""

import json
import socket
import threading
import time

import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.serve.client import (
    ConnectionPool,
    InferClient,
    InferError,
    encode_rows,
    infer,
    seeded_bodies,
)
from tests.serve.helpers_l import stand_in_server


def _free_port_nobody_listens_on() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_one_request_answers_the_contract():
    # the stand-in answers each row's sum: 1 + 2 + 3 = 6, -0.5 + 0.5 = 0
    with stand_in_server() as server:
        response = infer(server.url, [[1.0, 2.0, 3.0], [-0.5, 0.5, 0.0]])
    assert response.status == 200
    assert response.outputs() == [[6.0], [0.0]]
    assert response.latency_ms > 0


def test_latency_holds_the_servers_work():
    # 30 ms of work per request in the stand-in: the client-side latency cannot be shorter
    with stand_in_server(service_ms=30) as server:
        assert infer(server.url, [[1.0]]).latency_ms >= 30


def test_a_client_keeps_one_connection_alive():
    with stand_in_server() as server:
        with InferClient(server.url) as client:
            for _ in range(3):
                client.post(encode_rows([[1.0]]))
        assert (server.requests, server.connections[0]) == (3, 1)


def test_refused_connection_is_one_line_naming_the_url():
    url = f"http://127.0.0.1:{_free_port_nobody_listens_on()}"
    with pytest.raises(InferError) as err:
        infer(url, [[1.0]])
    assert str(err.value) == f"POST {url}/infer: connection refused (is the server running?)"


def test_a_reply_without_outputs_is_an_infer_error():
    from gpucost_lab.serve.client import InferResponse

    with pytest.raises(InferError, match="not JSON with 'outputs'"):
        InferResponse(status=200, body=b"<html>", latency_ms=1.0, url="http://127.0.0.1:1").outputs()


def test_pool_takes_servers_in_turn_from_many_threads_and_closes_every_connection():
    with stand_in_server() as first, stand_in_server() as second:
        pool = ConnectionPool([first.url, second.url])
        body = encode_rows([[1.0]])
        workers = [threading.Thread(target=lambda: [pool.post(body) for _ in range(5)]) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert first.requests == second.requests == 10  # 20 requests, alternating
        # at most one connection per thread and server (a thread's turns may all fall on one server)
        assert first.connections[0] <= 4 and second.connections[0] <= 4
        # the stand-ins serve each open connection on a thread of their own
        assert len(_connection_threads()) == first.connections[0] + second.connections[0]
        pool.close()
        # a closed socket ends its server thread at once (an open one would idle for 5 s first)
        deadline = time.monotonic() + 2.0
        while _connection_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _connection_threads() == []


def _connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "process_request_thread" in t.name and t.is_alive()]


@pytest.mark.parametrize("url", ["", "ftp://127.0.0.1:1", "http://127.0.0.1", "127.0.0.1:80", "http://h:1/?q=1", 5])
def test_bad_url_names_the_field(url):
    with pytest.raises(InputError) as err:
        InferClient(url)
    assert err.value.field == "url"


def test_bad_rows_and_timeout():
    with pytest.raises(InputError) as err:
        encode_rows([[float("nan")]])
    assert err.value.field == "rows"
    with pytest.raises(InputError) as err:
        InferClient("http://127.0.0.1:1", timeout_s=0)
    assert err.value.field == "timeout_s"
    with pytest.raises(InputError) as err:
        ConnectionPool([])
    assert err.value.field == "urls"


def test_seeded_bodies_are_the_seeds_rows():
    bodies = seeded_bodies(3, 5, seed=7)
    rows = [json.loads(b)["inputs"] for b in bodies]
    assert all(len(r) == 1 and len(r[0]) == 5 and all(-1 <= v < 1 for v in r[0]) for r in rows)
    assert seeded_bodies(3, 5, seed=7) == bodies
    assert seeded_bodies(3, 5, seed=8) != bodies
