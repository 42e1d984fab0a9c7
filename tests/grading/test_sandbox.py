"""Grading says what it needs: where no sandbox can be made, every entry point stops with one line, exit 2, before it
touches the submission; and the set-up installs every system package the tests use.

The machine is never changed: the commands run with a PATH that has no ``bwrap``, or with a stand-in ``bwrap`` that
fails as a forbidden user namespace does on Ubuntu 24.04 (``kernel.apparmor_restrict_unprivileged_userns=1``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import ROOT, answered_release, course_copy, write_submission

from gpucost_lab.grading import sandbox

LAB = "profile_training_loop"
USERNS_FAILURE = "bwrap: setting up uid map: Permission denied"


def _system_packages():
    spec = importlib.util.spec_from_file_location("system_packages", ROOT / "tools" / "system_packages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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


@pytest.mark.grading  # the CLI or nbgrader started in a fresh process
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


@pytest.mark.grading  # the CLI or nbgrader started in a fresh process
def test_grade_class_says_it_once(tmp_path):
    submitted = tmp_path / "submitted"
    for student in ("ada", "bo", "cy"):
        write_submission(answered_release(LAB), submitted / student, LAB)
    feedback = tmp_path / "feedback"
    done = _cli(["grade-class", str(submitted), "--feedback", str(feedback)], _bin(tmp_path, failing_bwrap=False), ROOT)
    assert "bubblewrap" in _one_line(done, "grade-class")
    assert done.stdout == "" and not feedback.exists()


@pytest.mark.grading  # the CLI or nbgrader started in a fresh process
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


def test_the_formgraders_hook_refuses_without_writing(tmp_path, monkeypatch):
    """The same check as nbgrader's pre-convert hook (the formgrader's autograde runs it): a SystemExit of status 2
    whose text is the line, since nbgrader swallows an Exception from a hook and would grade on."""
    from traitlets.config import Config

    from gpucost_lab.grading.course import autograde_steps

    monkeypatch.setattr(sandbox, "unavailable_reason", lambda: "`bwrap` was not found on the PATH")
    c = Config()
    autograde_steps(c)
    with pytest.raises(SystemExit) as stopped:
        c.Autograde.pre_convert_hook(assignment=LAB, student="ada", notebooks=[])
    assert stopped.value.code == 2 and str(stopped.value) == "cannot grade: `bwrap` was not found on the PATH"
    c.SandboxedExecute.allow_unsandboxed = True
    c.Autograde.pre_convert_hook(assignment=LAB, student="ada", notebooks=[])  # allowed explicitly: goes on


@pytest.mark.parametrize(
    "setting, value, named",
    [
        (
            "kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
        ),
        ("kernel/unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"),
        ("user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
    ],
)
def test_a_forbidding_setting_is_named(tmp_path, monkeypatch, setting, value, named):
    (tmp_path / setting).parent.mkdir(parents=True)
    (tmp_path / setting).write_text(value + "\n")
    monkeypatch.setattr(sandbox, "_SYSCTL_ROOT", tmp_path)
    line = sandbox._namespace_problem(USERNS_FAILURE + "\n", 1)
    assert named in line and USERNS_FAILURE in line and "\n" not in line


def test_without_a_forbidding_setting_the_container_options_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "_SYSCTL_ROOT", tmp_path)  # no setting readable: a container, most likely
    line = sandbox._namespace_problem(USERNS_FAILURE, 1)
    assert "--security-opt seccomp=unconfined" in line and "kernel.apparmor_restrict_unprivileged_userns=0" in line


# --- the set-up: tools/system_packages.py, run by the Makefile's install step -------------------------------------


def _commands_the_code_looks_for() -> set[str]:
    """Every system command the package, the tests and the hub look up (``shutil.which("X")``, an absolute
    ``/usr/bin/X``), and the sandbox's tools: read from the source, so a new one cannot be forgotten."""
    found = {tool for tool, _ in sandbox.TOOLS}
    for folder in ("gpucost_lab", "tests", "deploy", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "shutil.which"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    found.add(node.args[0].value)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found |= set(re.findall(r"^/usr/bin/[\w.-]+$", node.value))
    return found


def test_the_install_step_names_every_system_package_the_tests_need():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"\$\(HERE\)tools/system_packages\.py \$\(SYSTEM_SET\)", makefile), (
        "the install step runs the script"
    )
    assert re.search(r"^test: SYSTEM_SET := test$", makefile, re.M), "make test asks for the test set"
    listed = {need.command for need in _system_packages().needed("test")}
    looked_for = _commands_the_code_looks_for()
    assert {"bwrap", "prlimit", "npm", "/usr/bin/chromium"} <= looked_for  # the scan sees what it must
    assert looked_for <= listed, f"not installed by make test: {sorted(looked_for - listed)}"


def test_ci_is_make_test_alone():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[-1] == "make test" and not any("apt-get" in line for line in lines)


def test_the_set_up_decides_by_platform_and_rights():
    sp = _system_packages()
    bwrap = sp.needed("lab")[0]
    assert sp.decide([], "Linux", False, False, False) == ("none", "")
    assert sp.decide([bwrap], "Linux", True, False, True) == ("install", "")
    assert sp.decide([bwrap], "Linux", False, True, True) == ("install", "sudo -n ")
    action, line = sp.decide([bwrap], "Linux", False, False, True)
    assert (
        action == "stop" and "sudo apt-get install -y bubblewrap" in line and "sudo dnf install -y bubblewrap" in line
    )
    action, line = sp.decide([bwrap], "Darwin", False, False, False)
    assert action == "note" and "macOS" in line and "user namespaces" in line


def test_a_machine_that_has_everything_installs_nothing():
    if not all(need.present() for need in _system_packages().needed("test")):
        pytest.skip("this machine lacks a system package the tests need (make test installs it)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "system_packages.py"), "test"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_without_a_control_group_grading_refuses_unless_allowed(monkeypatch):
    from gpucost_lab.grading import confine

    monkeypatch.setattr(sandbox, "unavailable_reason", lambda: None)
    monkeypatch.setattr(sandbox, "cgroup_problem", lambda: "no control group can be made here (Read-only file system)")
    monkeypatch.delenv(confine.WITHOUT_CGROUP_ENV, raising=False)
    with pytest.raises(sandbox.SandboxUnavailable) as refused:
        sandbox.require()
    line = str(refused.value)
    assert "Read-only file system" in line and f"{confine.WITHOUT_CGROUP_ENV}=1" in line and "\n" not in line
    monkeypatch.setenv(confine.WITHOUT_CGROUP_ENV, "1")
    assert sandbox.require() is None  # allowed explicitly


def test_the_kernels_uid_has_no_account_and_no_capabilities():
    import pwd

    from gpucost_lab.grading import kernel_command

    with pytest.raises(KeyError):
        pwd.getpwuid(kernel_command.SANDBOX_UID)
    if kernel_command.privileged():
        drop = kernel_command.drop_privileges()
        assert f"--reuid={kernel_command.SANDBOX_UID}" in drop and "--bounding-set=-all" in drop
        assert (
            "--unshare-user" not in kernel_command.namespaces() and "--unshare-all" not in kernel_command.namespaces()
        )
