"""Quality at an unchanged target (chapters 03 and 06): the course's small seeded tasks (:mod:`.tasks`), training
them to a target and timing their steps (:mod:`.train`), one config over several seeds (:mod:`.seeds`) and the
parity check, for one run or one seed study each (:mod:`.parity`).
"""

from gpucost_lab.quality.parity import (
    DTYPE_TOLERANCE,
    ParityReport,
    ParityRuns,
    check_parity,
    compare_to_target,
    price_to_target,
)
from gpucost_lab.quality.seeds import MIN_SEEDS, SeedRuns, check_seeds, format_seeds, train_over_seeds
from gpucost_lab.quality.tasks import ClassificationTask, NextTokenGRU, SequenceTask, init_seed
from gpucost_lab.quality.train import (
    FINE_WITHIN,
    TrainingStep,
    TrainResult,
    accuracy,
    autocast,
    train_to_target,
    train_with_phases,
)

__all__ = [
    "ClassificationTask",
    "DTYPE_TOLERANCE",
    "FINE_WITHIN",
    "MIN_SEEDS",
    "NextTokenGRU",
    "ParityReport",
    "ParityRuns",
    "SeedRuns",
    "SequenceTask",
    "TrainResult",
    "TrainingStep",
    "accuracy",
    "autocast",
    "check_parity",
    "check_seeds",
    "compare_to_target",
    "format_seeds",
    "init_seed",
    "price_to_target",
    "train_over_seeds",
    "train_to_target",
    "train_with_phases",
]
