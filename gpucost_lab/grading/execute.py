"""Autograding where the learner's code cannot decide its own score: nbgrader's ``Execute`` step, replaced.

:class:`SandboxedExecute` is an nbgrader preprocessor (set in ``nbgrader_config.py`` and by
:func:`gpucost_lab.grading.grade`). It runs every cell of a submission **except the test cells** in a kernel
inside the sandbox (:mod:`gpucost_lab.grading.sandbox`). A test cell is never run there: the grader runs it in
its own process, in a namespace made of the lab's read-only setup cells (run by the grader too) and of the
learner's answers that the test names, each fetched from the kernel at that point of the notebook as plain data
(:mod:`gpucost_lab.grading.answers`). A learner's function is called in the kernel, its arguments and result
crossing as plain data. The test cell's outputs are then what nbgrader scores: an error output (no points) with
a one-sentence reason, or nothing (all its points). Input transformers, patched builtins, patched or replaced
modules and always-equal objects in the kernel therefore change only the learner's own answers.

Test cells lose their hidden part when graded: the autograded notebook (and so the feedback page) shows the
visible tests and a line saying that hidden checks ran, never their source or expected values.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from gpucost_lab.course.variants import LEARNER_ENV
from gpucost_lab.grading import answers as _answers
from gpucost_lab.grading import sandbox as _sandbox

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HIDDEN_NOTE = "# (hidden checks ran here when this lab was graded; they are not shown)"
#: The line a lab's author puts right before each hidden block: it stays in the released lab, so a learner (and
#: self-check) can see which tests have more checks at grading time.
HIDDEN_MARK = "# + checks that run only when the lab is graded"
MAX_OUTPUT_CHARS = 20_000  # per output of a learner's cell, kept in the graded notebook
MAX_CELLS = 1000  # cells beyond this are not run; a lab has a few dozen


def _meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_test(cell) -> bool:
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_trusted_setup(cell) -> bool:
    """A read-only code cell of the lab (restored from the gradebook by nbgrader): the grader runs it too."""
    meta = _meta(cell)
    return (
        cell.get("cell_type") == "code"
        and bool(meta.get("locked"))
        and not meta.get("grade")
        and not meta.get("solution")
    )


def split_hidden(source: str) -> tuple[str, set[int]]:
    """The source with the hidden-test marker lines blanked, and the line numbers (1-based) that are hidden."""
    lines, hidden, inside = source.splitlines(), set(), False
    for number, line in enumerate(lines, 1):
        if line.strip() == HIDDEN_BEGIN:
            inside, lines[number - 1] = True, ""
        elif line.strip() == HIDDEN_END:
            inside, lines[number - 1] = False, ""
        elif inside:
            hidden.add(number)
    return "\n".join(lines), hidden


def visible_source(source: str) -> str:
    """The test as a learner may see it: the visible part, and a line where hidden checks were."""
    out, inside, noted = [], False, False
    for line in source.splitlines():
        if line.strip() == HIDDEN_MARK:
            continue  # the note below says it
        if line.strip() == HIDDEN_BEGIN:
            inside = True
            if not noted:
                out.append(HIDDEN_NOTE)
                noted = True
        elif line.strip() == HIDDEN_END:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).rstrip()


def free_names(source: str) -> list[str]:
    """Names a test reads but does not bind itself (nor are builtins): the answers it needs, in order."""
    tree = ast.parse(source)
    bound, read = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                read.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return list(dict.fromkeys(n for n in read if n not in bound and not hasattr(builtins, n)))


def bound_names(source: str) -> set[str]:
    """The names a cell binds at its top level (assignments, imports, definitions)."""
    names = set()
    for node in ast.parse(source).body:
        for target in (
            ast.walk(node) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)) else ()
        ):
            if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                names.add(target.id)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _statement(code: str, line: int | None) -> str:
    """The check at ``line`` as one line of text: an assert's condition, else the line itself."""
    if not line:
        return ""
    try:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Assert) and node.lineno <= line <= (node.end_lineno or node.lineno):
                test = ast.get_source_segment(code, node.test) or ast.unparse(node.test)
                return "assert " + " ".join(test.replace("\\\n", " ").split())
    except (SyntaxError, ValueError, RecursionError):
        pass
    lines = code.splitlines()
    return lines[line - 1].strip() if line <= len(lines) else ""


class LearnerError(Exception):
    """The learner's function raised, or did not answer, when a test called it."""


def _error(message: str) -> dict:
    return new_output("error", ename="CheckFailed", evalue=message, traceback=[f"CheckFailed: {message}"])


