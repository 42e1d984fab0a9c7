"""Autograding where the learner's code cannot decide its own score: nbgrader's ``Execute`` step, replaced.

:class:`SandboxedExecute` is an nbgrader preprocessor (set in ``nbgrader_config.py`` and by
:func:`gpucost_lab.grading.grade`). It runs every cell of a submission **except the test cells** in a kernel
inside the sandbox (:mod:`gpucost_lab.grading.sandbox`). A test cell is never run there: the grader runs it in
its own process, in a namespace made of the lab's read-only setup cells (run by the grader too) and of the
learner's answers that the test names, each fetched from the kernel at that point of the notebook as plain data
(:mod:`gpucost_lab.grading.answers`). A learner's function is called in the kernel, its arguments and result
crossing as plain data. The test cell's outputs are then what nbgrader scores: an error output (no points) with
a one-sentence reason, or nothing (all its points). Input transformers, patched builtins, patched or replaced
modules and always-equal objects in the kernel therefore change only the learner's own answers. The tests and
their checks are :mod:`.checks`; one submission is run by :func:`.run.run_submission`.

Test cells lose their hidden part when graded: the autograded notebook (and so the feedback page) shows the
visible tests and a line saying that hidden checks ran, never their source or expected values.
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from gpucost_lab.grading import sandbox as _sandbox
from gpucost_lab.grading.gradebook_cells import setup_sources
from gpucost_lab.grading.notebooks import nbgrader_meta
from gpucost_lab.grading.run import run_submission


class DropDuplicateIds(NbGraderPreprocessor):
    """nbgrader's ``DeduplicateIds``, made safe: a cell copied in JupyterLab keeps its nbgrader metadata, so two
    cells carry one grade id. The first keeps it; the copy loses its nbgrader metadata altogether (nbgrader's own
    step leaves ``nbgrader: {}``, on which ``OverwriteCells`` with ``add_missing_cells`` fails and the submission
    is not graded)."""

    def preprocess(self, nb, resources):
        seen = set()
        for cell in nb.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if "nbgrader" in cell.get("metadata", {}) and (not grade_id or grade_id in seen):
                if grade_id:
                    self.log.warning(
                        "cell %s appears more than once: the first is graded, the copy is ignored", grade_id
                    )
                del cell.metadata["nbgrader"]
            elif grade_id:
                seen.add(grade_id)
        return nb, resources


class SandboxedExecute(NbGraderPreprocessor):
    """nbgrader's ``Execute`` step as the module docstring describes (``c.Autograde.autograde_preprocessors``)."""

    timeout = Integer(30, help="seconds each cell may run").tag(config=True)
    total_timeout = Integer(900, help="seconds the whole notebook may run, and its CPU seconds").tag(config=True)
    memory_mb = Integer(_sandbox.Limits.memory_mb, help="address space of the kernel (MB)").tag(config=True)
    allow_unsandboxed = Bool(
        False, help="run the kernel without bubblewrap where it is missing (trusted notebooks only)"
    ).tag(config=True)
    per_learner_variants = Bool(
        True,
        help="each student's lab numbers derive from their student id "
        "(gpucost_lab.course.variants); False grades every submission as the "
        "self-study lab",
    ).tag(config=True)
    learner = Unicode(
        None,
        allow_none=True,
        help="the id the lab's numbers derive from, overriding the student id; '' for the self-study lab",
    ).tag(config=True)

    def preprocess(self, nb, resources):
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        limits = _sandbox.Limits(memory_mb=self.memory_mb, cpu_s=self.total_timeout)
        source_folder = self._source_folder(resources)
        setup = setup_sources(source_folder, resources.get("nbgrader", {}).get("notebook"))
        if setup is None:
            self.log.warning("the lab's source notebook was not found: its setup cells are taken from the submission")
        run_submission(
            nb,
            folder,
            source_folder,
            limits,
            self.timeout,
            self.total_timeout,
            self.allow_unsandboxed,
            self.log,
            learner=self._learner(resources),
            setup=setup,
        )
        return nb, resources

    def _learner(self, resources) -> str:
        if self.learner is not None:
            return self.learner
        return str(resources.get("nbgrader", {}).get("student") or "") if self.per_learner_variants else ""

    def _source_folder(self, resources) -> Path | None:
        """The instructor's folder of this assignment: its helper files are what the grader's checks import."""
        from nbgrader.coursedir import CourseDirectory

        assignment = resources.get("nbgrader", {}).get("assignment")
        if not assignment:
            return None
        coursedir = CourseDirectory(config=self.config)
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
        return folder if folder.is_dir() else None
