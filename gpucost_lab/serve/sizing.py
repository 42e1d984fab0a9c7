"""Right-size a service from its measured profile (chapter 08): the rate one instance sustains within the SLO, the
instances an arrival rate needs, the box each instance needs, the price of a million requests and the Kubernetes
Deployment that carries it.

- :func:`max_sustainable_qps`: from measured (rate, p99 with its 95% interval) points, the highest rate whose
  *whole* interval lies below the SLO. Each point gets the course's one decision rule (:func:`gpucost_lab.stats.decide`
  on the ratio p99 / SLO, with no equivalence band): "meets" when the whole interval is below the SLO, "misses" when
  the whole interval is above it, "inconclusive" otherwise (an interval that holds the SLO, or a tail too sparsely
  seen to bound: ``ci95_high`` = inf).
- :func:`instances_needed`: ceil(target / (per-instance rate x (1 - headroom))). The headroom (30% unless told)
  keeps each instance below its measured limit: a burst above the mean rate, one instance lost, and a rolling update,
  which by default may take 25% of a Deployment's replicas out at once (``maxUnavailable``, Kubernetes' Deployments
  page) while the rest carry the load.
- :func:`memory_fit`: the resident memory an instance really uses against the box it was given ("memory is 20% of
  the box"), and the smallest box of the catalog that holds it with a stated margin.
- :func:`instance_catalog`: ``data/instance_prices.json``, a few CPU and GPU instance types with their on-demand
  prices: every price a stated assumption with its page named.
- :func:`cost_per_million_requests_usd`: instances x price per hour / (3600 x requests per second) x 10^6, with a 95%
  interval (:func:`gpucost_lab.stats.combine`) when the rate was measured over repeats.
- :func:`deployment`: the ``apps/v1`` Deployment (replicas, the container's resource requests and limits) as a dict
  and as YAML text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from numbers import Integral, Real

import pandas as pd

from gpucost_lab._validate import (
    InputError,
    fraction,
    integer_at_least,
    non_empty_text,
    non_negative,
    positive,
    price_per_hour,
)
from gpucost_lab.cost import SECONDS_PER_HOUR
from gpucost_lab.stats import Estimate, Interval, combine, decide

VERDICTS = ("meets", "misses", "inconclusive")
#: The headroom :func:`instances_needed` keeps unless told: above the 25% a default rolling update takes out.
DEFAULT_HEADROOM = 0.3
#: The memory margin :func:`memory_fit` adds to the measured resident memory unless told: a heavier load's batches,
#: the allocator's caches and what the operating system and the node's agents keep (a stated assumption).
DEFAULT_MEMORY_MARGIN = 0.25
#: Kubernetes' documented scalability limits ("Considerations for large clusters"): at most 150,000 Pods a cluster.
MAX_REPLICAS = 150_000
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MIB_BYTES = 2**20


# -- the highest rate within the SLO ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadPoint:
    """One measured rate: the latency percentile's value and its 95% interval, in ms (``ci95_high_ms`` may be inf:
    too few requests were seen to bound the tail)."""

    qps: float
    value_ms: float
    ci95_low_ms: float
    ci95_high_ms: float

    def __post_init__(self) -> None:
        positive("qps", self.qps)
        non_negative("ci95_low_ms", self.ci95_low_ms)
        if isinstance(self.ci95_high_ms, bool) or not isinstance(self.ci95_high_ms, Real) or self.ci95_high_ms < 0:
            raise InputError("ci95_high_ms", f"ci95_high_ms must be a number >= 0 or inf, got {self.ci95_high_ms!r}")
        value = non_negative("value_ms", self.value_ms)
        if not self.ci95_low_ms <= value <= self.ci95_high_ms:
            raise InputError(
                "value_ms",
                f"value_ms must lie within its interval [ci95_low_ms, ci95_high_ms] = "
                f"[{self.ci95_low_ms!r}, {self.ci95_high_ms!r}], got {self.value_ms!r}",
            )


_POINT_FORMS = "a LoadPoint, a (qps, value, ci95_low, ci95_high) tuple or a mapping with those keys"


def _point(i: int, raw: object) -> LoadPoint:
    """A point from a LoadPoint, a (qps, value, ci95_low, ci95_high) sequence, or a mapping with those keys (``qps``
    or ``qps_offered``, then ``value``, ``ci95_low``, ``ci95_high``: the shape of serve-bench's ``latency_ms.p99``)."""
    try:
        if isinstance(raw, LoadPoint):
            return raw
        if isinstance(raw, Mapping):
            qps = raw["qps"] if "qps" in raw else raw["qps_offered"]
            return LoadPoint(qps, raw["value"], raw["ci95_low"], raw["ci95_high"])
        if isinstance(raw, Sequence) and not isinstance(raw, (str, bytes)) and len(raw) == 4:
            return LoadPoint(*raw)
    except KeyError as missing:
        raise InputError(f"points[{i}]", f"points[{i}] lacks the key {missing}; allowed: {_POINT_FORMS}") from None
    except InputError as err:
        raise InputError(f"points[{i}].{err.field}", f"points[{i}].{err}") from None
    raise InputError(f"points[{i}]", f"points[{i}] must be {_POINT_FORMS}, got {raw!r}")


def slo_verdict(ci95_low_ms: float, ci95_high_ms: float, slo_ms: float) -> str:
    """ "meets" when the whole interval lies below ``slo_ms``, "misses" when it lies above, else "inconclusive".

    :func:`gpucost_lab.stats.decide` on the interval of the ratio to the SLO, with no equivalence band: an interval
    within a few percent of the SLO is still undecided, never "the same"."""
    slo = positive("slo_ms", slo_ms)
    low, high = non_negative("ci95_low_ms", ci95_low_ms), float(ci95_high_ms)
    if isinstance(ci95_high_ms, bool) or not isinstance(ci95_high_ms, Real) or not high >= low:
        raise InputError("ci95_high_ms", f"ci95_high_ms must be a number >= ci95_low_ms or inf, got {ci95_high_ms!r}")
    word = decide(Interval(low / slo, low / slo, high / slo), "meets", "misses", margin=0.0)  # decide reads the ends
    return "inconclusive" if word == "same" else word


@dataclass(frozen=True)
class SustainableRate:
    """The highest measured rate that meets the SLO with no miss at or below it (None when none does), and the
    verdict at every measured rate."""

    qps: float | None
    slo_ms: float
    percentile: float
    verdicts: tuple[tuple[LoadPoint, str], ...]  # by rising rate

    @property
    def next_qps(self) -> float | None:
        """The lowest measured rate above :attr:`qps` that does not meet: the bracket a finer search looks in."""
        above = [p.qps for p, word in self.verdicts if word != "meets" and (self.qps is None or p.qps > self.qps)]
        return min(above, default=None)

    def table(self) -> pd.DataFrame:
        """``qps, value_ms, ci95_low_ms, ci95_high_ms, slo_ms, verdict``, one row per measured rate."""
        rows = [(p.qps, p.value_ms, p.ci95_low_ms, p.ci95_high_ms, self.slo_ms, w) for p, w in self.verdicts]
        return pd.DataFrame(rows, columns=["qps", "value_ms", "ci95_low_ms", "ci95_high_ms", "slo_ms", "verdict"])

    @property
    def reason(self) -> str:
        label = f"p{self.percentile:g}"
        if self.qps is None:
            return f"no measured rate keeps the whole 95% interval of the {label} below the SLO of {self.slo_ms:g} ms"
        beyond = "" if self.next_qps is None else f"; at {self.next_qps:g} requests/s it no longer does"
        return (
            f"one instance sustains {self.qps:g} requests/s: there, and at every measured rate below, the whole 95% "
            f"interval of the {label} lies below the SLO of {self.slo_ms:g} ms{beyond}"
        )


def max_sustainable_qps(points: Iterable[object], slo_ms: float, percentile: float = 99.0) -> SustainableRate:
    """The highest measured rate whose whole ``percentile`` interval lies below ``slo_ms``, with no rate at or below it
    that misses (a miss below a meet is noise or a cold start, and the lower rate is the one to trust).

    ``points``: one per measured rate, each a :class:`LoadPoint`, a ``(qps, value, ci95_low, ci95_high)`` tuple or a
    mapping with those keys, latencies in ms; rates must be distinct. An "inconclusive" rate is not sustained, and
    does not stop a higher rate that meets from counting.
    """
    slo = positive("slo_ms", slo_ms)
    pct = positive("percentile", percentile)
    if not pct < 100:
        raise InputError("percentile", f"percentile must be in (0, 100), got {percentile!r}")
    if isinstance(points, (str, bytes, Mapping)) or not isinstance(points, Iterable):
        raise InputError("points", f"points must be a list of measured rates ({_POINT_FORMS}), got {points!r}")
    parsed = sorted((_point(i, raw) for i, raw in enumerate(points)), key=lambda p: p.qps)
    if not parsed:
        raise InputError("points", "points must hold at least one measured rate, got none")
    rates = [p.qps for p in parsed]
    if len(set(rates)) != len(rates):
        raise InputError("points", f"points must measure each rate once, got the rates {rates!r}")
    verdicts = tuple((p, slo_verdict(p.ci95_low_ms, p.ci95_high_ms, slo)) for p in parsed)
    best = None
    for point, word in verdicts:
        if word == "misses":
            break
        if word == "meets":
            best = point.qps
    return SustainableRate(best, slo, pct, verdicts)


# -- instances for an arrival rate ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstancesNeeded:
    """How many instances carry ``target_qps`` when each runs at most ``(1 - headroom)`` of ``per_instance_qps``."""

    target_qps: float
    per_instance_qps: float
    headroom: float
    instances: int

    @property
    def usable_qps_per_instance(self) -> float:
        return self.per_instance_qps * (1.0 - self.headroom)

    @property
    def utilisation(self) -> float:
        """Each instance's share of its measured limit at the target rate (at most 1 - headroom)."""
        return self.target_qps / (self.instances * self.per_instance_qps)

    @property
    def reason(self) -> str:
        return (
            f"{self.target_qps:g} requests/s over {self.per_instance_qps:g} per instance x (1 - {self.headroom:.0%} "
            f"headroom) = {self.target_qps / self.usable_qps_per_instance:.4g}, rounded up: {self.instances} instances "
            f"(each at {self.utilisation:.0%} of its limit)"
        )


def instances_needed(target_qps: float, per_instance_qps: float, headroom: float = DEFAULT_HEADROOM) -> InstancesNeeded:
    """ceil(target_qps / (per_instance_qps x (1 - headroom))): 100 requests/s at 30 per instance with 30% headroom is
    ceil(100 / 21) = 5. A quotient that is a whole number up to rounding (70 / (10 x 0.7)) is not rounded up past it.
    """
    target = positive("target_qps", target_qps)
    per = positive("per_instance_qps", per_instance_qps)
    room = fraction("headroom", headroom, include_zero=True, include_one=False)
    quotient = target / (per * (1.0 - room))
    count = math.ceil(quotient)
    if count > 1 and math.isclose(quotient, count - 1, rel_tol=1e-9, abs_tol=0.0):
        count -= 1
    return InstancesNeeded(target, per, room, max(1, count))


# -- the catalog of instance types and their prices -------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceType:
    """One entry of ``data/instance_prices.json``; the price is a stated assumption (``assumption`` says so)."""

    name: str
    provider: str
    kind: str  # "cpu" or "gpu"
    vcpus: int
    memory_bytes: int  # the host's memory, not an accelerator's
    gpus: int
    gpu: str | None  # the accelerator's name in data/hardware.json
    price_per_hour_usd: float
    source: str
    assumption: str
    notes: str = ""
    field_sources: tuple[tuple[str, str], ...] = ()

    def source_of(self, field: str) -> str:
        """Where the figure ``field`` comes from (the price page unless the entry names another)."""
        return dict(self.field_sources).get(field, self.source)


@lru_cache(maxsize=1)
def instance_catalog() -> dict[str, InstanceType]:
    """Every instance type in ``data/instance_prices.json``, by name."""
    raw = json.loads((resources.files("gpucost_lab") / "data" / "instance_prices.json").read_text(encoding="utf-8"))
    return {
        entry["name"]: InstanceType(**dict(entry, field_sources=tuple(sorted(entry["field_sources"].items()))))
        for entry in raw["instances"]
    }


def instance_table() -> pd.DataFrame:
    """The catalog as a table: one row per instance type, its size, price and the price's source."""
    columns = ["name", "kind", "vcpus", "memory_bytes", "gpus", "gpu", "price_per_hour_usd", "source", "assumption"]
    return pd.DataFrame([[getattr(t, c) for c in columns] for t in instance_catalog().values()], columns=columns)


def lookup_instance(name: object) -> InstanceType:
    """The catalog entry named ``name`` (case-insensitive)."""
    wanted = str(name).strip().lower()
    for entry in instance_catalog().values():
        if entry.name.lower() == wanted:
            return entry
    raise InputError("box", f"box must be one of {', '.join(map(repr, instance_catalog()))}, got {name!r}")


# -- memory per instance against the box ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryFit:
    """The resident memory an instance uses against its box, and the smallest catalog box that holds it with
    ``margin`` (None when none does)."""

    rss_bytes: int  # the largest instance's
    box: InstanceType
    margin: float
    min_vcpus: int
    smallest: InstanceType | None

    @property
    def required_bytes(self) -> int:
        """rss x (1 + margin), rounded up: what a box (and a Deployment's memory request) must hold."""
        return math.ceil(self.rss_bytes * (1.0 + self.margin))

    @property
    def share(self) -> float:
        """rss / the box's memory."""
        return self.rss_bytes / self.box.memory_bytes

    @property
    def share_text(self) -> str:
        used_gb, box_gb = self.rss_bytes / 1e9, self.box.memory_bytes / 1e9
        return f"memory is {self.share:.0%} of the box ({used_gb:.3g} GB of {self.box.name}'s {box_gb:.3g} GB)"

    @property
    def reason(self) -> str:
        need = f"{self.required_bytes / 1e9:.3g} GB with the {self.margin:.0%} margin"
        if self.smallest is None:
            return f"{self.share_text}; no box in the catalog holds {need} with {self.min_vcpus} vCPUs or more"
        if self.smallest.name == self.box.name:
            return f"{self.share_text}; {need}: no smaller box in the catalog holds it"
        if self.smallest.memory_bytes > self.box.memory_bytes:
            return (
                f"{self.share_text}; {need} is more than the box holds: the smallest that holds it is "
                f"{self.smallest.name} ({self.smallest.memory_bytes / 1e9:.3g} GB, {self.smallest.vcpus} vCPUs)"
            )
        ratio = self.smallest.price_per_hour_usd / self.box.price_per_hour_usd
        return (
            f"{self.share_text}; {need} fits {self.smallest.name} ({self.smallest.memory_bytes / 1e9:.3g} GB, "
            f"{self.smallest.vcpus} vCPUs) at {ratio:.0%} of the price per hour (stated assumptions)"
        )


def _rss(rss_bytes: object) -> int:
    values = [rss_bytes] if isinstance(rss_bytes, Integral) else rss_bytes
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError("rss_bytes", f"rss_bytes must be bytes, or one figure per instance, got {rss_bytes!r}")
    found = [integer_at_least(f"rss_bytes[{i}]", v, 1) for i, v in enumerate(values)]
    if not found:
        raise InputError("rss_bytes", "rss_bytes must hold at least one instance's figure, got none")
    return max(found)


def memory_fit(
    rss_bytes: int | Iterable[int],
    box: str | InstanceType,
    margin: float = DEFAULT_MEMORY_MARGIN,
    min_vcpus: int | None = None,
) -> MemoryFit:
    """The measured resident memory (one figure, or one per instance: the largest counts) against ``box``, and the
    smallest box of the catalog of the same kind (for a GPU box, the same accelerator, as many or more) with
    ``min_vcpus`` vCPUs (the box's own unless told: the measured rate holds only with the CPUs it was measured on)
    whose memory holds rss x (1 + margin). Ties in memory go to the lower price."""
    rss = _rss(rss_bytes)
    given = box if isinstance(box, InstanceType) else lookup_instance(box)
    room = non_negative("margin", margin)
    cpus = given.vcpus if min_vcpus is None else integer_at_least("min_vcpus", min_vcpus, 1)
    need = math.ceil(rss * (1.0 + room))
    fits = [
        t
        for t in instance_catalog().values()
        if t.kind == given.kind
        and (given.kind == "cpu" or (t.gpu == given.gpu and t.gpus >= given.gpus))
        and t.vcpus >= cpus
        and t.memory_bytes >= need
    ]
    smallest = min(fits, key=lambda t: (t.memory_bytes, t.price_per_hour_usd), default=None)
    return MemoryFit(rss, given, room, cpus, smallest)


# -- the price of a million requests ----------------------------------------------------------------------------------


def cost_per_million_requests_usd(
    price_per_hour_usd: float, qps_sustained: float | Estimate, instances: int = 1
) -> Interval:
    """instances x price per hour / (3600 x qps_sustained) x 10^6, as an :class:`~gpucost_lab.stats.Interval`.

    ``qps_sustained`` is the rate the whole deployment serves (all ``instances`` together), in requests per second;
    as an :class:`~gpucost_lab.stats.Estimate` (one rate per repeat) it carries its 95% interval into the cost
    (:func:`~gpucost_lab.stats.combine`, the reciprocal of the rate's interval); a plain number gives an exact figure
    (ci95_low = ci95_high). 5 instances at $0.10/h serving 100 requests/s: 5 x 0.10 / 360,000 x 10^6 = $1.389.
    """
    price = price_per_hour("price_per_hour_usd", price_per_hour_usd)
    count = integer_at_least("instances", instances, 1, MAX_REPLICAS)
    if not isinstance(qps_sustained, Estimate):
        qps_sustained = positive("qps_sustained", qps_sustained)
    return combine((count * price * 1e6 / SECONDS_PER_HOUR, 1), (qps_sustained, -1))


# -- the Kubernetes Deployment ----------------------------------------------------------------------------------------


def cpu_quantity(cpu: float) -> str:
    """vCPUs as a Kubernetes CPU quantity, rounded up to the 1m (a thousandth of a CPU) the API allows: 2 -> "2",
    0.25 -> "250m", 1.0005 -> "1001m"."""
    millis = math.ceil(round(positive("cpu", cpu) * 1000, 6))
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(memory_bytes: int) -> str:
    """Bytes as a Kubernetes memory quantity in whole MiB, rounded up: 268,435,456 -> "256Mi", 1 -> "1Mi"."""
    return f"{math.ceil(integer_at_least('memory_bytes', memory_bytes, 1) / MIB_BYTES)}Mi"


@dataclass(frozen=True)
class Deployment:
    """An ``apps/v1`` Deployment of ``replicas`` Pods, one container each with these resources (:func:`deployment`)."""

    name: str
    replicas: int
    cpu: float
    memory_bytes: int
    image: str
    port: int
    gpus: int
    guaranteed: bool

    @property
    def resources(self) -> dict:
        """``requests`` and ``limits``: memory limit = request (a container past it is killed, not slowed); CPU limit
        = request when :attr:`guaranteed` (the Pod's QoS class is then Guaranteed); GPUs in ``limits`` only."""
        requests = {"cpu": cpu_quantity(self.cpu), "memory": memory_quantity(self.memory_bytes)}
        limits: dict = {"memory": requests["memory"]}
        if self.guaranteed:
            limits = {"cpu": requests["cpu"], **limits}
        if self.gpus:
            limits["nvidia.com/gpu"] = self.gpus
        return {"requests": requests, "limits": limits}

    @property
    def manifest(self) -> dict:
        """The Deployment as plain data, the shape ``kubectl apply -f`` reads."""
        labels = {"app": self.name}
        container = {
            "name": self.name,
            "image": self.image,
            "ports": [{"containerPort": self.port}],
            "resources": self.resources,
            "readinessProbe": {"httpGet": {"path": "/health", "port": self.port}},
        }
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": self.name, "labels": dict(labels)},
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": dict(labels)},
                "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [container]}},
            },
        }

    @property
    def yaml(self) -> str:
        """:attr:`manifest` as YAML text (block style, every string quoted)."""
        return "\n".join(_yaml_lines(self.manifest, 0)) + "\n"


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Integral):
        return str(int(value))
    return json.dumps(str(value))  # a JSON string is a YAML double-quoted scalar


