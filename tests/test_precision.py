"""gpucost_lab.precision (PRECISIONS, check_precision) against the names the ledger and the training runs use."""

import pytest

from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.precision import PRECISIONS, check_precision


def test_the_ledger_and_the_training_runs_share_one_precision_vocabulary():
    from gpucost_lab.memory.figures import ACTIVATION_BYTES
    from gpucost_lab.quality.parity import DTYPE_TOLERANCE

    assert PRECISIONS == ("fp32", "bf16-mixed", "fp16-mixed")
    assert set(ACTIVATION_BYTES) == set(DTYPE_TOLERANCE) == set(PRECISIONS)
    # the ledger counts bytes on no device: fp16-mixed is a name it knows; a run on the CPU cannot train in it
    assert check_precision("fp16-mixed") == "fp16-mixed" and check_precision("bf16-mixed", "cpu") == "bf16-mixed"
    assert check_precision("fp16-mixed", "cuda:0") == "fp16-mixed"
    with pytest.raises(ValueError, match="fp16-mixed' needs CUDA.*use 'fp32' or 'bf16-mixed'"):
        check_precision("fp16-mixed", "cpu")
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'bf16-mixed', 'fp16-mixed', got 'bf16'"):
        MemoryLedger(3.2, 0.34, precision="bf16")
