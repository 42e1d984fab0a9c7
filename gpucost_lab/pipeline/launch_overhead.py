"""Launch overhead and ``torch.compile`` (chapter 07): many small operators, eager against compiled, the compile priced.

Each eager operator costs a fixed overhead on the host (Python, the dispatcher, and on a GPU a kernel launch) on top
of its arithmetic. A model of many small operators (:class:`ManySmallOps`: ``layers`` elementwise blocks on a small
tensor) is all overhead; ``torch.compile`` fuses the operators into a few generated kernels and removes most of it.
The compile itself is paid once, before the first step, so it is priced like any other cost: spread over the steps
the compiled model will run. With eager step time ``t_e``, compiled ``t_c`` and compile time ``C``, the compiled run
is cheaper after

    break-even steps = C / (t_e - t_c),

and over ``N`` steps of ``B`` samples each costs ``(C + N t_c) / (N B)`` seconds per sample against ``t_e / B``.
The step-time ratio ``r = t_c / t_e`` comes from an interleaved comparison with its 95% interval; the break-even is
``C / (t_e (1 - r))`` at the ratio's two ends (``t_e`` at its geometric mean), and "never" when the interval reaches 1.

A cold compile (nothing in the compile cache) of even this small model takes seconds on a CPU; the compile cache
keeps what the compiler produced in a folder, and a later compile of the same graph loads it.
:func:`compile_model` compiles into the cache folder it is given (``TORCHINDUCTOR_CACHE_DIR``; default
:func:`default_cache_dir`), says whether the cache was hit, and records a cold compile's time in that folder, so a
warm run can still price what a fresh machine pays.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pandas as pd
import torch

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, positive
from gpucost_lab.atomic import atomic_write_text
from gpucost_lab.measure.compare import Comparison
from gpucost_lab.stats import Interval

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
COLD_RECORD = "gpucost-lab-cold-compiles.json"  # cold compile times recorded in the cache folder, by model key


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/gpucost-lab/torch-compile`` (``~/.cache/...`` without it): kept between sessions."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpucost-lab" / "torch-compile"


class ManySmallOps(torch.nn.Module):
    """``layers`` blocks of four elementwise operators, ``x = tanh(x * w + b) * 0.9 + x * 0.1``, on ``width`` features.

    Each operator does a few thousand flops; its host overhead is larger than its arithmetic.
    """

    def __init__(self, layers: int = 24, width: int = 64, seed: int = 0):
        super().__init__()
        self.layers = integer_at_least("layers", layers, 1)
        self.width = integer_at_least("width", width, 1)
        generator = torch.Generator().manual_seed(seed)
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(layers, width, generator=generator))
        self.bias = torch.nn.Parameter(0.1 * torch.randn(layers, width, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.layers):
            x = torch.tanh(x * self.weight[i] + self.bias[i]) * 0.9 + x * 0.1
        return x

    @property
    def operators_per_step(self) -> int:
        """Eager operators per forward: per layer two index reads, then mul, add, tanh, mul, mul, add."""
        return 8 * self.layers


def forward_step(module: torch.nn.Module, x: torch.Tensor):
    """A step function: one forward pass of ``module`` on ``x`` without gradients (an inference or evaluation step)."""

    def step() -> torch.Tensor:
        with torch.no_grad():
            return module(x)

    return step


@dataclass(frozen=True)
class CompileResult:
    """What compiling cost: seconds until the first compiled output, and whether the cache served it."""

    compile_s: float  # torch.compile + the first call (tracing, code generation or a cache load), minus nothing
    cache_hit: bool  # the compiled graph came from the cache folder
    cache_dir: str
    cold_compile_s: float | None  # a compile without the cache, as recorded in the cache folder (None: none yet)
    max_abs_difference: float  # compiled against eager output on the example: fused arithmetic rounds differently

    def to_dict(self) -> dict:
        return {
            "compile_s": self.compile_s,
            "cache_hit": self.cache_hit,
            "cache_dir": self.cache_dir,
            "cold_compile_s": self.cold_compile_s,
            "max_abs_difference": self.max_abs_difference,
        }


def _cache_hits() -> int:
    from torch._dynamo.utils import counters

    return counters["inductor"]["fxgraph_cache_hit"]


def _model_key(model: ManySmallOps, example: torch.Tensor) -> str:
    return f"ManySmallOps(layers={model.layers}, width={model.width}) {tuple(example.shape)} torch {torch.__version__}"


def _cold_records(cache_dir: Path) -> dict:
    try:
        records = json.loads((cache_dir / COLD_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return records if isinstance(records, dict) else {}


def compile_model(
    model: ManySmallOps, example: torch.Tensor, cache_dir: str | os.PathLike | None = None
) -> tuple[torch.nn.Module, CompileResult]:
    """``torch.compile(model)``, called once on ``example`` without gradients, into the cache in ``cache_dir``.

    Sets ``TORCHINDUCTOR_CACHE_DIR`` for this process (set it before the process's first compile: a compile reads
    the folder then). Returns the compiled module and what the compile cost.
    """
    if not isinstance(model, ManySmallOps):
        raise InputError("model", f"model must be a ManySmallOps, got {type(model).__name__}")
    folder = Path(default_cache_dir() if cache_dir is None else cache_dir).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[CACHE_ENV] = str(folder)
    import torch._inductor.config as inductor_config

    start_s = time.perf_counter()  # the compiler's first import is part of what compiling costs
    hits = _cache_hits()
    with inductor_config.patch(compile_threads=1), torch.no_grad():  # no pool of compile workers to start
        compiled = cast(torch.nn.Module, torch.compile(model))  # an OptimizedModule, a Module wrapping the model
        out = compiled(example)
    compile_s = time.perf_counter() - start_s
    cache_hit = _cache_hits() > hits
    with torch.no_grad():
        difference = float((out - model(example)).abs().max())
    key, records = _model_key(model, example), _cold_records(folder)
    if not cache_hit:
        records[key] = compile_s
        atomic_write_text(folder / COLD_RECORD, json.dumps(records, indent=1, sort_keys=True) + "\n")
    return compiled, CompileResult(compile_s, cache_hit, str(folder), records.get(key), difference)


@dataclass(frozen=True)
class CompilePrice:
    """Eager against compiled, per sample, with the compile spread over ``steps`` steps of ``samples_per_step``."""

    comparison: Comparison  # eager (baseline) against compiled (candidate), interleaved
    compile_s: float
    samples_per_step: int
    steps: int
    price_per_hour_usd: float

    @property
    def eager_step_s(self) -> float:
        return self.comparison.baseline.step_time_s.geomean

    @property
    def compiled_step_s(self) -> float:
        """The eager step time x the comparison's ratio (equal to the compiled side's geometric mean)."""
        return self.eager_step_s * self.comparison.time_ratio

    def _break_even(self, ratio: float) -> float:
        saving_s = self.eager_step_s * (1.0 - ratio)
        return math.inf if saving_s <= 0 else self.compile_s / saving_s

    @property
    def break_even_steps(self) -> Interval:
        """Steps after which compiling has paid for itself, with its 95% interval (``inf``: it never pays)."""
        c = self.comparison
        return Interval(self._break_even(c.time_ratio), self._break_even(c.ci95_low), self._break_even(c.ci95_high))

    def cost_per_sample_usd(self, steps: int | None = None) -> dict[str, float]:
        """Eager, and compiled with the compile spread over ``steps`` (default: this price's steps), per sample."""
        n = self.steps if steps is None else integer_at_least("steps", steps, 1)
        per_s = cost.cost_per_second_usd(self.price_per_hour_usd)
        return {
            "eager": self.eager_step_s / self.samples_per_step * per_s,
            "compiled": (self.compile_s + n * self.compiled_step_s) / (n * self.samples_per_step) * per_s,
        }

    def verdict(self, steps: int | None = None) -> str:
        """Over ``steps`` steps: "compile" when even the interval's far end has paid, "stay eager" when even its near
        end has not, else "inconclusive". With a comparison that found no direction ("same" or "inconclusive"),
        "stay eager" only when even a compiled
        step taking no time could not pay the compile back (``steps`` x the eager step < the compile)."""
        n = self.steps if steps is None else integer_at_least("steps", steps, 1)
        if self.comparison.verdict not in ("faster", "slower"):  # "same" or "inconclusive": no saving to count on
            return "stay eager" if n * self.eager_step_s < self.compile_s else "inconclusive"
        low, high = sorted(self.break_even_steps[1:])
        return "compile" if n > high else "stay eager" if n < low else "inconclusive"

    def table(self, steps: tuple[int, ...] = (100, 1_000, 10_000, 100_000)) -> pd.DataFrame:
        """Per number of steps: cost per sample eager and compiled (compile included), and the verdict."""
        rows = {}
        for n in steps:
            costs = self.cost_per_sample_usd(n)
            rows[n] = {
                "eager_cost_per_sample_usd": costs["eager"],
                "compiled_cost_per_sample_usd": costs["compiled"],
                "verdict": self.verdict(n),
            }
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("steps")


def price_compile(
    comparison: Comparison,
    compile_s: float,
    *,
    steps: int,
    price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
) -> CompilePrice:
    """Price ``comparison`` (eager baseline, compiled candidate) with ``compile_s`` spread over ``steps`` steps."""
    positive("compile_s", compile_s)
    integer_at_least("steps", steps, 1)
    positive("price_per_hour_usd", price_per_hour_usd)
    units = comparison.baseline_contract.units_per_step
    return CompilePrice(comparison, float(compile_s), units, steps, float(price_per_hour_usd))
