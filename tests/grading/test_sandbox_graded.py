"""Tests of gpucost_lab.grading.sandbox through the real grading paths: grading says what it needs, and its limits
bind, against stated figures. (What needs no grade, the set-up and the messages: tests/grading/test_sandbox.py.)

Where no sandbox can be made, every entry point stops with one line, exit 2, before it touches the submission. The
machine is never changed: the commands run with a PATH that has no ``bwrap``, or with a stand-in ``bwrap`` that fails
as a forbidden user namespace does on Ubuntu 24.04 (``kernel.apparmor_restrict_unprivileged_userns=1``). The plain
``nbgrader autograde`` drops a link a submission holds before nbgrader copies it.

The limits (issue 25): from a learner's cell, no setuid file reaches the host, ``/etc/shadow`` and the grader's
environment are not readable, forks stop at the limit, memory and tmpfs writes stop at stated caps, and nothing of
the learner's is alive afterwards. One notebook does it all, through the real grading path
(:func:`gpucost_lab.grading.run.run_submission`): a learner's cell tries each attack and keeps what it got in ``R``;
a graded test cell, which the grader runs in its own process, then checks the host while the kernel still runs. The
limits are set small so that each cap is reached quickly: each expectation is the stated figure (``Limits``), not a
measured one.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from labtools import ROOT, answered_release, course_copy, write_submission
from nbformat.v4 import new_code_cell, new_notebook

from gpucost_lab.grading import kernel_command
from gpucost_lab.grading.run import run_submission
from gpucost_lab.grading.sandbox import Limits, cgroup_problem

from .helpers import USERNS_FAILURE, VENV_BIN, needs_sandbox

pytestmark = pytest.mark.grading

LAB = "profile_training_loop"


def _bin(tmp_path: Path, *, failing_bwrap: bool) -> str:
    """A PATH of one folder: no bwrap (or a stand-in that fails to make a user namespace), and a real prlimit."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("prlimit", "setpriv"):
        (folder / tool).symlink_to(f"/usr/bin/{tool}")
    if failing_bwrap:
        fake = folder / "bwrap"
        fake.write_text(f"#!/bin/sh\necho '{USERNS_FAILURE}' >&2\nexit 1\n")
        fake.chmod(0o755)
    return str(folder)


