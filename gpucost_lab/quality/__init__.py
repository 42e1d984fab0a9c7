"""Quality at an unchanged target (chapters 03 and 06): the course's small seeded tasks (:mod:`.tasks`), training
them to a target and timing their steps (:mod:`.train`), the parity check (:mod:`.parity`) and its form over
several seeds (:mod:`.seeds`).
"""

from gpucost_lab.quality.parity import (
    DTYPE_TOLERANCE,
    ParityReport,
    check_parity,
    Comparison,
    compare_to_target,
    price_to_target,
)
from gpucost_lab.quality.seeds import (
    MIN_SEEDS,
    SeedComparison,
    SeedRuns,
    check_parity_over_seeds,
    compare_over_seeds,
    train_over_seeds,
)
from gpucost_lab.quality.tasks import ClassificationTask, NextTokenGRU, SequenceTask, init_seed
from gpucost_lab.quality.train import (
    FINE_WITHIN,
    PRECISIONS,
    TrainResult,
    TrainingStep,
    accuracy,
    autocast,
    check_precision,
    train_to_target,
    train_with_phases,
)

__all__ = [
    "ClassificationTask",
    "Comparison",
    "DTYPE_TOLERANCE",
    "FINE_WITHIN",
    "MIN_SEEDS",
    "NextTokenGRU",
    "PRECISIONS",
    "ParityReport",
    "SeedComparison",
    "SeedRuns",
    "SequenceTask",
    "TrainResult",
    "TrainingStep",
    "accuracy",
    "autocast",
    "check_parity",
    "check_parity_over_seeds",
    "check_precision",
    "compare_over_seeds",
    "compare_to_target",
    "init_seed",
    "price_to_target",
    "train_over_seeds",
    "train_to_target",
    "train_with_phases",
]
