"""Helpers of the tests in tests/memory/: the course's memory ledger (chapter 04), defined once."""

from gpucost_lab.memory.ledger import MemoryLedger

# static 3.2 GB, 0.34 GB of activations per sample, 24 GB device, 10% reserve (budget 21.6 GB), 10 blocks
COURSE = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)