def _yaml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z][A-Za-z0-9._/-]*", key) else json.dumps(key)


def _yaml_lines(value: object, indent: int) -> list[str]:
    """Block-style YAML for the dicts, lists, strings and integers a manifest holds."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines += [f"{pad}{_yaml_key(key)}:", *_yaml_lines(item, indent + 2)]
            elif isinstance(item, (dict, list)):
                lines.append(f"{pad}{_yaml_key(key)}: {'{}' if isinstance(item, dict) else '[]'}")
            else:
                lines.append(f"{pad}{_yaml_key(key)}: {_yaml_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            nested = isinstance(item, (dict, list))
            inner = _yaml_lines(item, indent + 2) if nested else [f"{pad}  {_yaml_scalar(item)}"]
            lines += [pad + "- " + inner[0][indent + 2 :], *inner[1:]]
    return lines


def deployment(
    name: str,
    replicas: int,
    cpu: float,
    memory_bytes: int,
    *,
    image: str = "gpucost-lab-serve",
    port: int = 8000,
    gpus: int = 0,
    guaranteed: bool = True,
) -> Deployment:
    """The Kubernetes Deployment that carries a sized service: ``replicas`` Pods (:func:`instances_needed`), each one
    container requesting ``cpu`` vCPUs and ``memory_bytes`` (:attr:`MemoryFit.required_bytes`: the measured memory
    with its margin), with a readiness probe on the server's ``GET /health``.

    Limits: memory = request, and CPU = request when ``guaranteed`` (every container's limits equal to its requests
    give the Pod the Guaranteed QoS class, evicted last under node pressure). A CPU limit is enforced as a quota
    per 100 ms period: a container that spends it waits for the next period, which shows in the p99, so measure under
    the limit you deploy. ``gpus`` go in ``limits`` as ``nvidia.com/gpu`` (Kubernetes takes the limit as the request).
    ``image`` names a placeholder image: the course builds none. ``name`` must be a DNS label (at most 63 lowercase
    letters, digits or '-', starting and ending with a letter or digit), since it also names the container.
    """
    text = non_empty_text("name", name)
    if len(text) > 63 or not _DNS_LABEL.fullmatch(text):
        raise InputError(
            "name",
            f"name must be a DNS label (at most 63 of a-z, 0-9 and '-', not starting or ending in '-'), got {name!r}",
        )
    count = integer_at_least("replicas", replicas, 1, MAX_REPLICAS)
    vcpus = positive("cpu", cpu)
    if vcpus < 0.001:
        raise InputError("cpu", f"cpu must be >= 0.001 (1m, the finest CPU quantity Kubernetes takes), got {cpu!r}")
    memory = integer_at_least("memory_bytes", memory_bytes, 1)
    image_text = non_empty_text("image", image)
    if any(ch.isspace() for ch in image_text):
        raise InputError("image", f"image must be an image reference without spaces, got {image!r}")
    container_port = integer_at_least("port", port, 1, 65535)
    gpu_count = integer_at_least("gpus", gpus, 0)
    if not isinstance(guaranteed, bool):
        raise InputError("guaranteed", f"guaranteed must be True or False, got {guaranteed!r}")
    return Deployment(text, count, vcpus, memory, image_text, container_port, gpu_count, guaranteed)


__all__ = [
    "DEFAULT_HEADROOM",
    "DEFAULT_MEMORY_MARGIN",
    "MAX_REPLICAS",
    "VERDICTS",
    "Deployment",
    "InstanceType",
    "InstancesNeeded",
    "LoadPoint",
    "MemoryFit",
    "SustainableRate",
    "cost_per_million_requests_usd",
    "cpu_quantity",
    "deployment",
    "instance_catalog",
    "instance_table",
    "instances_needed",
    "lookup_instance",
    "max_sustainable_qps",
    "memory_fit",
    "memory_quantity",
    "slo_verdict",
]
