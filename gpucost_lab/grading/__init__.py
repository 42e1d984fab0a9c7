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

A whole class is graded with the same steps by :mod:`.classes` (``grade_class``); :mod:`.nbgrader_export` is the
``nbgrader export`` plugin that adds ``passed``, and :mod:`.export` turns the grades into Canvas's, Moodle's or a
plain CSV. Bad input raises ``ValueError``; a failure of nbgrader itself raises ``GradingError``.
"""

from __future__ import annotations

import importlib

# Where each public name lives. Loaded on first use (PEP 562), so that the learner's sandboxed kernel, which
# imports ``gpucost_lab.grading.answers`` to send its answers, does not also load nbgrader, nbformat and jsonschema
# (seconds of start-up in every graded kernel) through this package's ``__init__``.
_EXPORTS = {
    "autograde": ("grade",),
    "course": ("COURSE_ID", "GradingError"),
    "notebooks": ("DEFAULT_ASSIGNMENT", "DEFAULT_TIMEOUT_S", "default_source_root", "detect_assignment"),
    "passmark": ("PASS_MARK_PERCENT", "SCORE_DECIMALS", "meets_pass_mark", "points_to_pass"),
    "reports": ("HIDDEN_TESTS_NOTE", "GradeReport", "SelfCheckReport"),
    "sandbox": ("SandboxUnavailable",),
    "selfcheck": ("SELF_CHECK_ENV", "self_check"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "COURSE_ID",
    "DEFAULT_ASSIGNMENT",
    "DEFAULT_TIMEOUT_S",
    "GradeReport",
    "GradingError",
    "HIDDEN_TESTS_NOTE",
    "PASS_MARK_PERCENT",
    "SCORE_DECIMALS",
    "SELF_CHECK_ENV",
    "SandboxUnavailable",
    "SelfCheckReport",
    "default_source_root",
    "detect_assignment",
    "grade",
    "meets_pass_mark",
    "points_to_pass",
    "self_check",
]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
