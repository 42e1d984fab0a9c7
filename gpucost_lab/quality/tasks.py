"""The course's small, real, seeded learning tasks: data, held-out set and model (chapters 03 and 06).

A :class:`ClassificationTask` is a synthetic classification problem (Gaussian clusters) that a small MLP learns
on a CPU in a second or two; a :class:`SequenceTask` is the same idea counted in tokens, a seeded second-order
Markov source that a small GRU (:class:`NextTokenGRU`) learns to predict token by token. A task's ``seed`` fixes
its data and held-out set; a run may draw the model initialisation from a seed of its own (:func:`init_seed`).
Training them to a quality target is :mod:`gpucost_lab.quality.train`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from gpucost_lab._validate import fraction, integer_at_least, positive


def init_seed(task, seed: int | None) -> int:
    """The seed of a run's model initialisation and batch order: ``seed``, or the task's when None."""
    return task.seed if seed is None else integer_at_least("seed", seed, 0)


@dataclass(frozen=True)
class ClassificationTask:
    """``classes`` Gaussian clusters in ``features`` dimensions; ``spread`` sets how much they overlap."""

    features: int = 32  # input width
    classes: int = 8  # labels
    train_samples: int = 16_384
    val_samples: int = 4_096  # held out: the quality metric is measured here
    spread: float = 2.0  # noise standard deviation per feature around unit-Gaussian cluster centres
    seed: int = 0  # data and held-out set; also model initialisation and batch order unless a run names its own

    metric: ClassVar[str] = "accuracy"  # what the held-out quality number measures
    counted_unit: ClassVar[str] = "samples"  # the unit cost is priced per
    default_hidden: ClassVar[int] = 128  # MLP width when none is given
    default_lr: ClassVar[float] = 0.01  # SGD learning rate when none is given
    default_target_accuracy: ClassVar[float] = 0.85  # quality target when none is given

    def __post_init__(self) -> None:
        integer_at_least("features", self.features, 1)
        integer_at_least("classes", self.classes, 2)
        integer_at_least("train_samples", self.train_samples, 1)
        integer_at_least("val_samples", self.val_samples, 1)
        positive("spread", self.spread)

    def data(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x_train, y_train, x_val, y_val)``, the same tensors for the same task."""
        g = torch.Generator().manual_seed(self.seed)
        centres = torch.randn(self.classes, self.features, generator=g)
        n = self.train_samples + self.val_samples
        labels = torch.randint(0, self.classes, (n,), generator=g)
        x = centres[labels] + self.spread * torch.randn(n, self.features, generator=g)
        return (
            x[: self.train_samples],
            labels[: self.train_samples],
            x[self.train_samples :],
            labels[self.train_samples :],
        )

    @property
    def units_per_sample(self) -> int:
        """Counted units in one sample: 1 (the unit is the sample)."""
        return 1

    def model(self, hidden: int = 128, seed: int | None = None) -> torch.nn.Module:
        """A two-layer MLP, initialised from ``seed`` (the task's seed when None)."""
        torch.manual_seed(init_seed(self, seed))
        return torch.nn.Sequential(
            torch.nn.Linear(self.features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, self.classes)
        )


class NextTokenGRU(torch.nn.Module):
    """Embedding, one GRU layer and a linear read-out: logits for the next token at every position."""

    def __init__(self, vocab_size: int, embedding_dim: int, hidden: int):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab_size, embedding_dim)
        self.gru = torch.nn.GRU(embedding_dim, hidden, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embedding(tokens))
        return self.head(hidden)


@dataclass(frozen=True)
class SequenceTask:
    """Next-token prediction on a seeded second-order Markov source, counted in tokens.

    A rule table (drawn from the seed) names, for every pair of previous tokens, the token that
    usually follows: with probability ``follow_probability`` the next token is the rule's, otherwise
    uniformly random over the vocabulary. The first two tokens of a sequence are uniform. The model
    reads ``seq_len`` tokens and predicts each next one, so one sequence is ``seq_len`` counted tokens.
    """

    vocab_size: int = 32  # distinct tokens
    seq_len: int = 32  # tokens the model reads (and predictions it makes) per sequence
    train_sequences: int = 4_096
    val_sequences: int = 512  # held out: the quality metric is measured here
    follow_probability: float = 0.9  # chance that the next token is the rule's rather than uniform noise
    embedding_dim: int = 32  # token embedding width
    seed: int = 0  # rule table, data and held-out set; also model initialisation and batch order by default

    metric: ClassVar[str] = "next-token accuracy"
    counted_unit: ClassVar[str] = "tokens"
    default_hidden: ClassVar[int] = 64  # GRU width
    default_lr: ClassVar[float] = 0.5  # SGD learning rate
    default_target_accuracy: ClassVar[float] = 0.83  # below the ceiling of 0.876 for the default task

    def __post_init__(self) -> None:
        integer_at_least("vocab_size", self.vocab_size, 2)
        integer_at_least("seq_len", self.seq_len, 2)
        integer_at_least("train_sequences", self.train_sequences, 1)
        integer_at_least("val_sequences", self.val_sequences, 1)
        fraction("follow_probability", self.follow_probability, include_zero=True, include_one=True)
        integer_at_least("embedding_dim", self.embedding_dim, 1)

    @property
    def units_per_sample(self) -> int:
        """Counted tokens in one sequence: ``seq_len`` (one prediction per token read)."""
        return self.seq_len

    @property
    def ceiling_accuracy(self) -> float:
        """The best expected next-token accuracy any model can reach (the Bayes rate).

        The first prediction (the second token, uniform) is right with probability 1 / V; each of the
        other ``seq_len - 1`` with p + (1 - p) / V, by predicting the rule's token.
        """
        v, p, n = self.vocab_size, self.follow_probability, self.seq_len
        return (1 / v + (n - 1) * (p + (1 - p) / v)) / n

    def rule(self) -> torch.Tensor:
        """``rule[a, b]``: the token that usually follows the pair ``a, b``."""
        g = torch.Generator().manual_seed(self.seed)
        return torch.randint(0, self.vocab_size, (self.vocab_size, self.vocab_size), generator=g)

    def data(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x_train, y_train, x_val, y_val)`` of shape (sequences, seq_len): ``y`` is ``x`` shifted by one."""
        g = torch.Generator().manual_seed(self.seed)
        v = self.vocab_size
        rule = torch.randint(0, v, (v, v), generator=g)  # the same draw as rule()
        n = self.train_sequences + self.val_sequences
        tokens = torch.empty(n, self.seq_len + 1, dtype=torch.long)
        tokens[:, :2] = torch.randint(0, v, (n, 2), generator=g)
        for t in range(2, self.seq_len + 1):
            follows = torch.rand(n, generator=g) < self.follow_probability
            noise = torch.randint(0, v, (n,), generator=g)
            tokens[:, t] = torch.where(follows, rule[tokens[:, t - 2], tokens[:, t - 1]], noise)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        k = self.train_sequences
        return x[:k], y[:k], x[k:], y[k:]

    def model(self, hidden: int = 64, seed: int | None = None) -> torch.nn.Module:
        """A :class:`NextTokenGRU`, initialised from ``seed`` (the task's seed when None)."""
        torch.manual_seed(init_seed(self, seed))
        return NextTokenGRU(self.vocab_size, self.embedding_dim, hidden)


__all__ = ["ClassificationTask", "NextTokenGRU", "SequenceTask", "init_seed"]
