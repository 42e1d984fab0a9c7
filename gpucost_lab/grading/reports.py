"""What grading and self-checking report: scores, failed cells, the pass mark in words."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_lab.grading.passmark import PASS_MARK_PERCENT, SCORE_DECIMALS, points_text, points_to_pass

HIDDEN_TESTS_NOTE = (
    "visible tests only: hidden tests run when the lab is graded and may still fail, so this is "
    "progress, not your grade"
)


@dataclass(frozen=True)
class GradeReport:
    """One autograded submission. ``failed`` lists graded cells that lost points, ``pending_manual`` the cells
    that still need a human grader (their points are not in ``score`` yet, and they are never counted as failed)."""

    score: float
    max_score: float
    percent: float
    passed: bool
    failed: tuple = ()
    pending_manual: tuple = ()
    feedback_html: str | None = None
    notes: tuple = ()  # what went wrong around the grade without changing it (e.g. feedback not written)

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "max_score": self.max_score,
            "percent": self.percent,
            "passed": self.passed,
            "failed": [dict(f) for f in self.failed],
            "pending_manual": [dict(p) for p in self.pending_manual],
            "feedback_html": self.feedback_html,
            "notes": list(self.notes),
        }

    def text(self) -> str:
        verdict = "PASSED" if self.passed else "NOT PASSED"
        lines = [
            f"{self.score:g} / {self.max_score:g} points ({self.percent:.2f}%): {verdict} "
            f"(pass mark {PASS_MARK_PERCENT}% = {points_text(points_to_pass(self.max_score))})"
        ]
        lines += [f"  ✗ {f['cell']}: {f['points']:g} / {f['max_points']:g}  {f['message']}" for f in self.failed]
        if self.pending_manual:
            pending = sum(p["max_points"] for p in self.pending_manual)
            lines.append(
                f"awaiting manual grading ({pending:g} points, not counted yet, not failed): "
                + ", ".join(p["cell"] for p in self.pending_manual)
            )
        if self.feedback_html:
            lines.append(f"feedback: {self.feedback_html}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


@dataclass(frozen=True)
class SelfCheckReport:
    """The learner's progress on the visible tests of their own copy of a lab (``note`` says what it is not)."""

    notebook: str
    points_passed: float
    visible_points: float
    manual_points: float
    max_points: float
    percent: float
    points_to_pass: float
    reaches_pass_mark: bool
    failed: tuple = ()
    note: str = HIDDEN_TESTS_NOTE
    points_with_hidden_checks: float = 0.0  # points whose tests have more checks when the lab is graded
    learner: str | None = None  # whose numbers the lab ran with (None: the self-study lab)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["failed"] = [dict(f) for f in self.failed]
        out["pass_mark_percent"] = PASS_MARK_PERCENT
        return out

    def text(self) -> str:
        whose = f"learner {self.learner!r}'s numbers" if self.learner else "the self-study numbers (no learner id)"
        lines = [
            f"Self-check of {self.notebook} (the saved file, run with {whose}): {self.points_passed:g} of "
            f"{self.max_points:g} points pass their visible tests ({self.percent:.0f}%); passing needs "
            f"{PASS_MARK_PERCENT}% = {points_text(self.points_to_pass)}."
        ]
        if self.points_with_hidden_checks:
            lines.append(
                f"{points_text(self.points_with_hidden_checks)} of {self.max_points:g} also depend on "
                "hidden checks, which run only when your lab is graded: a visible pass is not yet a grade."
            )
        if self.reaches_pass_mark:
            lines.append(
                "✓ On track for the pass mark, but this counts visible tests only: hidden tests run when "
                "your lab is graded and may still fail."
            )
        else:
            missing = round(max(0.0, self.points_to_pass - self.points_passed), SCORE_DECIMALS)
            lines.append(
                f"Not there yet: {points_text(missing)} more needed. "
                "Hidden tests run when your lab is graded and may still fail."
            )
        lines += [
            f"  ✗ {f['cell']} ({f['max_points']:g} point{'' if f['max_points'] == 1 else 's'}): {f['message']}"
            for f in self.failed
        ]
        if self.manual_points:
            lines.append(f"{self.manual_points:g} points are graded by hand and are not counted here.")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython shows the text, not the dataclass repr
        printer.text(self.text())
