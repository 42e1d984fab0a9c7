"""gpucost_lab.serve.closed_loop before any request is answered: a user stops at its first error (nobody listens at
the URL) in one line and leaves no thread, and bad input names its field. The runs against a server are
tests/serve/test_closed_loop_runs.py.
"""

import socket

import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.serve.closed_loop import ClosedLoopError, run_closed_loop
from tests.serve.helpers_l import _user_threads


def test_a_user_stops_at_its_first_error_and_no_answer_is_one_line():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nobody listens there
    with pytest.raises(ClosedLoopError) as err:
        run_closed_loop([url], users=3, duration_s=5.0)
    assert "connection refused" in str(err.value) and "\n" not in str(err.value)
    assert not _user_threads()


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"users": 0}, "users"),
        ({"duration_s": 0}, "duration_s"),
        ({"think_ms": -1}, "think_ms"),
        ({"duration_s": 61}, "duration_s"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        run_closed_loop(["http://127.0.0.1:1"], **kwargs)
    assert err.value.field == field
