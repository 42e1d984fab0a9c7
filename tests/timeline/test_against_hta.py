"""Idle-time and kernel breakdowns against HolisticTraceAnalysis's recorded figures and hand computations.

The HTA figures below were printed by ``benchmarks/hta_reference.py`` with traceinsight 0.6.1 (import name ``hta``,
default arguments, in a separate environment: HTA is not a dependency) and copied here:
``get_idle_time_breakdown()[0]`` (``idle_time`` per stream and ``idle_category``; HTA lists only the categories that
have a gap), ``get_gpu_kernel_breakdown()[0]`` (``sum`` per ``kernel_type``) and ``[1]`` (``sum (us)`` per kernel
name, for the names it lists rather than folds into "others"; a name is given here by its first 90 characters and
its length). The synthetic traces' figures are worked out by hand in the comments.
"""

from __future__ import annotations

import json

import pytest

from gpucost_lab import timeline as tl

HTA_VERSION = "0.6.1"
HTA_IDLE = {  # (stream, idle_category): idle_time (us)
    "sampled_rank0_gpu": {
        (23, "host_wait"): 596037,
        (23, "kernel_wait"): 70,
        (23, "other"): 34,
        (84, "host_wait"): 148934,
        (84, "kernel_wait"): 6,
        (84, "other"): 0,
        (25, "kernel_wait"): 9,
        (25, "other"): 47865,
        (7, "host_wait"): 213825,
        (7, "kernel_wait"): 1985,
        (7, "other"): 261740,
        (203, "other"): 0,
    },
    "a100_alexnet_train": {
        (7, "host_wait"): 12855007,
        (7, "kernel_wait"): 104,
        (7, "other"): 0,
        (20, "host_wait"): 12011718,
        (20, "kernel_wait"): 3,
        (20, "other"): 0,
    },
    "a100_cuda_event_sync": {(7, "host_wait"): 212, (7, "other"): 0},
}
HTA_KERNEL_TYPES = {  # kernel_type: sum (us)
    "sampled_rank0_gpu": {
        "COMMUNICATION": 171780,
        "COMPUTATION": 83182,
        "COMPUTATION overlapping COMMUNICATION": 23056,
        "COMMUNICATION overlapping MEMORY": 479,
        "MEMORY": 169,
        "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": 12,
        "COMPUTATION overlapping MEMORY": 2,
    },
    "a100_alexnet_train": {"MEMORY": 55511, "COMPUTATION": 10630},
    "a100_cuda_event_sync": {"COMPUTATION": 49, "MEMORY": 2},
}
HTA_KERNELS_BY_NAME = {  # (first 90 characters of the name, its length, sum (us))
    "sampled_rank0_gpu": [
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 82, 195327),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1", 280, 2116),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(cutlass_80_tenso", 134, 3159),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x128_32x3_tn_align1>(cutlass_80_tenso", 134, 2092),
        ("void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int, int,", 190, 2081),
        ("void permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*", 117, 4423),
        ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<c10:", 1849, 11773),
        ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_warp_per_row_1<c10", 1522, 4671),
        ("void split_embedding_backward_codegen_rowwise_adagrad_weighted_kernel_cta_per_row_1<c10::H", 1956, 4572),
        ("void split_embedding_codegen_forward_unweighted_kernel<c10::Half, c10::Half, float, false,", 876, 7366),
        ("void split_embedding_codegen_grad_indice_weights_kernel<c10::Half, float, c10::Half, 2ul>(", 1006, 4001),
        ("Memcpy DtoD (Device -> Device)", 30, 240),
        ("Memcpy DtoH (Device -> Pageable)", 32, 8),
        ("Memcpy HtoD (Pageable -> Device)", 32, 29),
        ("Memcpy HtoD (Pinned -> Device)", 30, 366),
        ("Memset (Device)", 15, 19),
    ],
    "a100_alexnet_train": [
        ("ampere_gcgemm_64x64_nt", 22, 646),
        ("ampere_sgemm_32x32_sliced1x4_tn", 31, 2621),
        ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", 49, 2069),
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16", 156, 1814),
        ("void at::native::(anonymous namespace)::adaptive_average_pool<float>(float const*, float*,", 128, 271),
        ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float con", 177, 644),
        ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFu", 350, 958),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launc", 567, 683),
        ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t", 154, 277),
        ("void fft2d_c2r_32x32<float, false, false, 0u, false, false>(float*, float2 const*, int, in", 203, 290),
        ("Memcpy HtoD (Pageable -> Device)", 32, 55503),
        ("Memset (Device)", 15, 8),
    ],
    "a100_cuda_event_sync": [
        ("at::cuda::(anonymous namespace)::spin_kernel(long)", 50, 36),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half, at::native::func_wr", 465, 11),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, at::", 185, 1),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::compare_scalar_kernel<c10::H", 409, 1),
        ("Memcpy DtoH (Device -> Pageable)", 32, 2),
    ],
}
HTA_TEMPORAL_BUSY_US = {"sampled_rank0_gpu": 106252 + 172428}  # compute + non-compute time


