"""What a graded lab's setup cell imports leaves torch unloaded (torch would cost about a second in every submission's
kernel): gpucost_lab.loop.phases with gpucost_lab.measure.device, and the simulated loop with the course's variants,
each imported in a fresh interpreter.
"""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_importing_phases_and_device_leaves_torch_alone():
    # a graded lab's setup cell imports phases in a kernel that never touches a tensor; torch would cost ~1 s there
    code = "import sys, gpucost_lab.loop.phases, gpucost_lab.measure.device; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_the_profile_lab_setup_imports_without_torch():
    # the lab's setup cell, run in every graded submission's kernel: the simulated loop never needs a tensor
    modules = "gpucost_lab.loop.phases, gpucost_lab.loop.simulated, gpucost_lab.course.variants"
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
