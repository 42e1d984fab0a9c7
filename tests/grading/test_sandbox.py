"""Tests of gpucost_lab.grading.sandbox that grade nothing: grading says what it needs. The formgrader's hook refuses
without writing where no sandbox can be made, a forbidden user namespace names the setting that forbids it (or, in a
container, the options that would allow it), grading refuses without a control group unless allowed, and the set-up
installs every system package the tests use. The machine is never changed. Grading through the real entry points
(where no sandbox can be made, and the limits binding from a learner's cell) is tests/grading/test_sandbox_graded.py.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from labtools import ROOT, system_packages

from gpucost_lab.grading import sandbox

from .helpers import USERNS_FAILURE

LAB = "profile_training_loop"


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
    listed = {need.command for need in system_packages().needed("test")}
    looked_for = _commands_the_code_looks_for()
    assert {"bwrap", "prlimit", "npm", "/usr/bin/chromium"} <= looked_for  # the scan sees what it must
    assert looked_for <= listed, f"not installed by make test: {sorted(looked_for - listed)}"


def test_ci_is_make_test_alone():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert lines[-1] == "make test" and not any("apt-get" in line for line in lines)


def test_the_set_up_decides_by_platform_and_rights():
    sp = system_packages()
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
    if not all(need.present() for need in system_packages().needed("test")):
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
