import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("MPLBACKEND", "Agg")
# Shared, noisy machines: no per-example deadline and no "too slow" health check (both time the machine, see
# benchmarks/under_load.sh); in CI, a fixed example sequence.
settings.register_profile(
    "course", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=bool(os.environ.get("CI"))
)
settings.load_profile("course")


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


@pytest.fixture
def contract():
    from gpucost_lab.contract import BenchmarkContract

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
