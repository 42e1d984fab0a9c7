"""HolisticTraceAnalysis's figures on the course's real traces, the reference the timeline tests check against.

Printed by ``benchmarks/hta_reference.py`` with traceinsight 0.6.1 (import name ``hta``, default arguments, in a
separate environment: HTA is not a dependency; ``make .venv-hta/.installed`` builds it) and copied here:
``get_temporal_breakdown()`` (busy, idle and span per trace), ``get_idle_time_breakdown()[0]`` (``idle_time`` per
stream and ``idle_category``; HTA lists only the categories that have a gap), ``get_gpu_kernel_breakdown()[0]``
(``sum`` per ``kernel_type``) and ``[1]`` (``sum (us)`` per kernel name, for the names it lists rather than folds into
"others"; a name is given here by its first 90 characters and its length).
"""

from __future__ import annotations

import pytest

from .helpers import ALEXNET, SAMPLED

# TraceAnalysis(trace_dir=<temp dir holding a copy of the fixture>).get_temporal_breakdown():
#   sampled_rank0_gpu:   idle_time 321,378 us, compute_time 106,252 us, non_compute_time 172,428 us,
#                        kernel_time (span) 600,058 us      -> busy = compute + non-compute = 278,680 us
#   a100_alexnet_train:  idle_time 12,929,684 us, compute_time 10,630 us, non_compute_time 55,697 us,
#                        kernel_time (span) 12,996,011 us   -> busy = 66,327 us
# HTA drops GPU work launched in the last of two or more ProfilerSteps (sampled has two) and also counts
# cuda_sync events that carry a stream as non-compute busy time (alexnet has them; we count them idle).
HTA_TEMPORAL = {
    SAMPLED: {"idle_us": 321_378, "busy_us": 106_252 + 172_428, "span_us": 600_058},
    ALEXNET: {"idle_us": 12_929_684, "busy_us": 10_630 + 55_697, "span_us": 12_996_011},
}
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


# TraceAnalysis(trace_dir=<temp dir holding copies of sampled_rank0_gpu and sampled_rank1_gpu>), traceinsight 0.6.1:
# get_temporal_breakdown() per rank (busy = compute_time + non_compute_time; span = kernel_time) and
# get_comm_comp_overlap()'s comp_comm_overlap_pctg (a percentage, rounded by HTA to 2 decimals).
HTA_RANKS = {
    0: {"idle_us": 321_378, "busy_us": 106_252 + 172_428, "span_us": 600_058, "overlap_pctg": 11.81},
    1: {"idle_us": 328_671, "busy_us": 135_548 + 136_455, "span_us": 600_674, "overlap_pctg": 20.05},
}


# Every shipped trace HTA reads (traceinsight 0.6.1; the CPU-only one it refuses with an IndexError), each copied alone
# into a temp dir, printed by benchmarks/hta_reference.py: get_temporal_breakdown()'s idle_time, compute_time,
# non_compute_time and kernel_time (us), get_idle_time_breakdown(ranks=[the file's rank])[0]'s idle_time per "stream
# idle_category" (its default, ranks=[0], fails on rank 1's file) and get_gpu_kernel_breakdown()[0]'s sum per type.
def _idle_keys(name: str) -> dict:
    """HTA_IDLE's table of ``name`` keyed "stream idle_category", as HTA_ALL's tables are."""
    return {f"{stream} {category}": us for (stream, category), us in HTA_IDLE[name].items()}


