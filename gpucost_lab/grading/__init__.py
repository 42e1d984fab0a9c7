"""Grading the course lab (`labs/`, taught as the course's final step): 80% of the points passes.

Two tools, one rule:

- ``grade(notebook)`` is the instructor's autograder for one submission. It runs the standard nbgrader 0.9
  steps in a throw-away course directory built from the repository's own ``solutions/`` (``generate_assignment``
  to build the gradebook and checksums, ``autograde`` with a per-cell timeout, ``generate_feedback``) and reads
  the scores back from that gradebook. Test cells are read-only; nbgrader restores any edited one (hidden tests
  included) from the gradebook, and a deleted one is put back, so changing the tests never raises a score. The
  learner's cells run in a sandboxed kernel and the tests in the grader's own process, on answers read back as
  plain data (:mod:`.execute`, :mod:`.sandbox`, :mod:`.answers`), so code in an answer cannot change a score.
  An answer that loops forever fails its cell after the timeout; the rest is still graded.
- ``self_check(notebook)`` is the learner's progress check: it runs the learner's own copy, whose test cells
  are the *visible* tests only, and counts the points they pass. Hidden tests run only when the lab is graded
  and may still fail, so a self-check is progress, never the grade.

Both pass at ``PASS_MARK_PERCENT`` of the maximum score, compared in exact fractions of whole points
(``meets_pass_mark``), so 8 of 10 passes and 7.99 of 10 does not, whatever the floating-point noise.
"""
from .autograde import COURSE_ID, GradingError, _config, grade  # noqa: F401  (_config: tests read the nbgrader config)
from .notebooks import DEFAULT_ASSIGNMENT, DEFAULT_TIMEOUT_S, default_source_root, detect_assignment
from .passmark import PASS_MARK_PERCENT, SCORE_DECIMALS, meets_pass_mark, points_to_pass
from .reports import HIDDEN_TESTS_NOTE, GradeReport, SelfCheckReport
from .selfcheck import SELF_CHECK_ENV, self_check

__all__ = ["COURSE_ID", "DEFAULT_ASSIGNMENT", "DEFAULT_TIMEOUT_S", "GradeReport", "GradingError", "HIDDEN_TESTS_NOTE",
           "PASS_MARK_PERCENT", "SCORE_DECIMALS", "SELF_CHECK_ENV", "SelfCheckReport", "default_source_root",
           "detect_assignment", "grade", "meets_pass_mark", "points_to_pass", "self_check"]
