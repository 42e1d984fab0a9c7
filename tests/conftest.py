import atexit
import importlib.abc
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("MPLBACKEND", "Agg")
# The measured checkpoints' intervals (gpucost_lab/course/measured_answers.py) go to a file of this test session, not
# to the user's cache: a test's interval must never widen what a chapter accepts outside it, nor the user's it.
_MEASURED = tempfile.mkdtemp(prefix="gpucost-tests-")
os.environ["GPUCOST_LAB_MEASURED_STORE"] = str(Path(_MEASURED) / "measured-checkpoints.json")
atexit.register(shutil.rmtree, _MEASURED, True)
# Shared, noisy machines: no per-example deadline and no "too slow" health check (both time the machine, see
# benchmarks/under_load.sh); in CI, a fixed example sequence.
settings.register_profile(
    "course", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=bool(os.environ.get("CI"))
)
settings.load_profile("course")


def one_torch_thread(torch) -> None:
    """Run ``torch`` on one thread in this process (kernels and CLI subprocesses keep their own defaults).

    On a small machine shared with another busy program, torch's default pool (one thread a core) waits on a thread
    that does not get the core, and small steps slow down by orders of magnitude.
    """
    torch.set_num_threads(1)
    try:  # allowed only before any inter-op parallel work; where that already ran, the intra-op setting suffices
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass


class OneTorchThreadOnImport(importlib.abc.MetaPathFinder):
    """Calls :func:`one_torch_thread` as soon as ``import torch`` has finished, wherever it happens.

    Lazy because a third of the test files never load torch and its import is most of a short run's start-up; at
    import because a test that imports torch in its own body would otherwise run on the default pool.
    """

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # once: the real finders locate torch
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                one_torch_thread(module)

            spec.loader.exec_module = exec_module  # this spec's own loader object, made for this import
        return spec


if "torch" in sys.modules:  # a plugin got there first
    one_torch_thread(sys.modules["torch"])
else:
    sys.meta_path.insert(0, OneTorchThreadOnImport())


def _missing_system_packages() -> list[str]:
    """The system packages of ``make test`` (tools/system_packages.py, NEEDS) this machine lacks, by package name."""
    from labtools import system_packages

    return [
        f"{need.apt} ({need.command}, for {need.why})"
        for need in system_packages().needed("test")
        if not need.present()
    ]


def pytest_sessionstart(session):
    # Under CI a missing system package fails the run by name: the tests that need it would otherwise skip, and a
    # run with the sandbox, the browser or the hub's proxy skipped would still be green.
    if os.environ.get("CI") and (missing := _missing_system_packages()):
        raise pytest.UsageError(f"CI: system packages missing (make test installs them): {'; '.join(missing)}")


def pytest_addoption(parser):
    from labtools import TIERS

    parser.addoption(
        "--tier",
        action="append",
        choices=sorted(TIERS),
        help="run one tier of the suite (given twice, both): "
        + "; ".join(f"{name}, {what}" for name, what in TIERS.items()),
    )
    parser.addoption(
        "--reverse-order",
        action="store_true",
        help="run the collected tests last to first: no test may pass or fail by what ran before it",
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups off the markers
def pytest_collection_modifyitems(config, items):
    # A test's kind markers are its file's pytestmark, one kind set per file (tests/project/test_tiers.py checks).
    from labtools import TIERS, share_group, tier_of

    if tiers := config.getoption("--tier"):
        deselected = [item for item in items if tier_of(item) not in tiers]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if tier_of(item) in tiers]
    if config.getoption("--reverse-order"):
        items.reverse()
    if config.pluginmanager.hasplugin("xdist") and config.getoption("dist", None) == "loadgroup":
        # Tests that share a process's work stay in one process (labtools.share_group); the longest tiers' groups are
        # handed out first, so that no long group starts last while the other worker has nothing left to do.
        order = list(reversed(TIERS))
        items.sort(key=lambda item: order.index(tier_of(item)))
        for item in items:
            item.add_marker(pytest.mark.xdist_group(share_group(item)))


class FakeAsyncDevice:
    """A deterministic stand-in for an asynchronous accelerator, on a fake clock.

    ``launch()`` queues ``work_s`` seconds of device work and returns after ``launch_s`` seconds of
    host time, like a CUDA kernel launch; ``synchronize()`` waits until the queue is drained.
    """

    def __init__(self, work_s: float, launch_s: float = 1e-6):
        self.work_s, self.launch_s = work_s, launch_s
        self.now_s = 0.0  # host clock
        self.device_free_at_s = 0.0
        self.log: list[str] = []

    def clock(self) -> float:
        self.log.append("clock")
        return self.now_s

    def launch(self) -> None:
        self.log.append("step")
        start = max(self.now_s, self.device_free_at_s)
        self.device_free_at_s = start + self.work_s
        self.now_s += self.launch_s

    def synchronize(self) -> None:
        self.log.append("sync")
        self.now_s = max(self.now_s, self.device_free_at_s)


@pytest.fixture
def fake_device():
    return FakeAsyncDevice


@pytest.fixture(scope="session")
def chapter_run(tmp_path_factory):
    """``chapter_run(path_or_name, kind)``: the chapter run as ``kind`` says, made once a session (chapter_runs.py)."""
    from chapter_runs import ChapterRuns

    return ChapterRuns(tmp_path_factory)


@pytest.fixture
def contract():
    from gpucost_lab.measure.contract import BenchmarkContract

    def make(**kw):
        args = dict(
            inputs=[(256, 1024)],
            dtype="float32",
            device="cpu",
            warmup_steps=2,
            measured_steps=10,
            repeats=3,
            model_name="Linear(1024, 1024)",
            parameter_count=1024 * 1024 + 1024,
        )
        args.update(kw)
        return BenchmarkContract.capture(**args)

    return make
