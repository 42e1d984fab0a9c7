"""gpucost_lab.memory.result (LedgerResult, LedgerBlock) on results built by hand: rows, the first row over budget,
the per-block table and the CLI's JSON keys.

Hand case: a budget of 5.2 GB; two forward rows, block 1 holding 4.0 GB and block 2 5.0 GB (both fit), and one
backward row for block 2 holding 5.5 GB (over the budget by 0.3 GB).
"""

import json

import pytest

from gpucost_lab.memory.result import LedgerBlock, LedgerResult

FORWARD = (LedgerBlock(1, 1.0, 4.0, "fits"), LedgerBlock(2, 2.0, 5.0, "fits"))
LAST = LedgerBlock(2, 2.5, 5.5, "over budget")

# what `ledger --json` prints for every result: the fields without the recomputation and whole-step ones
PLAIN_KEYS = {
    "microbatch",
    "budget_gb",
    "peak_gb",
    "fits",
    "headroom_gb",
    "max_microbatch",
    "blocks",
    "recomputation",
    "precision",
    "accumulation_steps",
    "global_batch",
    "step_time_factor",
}
RECOMPUTE_KEYS = {"checkpointing", "recompute_step_time_factor", "recompute", "checkpointing_saves_gb"}


def forward_only() -> LedgerResult:
    return LedgerResult(
        microbatch=4, budget_gb=5.2, peak_gb=5.0, fits=True, headroom_gb=0.2, max_microbatch=4, blocks=FORWARD
    )


def recomputing() -> LedgerResult:
    return LedgerResult(
        microbatch=4,
        budget_gb=5.2,
        peak_gb=5.5,
        fits=False,
        headroom_gb=-0.3,
        max_microbatch=3,
        blocks=FORWARD,
        checkpointing=True,
        recompute_step_time_factor=4 / 3,
        recompute=LAST,
        checkpointing_saves_gb=1.0,
        recomputation="full",
    )


def whole_step() -> LedgerResult:
    return LedgerResult(
        microbatch=4,
        budget_gb=5.2,
        peak_gb=5.5,
        fits=False,
        headroom_gb=-0.3,
        max_microbatch=3,
        blocks=FORWARD,
        backward=LAST,
    )


def test_rows_are_the_forward_rows_then_backwards_peak_row():
    assert forward_only().rows == FORWARD
    assert recomputing().rows == (*FORWARD, LAST)
    assert whole_step().rows == (*FORWARD, LAST)


def test_the_first_row_over_budget_is_none_when_every_row_fits():
    assert forward_only().first_over_budget is None
    assert recomputing().first_over_budget is LAST  # both forward rows fit; the recompute row is the first over
    over_early = LedgerResult(
        microbatch=4,
        budget_gb=4.5,
        peak_gb=5.0,
        fits=False,
        headroom_gb=-0.5,
        max_microbatch=3,
        blocks=(LedgerBlock(1, 1.0, 4.0, "fits"), LedgerBlock(2, 2.0, 5.0, "over budget")),
    )
    assert over_early.first_over_budget is over_early.blocks[1]


def test_the_table_is_indexed_by_block_number():
    table = forward_only().table()
    assert table.index.name == "block" and list(table.index) == [1, 2]
    assert list(table.columns) == ["activations_gb", "total_gb", "state"]
    assert table.loc[2, "total_gb"] == 5.0 and table.loc[1, "activations_gb"] == 1.0


@pytest.mark.parametrize("result,last_phase", [(recomputing(), "backward recompute"), (whole_step(), "backward")])
def test_the_backward_row_gets_a_phase_and_its_blocks_number(result, last_phase):
    table = result.table()
    assert list(table.index) == [1, 2, 2]  # the backward row is block 2's again
    assert list(table["phase"]) == ["forward", "forward", last_phase]
    assert list(table["total_gb"]) == [4.0, 5.0, 5.5]
    assert list(table["state"]) == ["fits", "fits", "over budget"]


def test_to_dict_has_the_recomputation_keys_only_with_recomputation():
    plain = forward_only().to_dict()
    assert set(plain) == PLAIN_KEYS
    assert plain["blocks"] == [
        {"block": 1, "activations_gb": 1.0, "total_gb": 4.0, "state": "fits"},
        {"block": 2, "activations_gb": 2.0, "total_gb": 5.0, "state": "fits"},
    ]
    recomputed = recomputing().to_dict()
    assert set(recomputed) == PLAIN_KEYS | RECOMPUTE_KEYS
    assert recomputed["recompute"] == {"block": 2, "activations_gb": 2.5, "total_gb": 5.5, "state": "over budget"}
    assert recomputed["checkpointing"] is True and recomputed["checkpointing_saves_gb"] == 1.0
    whole = whole_step().to_dict()
    assert set(whole) == PLAIN_KEYS | {"backward"}
    assert whole["backward"]["total_gb"] == 5.5
    for d in (plain, recomputed, whole):
        assert json.loads(json.dumps(d)) == d  # JSON-ready: plain dicts, lists and numbers
