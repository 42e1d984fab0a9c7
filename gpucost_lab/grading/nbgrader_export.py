"""``nbgrader export`` with the course's pass mark (instructors; see README "For instructors").

``PassMarkExportPlugin`` writes nbgrader's usual grades CSV (the columns of ``CsvExportPlugin``, in the same order)
plus a ``passed`` column for each student and assignment: ``True`` when the score reaches 80% of the assignment's
maximum score (``grading.meets_pass_mark``), ``False`` when it does not (a missing submission scores 0), and
``pending`` while the submission still has cells waiting for manual grading, since their points are not in the
score yet. The repository's nbgrader_config.py selects it::

    c.ExportApp.plugin_class = "gpucost_lab.grading.nbgrader_export.PassMarkExportPlugin"
"""

from __future__ import annotations

import csv

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin

from gpucost_lab.atomic import atomic_write
from gpucost_lab.grading.passmark import meets_pass_mark

#: The columns of nbgrader 0.9's CsvExportPlugin, then the verdict.
COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
    "passed",
]

PENDING = "pending"


def verdict(score: float, max_score: float, needs_manual_grade: bool) -> str:
    """``"pending"`` while manual grading is outstanding, else ``"True"``/``"False"`` at the pass mark."""
    if needs_manual_grade:
        return PENDING
    return str(meets_pass_mark(score, max_score))


class PassMarkExportPlugin(CsvExportPlugin):
    """nbgrader's CSV export plus ``passed``: True/False at 80% of the maximum score, or ``pending``."""

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "grades.csv"
        self.log.info("Exporting grades with the pass mark to %s", dest)
        rows = list(self.grade_rows(gradebook))

        def write(fh) -> None:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)

        atomic_write(dest, write, name="to", newline="")  # a crash mid-export leaves the previous grades.csv

    def grade_rows(self, gradebook: Gradebook):
        """One row per assignment and student (of those asked for), its values as the CSV's text."""
        students = [str(s) for s in self.student]
        assignments = [str(a) for a in self.assignment]
        for assignment in gradebook.assignments:
            if assignments and assignment.name not in assignments:
                continue
            for student in gradebook.students:
                if students and student.id not in students:
                    continue
                row = {
                    "assignment": assignment.name,
                    "duedate": assignment.duedate,
                    "student_id": student.id,
                    "last_name": student.last_name,
                    "first_name": student.first_name,
                    "email": student.email,
                    "max_score": assignment.max_score,
                }
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:  # nothing submitted: a score of zero, as nbgrader's own export counts it
                    row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
                    needs_manual = False
                else:
                    penalty = submission.late_submission_penalty or 0.0
                    row.update(
                        timestamp=submission.timestamp,
                        raw_score=submission.score,
                        late_submission_penalty=penalty,
                        score=max(0.0, submission.score - penalty),
                    )
                    needs_manual = bool(submission.needs_manual_grade)
                row["passed"] = verdict(row["score"], assignment.max_score, needs_manual)
                yield {k: "" if v is None else str(v) for k, v in row.items()}
