"""gpucost_lab.serve.sizing: the sustainable rate, instances for a target rate, memory against the box, the instance
catalog, the price of a million requests and the Kubernetes Deployment, against hand computations, scipy's t table,
PyYAML's reading of the YAML text and the fields the Kubernetes documentation names.

Hand computations:
- 100 requests/s needed, 30 per instance, 30% headroom: ceil(100 / (30 x 0.7)) = ceil(4.762) = 5 instances, each at
  100 / (5 x 30) = 67% of its limit. 70 at 10 with 30%: 70 / 7 = 10 exactly (not 11). No headroom: ceil(100/30) = 4.
- r7i.large has 16 GiB = 17,179,869,184 bytes; 20% of it is 3,435,973,836.8, so an instance of 3,435,973,837 bytes is
  "memory is 20% of the box"; with the 25% margin it needs 4,294,967,297 bytes, one byte past c7i.large's 4 GiB, so a
  3.2 GiB (3,435,973,836 bytes) instance is the one that fits it exactly: 4,294,967,295 bytes.
- 5 instances at $0.10/h serving 100 requests/s: 5 x 0.10 / 3600 / 100 x 10^6 = $1.3889 per million requests.
- 300,000,000 bytes / 2^20 = 286.1 MiB, so the memory request is "287Mi"; 1.5 vCPUs are "1500m".
"""

from __future__ import annotations

import json
import math
from importlib.resources import files

import pytest
from scipy import stats

from gpucost_lab._validate import InputError
from gpucost_lab.roofline.bound import catalog as accelerator_catalog
from gpucost_lab.serve import sizing as z
from gpucost_lab.stats import Estimate

GIB = 2**30

# -- the SLO verdict and the highest sustainable rate -----------------------------------------------------------------


@pytest.mark.parametrize(
    "low,high,verdict",
    [
        (30, 45, "meets"),
        (55, 70, "misses"),
        (45, 55, "inconclusive"),
        (40, 50, "inconclusive"),  # touching the SLO is not below it
        (50, 60, "inconclusive"),
        (30, math.inf, "inconclusive"),  # a tail too sparsely seen to bound
        (60, math.inf, "misses"),
    ],
)
def test_slo_verdict_is_where_the_whole_interval_lies(low, high, verdict):
    assert z.slo_verdict(low, high, 50) == verdict


POINTS = [(10, 20, 18, 22), (20, 40, 35, 48), (30, 60, 45, 70), (40, 90, 70, 130)]


def test_max_sustainable_qps_by_hand():
    rate = z.max_sustainable_qps(POINTS, slo_ms=50)
    assert rate.qps == 20  # 10 and 20 meet (48 < 50), 30 holds 50, 40 misses
    assert rate.next_qps == 30
    assert rate.table()["verdict"].tolist() == ["meets", "meets", "inconclusive", "misses"]
    assert list(rate.table().columns) == ["qps", "value_ms", "ci95_low_ms", "ci95_high_ms", "slo_ms", "verdict"]
    assert "20 requests/s" in rate.reason and "p99" in rate.reason


def test_points_come_in_any_order_and_form():
    shuffled = [POINTS[2], z.LoadPoint(*POINTS[0]), {"qps_offered": 20, "value": 40, "ci95_low": 35, "ci95_high": 48}]
    assert z.max_sustainable_qps(shuffled, 50).qps == 20


def test_a_miss_below_a_meet_stops_the_climb():
    points = [(10, 20, 18, 22), (20, 70, 60, 80), (30, 30, 25, 40)]
    assert z.max_sustainable_qps(points, 50).qps == 10


def test_an_inconclusive_rate_does_not_stop_a_higher_meet():
    points = [(10, 45, 30, 60), (20, 30, 25, 40)]
    assert z.max_sustainable_qps(points, 50).qps == 20


def test_no_rate_meets():
    rate = z.max_sustainable_qps([(10, 60, 55, 70)], 50)
    assert rate.qps is None and rate.next_qps == 10
    assert "no measured rate" in rate.reason


@pytest.mark.parametrize(
    "points,slo,field",
    [
        ([(10, 20, 18, 22)], 0, "slo_ms"),
        ("10,20,18,22", 50, "points"),
        ([], 50, "points"),
        ([(10, 20, 18, 22), (10, 30, 25, 35)], 50, "points"),
        ([(10, 20, 18, 22), (20, 30, 31, 35)], 50, "points[1].value_ms"),
        ([(0, 20, 18, 22)], 50, "points[0].qps"),
        ([(10, 20, 18)], 50, "points[0]"),
        ([{"qps": 10, "value": 20, "ci95_low": 18}], 50, "points[0]"),
        ([(10, 20, -1, 22)], 50, "points[0].ci95_low_ms"),
    ],
)
def test_bad_points_name_their_field(points, slo, field):
    with pytest.raises(InputError) as err:
        z.max_sustainable_qps(points, slo)
    assert err.value.field == field


