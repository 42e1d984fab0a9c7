"""The tests of a graded notebook, run by the grader: which cells are tests and setup, and the checks themselves.

A test cell is never run in the learner's sandboxed kernel. :class:`Checks` runs it in the grader's own process, in
a namespace made of the lab's read-only setup cells (run by the grader too) and of the learner's answers that the
test names, each fetched from the kernel as plain data (:mod:`gpucost_lab.grading.answers`); a learner's function
is called in the kernel. A test's outcome is what nbgrader scores: one error output (:func:`error_output`, no
points) with a one-sentence reason, or none (all its points). Hidden tests are marked in a test cell's source
(:data:`HIDDEN_BEGIN`, :data:`HIDDEN_END`); :func:`visible_source` is the test as a learner may see it.
:mod:`.execute` (the nbgrader steps) and :mod:`.run` (one submission, run) share it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

from nbformat.v4 import new_output

from gpucost_lab.course.variants import LEARNER_ENV
from gpucost_lab.grading import answers as _answers
from gpucost_lab.grading.notebooks import nbgrader_meta

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HIDDEN_NOTE = "# (hidden checks ran here when this lab was graded; they are not shown)"
#: The line a lab's author puts right before each hidden block: it stays in the released lab, so a learner (and
#: self-check) can see which tests have more checks at grading time.
HIDDEN_MARK = "# + checks that run only when the lab is graded"


def is_test(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_trusted_setup(cell) -> bool:
    """A read-only code cell of the lab (restored from the gradebook by nbgrader): the grader runs it too."""
    meta = nbgrader_meta(cell)
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
    """The check at ``line`` as one line of text: an ``assert``'s or ``expect(...)``'s condition, else the line."""
    if not line:
        return ""
    try:
        for node in ast.walk(ast.parse(code)):
            if not _spans(node, line):
                continue
            if isinstance(node, ast.Assert):
                return "assert " + _one_line(code, node.test)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "expect"
                and node.args
            ):
                return f"expect({_one_line(code, node.args[0])})"
    except (SyntaxError, ValueError, RecursionError):
        pass
    lines = code.splitlines()
    return lines[line - 1].strip() if line <= len(lines) else ""


def _spans(node: ast.AST, line: int) -> bool:
    """Whether ``node`` is a statement or call whose source spans ``line``."""
    start = getattr(node, "lineno", None)
    return start is not None and start <= line <= (getattr(node, "end_lineno", None) or start)


def _one_line(code: str, node: ast.expr) -> str:
    text = ast.get_source_segment(code, node) or ast.unparse(node)
    return " ".join(text.replace("\\\n", " ").split())


class LearnerError(Exception):
    """The learner's function raised, or did not answer, when a test called it."""


def error_output(message: str) -> dict:
    """A failed test's one output for nbgrader: an error (no points) whose value is the one-sentence reason."""
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
            return [error_output(f"the test of {grade_id} could not be read: {err}")]
        ns = dict(self.setup_ns)
        for name in names:
            if name in self.setup_ns:
                continue  # the lab's own value, not the kernel's
            if name in self.setup_names:
                return [error_output(f"the lab's setup did not define {name!r} when it ran in the grader")]
            value = self._fetch(name)
            if isinstance(value, _answers.Rejected):
                return [error_output(value.message())]
            if isinstance(value, _answers.LearnerFunction):
                value = _answers.LearnerFunction(name, self._call)
            ns[name] = value
        with self._here():
            try:
                exec(compile(code, f"<test {grade_id}>", "exec"), ns)
            except Exception as err:  # noqa: BLE001  (any error fails the test, as nbgrader's own rule)
                return [error_output(self._why(err, code, hidden, grade_id))]
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
