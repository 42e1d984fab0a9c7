"""gpucost_lab.timeline.kernels: GPU time by kernel type and by name against HolisticTraceAnalysis's
``get_gpu_kernel_breakdown`` on the real traces (tests/timeline/hta_figures.py) and hand computations on small traces.
"""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl

from .helpers import gpu, load_events
from .hta_figures import HTA_KERNEL_TYPES, HTA_KERNELS_BY_NAME, HTA_TEMPORAL_BUSY_US, within_1_percent


# ----------------------------------------------------------------------------------------------- against HTA
@pytest.mark.parametrize("name", list(HTA_KERNEL_TYPES))
def test_kernel_type_breakdown_matches_hta(real_traces, name):
    table = tl.kernel_breakdown(real_traces[name])
    ours = dict(zip(table["kernel_type"], table["total_us"]))
    expected = {label.lower(): us for label, us in HTA_KERNEL_TYPES[name].items()}
    assert set(ours) == set(expected)
    for label, hta_us in expected.items():
        assert within_1_percent(ours[label], hta_us), label
    assert table["share"].sum() == pytest.approx(1.0)


def test_kernel_types_add_up_to_htas_busy_time(real_traces):
    table = tl.kernel_breakdown(real_traces["sampled_rank0_gpu"])
    assert table["total_us"].sum() == pytest.approx(HTA_TEMPORAL_BUSY_US["sampled_rank0_gpu"], rel=0.01)


@pytest.mark.parametrize("name", list(HTA_KERNELS_BY_NAME))
def test_kernel_totals_by_name_equal_htas(real_traces, name):
    table = tl.kernels_by_name(real_traces[name])
    for prefix, length, hta_us in HTA_KERNELS_BY_NAME[name]:
        rows = table[table["name"].str.startswith(prefix, na=False) & (table["name"].str.len() == length)]
        assert len(rows) == 1, prefix
        assert rows["total_us"].iloc[0] == hta_us, prefix


def test_kernels_by_name_lists_the_top_n_of_the_full_table(real_traces):
    full = tl.kernels_by_name(real_traces["a100_alexnet_train"])
    top = tl.kernels_by_name(real_traces["a100_alexnet_train"], 3)
    # the largest is HTA's 55,503 us of pageable host-to-device copies, then sgemm 2,621 us and cudnn 2,069 us
    assert list(top["total_us"]) == [55503, 2621, 2069]
    assert list(top["share"]) == list(full["share"].head(3))


# ----------------------------------------------------------------------------------------------- synthetic traces
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
    table = tl.kernel_breakdown(load_events(tmp_path, TYPED))
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
    table = tl.kernels_by_name(load_events(tmp_path, TYPED)).set_index("name")
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
