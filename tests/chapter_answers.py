"""Reference answers the chapter tests put into the answer cells (by nbgrader grade_id), and how each chapter
displays the value of every numeric checkpoint.

Each answer in ``ANSWERS`` is what a learner who worked the section would write: code that computes the value from
the chapter's own objects, or the choice the section argues for.

``DISPLAYED`` has one row per numeric checkpoint, keyed by chapter: where the chapter displays the value (a regular
expression over the text outputs of the cells above the question; its groups are the displayed figures), what a
learner writes from that display, and plausible mistakes; the digits asked and whether the figure is measured are the
question's own, in ``gpucost_lab.course.questions``. Adding a chapter is adding its rows under its file name
(tests/course/test_checkpoint_display.py says what is checked).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ANSWERS: dict[str, dict[str, str]] = {
    "00_start_here.ipynb": {"ch00_q1_answer": "course_device = device"},
    "01_freeze_the_contract.ipynb": {
        "ch01_q1_answer": 'unsynchronized_figure_possible = "false"',
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
        "ch02_q9_answer": 'function_behind_the_widest_gap = "load_batch"',
        "ch02_q10_answer": "addmm_input_shapes = 2",  # one row per Linear layer in section 1's table
        "ch02_q11_answer": "straggler_wait_ms = found.wait_us.value / 1e3",
    },
    "03_price_the_result.ipynb": {
        "ch03_q1_answer": "cost_per_sample_ratio = comparison.unit_cost_ratio",
        "ch03_q2_answer": 'samples_to_target_ratio = samples["candidate"] / samples["baseline"]',
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
        "ch04_q8_answer": 'cheapest_fix_without_parity_check = "accumulation x2 (microbatch 30)"',
        "ch04_q9_answer": "full_recomputation_step_factor = 1.333",
    },
    "05_profile_to_decision.ipynb": {
        "ch05_q1_answer": 'data_share = before_balance.set_index("phase").loc["data", "share"]',
        "ch05_q2_answer": 'low_utilization_suggests = "b"',
        "ch05_q3_answer": 'most_saved_by_removing_logging = before_balance.set_index("phase").loc["logging", "share"]',
        "ch05_q4_answer": 'largest_overhead_after_fix = "checkpoint"',
        "ch05_q5_answer": 'profile_valid_forever = "false"',
        "ch05_q6_answer": "dollars_saved_per_run = saved_usd",
        "ch05_q7_answer": 'alarm_window_blames = "checkpoint"',
        "ch05_q8_answer": 'blamed_phase_share_of_night = after_balance.set_index("phase").loc["checkpoint", "share"]',
    },
    "06_release_the_result.ipynb": {
        "ch06_q1_answer": 'promoted_count = sum(p.decision.action == "promote" for p in plans.values())',
        "ch06_q2_answer": 'tiny_model_failed_check = "parity"',
        "ch06_q3_answer": 'batch128_cost_ratio = plans["batch128-lr-scaled"].decision.cost_ratio',
        "ch06_q4_answer": "in_production = registry.current()",
        "ch06_q5_answer": 'leaking_loop = "a"',
        "ch06_q6_answer": 'faster_step_always_cheaper = "false"',
    },
    "07_feed_the_device.ipynb": {
        "ch07_q1_answer": 'restart_first_batch_ms = table.loc["workers=1", "first_batch_ms"]',
        "ch07_q2_answer": "persistent_cost_ratio = results[1].comparison.time_ratio",
        "ch07_q3_answer": "compiled_time_ratio = compile_cmp.time_ratio",
        "ch07_q4_answer": 'workers_compete_with = "b"',
        "ch07_q5_answer": 'non_blocking_buys = "a"',
        "ch07_q6_answer": 'workers_change_quality = "false"',
    },
    "08_profile_the_service.ipynb": {
        "ch08_q1_answer": 'poisson_p99_ms = arrivals.loc["LoadGen Poisson", "p99_ms"]',
        "ch08_q2_answer": 'knee_two_instances_qps = predictions.loc[("M/D/c", 2), "knee_qps"]',
        "ch08_q3_answer": 'fix_p50_ratio = fix.table().loc["p50", "ratio"]',
        "ch08_q4_answer": "noisy_phase = noisiest_phase(per_phase)",
        "ch08_q5_answer": 'batching_p50_ratio = batching.table().loc["p50", "ratio"]',
        "ch08_q6_answer": "smaller_box_name = smaller_box",
        "ch08_q7_answer": 'low_gpu_share_means = "host"',
        "ch08_q8_answer": 'profile_valid_forever = "false"',
    },
}


@dataclass(frozen=True)
class Shown:
    """A numeric checkpoint and how its chapter displays the answer."""

    answer_cell: str  # the answer cell's nbgrader grade_id; the check cell follows it
    shown: str | None  # regex over the text outputs above the question (None: a count the learner works out)
    answer: str  # what the learner writes: a Python expression over the displayed figures {0}, {1}, ...
    mistakes: dict[str, str] = field(default_factory=dict)  # what went wrong -> the expression a learner writes


DISPLAYED: dict[str, list[Shown]] = {
    "01_freeze_the_contract.ipynb": [
        Shown(
            "ch01_q2_answer",
            r"contracts differ in (\d+) field\(s\)",
            "{0}",
            {"only the input shape": "{0} - 1", "every field of the contract": "len(contract.to_dict())"},
        ),
    ],
    "02_read_the_timeline.ipynb": [
        Shown(
            "ch02_q1_answer",
            r"GPU busy ([\d.]+) ms of a ([\d.]+) ms span",
            "1 - {0} / {1}",
            {
                "the busy share": "{0} / {1}",
                "a percentage": "100 * (1 - {0} / {1})",
                "the idle time in ms": "{1} - {0}",
                "after the fix": "busy_idle(fixed).idle_us / busy_idle(fixed).span_us",
            },
        ),
        Shown(
            "ch02_q3_answer",
            r"^loss\.item\(\) every step .* (\d+) +\d+ *$",
            "{0}",
            {
                "every nested call counted (item, _local_scalar_dense, synchronize)": "3 * {0}",
                "the rows that .head() shows": "5",
            },
        ),
        # the readable gaps table, indexed by rank: the widest gap is "1  <start> s  <duration> s  <before>  <after>"
        Shown(
            "ch02_q6_answer",
            r"^1 +([\d.]+) s +([\d.]+) s ",
            "{1}",
            {
                "the gap's start, not its length": "{0}",
                "in milliseconds": "{1} * 1000",
                "the second widest gap": 'alex_gaps["duration_us"].iloc[1] / 1e6',
            },
        ),
        Shown(
            "ch02_q7_answer",
            r"^\d+ +communication +\S+ \S+ +([\d.]+)%",
            "{0} / 100",
            {
                "a percentage": "{0}",
                "communication with its overlaps": 'rank0_types[rank0_types["kernel_type"]'
                '.str.contains("communication")]'
                '["share"].sum()',
                "the GPU's busy share of the span": "rank0_busy.busy_us / rank0_busy.span_us",
            },
        ),
        # counted in section 1's table grouped by input shape: one aten::addmm row per Linear layer
        Shown(
            "ch02_q10_answer",
            None,
            "2",
            {"one operator name": "1", "every call in the two recorded steps": "4"},
        ),
        Shown(
            "ch02_q11_answer",
            r"^straggler: rank \d+, arriving ([\d.]+) ms .* waits ([\d.]+) ms per collective for it "
            r"\(95% interval ([\d.]+)-([\d.]+) ms",
            "{1}",
            {
                "the host's ProfilerStep difference in step 552": "(job.rank(1).step_us[552]"
                " - job.rank(0).step_us[552]) / 1e3",
                "the straggler's lateness, not the wait": "{0}",
                "in microseconds": "{1} * 1000",
                "the first step's wait alone": 'late.set_index("step").loc[551, "wait_mean_us"] / 1e3',
                "the largest late-arrival spread": 'late["spread_max_us"].max() / 1e3',
                "the whole wait of rank 0 over both steps": 'ranks.set_index("rank").loc[0, "wait_us"] / 1e3',
            },
        ),
    ],
    "04_memory_budget.ipynb": [
        Shown(
            "ch04_q1_answer",
            r"largest microbatch that fits: (\d+)",
            "{0}",
            {"rounded up": "{0} + 1", "the whole 24 GB, no reserve": "int((24 - 3.2) / 0.34)"},
        ),
        # not displayed: each block adds 0.34 x 100 / 10 = 3.4 GB; 3.2 + 5 x 3.4 = 20.2 <= 21.6 < 3.2 + 6 x 3.4 = 23.6
        Shown(
            "ch04_q2_answer",
            None,
            "6",
            {"the last block that fits": "5", "the block of the microbatch-60 example": "10"},
        ),
        Shown(
            "ch04_q3_answer",
            r"largest microbatch with checkpointing: (\d+)",
            "{0}",
            {"without checkpointing": "ledger.max_microbatch()", "rounded up": "{0} + 1"},
        ),
        Shown(
            "ch04_q4_answer",
            r"activations per sample: ([\d,]+) bytes",
            "{0}",
            {
                "MB, not bytes": "{0} / 1e6",
                "the whole microbatch of 8": "8 * {0}",
                "one sample's input": "per_sample_input_bytes",
            },
        ),
        Shown(
            "ch04_q6_answer",
            r"min_time_us.*?^1 .*? ([\d.]+) µs",
            "{0}",
            {
                "seconds, not microseconds": "{0} / 1e6",
                "nanoseconds": "{0} * 1e3",
                "fp32's time": 'roofline.loc[0, "min_time_us"]',
                "the bf16 compute peak, ignoring the memory roof": "linear_bf16.flops / 125e12 * 1e6",
            },
        ),
        # counted from section 3's table: six rows say "in window", three say "LATE"
        Shown("ch04_q7_answer", None, "6", {"every fix that fits memory": "9", "only the late ones": "3"}),
        Shown(
            "ch04_q9_answer",
            r"^\d+ +full recomputation +\S+ GB +([\d.]+) ",
            "{0}",
            {
                "accumulation's factor": "1.15",
                "the time saved, not the factor": "1 - {0}",
                "selective recomputation's": "1.027",
            },
        ),
    ],
    "05_profile_to_decision.ipynb": [
        Shown(
            "ch05_q1_answer",
            r"dominant phase: data\n.*?^\d+ +data +\S+ \S+ +(\S+) ",
            "{0}",
            {
                "a percentage": "100 * {0}",
                "the 90% figure of section 4": 'options["data"].wall_reduction_share',
                "after the fix": 'after_balance.set_index("phase").loc["data", "share"]',
            },
        ),
        Shown(
            "ch05_q3_answer",
            r"dominant phase: data\n.*?^\d+ +logging +\S+ \S+ +(\S+) ",
            "{0}",
            {
                "the 90% figure of section 4": 'options["logging"].wall_reduction_share',
                "a percentage": "100 * {0}",
                "after the fix": 'after_balance.set_index("phase").loc["logging", "share"]',
            },
        ),
        Shown(
            "ch05_q6_answer",
            r"\$([\d.]+) saved per nightly run",
            "{0}",
            {
                "the 90% bound of section 4": 'options["data"].cost_saved_usd',
                "cents": "100 * {0}",
                "the data phase's whole cost": 'before_balance.set_index("phase").loc["data", "cost_usd"]',
            },
        ),
        Shown(
            "ch05_q8_answer",
            r"whole night\n.*?^checkpoint +\S+ +\S+ +(\S+) *$",
            "{0}",
            {
                "the alarm window's share": "1.0",
                "a percentage": "100 * {0}",
                "before the fix": 'before_balance.set_index("phase").loc["checkpoint", "share"]',
            },
        ),
    ],
    "03_price_the_result.ipynb": [
        Shown(
            "ch03_q1_answer",
            r"cost per sample, candidate over baseline: ([\d.]+)x \(95% interval",
            "{0}",
            {
                "inverted: baseline over candidate": "1 / {0}",
                "a percentage": "100 * {0}",
                "the step-time ratio, the batch ignored": "comparison.time_ratio",
                "the baseline's dollars per sample": 'cost_per_sample["baseline"].geomean',
                "the throughput gain": "gain",
            },
        ),
        Shown(
            "ch03_q2_answer",
            r"samples to target, candidate over baseline: ([\d.]+)x \(batch (\d+)x, steps to target ([\d.]+)x\)",
            "{0}",
            {
                "inverted: baseline over candidate": "1 / {0}",
                "the change, not the factor": "{0} - 1",
                "steps only, the batch ignored": "{2}",
                "the batch's factor alone": "{1}",
            },
        ),
    ],
    "06_release_the_result.ipynb": [
        Shown(
            "ch06_q1_answer",
            r"^ +action\b.*?^batch128-lr-scaled +(\w+) .*?^bf16-autocast +(\w+) .*?^tiny-model +(\w+) ",
            "['{0}', '{1}', '{2}'].count('promote')",
            {"the fallbacks": "['{0}', '{1}', '{2}'].count('fallback')", "every candidate": "3"},
        ),
        Shown(
            "ch06_q3_answer",
            r"^batch128-lr-scaled\b[^\n]*? ([\d.]+) +([\d.]+) to ([\d.]+)",
            "{0}",
            {
                "inverted: baseline over candidate": "1 / {0}",
                "a percentage": "100 * {0}",
                "the step-time ratio, steps to target ignored": 'plans["batch128-lr-scaled"].comparison.time_ratio',
                "the other candidate's": 'plans["bf16-autocast"].decision.cost_ratio',
            },
        ),
    ],
    "07_feed_the_device.ipynb": [
        # the settings table of section 3 (the profile's comparison above it also has a "workers=0" row)
        Shown(
            "ch07_q1_answer",
            r"workers=1: an epoch's first batch after ([\d.]+) ms \(95% interval",
            "{0}",
            {
                "the persistent worker's": 'table.loc["workers=1, persistent", "first_batch_ms"]',
                "no workers": 'table.loc["workers=0", "first_batch_ms"]',
                "in seconds": "{0} / 1000",
            },
        ),
        Shown(
            "ch07_q2_answer",
            r"^persistent_workers False -> True +([\d.]+) ",
            "{0}",
            {
                "inverted: baseline over candidate": "1 / {0}",
                "a percentage": "100 * {0}",
                "the first change's ratio": "results[0].comparison.time_ratio",
            },
        ),
        Shown(
            "ch07_q3_answer",
            r"step time ([\d.]+)x \(95% interval [^\n]*\neager \d+ us per step",
            "{0}",
            {
                "inverted: eager over compiled": "1 / {0}",
                "a percentage": "100 * {0}",
                "the compiled step's time in microseconds": "compile_price.compiled_step_s * 1e6",
                "the break-even steps": "compile_price.break_even_steps.value",
            },
        ),
    ],
    "08_profile_the_service.ipynb": [
        Shown(
            "ch08_q1_answer",
            r"Poisson arrivals: p99 (\d+) ms \(95% interval",
            "{0}",
            {
                "the closed loop's p99": 'arrivals.loc["closed loop", "p99_ms"]',
                "the p50": 'arrivals.loc["LoadGen Poisson", "p50_ms"]',
                "in seconds": "{0} / 1000",
            },
        ),
        Shown(
            "ch08_q2_answer",
            r"M/D/c, 2 instance\(s\) of 10 ms: the p90 passes 50 ms above ([\d.]+) requests/s",
            "{0}",
            {
                "M/M/c's": 'predictions.loc[("M/M/c", 2), "knee_qps"]',
                "one instance's": 'predictions.loc[("M/D/c", 1), "knee_qps"]',
                "twice one instance's": '2 * predictions.loc[("M/D/c", 1), "knee_qps"]',
            },
        ),
        Shown(
            "ch08_q3_answer",
            r"fixed against stalled, p50 latency ([\d.]+)x \(95% interval",
            "{0}",
            {
                "inverted: stalled over fixed": "1 / {0}",
                "a percentage": "100 * {0}",
                "the fixed p50 in ms, not the ratio": 'fix.table().loc["p50", "candidate_ms"]',
            },
        ),
        Shown(
            "ch08_q5_answer",
            r"batching against no batching, p50 latency ([\d.]+)x \(95% interval",
            "{0}",
            {
                "inverted: no batching over batching": "1 / {0}",
                "a percentage": "100 * {0}",
                "the batched p50 in ms, not the ratio": 'batching.table().loc["p50", "candidate_ms"]',
            },
        ),
    ],
}