def test_percentile_range():
    with pytest.raises(InputError) as err:
        z.max_sustainable_qps(POINTS, 50, percentile=100)
    assert err.value.field == "percentile"


# -- instances for a target rate --------------------------------------------------------------------------------------


def test_instances_needed_by_hand():
    needed = z.instances_needed(100, 30, headroom=0.3)
    assert needed.instances == 5
    assert needed.usable_qps_per_instance == pytest.approx(21.0)
    assert needed.utilisation == pytest.approx(100 / 150)
    assert "30% headroom" in needed.reason and "5 instances" in needed.reason
    assert z.instances_needed(100, 30).instances == 5  # the default headroom is 30%
    assert z.instances_needed(70, 10, 0.3).instances == 10  # 70 / 7 = 10, not rounded past it
    assert z.instances_needed(100, 30, 0).instances == 4
    assert z.instances_needed(1, 1000).instances == 1


@pytest.mark.parametrize(
    "args,field",
    [((0, 30, 0.3), "target_qps"), ((100, -1, 0.3), "per_instance_qps"), ((100, 30, 1.0), "headroom")],
)
def test_instances_needed_bad_input(args, field):
    with pytest.raises(InputError) as err:
        z.instances_needed(*args)
    assert err.value.field == field


# -- the catalog ------------------------------------------------------------------------------------------------------

FIELDS = {
    "name",
    "provider",
    "kind",
    "vcpus",
    "memory_bytes",
    "gpus",
    "gpu",
    "price_per_hour_usd",
    "source",
    "assumption",
    "field_sources",
    "notes",
}


@pytest.fixture(scope="module")
def raw_catalog() -> dict:
    return json.loads((files("gpucost_lab") / "data" / "instance_prices.json").read_text(encoding="utf-8"))


def test_catalog_form(raw_catalog):
    assert set(raw_catalog) == {"description", "units", "instances"}
    assert "stated assumption" in raw_catalog["description"]
    names = [entry["name"] for entry in raw_catalog["instances"]]
    assert len(names) == len(set(names)) >= 6
    kinds = {entry["kind"] for entry in raw_catalog["instances"]}
    assert kinds == {"cpu", "gpu"}
    for entry in raw_catalog["instances"]:
        assert set(entry) == FIELDS, entry["name"]
        assert "Pricing page" in entry["source"] and "(" in entry["source"], entry["name"]  # a page, named
        assert entry["assumption"].startswith("stated assumption"), entry["name"]
        assert isinstance(entry["vcpus"], int) and entry["vcpus"] >= 1
        assert entry["memory_bytes"] % GIB == 0, f"{entry['name']}: the provider lists whole GiB"
        assert 0 < entry["price_per_hour_usd"] < 100
        assert (entry["kind"] == "gpu") == (entry["gpus"] >= 1) == (entry["gpu"] is not None)
        assert set(entry["field_sources"]) <= {"vcpus", "memory_bytes", "gpus", "gpu"}


def test_catalog_relations(raw_catalog):
    by_name = {entry["name"]: entry for entry in raw_catalog["instances"]}
    # the accelerators are the hardware catalog's, whose peaks and memory chapter 04 uses
    for entry in by_name.values():
        if entry["gpu"] is not None:
            assert entry["gpu"] in accelerator_catalog()
    # memory per vCPU is each family's: C 2 GiB, M 4 GiB, R 8 GiB
    for entry in by_name.values():
        per_vcpu = {"c7i": 2, "m7i": 4, "r7i": 8}.get(entry["name"].split(".")[0])
        if per_vcpu:
            assert entry["memory_bytes"] == entry["vcpus"] * per_vcpu * GIB, entry["name"]
    # within a CPU family the on-demand price scales with the size
    assert by_name["m7i.xlarge"]["price_per_hour_usd"] == pytest.approx(2 * by_name["m7i.large"]["price_per_hour_usd"])
    assert by_name["m7i.2xlarge"]["price_per_hour_usd"] == pytest.approx(4 * by_name["m7i.large"]["price_per_hour_usd"])
    assert by_name["c7i.xlarge"]["price_per_hour_usd"] == pytest.approx(2 * by_name["c7i.large"]["price_per_hour_usd"])


