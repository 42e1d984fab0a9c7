"""gpucost_lab.widgets.ledger_markup (the ledger widget's verdict, per-block table and bar) called directly, against
hand computations on the course ledger (chapter 04).

Course ledger: static 3.2 GB, 0.34 GB/sample, 24 GB device, 10% reserve (budget 24 x 0.9 = 21.6 GB), 10 blocks.
  32: peak 3.2 + 0.34 x 32 = 14.08 GB, headroom 21.6 - 14.08 = 7.52 GB; largest microbatch 54.
  100: each block adds 3.4 GB; block 6 holds 3.2 + 20.4 = 23.6 GB, 2 GB over; the whole step 3.2 + 34 = 37.2 GB,
       37.2 - 21.6 = 15.6 GB over.
  300 with full recomputation (keep 0.1): per block 10.2 GB; the recompute holds 3.2 + 10.2 x 1.9 = 22.58 GB, 0.98 GB
       over; without it the peak would be 3.2 + 102 = 105.2 GB: it saves 105.2 - 22.58 = 82.62 GB.
  fp16-mixed: 0.34 x 2 / 4 = 0.17 GB/sample; at 60 the peak is 3.2 + 10.2 = 13.4 GB; largest floor(18.4 / 0.17) = 108.
  bf16-mixed, selective (keep 0.3), microbatch 60: per block 0.17 x 60 / 10 = 1.02 GB; block k keeps 0.306 k GB; the
       recompute holds 1.02 x (9 x 0.3 + 1) = 3.774 GB, resident 3.2 + 3.774 = 6.974 GB.
Bar: 560 px wide with 4 px of padding, so x(v) = 4 + 552 v / max(device, peak): the budget at 4 + 552 x 0.9 = 500.8.
"""

import re

from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.widgets.ledger_markup import ledger_bar_html, ledger_table_html, ledger_verdict_html

from .helpers import rows, text

COURSE = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)


def verdict(ledger, result, base=COURSE):
    return text(ledger_verdict_html(base, ledger, result))


# ---- the verdict -----------------------------------------------------------------------------------------------------


def test_a_fitting_step_states_its_peak_headroom_and_largest_microbatch():
    html_text = ledger_verdict_html(COURSE, COURSE, COURSE.at(32))
    assert html_text.startswith('<div role="status" aria-live="polite">')
    v = text(html_text)
    assert "fits: peak 14.08 GB of the 21.6 GB budget (24 GB device, 10% reserve); headroom 7.52 GB." in v
    assert "largest microbatch that fits: 54." in v
    assert "global batch 32: one microbatch of 32, no recomputation. This is the plain run" in v
    assert "recomput" not in v.replace("no recomputation", "") and "parity" not in v


def test_running_out_names_the_first_block_over_and_the_whole_steps_need():
    v = verdict(COURSE, COURSE.at(100))
    assert "out of memory at block 6: 23.6 GB resident, 2 GB over the 21.6 GB budget" in v
    assert "The whole step would need 37.2 GB, 15.6 GB over." in v


def test_running_out_in_the_recompute_says_so_and_prices_the_recompute():
    v = verdict(COURSE, COURSE.at(300, recompute="full"))
    assert "out of memory while recomputing block 10 in backward: 22.58 GB resident, 0.98 GB over" in v
    assert "whole step would need" not in v  # the recompute row is the step's peak
    assert "largest microbatch that fits with activation checkpointing: 284 (54 without)." in v
    assert "saves 82.62 GB at microbatch 300: the peak falls from 105.2 GB to 22.58 GB." in v
    assert "each step takes 4/3 as long, about 33% longer" in v
    assert "Global batch 300 does not fit here as one microbatch without recomputation (the largest is 54)." in v


def test_a_mixed_precision_ledger_asks_for_a_parity_check():
    fp16 = COURSE.with_precision("fp16-mixed")
    v = verdict(fp16, fp16.at(60))
    assert "fits: peak 13.4 GB" in v
    assert "largest microbatch that fits with fp16-mixed: 108 (54 without)." in v
    assert "fp16-mixed with a loss scale counts activations in 16 bits: 0.17 GB per sample instead of 0.34 GB" in v
    assert "confirm quality with a parity check (chapter 03)" in v


def test_accumulation_states_its_step_time_factor():
    v = verdict(COURSE, COURSE.at(30, accumulation_steps=2))
    # 1 + (2 - 1) x 0.15 = 1.15
    assert "global batch 60: 2 microbatches of 30, accumulated. Each optimizer step takes 1.15 times as long" in v
    assert "(accumulation: 0.15 more for the extra microbatch, the measured overhead)" in v
    assert "Global batch 60 does not fit here as one microbatch without recomputation (the largest is 54)" in v


