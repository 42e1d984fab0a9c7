"""serve_instances and serve_many before any worker starts: a port taken is a one-line ServeError that starts nothing,
and bad arguments name their field. The real uvicorn workers (started, serving, and stopped whatever ends the block)
are tests/serve/test_instances_workers.py.
"""

import socket

import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import MAX_INSTANCES, ServeError, serve_instances, serve_many

from .helpers_s import child_pids

SMALL = ServeConfig(input_width=8, hidden_width=16, layers=2, output_width=6)


def test_a_port_in_use_is_one_line_and_starts_nothing():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        before = child_pids()
        with pytest.raises(ServeError) as caught:
            with serve_instances(SMALL, instances=2, ports=[0, port]):
                pass
    message = str(caught.value)
    assert "\n" not in message and "instance 1" in message and str(port) in message and "port in use" in message
    assert (caught.value.instance, caught.value.port) == (1, port)
    assert child_pids() <= before  # every port is taken before any worker starts


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"instances": 0}, "instances"),
        ({"instances": 99}, "instances"),
        ({"start_timeout_s": 0}, "start_timeout_s"),
        ({"start_timeout_s": 1e9}, "start_timeout_s"),
        ({"instances": 2, "ports": [8000]}, "ports"),
        ({"instances": 2, "ports": [8000, 8000]}, "ports"),
        ({"ports": [70000]}, "ports[0]"),
        ({"ports": [-1]}, "ports[0]"),
        ({"config": {"max_batch": 1}}, "config"),
    ],
)
def test_bad_arguments_name_their_field(kwargs, field):
    kwargs = {"config": SMALL, **kwargs}
    with pytest.raises(InputError) as caught:
        with serve_instances(**kwargs):
            pass
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("configs", "instances", "field"),
    [
        ([], 1, "configs"),
        (SMALL, 1, "configs"),
        ("none", 1, "configs"),
        ([SMALL, {"max_batch": 1}], 1, "configs[1]"),
        ([SMALL] * (MAX_INSTANCES + 1), 1, "configs"),
        ([SMALL, SMALL, SMALL], MAX_INSTANCES // 3 + 1, "instances"),
        ([SMALL], 0, "instances"),
    ],
)
def test_serve_many_bad_arguments_name_their_field(configs, instances, field):
    before = child_pids()
    with pytest.raises(InputError) as caught:
        with serve_many(configs, instances=instances):
            pass
    assert caught.value.field == field
    assert child_pids() <= before


def test_serve_many_bad_start_timeout_names_it():
    with pytest.raises(InputError) as caught:
        with serve_many([SMALL], start_timeout_s=0):
            pass
    assert caught.value.field == "start_timeout_s"
