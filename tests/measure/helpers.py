"""torch's float32 precision flags, kept and put back around a test that changes them: they are process-wide, so a
test that sets one restores all of them (tests of the contract, the roofline bound and profile_to_cost use it)."""

from contextlib import contextmanager

import torch

from gpucost_lab.measure.contract import float32_math

# torch >= 2.9 precision settings, parents before children so a restore lands on the child's own value
SETTINGS = (
    "fp32_precision",
    "cuda.matmul.fp32_precision",
    "cudnn.fp32_precision",
    "cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision",
    "mkldnn.fp32_precision",
    "mkldnn.matmul.fp32_precision",
    "mkldnn.conv.fp32_precision",
    "mkldnn.rnn.fp32_precision",
)


def owner(path):
    obj = torch.backends
    for name in path.split(".")[:-1]:
        obj = getattr(obj, name)
    return obj


def snapshot():
    if hasattr(torch.backends, "fp32_precision"):
        return {p: owner(p).fp32_precision for p in SETTINGS}
    return {"matmul": torch.get_float32_matmul_precision(), "cudnn": torch.backends.cudnn.allow_tf32}


def restore(saved):
    if "matmul" in saved:
        torch.set_float32_matmul_precision(saved["matmul"])
        torch.backends.cudnn.allow_tf32 = saved["cudnn"]
        return
    for path, value in saved.items():
        owner(path).fp32_precision = value


@contextmanager
def float32_flags_restored():
    """Every precision flag as it was before the block; checked put back, as :func:`float32_math` reads them."""
    saved, math_before = snapshot(), float32_math()
    try:
        yield
    finally:
        restore(saved)
    assert snapshot() == saved and float32_math() == math_before