def test_two_factors_are_each_said_once_and_the_sentences_read_aloud():
    # 1.15 x 4/3 = 1.5333
    v = verdict(COURSE, COURSE.at(30, accumulation_steps=2, recompute="full"))
    assert "takes 1.533 times as long as the plain run's (accumulation 1.15, 0.15 more for the extra microbatch" in v
    assert "times full recomputation 1.333)" in v
    assert v.count("1.533") == 1 and v.count("1.333") == 1
    assert not set("×→≈−") & set(v)  # no symbol a screen reader names instead of reading it as a word


def test_static_memory_over_the_budget_leaves_no_microbatch():
    ledger = MemoryLedger(static_gb=22.0, activation_gb_per_sample=0.1)  # 22 > 21.6
    v = verdict(ledger, ledger.at(1), base=ledger)
    assert "largest microbatch that fits: none (static memory alone, 22 GB, leaves no room in the budget)." in v


# ---- the per-block table ---------------------------------------------------------------------------------------------


def test_the_table_lists_every_block_at_32():
    html_text = ledger_table_html(COURSE, COURSE.at(32))
    table = rows(html_text)
    assert list(table[0]) == ["block", "activations (GB)", "resident (GB)", "state"]  # no phase column
    assert [r["block"] for r in table] == [f"block {k}" for k in range(1, 11)]
    assert [r["activations (GB)"] for r in table][::4] == ["1.088", "5.44", "9.792"]  # 1.088 x 1, 5, 9
    assert table[-1]["resident (GB)"] == "14.08"  # 3.2 + 10.88
    caption = re.search(r"<caption[^>]*>(.*?)</caption>", html_text).group(1)
    assert caption == "Memory resident at microbatch 32 (without activation checkpointing; budget 21.6 GB)"


def test_only_the_rows_over_budget_are_marked():
    html_text = ledger_table_html(COURSE, COURSE.at(60))  # block 10 holds 23.6 > 21.6
    assert [r["state"] for r in rows(html_text)] == ["fits"] * 9 + ["over budget"]
    styles = re.findall(r'<tr style="([^"]*)">', html_text)
    assert styles[:9] == [""] * 9 and styles[9] != ""


def test_selective_recomputation_rows_have_their_phase_and_the_caption_its_settings():
    bf16 = COURSE.with_precision("bf16-mixed")
    html_text = ledger_table_html(bf16, bf16.at(60, recompute="selective", accumulation_steps=2))
    table = rows(html_text)
    assert len(table) == 11 and table[-1]["block"] == "recompute block 10"
    assert [r["phase"] for r in table[:2]] == ["forward: 1 block, 30% kept each", "forward: 2 blocks, 30% kept each"]
    assert table[-1]["phase"] == "backward: recompute (peak)"
    assert table[0]["activations (GB)"] == "0.306"
    assert (table[-1]["activations (GB)"], table[-1]["resident (GB)"]) == ("3.774", "6.974")
    caption = re.search(r"<caption[^>]*>(.*?)</caption>", html_text).group(1)
    assert caption == (
        "Memory resident at microbatch 60 (bf16-mixed, with selective recomputation; one of 2 accumulation "
        "microbatches, global batch 120; budget 21.6 GB)"
    )


def test_full_recomputation_rows_count_kept_inputs():
    html_text = ledger_table_html(COURSE, COURSE.at(60, recompute="full"))
    assert [r["phase"] for r in rows(html_text)[:2]] == ["forward: 1 kept input", "forward: 2 kept inputs"]
    assert "(with activation checkpointing; budget 21.6 GB)" in html_text


# ---- the bar ---------------------------------------------------------------------------------------------------------


def test_the_bar_at_32_is_drawn_to_the_device_and_described_in_words():
    bar = ledger_bar_html(COURSE, COURSE.at(32))
    legend = "static 3.2 GB · peak activations 10.88 GB · headroom 7.52 GB · reserve 2.4 GB"
    assert f'aria-label="{legend} (budget 21.6 GB dashed, device 24 GB solid)"' in bar
    assert '<rect x="4.0" y="4" width="73.6"' in bar  # static: 552 x 3.2 / 24 = 73.6 px from the padding
    assert '<line x1="500.8" x2="500.8"' in bar and '<line x1="556.0" x2="556.0"' in bar  # budget, device
    assert "over budget:" not in bar  # no excess drawn


def test_the_bar_over_budget_draws_the_excess_and_says_it():
    bar = ledger_bar_html(COURSE, COURSE.at(60))  # peak 23.6: 2 GB over
    assert "OVER BUDGET by 2 GB" in text(bar)
    # from the budget at 500.8 to the peak at 4 + 552 x 23.6 / 24 = 546.8
    assert re.search(r'<rect x="500.8" y="4" width="46.0" [^>]*><title>over budget: 2 GB</title>', bar)
    assert "headroom:" not in bar


def test_a_peak_beyond_the_device_rescales_the_bar():
    # microbatch 100, peak 37.2 > 24: the bar spans the peak, the device line at 4 + 552 x 24 / 37.2 = 360.13
    bar = ledger_bar_html(COURSE, COURSE.at(100))
    assert '<line x1="360.1" x2="360.1"' in bar