def _cli(args: list[str], path: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=path)
    return subprocess.run(
        [sys.executable, "-m", "gpucost_lab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _one_line(done: subprocess.CompletedProcess, command: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"gpucost-lab {command}: error: cannot grade: "), lines[0]
    assert "Traceback" not in done.stderr and "NbGraderException" not in done.stderr
    return lines[0]


@pytest.fixture
def submission(tmp_path):
    return write_submission(answered_release(LAB), tmp_path / "sub", LAB)


@pytest.mark.parametrize("failing_bwrap", [False, True], ids=["no-bwrap", "userns-forbidden"])
def test_grade_stops_with_one_line_and_writes_nothing(tmp_path, submission, failing_bwrap):
    before = sorted(p.name for p in submission.parent.iterdir())
    feedback = tmp_path / "feedback"
    done = _cli(
        ["grade", str(submission), "--feedback-dir", str(feedback)], _bin(tmp_path, failing_bwrap=failing_bwrap), ROOT
    )
    line = _one_line(done, "grade")
    if failing_bwrap:
        assert "user namespaces" in line and USERNS_FAILURE in line
    else:
        assert "bubblewrap" in line and "apt-get install -y bubblewrap" in line
    assert not feedback.exists()
    assert sorted(p.name for p in submission.parent.iterdir()) == before


def test_grade_class_says_it_once(tmp_path):
    submitted = tmp_path / "submitted"
    for student in ("ada", "bo", "cy"):
        write_submission(answered_release(LAB), submitted / student, LAB)
    feedback = tmp_path / "feedback"
    done = _cli(["grade-class", str(submitted), "--feedback", str(feedback)], _bin(tmp_path, failing_bwrap=False), ROOT)
    assert "bubblewrap" in _one_line(done, "grade-class")
    assert done.stdout == "" and not feedback.exists()


def test_plain_nbgrader_autograde_stops_before_the_gradebook(tmp_path):
    course = course_copy(tmp_path)
    nbgrader = str(Path(sys.executable).with_name("nbgrader"))
    here = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # nbgrader runs `alembic`
    subprocess.run(
        [nbgrader, "generate_assignment", LAB, "--force", "--log-level=ERROR"],
        cwd=course,
        env=here,
        check=True,
        timeout=300,
    )
    write_submission(answered_release(LAB), course / "submitted" / "ada" / LAB, LAB)
    path = f"{_bin(tmp_path, failing_bwrap=True)}:{Path(sys.executable).parent}"
    done = subprocess.run(
        [nbgrader, "autograde", LAB, "--force"],
        cwd=course,
        env=dict(os.environ, PATH=path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "nbgrader autograde: error: cannot grade: bubblewrap cannot create user namespaces" in done.stderr
    assert not (course / "autograded").exists()
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("select count(*) from submitted_assignment").fetchone() == (0,)


# --- nbgrader's own autograde: a link in submitted/ is dropped before nbgrader copies it ---------------------------


@needs_sandbox
def test_plain_autograde_drops_a_link_already_in_submitted_before_nbgrader_copies_it(tmp_path):
    """A link that reached submitted/ another way than collect (copied by hand, uploaded): the pre-convert hook
    removes it, naming it, before nbgrader copies the folder into autograded/ and the sandbox."""
    course = course_copy(tmp_path)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    nbgrader = str(VENV_BIN / "nbgrader")
    subprocess.run([nbgrader, "generate_assignment", LAB, "--force"], cwd=course, env=env, check=True, timeout=300)
    folder = course / "submitted" / "ada" / LAB
    write_submission(answered_release(LAB), folder, LAB)
    (folder / "notes.txt").symlink_to(course / "gradebook.db")
    done = subprocess.run(
        [nbgrader, "autograde", LAB], cwd=course, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "notes.txt is a symbolic link" in done.stderr
    graded = course / "autograded" / "ada" / LAB
    assert (graded / f"{LAB}.ipynb").is_file() and not (graded / "notes.txt").exists()


# --- the limits bind, from an answer cell ---------------------------------------------------------------------------

SMALL = Limits(total_memory_mb=1024, processes=64, tmp_mb=32, work_mb=48, shm_mb=16, home_mb=16)
SECRET = "GPUCOST_TEST_GRADER_SECRET"

ATTACK = textwrap.dedent(
    """
    import os, shutil, subprocess, sys, time
    R = {"uid": os.getuid()}
    conn = sys.argv[sys.argv.index("-f") + 1]
    R["run_folder"] = os.path.dirname(conn)
    made = []
    for folder in (".", "/tmp", "/dev/shm", os.path.join(R["run_folder"], "ipc"), R["run_folder"]):
        path = os.path.join(folder, "suid-probe")
        try:
            shutil.copy("/usr/bin/id", path)
            os.chmod(path, 0o4755)
            made.append(path)
        except OSError:
            pass
    R["made"] = made
    for name, path in (("shadow", "/etc/shadow"), ("pid1_environ", "/proc/1/environ")):
        try:
            with open(path, "rb") as f:
                R[name] = f.read().decode("latin-1")
        except OSError:
            R[name] = None
    R["environ"] = sorted(os.environ)
    pids = []
    for _ in range(400):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
    R["forks"] = len(pids)
    for pid in pids:
        os.kill(pid, 9)
        os.waitpid(pid, 0)

    def fill(folder):
        written, block = 0, b"x" * 2**20
        try:
            with open(os.path.join(folder, "fill"), "wb") as f:
                while written < 2**30:
                    f.write(block)
                    f.flush()
                    written += len(block)
        except OSError:
            pass
        os.remove(os.path.join(folder, "fill"))
        return written

    R["tmp_bytes"], R["work_bytes"], R["shm_bytes"] = fill("/tmp"), fill("."), fill("/dev/shm")
    hog = "b = b'x' * (2 * 2**30); print(len(b))"
    R["hog_status"] = subprocess.run([sys.executable, "-c", hog], capture_output=True).returncode
    # a daemon left behind: it must not outlive the grading
    subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"], start_new_session=True)
    """
)

HOST_CHECKS = textwrap.dedent(
    """
    import os, stat
    assert R["uid"] == EXPECTED_UID, R["uid"]
    assert R["shadow"] is None, "the learner read /etc/shadow"
    assert SECRET not in (R["pid1_environ"] or ""), "the grader's environment reached the sandbox"
    assert SECRET not in R["environ"]
    for path in R["made"]:
        assert not path.startswith(R["run_folder"]), f"{path}: the learner wrote into the host's run folder"
    for folder, _, files in os.walk(R["run_folder"]):
        for name in files:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            assert not mode & (stat.S_ISUID | stat.S_ISGID), f"setuid file on the host: {folder}/{name}"
    assert not os.path.exists("/dev/shm/suid-probe") and not os.path.exists("/tmp/suid-probe")
    assert R["forks"] < PROCESSES, R["forks"]
    MB = 2**20
    assert R["tmp_bytes"] <= TMP_MB * MB and R["work_bytes"] <= WORK_MB * MB and R["shm_bytes"] <= SHM_MB * MB, R
    assert R["hog_status"] == -9, f"a 2 GB child under a {TOTAL_MB} MB cap ended with {R['hog_status']}"
    """
)


def _uid_processes(uid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        uids = next((line.split()[1:] for line in text.splitlines() if line.startswith("Uid:")), [])
        if str(uid) in uids:
            found.append(int(status.parent.name))
    return found


@needs_sandbox
@pytest.mark.skipif(not kernel_command.privileged(), reason="the dedicated uid is used where the grader is root")
@pytest.mark.skipif(cgroup_problem() is not None, reason=f"no control group here: {cgroup_problem()}")
def test_every_limit_binds_from_an_answer_cell(tmp_path, monkeypatch):
    monkeypatch.setenv(SECRET, "token-the-learner-must-not-see")
    constants = (
        f"EXPECTED_UID = {kernel_command.SANDBOX_UID}\nSECRET = {SECRET!r}\nPROCESSES = {SMALL.processes}\n"
        f"TMP_MB, WORK_MB, SHM_MB, TOTAL_MB = {SMALL.tmp_mb}, {SMALL.work_mb}, {SMALL.shm_mb}, "
        f"{SMALL.total_memory_mb}\n"
    )
    nb = new_notebook(
        cells=[
            new_code_cell(ATTACK),
            new_code_cell(
                constants + HOST_CHECKS,
                metadata={"nbgrader": {"grade": True, "grade_id": "host", "locked": True, "points": 1}},
            ),
        ]
    )
    (tmp_path / "submission").mkdir()
    nbformat.write(nb, tmp_path / "submission" / "attack.ipynb")
    runs = Path(kernel_command.run_root() or "/tmp")
    before = set(runs.glob("gpucost-grade-run-*"))
    run_submission(nb, tmp_path / "submission", None, SMALL, 120, 600, False, logging.getLogger("test"))
    assert set(runs.glob("gpucost-grade-run-*")) == before, "the run folder outlived the grading"
    learner, checks = nb.cells
    assert not [o for o in learner.outputs if o.get("output_type") == "error"], learner.outputs
    assert checks.outputs == [], checks.outputs[0].get("evalue") if checks.outputs else None
    deadline = time.monotonic() + 10  # killed when grading ended; /proc lists a killed process until it is reaped
    while _uid_processes(kernel_command.SANDBOX_UID) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _uid_processes(kernel_command.SANDBOX_UID) == [], "a process of the learner's outlived the grading"
    assert os.listdir(tmp_path / "submission") == ["attack.ipynb"]
