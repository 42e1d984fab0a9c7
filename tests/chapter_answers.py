"""Reference answers the chapter tests put into the answer cells (by nbgrader grade_id).

Each answer is what a learner who worked the section would write: code that computes the value from
the chapter's own objects, or the choice the section argues for.
"""

ANSWERS: dict[str, dict[str, str]] = {
    "01_freeze_the_contract.ipynb": {
        "ch01_q1_answer": "overstatement = unsynced.units_per_s_geomean / synced.units_per_s_geomean",
        "ch01_q2_answer": "fields_named = len(mismatch.changes)",
        "ch01_q3_answer": 'sync_function = "torch.cuda.synchronize"',
        "ch01_q4_answer": 'first_steps_representative = "false"',
    },
    "02_read_the_timeline.ipynb": {
        "ch02_q1_answer": "stall_idle_share = stall_busy.idle_us / stall_busy.span_us",
        "ch02_q2_answer": 'knob_that_closed_the_gaps = "num_workers"',
        "ch02_q3_answer": "item_sync_points = len(sync_points(item_trace))",
        "ch02_q4_answer": 'phase_with_the_gaps = "data"',
        "ch02_q5_answer": 'profile_every_step_is_truer = "false"',
        "ch02_q6_answer": "widest_real_gap_s = 10.0",  # the readable table shows 10.034 s
        "ch02_q7_answer": "communication_share = 0.62",  # the breakdown shows 61.6%
        "ch02_q8_answer": 'convolution_math_mode = "tf32"',
    },
    "03_price_the_result.ipynb": {
        "ch03_q1_answer": 'baseline_cost_per_sample_usd = cost_per_sample["baseline"].geomean',
        "ch03_q2_answer": 'relative_cost_to_target = to_target["candidate"].value / to_target["baseline"].value',
        "ch03_q3_answer": 'course_question = "more expensive"',
        "ch03_q4_answer": 'price_is = "assumption"',
    },
    "04_memory_budget.ipynb": {
        "ch04_q1_answer": "largest_microbatch = ledger.max_microbatch()",
        "ch04_q2_answer": "first_block_over_budget_at_100 = ledger.at(100).first_over_budget.block",
        "ch04_q3_answer": "largest_microbatch_checkpointed = ledger.max_microbatch(checkpointing=True)",
        "ch04_q4_answer": "activation_bytes_per_sample = measured.activation_bytes_per_sample",
        "ch04_q5_answer": 'bf16_linear_bound = "memory-bound"',
        "ch04_q6_answer": 'bf16_min_time_us = roofline.loc[1, "min_time_us"]',
        "ch04_q7_answer": "fixes_inside_the_window = 6",  # section 3's table: fixes 1-6 are "in window"
        "ch04_q8_answer": 'cheapest_fix_without_parity_check = "selective recomputation"',
        "ch04_q9_answer": "full_recomputation_step_factor = 1.333",
    },
    "05_profile_to_decision.ipynb": {
        "ch05_q1_answer": 'data_share = before_balance.set_index("phase").loc["data", "share"]',
        "ch05_q2_answer": 'low_utilization_suggests = "b"',
        "ch05_q3_answer": 'most_saved_by_removing_logging = before_balance.set_index("phase").loc["logging", "share"]',
        "ch05_q4_answer": 'largest_overhead_after_fix = "checkpoint"',
        "ch05_q5_answer": 'profile_valid_forever = "false"',
        "ch05_q6_answer": "dollars_saved_per_run = saved_usd",
    },
    "06_release_the_result.ipynb": {
        "ch06_q1_answer": 'promoted_count = sum(p.decision.action == "promote" for p in plans.values())',
        "ch06_q2_answer": 'tiny_model_failed_check = "parity"',
        "ch06_q3_answer": 'batch128_ratio_upper = plans["batch128-lr-scaled"].decision.cost_ratio_ci95[1]',
        "ch06_q4_answer": "in_production = registry.current()",
        "ch06_q5_answer": 'leaking_loop = "a"',
        "ch06_q6_answer": 'faster_step_always_cheaper = "false"',
    },
}