def within_1_percent(ours, hta):
    return ours == pytest.approx(hta, rel=0.01, abs=1e-9)


@pytest.fixture(scope="module")
def traces():
    return {name: tl.load_trace(tl.example_trace(name)) for name in HTA_IDLE}


# ----------------------------------------------------------------------------------------------- against HTA
@pytest.mark.parametrize("name", list(HTA_IDLE))
def test_idle_breakdown_matches_hta(traces, name):
    table = tl.idle_breakdown(traces[name])
    ours = {(r.stream, r.idle_category): r for r in table.itertuples()}
    assert {s for s, _ in ours} == {s for s, _ in HTA_IDLE[name]}
    for key, hta_us in HTA_IDLE[name].items():
        assert within_1_percent(ours[key].idle_us, hta_us), key
    for key, row in ours.items():  # HTA lists only categories with a gap: the others hold none
        if key not in HTA_IDLE[name]:
            assert row.idle_us == 0 and row.count == 0, key


@pytest.mark.parametrize("name", list(HTA_KERNEL_TYPES))
def test_kernel_type_breakdown_matches_hta(traces, name):
    table = tl.kernel_breakdown(traces[name])
    ours = dict(zip(table["kernel_type"], table["total_us"]))
    expected = {label.lower(): us for label, us in HTA_KERNEL_TYPES[name].items()}
    assert set(ours) == set(expected)
    for label, hta_us in expected.items():
        assert within_1_percent(ours[label], hta_us), label
    assert table["share"].sum() == pytest.approx(1.0)


def test_kernel_types_add_up_to_htas_busy_time(traces):
    table = tl.kernel_breakdown(traces["sampled_rank0_gpu"])
    assert table["total_us"].sum() == pytest.approx(HTA_TEMPORAL_BUSY_US["sampled_rank0_gpu"], rel=0.01)


@pytest.mark.parametrize("name", list(HTA_KERNELS_BY_NAME))
def test_kernel_totals_by_name_equal_htas(traces, name):
    table = tl.kernels_by_name(traces[name])
    for prefix, length, hta_us in HTA_KERNELS_BY_NAME[name]:
        rows = table[table["name"].str.startswith(prefix, na=False) & (table["name"].str.len() == length)]
        assert len(rows) == 1, prefix
        assert rows["total_us"].iloc[0] == hta_us, prefix


def test_kernels_by_name_lists_the_top_n_of_the_full_table(traces):
    full = tl.kernels_by_name(traces["a100_alexnet_train"])
    top = tl.kernels_by_name(traces["a100_alexnet_train"], 3)
    # the largest is HTA's 55,503 us of pageable host-to-device copies, then sgemm 2,621 us and cudnn 2,069 us
    assert list(top["total_us"]) == [55503, 2621, 2069]
    assert list(top["share"]) == list(full["share"].head(3))


# ----------------------------------------------------------------------------------------------- synthetic traces
def launch(correlation, ts):
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": 1,
        "args": {"correlation": correlation},
    }