HTA_ALL = {
    "a100_alexnet_train": {
        "temporal": {"idle_us": 12929684, "compute_us": 10630, "non_compute_us": 55697, "span_us": 12996011},
        "idle": _idle_keys("a100_alexnet_train"),
        "types": HTA_KERNEL_TYPES["a100_alexnet_train"],
    },
    "a100_cuda_event_sync": {
        "temporal": {"idle_us": 207, "compute_us": 49, "non_compute_us": 7, "span_us": 263},
        "idle": _idle_keys("a100_cuda_event_sync"),
        "types": HTA_KERNEL_TYPES["a100_cuda_event_sync"],
    },
    "sampled_rank0_gpu": {
        "temporal": {"idle_us": 321378, "compute_us": 106252, "non_compute_us": 172428, "span_us": 600058},
        "idle": _idle_keys("sampled_rank0_gpu"),
        "types": HTA_KERNEL_TYPES["sampled_rank0_gpu"],
    },
    "sampled_rank1_gpu": {
        "temporal": {"idle_us": 328671, "compute_us": 135548, "non_compute_us": 136455, "span_us": 600674},
        "idle": {  # get_idle_time_breakdown(ranks=[1]): the file's rank
            "23 host_wait": 596313,
            "23 kernel_wait": 100,
            "23 other": 0,
            "25 kernel_wait": 9,
            "25 other": 53028,
            "7 host_wait": 156827,
            "7 kernel_wait": 1816,
            "7 other": 281064,
            "84 host_wait": 251860,
            "84 other": 23247,
            "203 other": 0,
        },
        "types": {
            "COMMUNICATION": 133804,
            "COMPUTATION": 101841,
            "COMPUTATION overlapping COMMUNICATION": 33691,
            "MEMORY": 2119,
            "COMMUNICATION overlapping MEMORY": 532,
            "COMPUTATION overlapping MEMORY": 16,
        },
    },
    "mi250_rocm_minitoy_train": {
        "temporal": {"idle_us": 8780, "compute_us": 96, "non_compute_us": 35, "span_us": 8911},
        "idle": {"0 host_wait": 8780, "0 other": 0},
        "types": {"COMPUTATION": 96, "MEMORY": 35},
    },
    "mtia_inference_rank0": {
        "temporal": {"idle_us": 19235, "compute_us": 381972, "non_compute_us": 42068, "span_us": 443275},
        "idle": {
            "108 host_wait": 228224,
            "108 kernel_wait": 616,
            "108 other": 60202,
            "112 host_wait": 299058,
            "112 kernel_wait": 432,
            "112 other": 36813,
            "105 host_wait": 361836,
            "105 kernel_wait": 176,
            "105 other": 217,
            "107 host_wait": 242303,
            "107 kernel_wait": 323,
            "107 other": 8271,
            "111 host_wait": 208072,
            "111 kernel_wait": 576,
            "111 other": 91676,
            "104 host_wait": 304943,
            "104 kernel_wait": 397,
            "104 other": 94379,
            "102 host_wait": 224017,
            "102 kernel_wait": 486,
            "102 other": 154663,
            "106 host_wait": 314118,
            "106 kernel_wait": 352,
            "106 other": 24672,
            "103 host_wait": 262091,
            "103 kernel_wait": 167,
            "103 other": 69166,
            "109 host_wait": 202237,
            "109 kernel_wait": 494,
            "109 other": 17004,
            "101 host_wait": 278746,
            "101 kernel_wait": 244,
            "101 other": 30588,
            "110 host_wait": 232683,
            "110 kernel_wait": 400,
            "110 other": 32123,
        },
        "types": {
            "COMPUTATION": 349556,
            "COMPUTATION overlapping MEMORY": 32455,
            "MEMORY": 6903,
            "COMPUTATION overlapping COMMUNICATION": 1,
        },
    },
}
# benchmarks/hta_reference.py --synthetic: HTA 0.6.1 on tests/timeline/synthetic_hta.py's traces, each alone.
HTA_SYNTHETIC = {  # name: (idle_time, compute_time, non_compute_time, kernel_time), us
    "stream_wait": (0, 20, 10, 30),
    "annotated_stream": (0, 50, 0, 50),
    "fractional_times": (11, 13, 0, 24),
    "fractional_instant": (0, 10, 0, 10),
    "late_launch": (120, 30, 0, 150),
    "multi_stream": (0, 60, 30, 90),
}


# benchmarks/ranks_straggler_hta.py (traceinsight 0.6.1): TraceAnalysis(trace_dir=...).get_potential_stragglers(
# num_candidates=1) and, per iteration "step rank", the kernel its straggler function ranks by (the last long NCCL
# kernel on the (stream, name) most variable across ranks): its start in the files' clock and its duration, us. HTA
# reads every step but the last. "sampled": the two shipped ranks; "delayed": tests/timeline/delayed_ranks.py's
# write_job() with its defaults (4 ranks, rank 2 late by 2,000 us before each all-reduce).
HTA_STRAGGLER = {
    "sampled": {
        "straggler": [1],
        "iterations": [551],
        "kernels": {
            "551 0": {"start_us": 1682725898348496.0, "dur_us": 47652.0},
            "551 1": {"start_us": 1682725898512687.0, "dur_us": 17614.0},
        },
    },
    "delayed": {
        "straggler": [2],
        "iterations": [1, 2],
        "kernels": {
            "1 0": {"start_us": 1019505.0, "dur_us": 2500.0},
            "2 0": {"start_us": 1041515.0, "dur_us": 2500.0},
            "1 1": {"start_us": 1019505.0, "dur_us": 2500.0},
            "2 1": {"start_us": 1041515.0, "dur_us": 2500.0},
            "1 2": {"start_us": 1021505.0, "dur_us": 500.0},
            "2 2": {"start_us": 1043515.0, "dur_us": 500.0},
            "1 3": {"start_us": 1019505.0, "dur_us": 2500.0},
            "2 3": {"start_us": 1041515.0, "dur_us": 2500.0},
        },
    },
}
