"""What the lab and chapter tests share: nbgrader metadata, the labs' files, submissions built from the sources, and
the instructor's nbgrader workflow.

A lab's source (``solutions/<lab>/<lab>.ipynb``) holds each answer between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` and each hidden test between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``; its
release (``labs/<lab>/<lab>.ipynb``) is what nbgrader generates from it. A learner who answers everything submits
the source's answers without the marker lines: every line holding ``### `` is dropped.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MARKER = "### "  # the prefix of nbgrader's BEGIN/END SOLUTION and BEGIN/END HIDDEN TESTS lines


def system_packages():
    """tools/system_packages.py, loaded by path once (it runs before any environment exists, so it is no package)."""
    if "system_packages" not in sys.modules:
        spec = importlib.util.spec_from_file_location("system_packages", ROOT / "tools" / "system_packages.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["system_packages"]


def plain_run(loop):
    """``loop`` run through its whole schedule with no timer at all (chapter 05's order); the loop, run."""
    for step in range(1, loop.steps + 1):
        loop.load_batch()
        loop.forward_backward()
        if loop.should_evaluate(step):
            loop.evaluate()
        if loop.should_checkpoint(step):
            loop.save_checkpoint()
        loop.log_metrics()
    return loop


def source_path(lab: str) -> Path:
    """The nbgrader source of ``lab``: answers and hidden tests in place."""
    return ROOT / "solutions" / lab / f"{lab}.ipynb"


def release_path(lab: str) -> Path:
    """What learners receive: ``lab`` as nbgrader generates it from its source."""
    return ROOT / "labs" / lab / f"{lab}.ipynb"


def meta(cell) -> dict:
    """A cell's nbgrader metadata ({} for a cell nbgrader does not know)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def cells(nb) -> dict:
    """The cells nbgrader knows, by grade_id."""
    return {meta(c)["grade_id"]: c for c in nb.cells if meta(c).get("grade_id")}


def is_check(cell) -> bool:
    """A graded test cell (graded, not an answer cell)."""
    return bool(meta(cell).get("grade")) and not meta(cell).get("solution")


def without_markers(source: str) -> str:
    """``source`` as a learner would have it: the nbgrader marker lines dropped, everything else kept."""
    return "\n".join(line for line in source.splitlines() if MARKER not in line)


def learner_copy(path: Path):
    """The notebook at ``path``, every cell's marker lines dropped: a source as a learner who answered all submits."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.source = without_markers(cell.source)
    return nb


def answered_release(lab: str, answered: set[str] | None = None):
    """``lab``'s release with the source's answers (markers dropped) in the ``answered`` answer cells (None: all)."""
    source = cells(nbformat.read(source_path(lab), as_version=4))
    release = nbformat.read(release_path(lab), as_version=4)
    for cell in release.cells:
        gid = meta(cell).get("grade_id")
        if meta(cell).get("solution") and (answered is None or gid in answered):
            cell.source = without_markers(source[gid].source)
    return release


def write_submission(nb, directory: Path, lab: str) -> Path:
    """``nb`` written as ``directory/<lab>.ipynb`` (the name a submission has); its path."""
    path = directory / f"{lab}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def checks_after(lab: str, answer_gid: str) -> set[str]:
    """The graded cells of ``lab`` that follow the answer cell ``answer_gid``, up to the next answer cell."""
    tests: dict[str, set[str]] = {}
    current = None
    for cell in nbformat.read(source_path(lab), as_version=4).cells:
        if meta(cell).get("solution"):
            current = meta(cell)["grade_id"]
        elif meta(cell).get("grade") and current:
            tests.setdefault(current, set()).add(meta(cell)["grade_id"])
    return tests[answer_gid]


def course_copy(directory: Path) -> Path:
    """A copy of the course's nbgrader side (``solutions/`` and ``nbgrader_config.py``) in ``directory/course``."""
    course = directory / "course"
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    return course


def generated_release(lab: str, directory: Path):
    """``lab``'s release as ``nbgrader generate_assignment`` writes it now, from a course copied into ``directory``."""
    course = course_copy(directory)
    nbgrader = Path(sys.executable).with_name("nbgrader")
    subprocess.run(
        [str(nbgrader), "generate_assignment", lab, "--force", "--no-db", "--log-level=ERROR"],
        cwd=course,
        check=True,
        capture_output=True,
    )
    return nbformat.read(course / "labs" / lab / f"{lab}.ipynb", as_version=4)


def nbgrader_in(course: Path, *args: str) -> None:
    """``nbgrader *args`` in ``course`` with this environment's tools on PATH, as after ``. .venv/bin/activate``."""
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        [str(bin_dir / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def instructor_workflow(lab: str, answered_by_student: dict[str, set[str]], directory: Path) -> tuple[Path, list]:
    """The README's instructor steps for ``lab`` on a course copied into ``directory``: the course and its grades.

    generate_assignment, then each student's submission (the release with the source's answers in the
    ``answered_by_student[student]`` cells) placed in ``submitted/``, autograde, generate_feedback and export
    to ``grades.csv``, whose rows (dicts by column) come back.
    """
    course = course_copy(directory)
    nbgrader_in(course, "generate_assignment", lab, "--force")
    for student, answered in answered_by_student.items():
        write_submission(answered_release(lab, answered), course / "submitted" / student / lab, lab)
    nbgrader_in(course, "autograde", lab)
    nbgrader_in(course, "generate_feedback", lab)
    nbgrader_in(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv", newline="") as fh:
        return course, list(csv.DictReader(fh))


@dataclass(frozen=True)
class Lab:
    """A lab as its tests see it: its name, its answer cells, and how its tests tell the grader which lab it is.

    ``by_name``: the tests name the assignment (``grade(assignment=...)``, ``--assignment``); otherwise the grader
    recognises it from the submission.
    """

    name: str
    answers: frozenset[str]  # the grade_ids of its answer cells
    by_name: bool

    @property
    def source(self) -> Path:
        return source_path(self.name)

    @property
    def release(self) -> Path:
        return release_path(self.name)

    def grade_options(self) -> dict:
        """What ``grade`` is given besides the submission, to know the assignment."""
        return {"assignment": self.name} if self.by_name else {}

    def cli_options(self) -> list[str]:
        """The same for ``gpucost-lab grade``."""
        return ["--assignment", self.name] if self.by_name else []

    def partial(self, directory: Path, answered: set[str]) -> Path:
        """The release with the source's answers in the ``answered`` cells, written as a submission in ``directory``."""
        return write_submission(answered_release(self.name, answered), directory, self.name)


PROFILE = Lab(
    "profile_training_loop",
    frozenset(
        {
            "lab_instrument",
            "lab_balance",
            "lab_dominant",
            "lab_correlate",
            "lab_decide",
            "lab_act",
            "lab_price",
            "lab_revalidate",
        }
    ),
    by_name=False,
)
PLAN = Lab(
    "optimization_plan",
    frozenset(
        {
            "plan_diagnose",
            "plan_parity_runs",
            "plan_memory",
            "plan_memory_fix",
            "plan_throughput",
            "plan_release",
            "plan_principle",
        }
    ),
    by_name=True,
)
LABS = (PROFILE, PLAN)


MAKE_LAB_START_S = 120  # `make lab` checks its install first; a guard against a hang, not a speed target


@contextlib.contextmanager
def make_lab_server(base: Path, token: str):
    """`make lab` on a free loopback port with ``token``, as a learner starts it, with user-level Jupyter folders
    of its own under ``base`` (no setting saved on this machine applies); yields its base URL, and always stops it
    (its whole process group)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "PYTHONPATH", "JUPYTER_CONFIG_PATH")}
    env.update({name: str(base / folder) for name, folder in _JUPYTER_FOLDERS.items()})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.token={token}"
    with open(base / "make-lab.log", "wb") as log:
        proc = subprocess.Popen(
            ["make", "-s", "lab", f"PORT={port}", f"LAB_ARGS={args}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for(url, token, proc, base / "make-lab.log")
            yield url
        finally:
            stop_group(proc)


_JUPYTER_FOLDERS = {
    "JUPYTER_CONFIG_DIR": "config",
    "JUPYTER_DATA_DIR": "data",
    "JUPYTER_RUNTIME_DIR": "runtime",
    "IPYTHONDIR": "ipython",
}


def _wait_for(url: str, token: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + MAKE_LAB_START_S
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=60).close()
            return
        except OSError:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"`make lab` did not answer within {MAKE_LAB_START_S} s"
            time.sleep(0.5)


def stop_group(proc: subprocess.Popen) -> None:
    """Stop ``proc``'s process group: TERM, then KILL after 20 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


# The tiers of `make test`, each its own make target: every test is in exactly one (``tier_of``).
TIERS = {
    "unit": "the unit tests: no notebook, browser, grader, hub or other slow work (`make check`)",
    "integration": "the grader, servers, fresh processes and long computations (`make test-integration`)",
    "e2e": "the chapters and labs executed, Chromium, the hub, the Binder environment (`make test-e2e`)",
}


def tier_of(item) -> str:
    """The tier of a collected test, from its markers: e2e before integration before unit."""
    kinds = {mark.name for mark in item.iter_markers()}
    if kinds & {"notebook", "browser", "hub", "binder"}:
        return "e2e"
    if kinds & {"grading", "slow"}:
        return "integration"
    return "unit"


def share_group(item) -> str:
    """The group of tests that share one process under ``pytest -n 2 --dist loadgroup``: a chapter's tests are one
    (its runs are made once a process, tests/chapter_runs.py), the tests in the Binder environment one (it is built
    once a process, tests/project/conftest.py), any other test goes with its file (module fixtures, a file's shared
    grading course)."""
    if "binder" in item.fixturenames:
        return "binder"
    params = getattr(getattr(item, "callspec", None), "params", {})
    chapter = params.get("path", params.get("name")) if "chapter_run" in item.fixturenames else None
    return f"chapter {Path(str(chapter)).name}" if chapter is not None else item.nodeid.split("::")[0]