def test_catalog_as_read_by_the_package(raw_catalog):
    catalog = z.instance_catalog()
    assert list(catalog) == [entry["name"] for entry in raw_catalog["instances"]]
    assert z.lookup_instance("R7I.LARGE").memory_bytes == 16 * GIB
    assert z.lookup_instance("g5.xlarge").source_of("gpu").startswith("Amazon EC2 G5")
    g5 = next(entry for entry in raw_catalog["instances"] if entry["name"] == "g5.xlarge")
    assert z.lookup_instance("g5.xlarge").source_of("price_per_hour_usd") == g5["source"]
    assert len(z.instance_table()) == len(catalog)
    with pytest.raises(InputError) as err:
        z.lookup_instance("t2.micro")
    assert err.value.field == "box"


# -- memory against the box -------------------------------------------------------------------------------------------


def test_memory_is_20_percent_of_the_box():
    fit = z.memory_fit(3_435_973_837, "r7i.large")
    assert fit.share == pytest.approx(0.2, rel=1e-9)
    assert fit.share_text.startswith("memory is 20% of the box")
    assert fit.required_bytes == 4_294_967_297  # one byte past c7i.large's 4 GiB
    assert fit.smallest.name == "m7i.large"  # 8 GiB, 2 vCPUs: ties c7i.xlarge's 8 GiB at a lower price


def test_the_smallest_box_that_holds_it_with_the_margin():
    fit = z.memory_fit([1_000_000, 3_435_973_836], "r7i.large")  # the largest instance counts
    assert fit.rss_bytes == 3_435_973_836
    assert fit.required_bytes == 4_294_967_295
    assert fit.smallest.name == "c7i.large"
    assert "c7i.large" in fit.reason and "67%" in fit.reason  # 0.08925 / 0.1323
    assert z.memory_fit(3 * GIB, "r7i.large", margin=0.5).smallest.name == "m7i.large"  # 4.5 GiB


def test_the_smaller_box_keeps_the_vcpus_and_the_accelerator():
    assert z.memory_fit(3 * GIB, "m7i.2xlarge").smallest.name == "m7i.2xlarge"  # 8 vCPUs: nothing smaller has them
    assert "no smaller box" in z.memory_fit(3 * GIB, "m7i.2xlarge").reason
    assert z.memory_fit(3 * GIB, "m7i.2xlarge", min_vcpus=4).smallest.name == "c7i.xlarge"
    assert z.memory_fit(3 * GIB, "g5.2xlarge", min_vcpus=4).smallest.name == "g5.xlarge"  # an A10G, not an L4
    assert z.memory_fit(3 * GIB, "g6.2xlarge", min_vcpus=4).smallest.name == "g6.xlarge"


def test_more_than_the_box_or_than_any_box():
    over = z.memory_fit(6 * GIB, "c7i.large")
    assert over.share == pytest.approx(1.5)
    assert over.smallest.name == "m7i.large" and "more than the box holds" in over.reason
    assert z.memory_fit(100 * GIB, "m7i.large").smallest is None


@pytest.mark.parametrize(
    "args,field",
    [
        ((0, "m7i.large"), "rss_bytes[0]"),
        (([], "m7i.large"), "rss_bytes"),
        (("1GB", "m7i.large"), "rss_bytes"),
        ((GIB, "x9.huge"), "box"),
        ((GIB, "m7i.large", -0.1), "margin"),
        ((GIB, "m7i.large", 0.25, 0), "min_vcpus"),
    ],
)
def test_memory_fit_bad_input(args, field):
    with pytest.raises(InputError) as err:
        z.memory_fit(*args)
    assert err.value.field == field


# -- the price of a million requests ----------------------------------------------------------------------------------


def test_cost_per_million_requests_by_hand():
    value, low, high = z.cost_per_million_requests_usd(0.10, 100, 5)
    assert value == pytest.approx(5 * 0.10 / 3600 / 100 * 1e6) and value == pytest.approx(1.3889, abs=1e-4)
    assert low == high == value  # an exact rate gives an exact cost
    assert z.cost_per_million_requests_usd(0.10, 20).value == pytest.approx(0.10 / 3600 / 20 * 1e6)


def test_cost_interval_from_a_measured_rate():
    rates = [95.0, 100.0, 105.0]
    logs = [math.log(r) for r in rates]
    mean = sum(logs) / 3
    se = math.sqrt(sum((v - mean) ** 2 for v in logs) / 2) / math.sqrt(3)
    t = stats.t.ppf(0.975, 2)  # 4.303
    k = 5 * 0.10 / 3600 * 1e6
    value, low, high = z.cost_per_million_requests_usd(0.10, Estimate.of(rates), 5)
    assert value == pytest.approx(k / math.exp(mean))
    assert low == pytest.approx(k / math.exp(mean + t * se))  # the fastest rate gives the cheapest end
    assert high == pytest.approx(k / math.exp(mean - t * se))


