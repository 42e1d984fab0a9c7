"""gpucost_lab.measure.device: the device picked and the synchronization before a clock read (chapter 01), against
what this machine has (torch.cuda) and what the module promises about importing torch."""

import subprocess
import sys

import pytest
import torch

from gpucost_lab import InputError
from gpucost_lab.measure.device import DEVICE_CHOICES, resolve_device, sync_method, synchronizer

HAS_CUDA = torch.cuda.is_available()


def test_auto_prefers_cuda_where_there_is_one_and_cpu_is_always_cpu():
    assert DEVICE_CHOICES == ("auto", "cpu", "cuda")
    assert resolve_device("auto") == ("cuda" if HAS_CUDA else "cpu")
    assert resolve_device() == resolve_device("auto")
    assert resolve_device("cpu") == "cpu"


@pytest.mark.parametrize("bad", ["tpu", "CPU", "", None, 0, "gpu:0"])
def test_an_unknown_device_names_the_field_and_the_choices(bad):
    with pytest.raises(InputError) as err:
        resolve_device(bad)
    assert err.value.field == "device"
    assert str(err.value) == f"device must be one of 'auto', 'cpu', 'cuda' (or 'cuda:N'), got {bad!r}"


@pytest.mark.skipif(HAS_CUDA, reason="checks what a CPU-only machine says when CUDA is asked for")
@pytest.mark.parametrize("name", ["cuda", "cuda:0"])
def test_cuda_asked_for_without_cuda_is_refused(name):
    with pytest.raises(InputError, match=f"device '{name}' was asked for but CUDA is not available here") as err:
        resolve_device(name)
    assert err.value.field == "device"


@pytest.mark.skipif(not HAS_CUDA, reason="needs CUDA")
def test_a_cuda_index_beyond_the_devices_is_refused():
    count = torch.cuda.device_count()
    assert resolve_device("cuda:0") == "cuda:0"
    with pytest.raises(InputError, match=f"this machine has {count} CUDA device"):
        resolve_device(f"cuda:{count}")
    with pytest.raises(InputError, match="does not exist"):
        resolve_device("cuda:x")


def test_the_cpu_needs_no_synchronization_and_says_so():
    wait = synchronizer("cpu")
    assert wait() is None and synchronizer("cpu") is wait  # one do-nothing function, no device call
    assert sync_method("cpu") == "none needed (cpu runs synchronously)"
    assert sync_method("cuda") == sync_method("cuda:1") == "torch.cuda.synchronize"  # as a contract records it


def test_cpu_only_use_leaves_torch_unimported():
    # a phase timer on a simulated clock asks only about the CPU: torch would cost about a second to import
    code = (
        "import sys; from gpucost_lab.measure.device import resolve_device, synchronizer, sync_method; "
        "resolve_device('cpu'); synchronizer('cpu')(); sync_method('cuda'); print('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
