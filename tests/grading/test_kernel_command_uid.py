"""Tests of gpucost_lab.grading.kernel_command against the host's own account database: the kernel's uid (where the
grader is root) belongs to no account and keeps no capability. (A graded kernel importing the grader's own package:
tests/grading/test_kernel_command.py.)
"""

from __future__ import annotations

import pwd

import pytest

from gpucost_lab.grading import kernel_command


def test_the_kernels_uid_has_no_account_and_no_capabilities():
    with pytest.raises(KeyError):
        pwd.getpwuid(kernel_command.SANDBOX_UID)
    if kernel_command.privileged():
        drop = kernel_command.drop_privileges()
        assert f"--reuid={kernel_command.SANDBOX_UID}" in drop and "--bounding-set=-all" in drop
        assert (
            "--unshare-user" not in kernel_command.namespaces() and "--unshare-all" not in kernel_command.namespaces()
        )
