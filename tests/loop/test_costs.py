"""gpucost_lab.loop.costs: each phase's seconds per call, derived from the GPU-timeline simulator, against the hand
estimates of tests/loop/helpers.py (CPU durations jittered by +-5%, hence the tolerances)."""

import pytest

from gpucost_lab.loop.costs import TIME_SCALE, phase_costs

from .helpers import HAND_S


def test_a_step_with_workers_by_hand():
    costs = phase_costs("healthy")
    assert costs.sim_scenario == "healthy"
    assert costs.forward_backward_s == pytest.approx(HAND_S["forward_backward"], rel=0.03)
    assert costs.data_s == pytest.approx(HAND_S["data_workers"], rel=0.05)
    assert costs.data_with_workers_s == costs.data_s  # the healthy scenario is the one with 4 workers
    # one loss.item() on an idle stream: 14 + 6 + 3 = 23 us of host calls, not jittered, one millisecond each
    assert costs.logging_s == pytest.approx(23e-6 * TIME_SCALE, rel=1e-12) == 0.023


def test_no_workers_make_the_main_thread_decode_and_the_lever_s_figure_is_the_healthy_one():
    stall, healthy = phase_costs("dataloader_stall"), phase_costs("healthy")
    assert stall.data_s == pytest.approx(HAND_S["data_no_workers"], rel=0.05)  # 120 us + 64 x 80 us of decoding
    assert stall.data_with_workers_s == healthy.data_s
    assert stall.forward_backward_s == pytest.approx(healthy.forward_backward_s, rel=0.01)  # the same model


def test_eval_and_checkpoint_by_hand():
    costs = phase_costs("eval_checkpoint_heavy")
    assert costs.eval_batch_s == pytest.approx(HAND_S["eval_batch"], rel=0.03)
    assert costs.checkpoint_s == pytest.approx(HAND_S["checkpoint"], rel=0.05)
    # an async save blocks for the pinned copy of the same 402,849,792 bytes at 25 GB/s
    assert costs.async_checkpoint_blocking_share * costs.checkpoint_s == pytest.approx(
        HAND_S["async_checkpoint"], rel=1e-9
    )


def test_the_gpu_computes_through_most_of_a_step_and_nearly_all_of_an_eval():
    costs = phase_costs("healthy")
    # kernels 1716 us of a 2126 us synchronized step: the rest is the batch's copy and the launch lead
    assert costs.forward_backward_busy_share == pytest.approx(1716 / 2126, rel=0.02)
    assert 0.99 < costs.eval_busy_share <= 1.0  # eval data is resident: forward passes back to back


def test_costs_are_computed_once_and_an_unknown_scenario_is_refused():
    assert phase_costs("healthy") is phase_costs("healthy")
    with pytest.raises(ValueError, match="sim_scenario must be one of 'healthy', .*, got 'slow'"):
        phase_costs("slow")