class Checks:
    """The grader's side: the lab's setup cells and its tests, run in this process on plain answers."""

    def __init__(self, fetch, call, workdir: Path, learner: str = ""):
        """``workdir`` holds the instructor's helper files of the lab (importable by the checks) and their temp
        files; ``learner`` is the id the lab's numbers derive from ("" for the self-study lab)."""
        self._fetch, self._call, self._workdir, self._learner = fetch, call, workdir, learner
        self.setup_ns: dict = {"__name__": "__gpucost_checks__", "__builtins__": builtins}
        self.setup_names: set[str] = set()  # what the lab's setup binds: never an answer read from the kernel

    @contextlib.contextmanager
    def _here(self):
        old_cwd, old_tmp, old_learner = os.getcwd(), tempfile.tempdir, os.environ.get(LEARNER_ENV)
        os.environ[LEARNER_ENV] = self._learner  # the setup cells draw this learner's numbers
        os.chdir(self._workdir)
        tempfile.tempdir = str(self._workdir)  # what the setup cells create, the grader removes with the folder
        sys.path.insert(0, str(self._workdir))
        before = set(sys.modules)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            os.chdir(old_cwd)
            tempfile.tempdir = old_tmp
            if old_learner is None:
                os.environ.pop(LEARNER_ENV, None)
            else:
                os.environ[LEARNER_ENV] = old_learner
            sys.path.remove(str(self._workdir))
            for name in set(sys.modules) - before:  # the lab's helper modules: imported afresh for each submission
                if str(self._workdir) in str(getattr(sys.modules[name], "__file__", "") or ""):
                    del sys.modules[name]

    def run_setup(self, source: str) -> str | None:
        try:
            self.setup_names |= bound_names(split_hidden(source)[0])
        except SyntaxError as err:
            return f"SyntaxError: {err}"
        with self._here():
            try:
                exec(compile(split_hidden(source)[0], "<lab setup>", "exec"), self.setup_ns)
            except BaseException as err:  # noqa: BLE001  (a broken setup fails the tests that need it)
                return f"{type(err).__name__}: {err}"
        return None

    def check(self, grade_id: str, source: str) -> list:
        """Run one test cell; its outputs for nbgrader: [] when it passes, one error output when it fails."""
        code, hidden = split_hidden(source)
        try:
            names = free_names(code)
        except SyntaxError as err:
            return [_error(f"the test of {grade_id} could not be read: {err}")]
        ns = dict(self.setup_ns)
        for name in names:
            if name in self.setup_ns:
                continue  # the lab's own value, not the kernel's
            if name in self.setup_names:
                return [_error(f"the lab's setup did not define {name!r} when it ran in the grader")]
            value = self._fetch(name)
            if isinstance(value, _answers.Rejected):
                return [_error(value.message())]
            if isinstance(value, _answers.LearnerFunction):
                value = _answers.LearnerFunction(name, self._call)
            ns[name] = value
        with self._here():
            try:
                exec(compile(code, f"<test {grade_id}>", "exec"), ns)
            except Exception as err:  # noqa: BLE001  (any error fails the test, as nbgrader's own rule)
                return [_error(self._why(err, code, hidden, grade_id))]
        return []

    @staticmethod
    def _why(err: BaseException, code: str, hidden: set[int], grade_id: str) -> str:
        """One sentence: which check failed (a visible one quoted, a hidden one not) and what it said."""
        tb, line = err.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == f"<test {grade_id}>":
                line = tb.tb_lineno
            tb = tb.tb_next
        said = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
        if line in hidden:
            where = "a hidden check"
        else:
            text = _statement(code, line)
            where = f"the check `{text[:160]}`" if text else "a visible check"
        if isinstance(err, AssertionError):
            return f"{where} failed: {said}" if said else f"{where} failed"
        if isinstance(err, LearnerError):
            return f"{where} could not use your answer: {said}"
        return f"{where} raised {type(err).__name__}" + (f": {said}" if said and line not in hidden else "")


class DropDuplicateIds(NbGraderPreprocessor):
    """nbgrader's ``DeduplicateIds``, made safe: a cell copied in JupyterLab keeps its nbgrader metadata, so two
    cells carry one grade id. The first keeps it; the copy loses its nbgrader metadata altogether (nbgrader's own
    step leaves ``nbgrader: {}``, on which ``OverwriteCells`` with ``add_missing_cells`` fails and the submission
    is not graded)."""

    def preprocess(self, nb, resources):
        seen = set()
        for cell in nb.cells:
            grade_id = _meta(cell).get("grade_id")
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
        from gpucost_lab.grading.gradebook_cells import setup_sources
        from gpucost_lab.grading.run import run_submission

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


def _copy_submission(
    folder: Path | None, dest: Path, max_bytes: int = 64 * 2**20, skip_notebooks: bool = False, log=None
) -> None:
    """The plain files of ``folder`` (a submission's, or the lab's own) into ``dest``; at most ``max_bytes`` in all.

    Symbolic and hard links, device files, FIFOs and sockets are skipped, each logged as a warning on ``log`` (this
    module's logger by default), and every file is read through its own ``O_NOFOLLOW`` descriptor
    (:func:`.links.copy_plain`). ``folder`` itself is the grader's (nbgrader's autograded folder, the lab's source
    folder), so a link naming it is followed; nothing under it is.
    """
    import logging
    import stat

    from gpucost_lab.grading import links

    dest.mkdir(parents=True, exist_ok=True)
    if folder is None or not folder.is_dir():
        return
    total = 0

    def keep(rel, st) -> bool:
        nonlocal total
        if ".ipynb_checkpoints" in rel.parts:
            return False
        if not stat.S_ISREG(st.st_mode):
            return True  # a folder: entered
        if skip_notebooks and rel.suffix == ".ipynb":
            return False
        total += st.st_size
        return total <= max_bytes  # past the limit, no later file either

    links.copy_plain(folder.resolve(), dest, keep=keep, log=log or logging.getLogger(__name__))


def _truncate(outputs: list) -> list:
    kept = []
    for out in outputs:
        text = json.dumps(out)
        if len(text) <= MAX_OUTPUT_CHARS:
            kept.append(out)
        else:
            kept.append(
                new_output(
                    "stream",
                    name="stdout",
                    text=f"[output of {len(text):,} characters cut to keep the graded notebook small]\n",
                )
            )
    return kept
