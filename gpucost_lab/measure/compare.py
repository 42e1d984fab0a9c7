"""Interleaved A/B comparison of two step functions (chapters 03 and 06): the one way the course compares.

Measuring the baseline, then the candidate, puts everything that changed in between (another
program waking up, the CPU clocking down, a browser tab) into the comparison and into no interval.
:func:`compare_steps` interleaves them in **ABBA rounds**: baseline, candidate, candidate, baseline.
Drift that is linear over a round hits both sides equally, and each side is timed once first and
once second. Each round's order, ABBA or BAAB, is drawn at random (seeded, so a rerun repeats it):
interference that comes and goes with a period, as another program's time slices do, would otherwise
lock onto the fixed pattern and land on the same side round after round, a bias no interval shows
(benchmarks/RESULTS.md, "`compare_steps` beside busy processes", says what it did on a loaded machine).
Each round gives one paired ratio,

    round ratio = sqrt(candidate block 1 x candidate block 2 / (baseline block 1 x baseline block 2)),

and the comparison is summarised on the log scale (:mod:`gpucost_lab.stats`): ``time_ratio`` is the
geometric mean of the round ratios, which equals the ratio of the two sides' geometric-mean step
times, so a table of the two sides' throughputs and costs agrees with the ratio by construction. Its
95% interval is a Student-t interval over the rounds' log ratios.

The verdict follows the course's one decision rule (:func:`gpucost_lab.stats.decide`): "faster" when the whole
interval lies below 1, "slower" when above, "same" within the equivalence margin, else "inconclusive". How wide the
interval is never decides the direction: it is the precision of the size, printed beside it.

How many rounds? Without ``rounds``, :func:`compare_steps` measures in batches (``contract.repeats`` rounds each)
and looks after each batch, until the verdict is decided (a direction, or "same") or its time budget would be spent.
Looking again and again at data that grow would call an A/A comparison faster or slower far more often than 5%;
each look's interval is therefore wider, at the confidence :func:`gpucost_lab.stats.look_confidence` gives (alpha
spending with a union bound), so that across all the looks the chance of a wrong direction stays at most 5%.
``rounds=N`` keeps a fixed design: N rounds, one look, a plain 95% interval.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpucost_lab._validate import InputError, greater_than, integer_at_least
from gpucost_lab.measure import device as _device
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import Clock, Measurement
from gpucost_lab.stats import (
    EQUIVALENCE_MARGIN,
    Estimate,
    Interval,
    RatioVerdict,
    combine,
    look_confidence,
    rounds_to_decide,
)

#: A sequential comparison's time budget (seconds of timing), unless ``max_seconds`` says otherwise.
DEFAULT_MAX_SECONDS = 30.0
#: The most rounds a sequential comparison takes, whatever its budget.
MAX_ROUNDS = 1000


@dataclass(frozen=True)
class Comparison:
    """Raw per-block times of an interleaved comparison; every statistic is derived from them.

    Block ``2 i`` and ``2 i + 1`` of each side belong to round ``i``, run in the order
    ``round_orders[i]``: "ABBA" (baseline, candidate, candidate, baseline) or "BAAB"; empty means every
    round ran ABBA. Each block is ``measured_steps`` steps of the side's own contract. A sequential comparison
    (``looks`` not empty) reports its interval at the last look's confidence (:func:`.stats.look_confidence`).
    """

    baseline_contract: BenchmarkContract
    candidate_contract: BenchmarkContract
    baseline_block_times_s: tuple[float, ...]
    candidate_block_times_s: tuple[float, ...]
    round_orders: tuple[str, ...] = ()
    looks: tuple[int, ...] = ()  # a sequential comparison: the rounds measured at each look; () a fixed design
    seconds: float = 0.0  # the time the timing took (its clock's), warm-up excluded
    margin: float = EQUIVALENCE_MARGIN

    def __post_init__(self) -> None:
        n_b, n_c = len(self.baseline_block_times_s), len(self.candidate_block_times_s)
        if n_b != n_c or n_b < 4 or n_b % 2:
            raise InputError(
                "block",
                f"block times must hold 2 per round for both sides, at least 2 rounds, got "
                f"{n_b} baseline and {n_c} candidate blocks",
            )
        _check_orders(self.round_orders, n_b // 2, allow_empty=True)
        for side, times in (("baseline", self.baseline_block_times_s), ("candidate", self.candidate_block_times_s)):
            for i, t in enumerate(times):
                if not (isinstance(t, float) and math.isfinite(t) and t > 0):
                    raise ValueError(
                        f"{side}_block_times_s[{i}] must be a finite time > 0 s, got {t!r}: the clock "
                        "is coarser than the timed block; raise measured_steps"
                    )

    @property
    def rounds(self) -> int:
        return len(self.baseline_block_times_s) // 2

    @property
    def round_ratios(self) -> Estimate:
        """Candidate / baseline step time, one paired ratio per round."""
        b, c = self.baseline_block_times_s, self.candidate_block_times_s
        steps_b, steps_c = self.baseline_contract.measured_steps, self.candidate_contract.measured_steps
        return Estimate.of(
            math.sqrt(c[2 * i] * c[2 * i + 1] / (b[2 * i] * b[2 * i + 1])) * steps_b / steps_c
            for i in range(self.rounds)
        )

    @property
    def confidence(self) -> float:
        """The interval's confidence: 0.95 for a fixed design, the last look's for a sequential one."""
        return look_confidence(len(self.looks)) if self.looks else 0.95

    @property
    def step_time(self) -> RatioVerdict:
        """Candidate / baseline step time, its interval and verdict ("faster", "slower", "same", "inconclusive")."""
        interval = self.round_ratios.interval_at(self.confidence)
        return RatioVerdict(interval, "step time", "faster", "slower", self.margin, len(self.looks))

    @property
    def interval(self) -> Interval:
        return self.step_time.interval

    @property
    def time_ratio(self) -> float:
        """Candidate step time / baseline step time (below 1: the candidate's steps are faster)."""
        return self.interval.value

    @property
    def ci95_low(self) -> float:
        return self.interval.ci95_low

    @property
    def ci95_high(self) -> float:
        return self.interval.ci95_high

    @property
    def verdict(self) -> str:
        return self.step_time.verdict

    @property
    def reason(self) -> str:
        """The verdict's sentence; for an undecided sequential comparison, what was spent and what more would take."""
        said = self.step_time.reason
        if not self.looks or self.verdict != "inconclusive":
            return said
        ratios = self.round_ratios
        more = rounds_to_decide(ratios.log_std, ratios.mean_log, self.margin)
        hint = f"; about {max(0, more - self.rounds)} more rounds at this spread would decide it" if more else ""
        return f"{said}; not decided after {self.rounds} rounds in {self.seconds:.1f} s (the time budget){hint}"

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    @property
    def baseline(self) -> Measurement:
        """The baseline's blocks as a :class:`~gpucost_lab.measure.timing.Measurement` (one repeat per block)."""
        return _as_measurement(self.baseline_contract, self.baseline_block_times_s)

    @property
    def candidate(self) -> Measurement:
        return _as_measurement(self.candidate_contract, self.candidate_block_times_s)

    @property
    def unit_cost_ratio(self) -> float:
        """Candidate / baseline time per counted unit (sample or token): the cost-per-unit ratio at one price."""
        units_b, units_c = self.baseline_contract.units_per_step, self.candidate_contract.units_per_step
        return self.time_ratio * units_b / units_c

    @property
    def unit_cost_interval(self) -> Interval:
        """:attr:`unit_cost_ratio` with its 95% interval: the step-time interval scaled by the exact units ratio."""
        scale = self.baseline_contract.units_per_step / self.candidate_contract.units_per_step
        value, low, high = self.interval
        return Interval(value * scale, low * scale, high * scale)

    def cost_to_target(self, baseline_steps: Sequence[int] | int, candidate_steps: Sequence[int] | int) -> RatioVerdict:
        """Candidate / baseline cost to the quality target at one price: step-time ratio x steps ratio.

        Steps to target are one count each, or one count per seed. Two equally long lists are taken as
        the **same seeds in the same order** (a seed fixes the initialisation and the batch order, so a
        slow seed is slow for both): the steps ratio is then estimated from the per-seed ratios, a
        paired design that removes the seeds' common spread. Otherwise the two are independent factors.
        """
        b, c = _steps("baseline_steps", baseline_steps), _steps("candidate_steps", candidate_steps)
        factors: list[tuple[Estimate | float, int]]
        if isinstance(b, Estimate) and isinstance(c, Estimate) and b.n == c.n:
            factors = [(self.round_ratios, 1), (Estimate.of(x / y for x, y in zip(c.values, b.values)), 1)]
        else:
            factors = [(self.round_ratios, 1), (c, 1), (b, -1)]
        return RatioVerdict(combine(*factors, confidence=self.confidence), margin=self.margin, looks=len(self.looks))

    def to_dict(self) -> dict:
        return {
            "time_ratio": self.time_ratio,
            "ci95_low": self.ci95_low,
            "ci95_high": self.ci95_high,
            "verdict": self.verdict,
            "reason": self.reason,
            "rounds": self.rounds,
            "looks": list(self.looks),
            "seconds": self.seconds,
            "confidence": self.confidence,
            "equivalence_margin": self.margin,
            "round_orders": list(self.round_orders or ("ABBA",) * self.rounds),
            "baseline_block_times_s": list(self.baseline_block_times_s),
            "candidate_block_times_s": list(self.candidate_block_times_s),
            "baseline_measured_steps": self.baseline_contract.measured_steps,
            "candidate_measured_steps": self.candidate_contract.measured_steps,
        }


def _steps(name: str, steps: Sequence[int] | int) -> Estimate | float:
    if isinstance(steps, bool):
        raise InputError(name, f"{name} must be a count > 0 or counts > 0, one per seed, got {steps!r}")
    if isinstance(steps, (int, float)):
        if not steps > 0:
            raise InputError(name, f"{name} must be > 0, got {steps!r}")
        return float(steps)
    counts = tuple(steps)
    if len(counts) == 1:
        return _steps(name, counts[0])
    try:
        return Estimate.of(counts)
    except ValueError as e:
        raise InputError(name, f"{name} must be counts > 0, one per seed, got {counts!r}") from e


def _as_measurement(contract: BenchmarkContract, times: tuple[float, ...]) -> Measurement:
    return Measurement(replace(contract, repeats=len(times)), times)


def compare_steps(
    baseline_step: Callable[[], object],
    candidate_step: Callable[[], object],
    contract: BenchmarkContract,
    *,
    rounds: int | None = None,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    clock: Clock = time.perf_counter,
    synchronize: Callable[[], None] | None = None,
    candidate_contract: BenchmarkContract | None = None,
    allow: Sequence[str] = (),
    order_seed: int | None = None,
    margin: float = EQUIVALENCE_MARGIN,
) -> Comparison:
    """Warm both steps up, then time them interleaved: ``rounds`` rounds (a fixed design), or, without ``rounds``,
    batches of ``contract.repeats`` rounds until the verdict is decided or ``max_seconds`` of timing would be
    exceeded (at most :data:`MAX_ROUNDS`; the module docstring says how the looks are accounted for).

    ``candidate_contract`` is the candidate's own contract when it changes a field (e.g. the batch); it
    must equal ``contract`` except the fields named in ``allow``. Each block runs the side's
    ``measured_steps`` steps between two synchronizations; ``synchronize`` defaults to the device's.
    Each round is ABBA or BAAB, drawn from ``order_seed`` (default: the contract's seed). ``clock`` times the
    blocks and the budget.
    """
    candidate_contract = contract if candidate_contract is None else candidate_contract
    contract.require_same(candidate_contract, allow=allow)
    if rounds is None:
        batch = integer_at_least("repeats", contract.repeats, 2)
        greater_than("max_seconds", max_seconds, 0.0)
    else:
        batch = integer_at_least("rounds", rounds, 2)
    greater_than("margin", margin, 0.0)
    sync = synchronize if synchronize is not None else _device.synchronizer(contract.device)
    sides = ((baseline_step, contract, sync), (candidate_step, candidate_contract, sync))
    rng = random.Random(contract.seed if order_seed is None else order_seed)
    warm_up(sides)
    times: tuple[list[float], list[float]] = ([], [])
    orders: list[str] = []
    looks: list[int] = []
    started = last = clock()
    while True:
        batch_orders = tuple(rng.choice(ROUND_ORDERS) for _ in range(batch))
        for side, block_times in zip(times, interleaved_blocks(sides, batch, clock, batch_orders, warm=False)):
            side.extend(block_times)
        orders += batch_orders
        now = clock()
        if rounds is not None:
            break
        looks.append(len(orders))
        done = Comparison(contract, candidate_contract, tuple(times[0]), tuple(times[1]), tuple(orders), tuple(looks))
        over_budget = now - started + (now - last) > max_seconds or len(orders) + batch > MAX_ROUNDS
        if done.decided or over_budget:
            break
        last = now
    return Comparison(
        contract,
        candidate_contract,
        tuple(times[0]),
        tuple(times[1]),
        tuple(orders),
        tuple(looks),
        seconds=clock() - started,
        margin=margin,
    )


ROUND_ORDERS = ("ABBA", "BAAB")


def _check_orders(orders: Sequence[str], rounds: int, *, allow_empty: bool = False) -> None:
    if allow_empty and not orders:
        return
    if len(orders) != rounds or any(o not in ROUND_ORDERS for o in orders):
        raise InputError(
            "round_orders", f"round_orders must be {rounds} entries, each one of {ROUND_ORDERS}, got {tuple(orders)!r}"
        )


Side = tuple[Callable[[], object], BenchmarkContract, Callable[[], None]]


def warm_up(sides: tuple[Side, Side]) -> None:
    """Each side's warm-up steps, after checking that the contract describes this machine."""
    sides[0][1].check_environment()  # a contract frozen elsewhere does not describe this machine
    for step, contract, _ in sides:
        for _ in range(contract.warmup_steps):
            step()
    for _, _, sync in sides:
        sync()


def interleaved_blocks(
    sides: tuple[Side, Side], rounds: int, clock: Clock, orders: Sequence[str] | None = None, *, warm: bool = True
) -> tuple[tuple[float, ...], ...]:
    """Warm up both sides (unless ``warm`` is False), then time ``rounds`` rounds of blocks; each side's block times,
    in run order.

    A side is ``(step, contract, synchronize)``: a block is ``synchronize()``, read the clock, the
    contract's ``measured_steps`` steps, ``synchronize()``, read the clock. Round ``i`` runs in the order
    ``orders[i]`` ("ABBA": side 0, 1, 1, 0; "BAAB": side 1, 0, 0, 1); by default every round is ABBA.
    """
    orders = ("ABBA",) * rounds if orders is None else tuple(orders)
    _check_orders(orders, rounds)
    if warm:
        warm_up(sides)
    times: tuple[list[float], list[float]] = ([], [])
    for order in orders:
        for side in (0, 1, 1, 0) if order == "ABBA" else (1, 0, 0, 1):
            step, contract, sync = sides[side]
            sync()
            start_s = clock()
            for _ in range(contract.measured_steps):
                step()
            sync()
            times[side].append(clock() - start_s)
    return tuple(times[0]), tuple(times[1])