def gpu(name, stream, ts, dur, correlation=None, cat="kernel"):
    args = {"stream": stream, **({} if correlation is None else {"correlation": correlation})}
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def load(tmp_path, events, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return tl.load_trace(path)


# Stream 7: k1 runs [10, 20]. k2 launched at 5, before k1 ends, starts at 25: gap 5 < 30 us -> kernel wait 5.
# k3 launched at 8, starts at 100 after k2 ends at 40: gap 60 >= 30 and launched in time -> other 60.
# k4 launched at 150, after k3 ended at 110, starts at 160: gap 50 -> host wait 50.
# k5 has no launch in the trace, starts at 175 after k4 ends at 170: gap 5 -> kernel wait 5.
# A "Stream Sync" on stream 7 over [40, 100] is not an operation and changes nothing.
# Stream 9: a copy over [2, 4], then one launched at 50 running [60, 61]: gap 56 -> host wait 56.
# Stream 7 idle: 50 + 10 + 60 = 120 us; stream 9: 56 us.
SYNTHETIC = [
    launch(1, 0),
    gpu("k1", 7, 10, 10, 1),
    launch(2, 5),
    gpu("k2", 7, 25, 15, 2),
    launch(3, 8),
    gpu("k3", 7, 100, 10, 3),
    launch(4, 150),
    gpu("k4", 7, 160, 10, 4),
    gpu("k5", 7, 175, 5),
    gpu("Stream Sync", 7, 40, 60, 99, cat="cuda_sync"),
    launch(5, 1),
    gpu("Memcpy HtoD (Pinned -> Device)", 9, 2, 2, 5, cat="gpu_memcpy"),
    launch(6, 50),
    gpu("Memcpy HtoD (Pinned -> Device)", 9, 60, 1, 6, cat="gpu_memcpy"),
]


def test_idle_breakdown_by_hand(tmp_path):
    table = tl.idle_breakdown(load(tmp_path, SYNTHETIC))
    assert list(table.columns) == ["stream", "idle_category", "idle_us", "share", "count"]
    rows = {(r.stream, r.idle_category): (r.idle_us, r.count, r.share) for r in table.itertuples()}
    assert rows == {
        (7, "host_wait"): (50, 1, pytest.approx(50 / 120)),
        (7, "kernel_wait"): (10, 2, pytest.approx(10 / 120)),
        (7, "other"): (60, 1, pytest.approx(60 / 120)),
        (9, "host_wait"): (56, 1, 1.0),
        (9, "kernel_wait"): (0, 0, 0.0),
        (9, "other"): (0, 0, 0.0),
    }


def test_the_kernel_wait_threshold_moves_gaps_between_categories(tmp_path):
    trace = load(tmp_path, SYNTHETIC)
    wide = tl.idle_breakdown(trace, consecutive_kernel_delay_us=100).set_index(["stream", "idle_category"])
    assert wide.loc[(7, "kernel_wait"), "idle_us"] == 70 and wide.loc[(7, "other"), "idle_us"] == 0  # k3's 60 too
    narrow = tl.idle_breakdown(trace, consecutive_kernel_delay_us=5).set_index(["stream", "idle_category"])
    assert narrow.loc[(7, "kernel_wait"), "idle_us"] == 0 and narrow.loc[(7, "other"), "idle_us"] == 70  # 5 is not < 5


def test_idle_gaps_name_the_operations_either_side(tmp_path):
    gaps = tl.idle_gaps(load(tmp_path, SYNTHETIC))
    stream7 = gaps[gaps["stream"] == 7]
    assert list(stream7["before"]) == ["k1", "k2", "k3", "k4"] and list(stream7["after"]) == ["k2", "k3", "k4", "k5"]
    assert list(stream7["start_us"]) == [20, 40, 110, 170] and list(stream7["duration_us"]) == [5, 60, 50, 5]
    assert list(stream7["idle_category"]) == ["kernel_wait", "other", "host_wait", "kernel_wait"]


def test_work_launched_in_the_last_profiler_step_is_left_out(tmp_path):
    # steps [0, 100) and [100, 200); a runs [20, 30]; b launched at 40 runs [60, 70]: host wait 30;
    # c launched at 120, inside the last step, runs [130, 140]: with it, a further host wait of 60
    step = {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "dur": 100, "args": {}}
    events = [
        {**step, "name": "ProfilerStep#1", "ts": 0},
        {**step, "name": "ProfilerStep#2", "ts": 100},
        launch(1, 10),
        gpu("a", 7, 20, 10, 1),
        launch(2, 40),
        gpu("b", 7, 60, 10, 2),
        launch(3, 120),
        gpu("c", 7, 130, 10, 3),
    ]
    trace = load(tmp_path, events)
    host = lambda t: t.set_index(["stream", "idle_category"]).loc[(7, "host_wait"), "idle_us"]  # noqa: E731
    assert host(tl.idle_breakdown(trace)) == 30
    assert host(tl.idle_breakdown(trace, include_last_step=True)) == 90
    assert list(tl.kernels_by_name(trace)["name"]) == ["a", "b"]
    assert tl.kernel_breakdown(trace, include_last_step=True)["total_us"].sum() == 30


# gemm [0, 10] on stream 7 and [2, 8] on stream 10 (one computation interval, [0, 10]); an NCCL kernel [5, 20];
# a copy [18, 25]. Cut at 0, 5, 10, 18, 20, 25: computation alone 5, computation + communication 5,
# communication alone 8, communication + memory 2, memory alone 5; 25 us in all, the union.
TYPED = [
    gpu("gemm_kernel", 7, 0, 10),
    gpu("gemm_kernel", 10, 2, 6),
    gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 8, 5, 15),
    gpu("Memcpy DtoD (Device -> Device)", 9, 18, 7, cat="gpu_memcpy"),
]


