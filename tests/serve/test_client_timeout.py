"""gpucost_lab.serve.client against the stand-in server (tests/serve/helpers_l.py) in real time: an error status and a
server slower than the client's timeout (half a second of work against 0.1 s) are each one line. (The client's
requests, connections and bad input: tests/serve/test_client.py.)
"""

import pytest

from gpucost_lab.serve.client import InferError, infer
from tests.serve.helpers_l import stand_in_server

pytestmark = pytest.mark.slow


def test_error_status_and_timeout_are_one_line():
    with stand_in_server() as server:
        server.status[0] = 500
        with pytest.raises(InferError) as err:
            infer(server.url, [[1.0]])
    assert "HTTP 500" in str(err.value) and "\n" not in str(err.value)
    with stand_in_server(service_ms=500) as server:
        with pytest.raises(InferError) as err:
            infer(server.url, [[1.0]], timeout_s=0.1)
    assert str(err.value) == f"POST {server.url}/infer: no answer within 0.1 s"
