"""The course's definitions and HolisticTraceAnalysis's (gpucost_lab.timeline.definitions): under
``definitions="hta"`` our figures equal HTA 0.6.1's own on every shipped trace HTA reads and on traces written to
trigger one differing rule at a time (HTA's figures recorded in hta_figures.py; the synthetic ones also by hand), and
the default names each rule that differs."""

from __future__ import annotations

import json

import pytest

from gpucost_lab import InputError
from gpucost_lab import timeline as tl
from gpucost_lab.cli.main import main
from gpucost_lab.timeline.definitions import RULES

from . import synthetic_hta
from .hta_figures import HTA_ALL, HTA_SYNTHETIC

REL = 1e-3  # the 0.1%


def _close(ours: float, hta: float) -> bool:
    return abs(ours - hta) <= max(REL * abs(hta), 0.5)  # HTA prints whole microseconds


@pytest.mark.parametrize("name", sorted(HTA_ALL))
def test_hta_definitions_give_htas_temporal_breakdown(name):
    hta = HTA_ALL[name]["temporal"]
    b = tl.busy_idle(tl.load_trace(tl.example_trace(name)), definitions="hta")
    assert _close(b.busy_us, hta["compute_us"] + hta["non_compute_us"])
    assert _close(b.idle_us, hta["idle_us"]) and _close(b.span_us, hta["span_us"])


@pytest.mark.parametrize("name", sorted(HTA_ALL))
def test_hta_definitions_give_htas_kernel_types_and_idle_causes(name):
    trace = tl.load_trace(tl.example_trace(name))
    types = tl.kernel_breakdown(trace, definitions="hta")
    ours = dict(zip(types["kernel_type"], types["total_us"]))
    hta = {k.lower(): v for k, v in HTA_ALL[name]["types"].items()}
    assert ours.keys() == hta.keys()
    assert all(_close(ours[k], v) for k, v in hta.items()), (ours, hta)
    idle = tl.idle_breakdown(trace, definitions="hta")
    ours = {f"{r.stream} {r.idle_category}": r.idle_us for r in idle.itertuples()}
    for key, value in HTA_ALL[name]["idle"].items():
        assert _close(ours[key], value), (key, ours[key], value)
    assert all(v == 0 for k, v in ours.items() if k not in HTA_ALL[name]["idle"])


# hand figures of each synthetic trace (synthetic_hta.py says why): (course busy, course span, HTA busy, HTA span)
BY_HAND = {
    "stream_wait": (20, 30, 30, 30),
    "annotated_stream": (10, 10, 50, 50),
    "fractional_times": (10.2 + 5.7, 25.9 - 0.4, 9 + 4, 25 - 1),
    "fractional_instant": (10.6, 10.6, 10, 10),
    "late_launch": (20, 20, 30, 150),
    "multi_stream": (90, 90, 90, 90),
}


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_each_rule_moves_the_figure_it_names_by_hand_and_as_hta_does(tmp_path, name):
    trace = tl.load_trace(synthetic_hta.write(name, tmp_path))
    course, hta = tl.busy_idle(trace), tl.busy_idle(trace, definitions="hta")
    busy, span, hta_busy, hta_span = BY_HAND[name]
    assert (course.busy_us, course.span_us) == (pytest.approx(busy), pytest.approx(span))
    assert (hta.busy_us, hta.span_us) == (hta_busy, hta_span)
    idle, compute, non_compute, kernel_time = HTA_SYNTHETIC[name]
    assert (hta.busy_us, hta.idle_us, hta.span_us) == (compute + non_compute, idle, kernel_time)


def test_the_annotation_counts_as_computation_under_hta_only(tmp_path):
    trace = tl.load_trace(synthetic_hta.write("annotated_stream", tmp_path))
    hta = tl.kernel_breakdown(trace, definitions="hta")
    assert dict(zip(hta["kernel_type"], hta["total_us"])) == {"computation": 50}
    assert HTA_SYNTHETIC["annotated_stream"][1] == 50  # HTA's compute_time
    course = tl.kernel_breakdown(trace)
    assert dict(zip(course["kernel_type"], course["total_us"])) == {"computation": 10}


def test_analyze_says_which_definitions_and_every_rule_that_differs():
    trace = tl.load_trace(tl.example_trace("a100_alexnet_train"))
    course, hta = tl.analyze(trace), tl.analyze(trace, definitions="hta")
    assert course["definitions"]["used"] == "course" and hta["definitions"]["used"] == "hta"
    rules = course["definitions"]["rules"]
    assert [r["name"] for r in rules] == [r.name for r in RULES]
    assert all(set(r) == {"name", "course", "hta", "why"} and all(r.values()) for r in rules)
    # alexnet's 41 cuda_sync events on its streams: the stream-waits rule is the difference HTA reports
    temporal = HTA_ALL["a100_alexnet_train"]["temporal"]
    assert hta["busy_ms"] == pytest.approx((temporal["compute_us"] + temporal["non_compute_us"]) / 1e3)
    assert course["busy_ms"] < hta["busy_ms"]


@pytest.mark.parametrize("value", ["HTA", "", None, "both"])
def test_other_definitions_are_refused_by_name(value):
    trace = tl.load_trace(tl.example_trace("a100_cuda_event_sync"))
    with pytest.raises(InputError, match="definitions must be one of 'course', 'hta'"):
        tl.busy_idle(trace, definitions=value)


def test_the_cli_flag_and_its_bad_value(capsys):
    path = str(tl.example_trace("mi250_rocm_minitoy_train"))
    assert main(["analyze", path, "--definitions", "hta", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    temporal = HTA_ALL["mi250_rocm_minitoy_train"]["temporal"]
    assert out["device"] == "rocm" and out["definitions"]["used"] == "hta"
    assert out["busy_ms"] * 1e3 == pytest.approx(temporal["compute_us"] + temporal["non_compute_us"])
    assert main(["analyze", path, "--definitions", "htaa"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--definitions" in err[0] and "'htaa'" in err[0]