def test_kernel_type_breakdown_by_hand(tmp_path):
    table = tl.kernel_breakdown(load(tmp_path, TYPED))
    assert dict(zip(table["kernel_type"], table["total_us"])) == {
        "computation": 5,
        "computation overlapping communication": 5,
        "communication": 8,
        "communication overlapping memory": 2,
        "memory": 5,
    }
    assert list(table["total_us"]) == sorted(table["total_us"], reverse=True)
    assert table.set_index("kernel_type").loc["communication", "share"] == pytest.approx(8 / 25)


def test_kernels_by_name_by_hand(tmp_path):
    table = tl.kernels_by_name(load(tmp_path, TYPED)).set_index("name")
    # gemm 10 + 6 = 16 us in 2 calls, NCCL 15, copy 7: 38 us of summed durations
    assert table.loc["gemm_kernel", ["count", "total_us"]].tolist() == [2, 16]
    assert table.loc["gemm_kernel", "share"] == pytest.approx(16 / 38)
    assert table["kernel_type"].to_dict() == {
        "gemm_kernel": "computation",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)": "communication",
        "Memcpy DtoD (Device -> Device)": "memory",
    }


@pytest.mark.parametrize(
    "name, kind",
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
        ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("Memcpy HtoD (Pinned -> Device)", "memory"),
        ("Memset (Device)", "memory"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)", "computation"),
        ("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16", "computation"),
        ("Stream Wait Event", "other"),
        ("cudaLaunchKernel", "other"),
    ],
)
def test_kernel_type_follows_htas_patterns(name, kind):
    assert tl.kernel_type(name) == kind


def test_a_cpu_trace_has_no_stream_or_kernel_breakdown():
    trace = tl.load_trace(tl.example_trace("cpu_only_small"))
    assert tl.idle_breakdown(trace).empty and tl.kernel_breakdown(trace).empty and tl.kernels_by_name(trace).empty
    result = tl.analyze(trace)
    assert result["idle_breakdown"] == [] and result["kernels"] == {"by_type": [], "by_name": []}


def test_analyze_carries_both_breakdowns_in_milliseconds(traces):
    result = tl.analyze(traces["sampled_rank0_gpu"], top=2)
    json.dumps(result, allow_nan=False)
    idle = {(r["stream"], r["idle_category"]): r["idle_ms"] for r in result["idle_breakdown"]}
    assert idle[(7, "other")] == pytest.approx(261.740, rel=0.01)  # HTA: 261,740 us
    by_type = {r["kernel_type"]: r["total_ms"] for r in result["kernels"]["by_type"]}
    assert by_type["communication"] == pytest.approx(171.780, rel=0.01)  # HTA: 171,780 us
    names = result["kernels"]["by_name"]
    assert len(names) == 2 and set(names[0]) == {"name", "kernel_type", "count", "total_ms", "share"}
    assert names[0]["name"] == HTA_KERNELS_BY_NAME["sampled_rank0_gpu"][0][0]  # full name, 82 characters
    assert names[0]["total_ms"] == pytest.approx(195.327)


def test_bad_threshold_and_top_are_refused(traces):
    trace = traces["a100_cuda_event_sync"]
    with pytest.raises(ValueError, match="consecutive_kernel_delay_us"):
        tl.idle_breakdown(trace, consecutive_kernel_delay_us=-1)
    with pytest.raises(ValueError, match="n"):
        tl.kernels_by_name(trace, 0)
