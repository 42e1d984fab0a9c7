"""gpucost_lab.timeline.text, the text of ``gpucost-lab analyze``: shortened names, durations in readable units, lines
that fit a terminal, against names and figures read by hand from the real traces (and HTA's, for the sampled one)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.timeline import EXAMPLE_TRACES, example_trace
from gpucost_lab.timeline.text import format_duration, short_name

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1>)"
)


@pytest.mark.parametrize(
    "name, short",
    [
        (FILL, "at::native::vectorized_elementwise_kernel<…>(…)"),
        (
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(float*, int)",
            "at::native::(anonymous namespace)::CatArrayBatchedCopy<…>(…)",
        ),
        (
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(…)",
        ),
        ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),  # the parenthesis is the point
        ("aten::add_", "aten::add_"),
        ("ProfilerStep#3", "ProfilerStep#3"),
        ("## backward ##", "## backward ##"),
        ("ampere_sgemm_32x32_sliced1x4_tn", "ampere_sgemm_32x32_sliced1x4_tn"),
        ("f()", "f()"),  # nothing to elide
        ("<built-in method item of Tensor object>", "<built-in method item of Tensor object>"),  # a name, not arguments
        ("torch/nn/modules/module.py(1501): _call_impl", "torch/nn/modules/module.py(1501): _call_impl"),  # line number
        ("broken<a(b>", "broken<a(b>"),  # unbalanced: left as it is
        ("k\x1bred\nline", "k\\x1bred\\nline"),  # unprintable characters escaped
    ],
)
def test_short_name(name, short):
    assert short_name(name) == short


def test_short_name_is_at_most_100_characters():
    long = "x" * 150
    assert short_name(long) == "x" * 99 + "…"
    assert short_name(long, 20) == "x" * 19 + "…"


@pytest.mark.parametrize(
    "us, text",
    [
        (0, "0 µs"),
        (6.05e-9, "<1 µs"),
        (0.4, "<1 µs"),
        (1, "1 µs"),
        (17, "17 µs"),
        (999.4, "999 µs"),
        (1234, "1.234 ms"),
        (600_058, "600.058 ms"),
        (12_920_244, "12.920 s"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_format_duration(us, text):
    assert format_duration(us) == text


def analyze_text(capsys, *argv):
    assert main(["analyze", *map(str, argv)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", EXAMPLE_TRACES)
def test_analyze_text_fits_160_columns(capsys, monkeypatch, name):
    path = example_trace(name)
    monkeypatch.chdir(path.parent)  # the file's name, not where the checkout happens to be
    lines = analyze_text(capsys, path.name).splitlines()
    assert lines and max(len(line) for line in lines) <= 160
    assert all(line.isprintable() for line in lines)
    assert not any(re.search(r"\de-\d", line) for line in lines)  # no scientific notation


def test_text_shortens_names_and_json_keeps_them(capsys):
    path = example_trace("a100_cuda_event_sync")
    with gzip.open(path, "rt") as f:
        kernels = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"}
    longest = max(kernels, key=len)  # a reduce_kernel, 465 characters
    text = analyze_text(capsys, path, "--top", "50")
    assert longest not in text and "at::native::reduce_kernel<…>(…)" in text
    assert main(["analyze", str(path), "--top", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k["name"] for k in out["kernels"]["by_name"]} >= kernels
    assert any(g["before"] == longest or g["after"] == longest for g in out["gaps"])


def test_text_sections_on_a_gpu_and_a_cpu_trace(capsys):
    gpu = analyze_text(capsys, example_trace("sampled_rank0_gpu"))
    # HTA 0.6.1: stream 7 idles 213,825 us waiting for the host and 261,740 us for other reasons;
    # 171,780 us of communication kernels alone
    assert "stream 7 " in gpu and "host wait 213.825 ms" in gpu and "other 261.740 ms" in gpu
    assert re.search(r"^  communication +171\.780 ms", gpu, re.M)
    assert "top kernels" in gpu and "top operations" not in gpu
    cpu = analyze_text(capsys, example_trace("cpu_only_small"))
    assert "top operations" in cpu and "idle time per stream" not in cpu


def test_times_are_from_the_first_event_and_never_below_a_microsecond(capsys, tmp_path):
    # the first event at 1 s (absolute); kernels [1 s + 2 us, + 0.004 us] and [1 s + 10 us, + 5 us]:
    # the gap starts 2.004 us after the first event and is 7.996 us wide
    kernel = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "args": {"stream": 7}}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 1_000_000, "dur": 1},
        {**kernel, "name": "tiny", "ts": 1_000_002, "dur": 0.004},
        {**kernel, "name": "b", "ts": 1_000_010, "dur": 5},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    text = analyze_text(capsys, path)
    assert re.search(r"at +2 µs +8 µs: tiny -> b", text)
    assert re.search(r"^  tiny .* <1 µs", text, re.M) and not re.search(r"\de-\d", text)
