"""Reference answers the chapter tests put into the answer cells (by nbgrader grade_id).

Each answer is what a learner who worked the section would write: code that computes the value from
the chapter's own objects, or the choice the section argues for.
"""

ANSWERS: dict[str, dict[str, str]] = {}