@pytest.mark.parametrize(
    "args,field",
    [((0, 100, 1), "price_per_hour_usd"), ((0.1, 0, 1), "qps_sustained"), ((0.1, 100, 0), "instances")],
)
def test_cost_bad_input(args, field):
    with pytest.raises(InputError) as err:
        z.cost_per_million_requests_usd(*args)
    assert err.value.field == field


# -- the Kubernetes Deployment ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cpu,text", [(2, "2"), (0.25, "250m"), (1.5, "1500m"), (1.0005, "1001m"), (0.001, "1m")])
def test_cpu_quantity(cpu, text):
    assert z.cpu_quantity(cpu) == text


@pytest.mark.parametrize("memory_bytes,text", [(256 * 2**20, "256Mi"), (1, "1Mi"), (300_000_000, "287Mi")])
def test_memory_quantity(memory_bytes, text):
    assert z.memory_quantity(memory_bytes) == text


def test_deployment_has_the_apps_v1_fields():
    # kubernetes.io, "Deployments", Writing a Deployment Spec: apiVersion, kind, metadata; .spec.template and
    # .spec.selector required, the selector must match .spec.template.metadata.labels; .spec.replicas
    manifest = z.deployment("toy-serve", 5, 1.5, 300_000_000).manifest
    assert manifest["apiVersion"] == "apps/v1" and manifest["kind"] == "Deployment"
    assert manifest["metadata"]["name"] == "toy-serve"
    spec = manifest["spec"]
    assert spec["replicas"] == 5
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"] == {"app": "toy-serve"}
    (container,) = spec["template"]["spec"]["containers"]
    assert container["name"] == "toy-serve"
    # "Resource Management for Pods and Containers": spec.containers[].resources.{requests,limits}.{cpu,memory}
    assert container["resources"] == {
        "requests": {"cpu": "1500m", "memory": "287Mi"},
        "limits": {"cpu": "1500m", "memory": "287Mi"},  # equal to the requests: QoS class Guaranteed
    }
    assert container["ports"] == [{"containerPort": 8000}]
    assert container["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8000}}


def test_deployment_gpus_go_in_limits_and_cpu_limit_is_optional():
    # "Schedule GPUs": GPUs are only supposed to be specified in the limits section
    resources = z.deployment("gpu-serve", 2, 4, 8 * GIB, gpus=1, guaranteed=False).resources
    assert resources == {
        "requests": {"cpu": "4", "memory": "8192Mi"},
        "limits": {"memory": "8192Mi", "nvidia.com/gpu": 1},
    }


def test_deployment_yaml_reads_back_as_the_manifest():
    yaml = pytest.importorskip("yaml")
    for made in (z.deployment("toy-serve", 5, 1.5, 300_000_000), z.deployment("g", 1, 2, GIB, gpus=2, port=9000)):
        assert yaml.safe_load(made.yaml) == made.manifest


def test_deployment_yaml_text_by_hand():
    lines = z.deployment("a", 3, 0.5, 64 * 2**20).yaml.splitlines()
    assert lines[:9] == [
        'apiVersion: "apps/v1"',
        'kind: "Deployment"',
        "metadata:",
        '  name: "a"',
        "  labels:",
        '    app: "a"',
        "spec:",
        "  replicas: 3",
        "  selector:",
    ]
    assert '        - name: "a"' in lines
    assert '              cpu: "500m"' in lines and '              memory: "64Mi"' in lines


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"name": "Toy_Serve"}, "name"),
        ({"name": "-toy"}, "name"),
        ({"name": "a" * 64}, "name"),
        ({"name": ""}, "name"),
        ({"replicas": 0}, "replicas"),
        ({"replicas": z.MAX_REPLICAS + 1}, "replicas"),
        ({"cpu": 0.0001}, "cpu"),
        ({"cpu": 0}, "cpu"),
        ({"memory_bytes": 0}, "memory_bytes"),
        ({"memory_bytes": 1.5}, "memory_bytes"),
        ({"image": "my image"}, "image"),
        ({"port": 70000}, "port"),
        ({"gpus": -1}, "gpus"),
        ({"guaranteed": "yes"}, "guaranteed"),
    ],
)
def test_deployment_bad_input(kwargs, field):
    args = {"name": "toy", "replicas": 2, "cpu": 1, "memory_bytes": GIB, **kwargs}
    with pytest.raises(InputError) as err:
        z.deployment(**args)
    assert err.value.field == field
