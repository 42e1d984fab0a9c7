"""Reference answers the chapter tests put into the answer cells (by nbgrader grade_id).

Each answer is what a learner who worked the section would write: code that computes the value from
the chapter's own objects, or the choice the section argues for.
"""

ANSWERS: dict[str, dict[str, str]] = {
    "02_read_the_timeline.ipynb": {
        "ch02_q1_answer": "stall_idle_share = stall_busy.idle_us / stall_busy.span_us",
        "ch02_q2_answer": 'knob_that_closed_the_gaps = "num_workers"',
        "ch02_q3_answer": "item_sync_points = len(sync_points(item_trace))",
        "ch02_q4_answer": 'phase_with_the_gaps = "data"',
        "ch02_q5_answer": 'profile_every_step_is_truer = "false"',
    },
}
