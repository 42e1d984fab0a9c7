"""The knobs of the model server that chapter 08 ("Profile the service") puts under load.

:class:`ServeConfig` is one server: the model's size and seed, the dynamic batcher (``max_batch`` requests or
``max_wait_ms``, whichever comes first), the cold start, and the two faults the chapter finds in the per-request
phase profile: ``stall="serialize"`` (the output turned into JSON element by element, a stall on every request) and
``stall="pause"`` (the worker stops ``pause_ms`` every ``pause_every`` requests, as a collector or a compaction would).
Each knob has a stated range, a named constant with its reason: what a course machine serves within about a minute
and 2 GB with a few instances.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gpucost_lab._validate import InputError, integer_at_least, non_negative, one_of

STALLS = ("none", "serialize", "pause")  # the faults: none, a per-request serialization stall, a periodic pause

# Dynamic batching. The chapter's rates (up to a few hundred requests a second on one instance) never gather more than
# a few dozen requests within any wait it shows; 256 leaves room and refuses a typo that would only hide the queue.
MAX_BATCH_LIMIT = 256
# A wait beyond a second misses every latency bound the chapter sets (tens to hundreds of ms) before the model runs.
MAX_WAIT_MS_LIMIT = 1000.0
# The pause: a collector or a compaction stops a worker for tens to hundreds of ms; 10 s is beyond any of them, and a
# one-minute load run paused longer is all pause.
MIN_PAUSE_MS = 1.0
MAX_PAUSE_MS = 10_000.0
MAX_PAUSE_EVERY = 1_000_000  # a pause that never comes within a course run (1M requests) is no fault to see
# The cold start's stated extra (a simulated weight load, waited, not computed): a small model's weights load in
# seconds; above a minute no instance becomes ready within the start limit a course run can afford.
MAX_COLD_START_MS = 60_000.0
MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes any 64-bit seed; one range for every seed of the package
# The model: a multilayer perceptron. 2048 wide and 8 layers deep is at most 8 x 2048 x 2048 parameters (134 MB of
# float32 per instance), so 8 instances stay within about 2 GB with their Python and torch; one layer at least.
MAX_WIDTH = 2048
MAX_LAYERS = 8
# Rows in one request: 256 rows of 2048 inputs is about 13 MB of JSON, decoded in well under a second; a client that
# needs more sends more requests (the dynamic batcher gathers them).
MAX_ROWS_PER_REQUEST = 256


@dataclass(frozen=True)
class ServeConfig:
    """One model server's knobs. The defaults are a healthy server without batching.

    The model takes rows of ``input_width`` floats and returns rows of ``output_width`` (1000 by default, the logits
    of an ImageNet-sized classifier: enough values that turning them into JSON one at a time is a visible stall).
    """

    max_batch: int = 1  # requests the model runs together at most; 1 = no batching
    max_wait_ms: float = 0.0  # how long the first request of a batch waits for more to arrive
    stall: str = "none"  # one of STALLS
    pause_every: int = 100  # with stall="pause": every pause_every-th request stops the worker...
    pause_ms: float = 200.0  # ...for pause_ms
    cold_start_ms: float = 0.0  # stated extra wait after the model is built, before /health says ready
    seed: int = 0  # seeds the model's weights
    input_width: int = 64
    hidden_width: int = 256
    layers: int = 3  # Linear layers (ReLU between them)
    output_width: int = 1000

    def __post_init__(self) -> None:
        integers = {
            "max_batch": (1, MAX_BATCH_LIMIT),
            "pause_every": (1, MAX_PAUSE_EVERY),
            "seed": (0, MAX_SEED),
            "input_width": (1, MAX_WIDTH),
            "hidden_width": (1, MAX_WIDTH),
            "layers": (1, MAX_LAYERS),
            "output_width": (1, MAX_WIDTH),
        }
        for name, (low, high) in integers.items():
            object.__setattr__(self, name, integer_at_least(name, getattr(self, name), low, high))
        floats = {
            "max_wait_ms": (0.0, MAX_WAIT_MS_LIMIT),
            "pause_ms": (MIN_PAUSE_MS, MAX_PAUSE_MS),
            "cold_start_ms": (0.0, MAX_COLD_START_MS),
        }
        for name, (low_ms, high_ms) in floats.items():
            raw = getattr(self, name)
            value_ms = non_negative(name, raw)
            if not low_ms <= value_ms <= high_ms:
                raise InputError(name, f"{name} must be in [{low_ms:g}, {high_ms:g}] milliseconds, got {raw!r}")
            object.__setattr__(self, name, value_ms)
        one_of("stall", self.stall, STALLS)

    def to_dict(self) -> dict[str, Any]:
        """The knobs as plain data (JSON), to hand to a worker process; ``ServeConfig(**d)`` reads them back."""
        return asdict(self)
