"""``gpucost-lab serve-bench`` (gpucost_lab.cli.serve) before any server starts: the sizing and the price against
hand computations, bad input and a server's or LoadGen's failure in one line with exit status 2, and the README
documenting every flag and key. The runs that start servers are in test_serve_runs.py, the search over awkward
values of every flag in test_serve_property.py.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from gpucost_lab.cli import serve as cli_serve
from gpucost_lab.serve import instances
from gpucost_lab.serve.client import InferError
from gpucost_lab.serve.instances import ServeError
from gpucost_lab.serve.loadgen import LoadGenError

from . import helpers
from .helpers import README, _options


@pytest.fixture
def no_servers(monkeypatch):
    """serve_instances refused: a case that reaches it fails, so every refusal below came before any server."""

    def refuse(*args, **kwargs):
        raise AssertionError("a server was started for input that should have been refused")

    monkeypatch.setattr(instances, "serve_instances", refuse)


def test_instances_needed_from_the_rate_per_instance_only_when_the_slo_is_met():
    args = SimpleNamespace(target_qps=100.0, instances=2, slo_ms=200.0, price_per_hour=0.10)
    run = SimpleNamespace(qps_achieved=60.0)  # 30 per instance
    met = cli_serve._sizing(args, run, "meets")
    assert met["instances_needed"] == 5  # ceil(100 / (30 x (1 - 0.3))) = ceil(4.76)
    # two instances at $0.10/h serving 60 requests/s: 2 x 0.10 / (3600 x 60) x 10^6 = $0.9259
    assert math.isclose(met["cost_per_million_requests_usd"]["value"], 2 * 0.10 / (3600 * 60) * 1e6, rel_tol=1e-12)
    missed = cli_serve._sizing(args, run, "inconclusive")
    assert missed["instances_needed"] is None and "'inconclusive'" in missed["instances_needed_reason"]
    none = cli_serve._sizing(SimpleNamespace(**{**vars(args), "target_qps": None}), run, "meets")
    assert none["instances_needed"] is None and none["instances_needed_reason"] == "no --target-qps given"


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--scenario", "burst"], "--scenario"),
        (["--qps", "0"], "--qps"),
        (["--qps", "2001"], "--qps"),
        (["--qps", "nan"], "--qps"),
        (["--qps", "1000", "--duration-s", "60"], "--qps"),  # 60,000 requests: more than a run may ask for
        (["--slo-ms", "-1"], "--slo-ms"),
        (["--slo-ms", "60001"], "--slo-ms"),
        (["--duration-s", "0.05"], "--duration-s"),
        (["--duration-s", "61"], "--duration-s"),
        (["--duration-s", "inf"], "--duration-s"),
        (["--instances", "0"], "--instances"),
        (["--instances", "9"], "--instances"),
        (["--instances", "two"], "--instances"),
        (["--max-batch", "0"], "--max-batch"),
        (["--max-batch", "257"], "--max-batch"),
        (["--max-wait-ms", "-1"], "--max-wait-ms"),
        (["--max-wait-ms", "1001"], "--max-wait-ms"),
        (["--stall", "gc"], "--stall"),
        (["--client", "wrk"], "--client"),
        (["--client", "closed", "--scenario", "offline"], "--client"),
        (["--target-qps", "0"], "--target-qps"),
        (["--target-qps", "1e8"], "--target-qps"),
        (["--price-per-hour", "0"], "--price-per-hour"),
        (["--price-per-hour", "1e7"], "--price-per-hour"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_before_any_server(capsys, no_servers, argv, flag):
    helpers.assert_one_line_naming(capsys, ["serve-bench", *argv, "--json"], flag)


@pytest.mark.parametrize(
    "error, words",
    [
        (ServeError("instance 0 on port 8123: port in use", 0, 8123), "port in use"),
        (ServeError("instance 0 on port 8123 did not answer /health ready within 60 s", 0, 8123), "within 60 s"),
        (LoadGenError("MLPerf LoadGen is not installed (import mlperf_loadgen failed)"), "LoadGen is not installed"),
        (InferError("http://127.0.0.1:8123", "connection refused"), "connection refused"),
    ],
)
def test_a_server_or_loadgen_failure_is_one_line_exit_2(capsys, monkeypatch, error, words):
    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(instances, "serve_instances", failing)
    line = helpers.assert_one_line_naming(capsys, ["serve-bench", "--json"], words)
    assert line.startswith("gpucost-lab serve-bench: error: ")


def test_the_readme_documents_every_key_and_flag():
    section = README[README.index("**`gpucost-lab serve-bench") :]
    section = section[: section.index("\n#")]  # to the next heading
    for flag in (a.option_strings[-1] for a in _options("serve-bench") if a.option_strings):
        assert f"`{flag}" in section, flag
    for key in ("scenario", "qps_offered", "qps_achieved", "latency_ms", "phases_ms", "slo_verdict", "loadgen"):
        assert f"`{key}`" in section, key
    assert json.dumps(cli_serve.PAUSE_EVERY) in section and "2,048" in section
