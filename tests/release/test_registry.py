"""gpucost_lab.release.registry: the release registry (chapter 06), its promotions, fallbacks and rollbacks, written
atomically and refused whole when corrupt.
"""

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from gpucost_lab import atomic
from gpucost_lab.release import Registry, gate
from gpucost_lab.release import registry as registry_module

from .helpers import BASE_COSTS, GB, GOOD_COSTS, decide, result

T0 = datetime(2025, 1, 6, 2, 0, tzinfo=timezone.utc)


@pytest.fixture
def decisions(contract):
    return {
        "v1": decide(contract, result(contract, "v1", GOOD_COSTS)),  # promote v1 over fp32-baseline
        "v2": gate(
            result(contract, "v1", BASE_COSTS),
            result(contract, "v2", GOOD_COSTS),
            budget_bytes=21 * GB,
            window_hours=8.0,
        ),
        "v3-unsafe": gate(
            result(contract, "v2", BASE_COSTS),
            result(contract, "v3", GOOD_COSTS, hours=9.0),
            budget_bytes=21 * GB,
            window_hours=8.0,
            fallback="v2",
        ),
    }


def test_an_empty_registry_has_nothing_in_production(tmp_path):
    reg = Registry(tmp_path / "releases.json")
    assert (reg.current(), reg.last_known_good(), reg.history()) == (None, None, [])
    assert not (tmp_path / "releases.json").exists()  # reading never writes


def test_record_promotions_and_a_fallback(tmp_path, decisions):
    ticks = iter(range(10))
    reg = Registry(tmp_path / "releases.json", clock=lambda: T0 + timedelta(hours=next(ticks)))
    reg.record(decisions["v1"])
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    reg.record(decisions["v2"])
    assert (reg.current(), reg.last_known_good()) == ("v2", "v2")
    reg.record(decisions["v3-unsafe"], at=datetime(2025, 1, 9, tzinfo=timezone.utc))
    assert (reg.current(), reg.last_known_good()) == ("v2", "v2")  # the unsafe candidate never enters
    history = reg.history()
    assert [e["recorded_at"] for e in history] == [
        "2025-01-06T02:00:00+00:00",
        "2025-01-06T03:00:00+00:00",
        "2025-01-09T00:00:00+00:00",
    ]
    assert [(e["decision"]["action"], e["decision"]["candidate"]) for e in history] == [
        ("promote", "v1"),
        ("promote", "v2"),
        ("fallback", "v3"),
    ]
    assert reg.decisions() == list(decisions.values())


def test_a_second_registry_on_the_same_file_sees_the_decisions(tmp_path, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    other = Registry(str(path))
    assert (other.current(), other.last_known_good()) == ("v1", "v1")
    assert other.history()[0]["decision"] == decisions["v1"].to_dict()
    on_disk = json.loads(path.read_text())
    assert (on_disk["current"], on_disk["last_known_good"]) == ("v1", "v1")  # readable by a person too


def test_the_last_known_good_is_the_fallback_for_the_next_gate(tmp_path, contract, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    # the next candidate is measured against a reference configuration, not against v1
    d = gate(
        result(contract, "fp32-reference", BASE_COSTS),
        result(contract, "v2", GOOD_COSTS, parity=False),
        budget_bytes=21 * GB,
        window_hours=8.0,
        fallback=reg.last_known_good(),
    )
    assert (d.action, d.to) == ("fallback", "v1")
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")


def test_a_fallback_to_a_named_baseline_moves_production_and_rollback_returns(tmp_path, contract, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    d = gate(
        result(contract, "fp32-reference", BASE_COSTS),
        result(contract, "v2", GOOD_COSTS, peak=30 * GB),
        budget_bytes=21 * GB,
        window_hours=8.0,
    )  # no fallback given: production degrades to the baseline
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("fp32-reference", "v1")
    assert reg.rollback(at=T0) == "v1"
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    assert reg.history()[-1] == {
        "event": "rollback",
        "recorded_at": T0.isoformat(),
        "from": "fp32-reference",
        "to": "v1",
    }


def test_rollback_of_a_bad_promotion_returns_to_the_release_before_it(tmp_path, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    reg.record(decisions["v2"], at=T0)
    assert reg.rollback(at=T0) == "v1"  # v2 misbehaved in production: it is no longer known good
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    assert reg.rollback(at=T0) == "fp32-baseline"  # the baseline v1 was measured against
    assert (reg.current(), reg.last_known_good()) == ("fp32-baseline", "fp32-baseline")
    with pytest.raises(ValueError, match="rollback needs a known-good release"):
        reg.rollback(at=T0)
    assert len(Registry(reg.path).history()) == 4  # the refused rollback wrote nothing


def test_rollback_of_an_empty_registry_is_refused(tmp_path):
    with pytest.raises(ValueError, match="rollback needs a known-good release"):
        Registry(tmp_path / "r.json").rollback(at=T0)


def test_timestamps_must_be_timezone_aware(tmp_path, decisions):
    with pytest.raises(ValueError, match="at must be a timezone-aware datetime"):
        Registry(tmp_path / "r.json").record(decisions["v1"], at=datetime(2025, 1, 6))
    assert not (tmp_path / "r.json").exists()


def test_an_interrupted_write_keeps_the_old_registry_and_leaves_no_temporary_file(tmp_path, monkeypatch, decisions):
    path = tmp_path / "releases.json"
    reg = Registry(path)
    reg.record(decisions["v1"], at=T0)
    before = path.read_bytes()
    real_dumps = json.dumps

    def crash_halfway(obj, f, **kw):
        text = real_dumps(obj, **kw)
        f.write(text[: len(text) // 2])  # half the new registry reaches the temporary file...
        raise KeyboardInterrupt("power cut")  # ...then the process dies

    monkeypatch.setattr(registry_module.json, "dump", crash_halfway)
    with pytest.raises(KeyboardInterrupt):
        reg.record(decisions["v2"], at=T0)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["releases.json"]
    assert (Registry(path).current(), len(Registry(path).history())) == ("v1", 1)


def test_a_failed_rename_keeps_the_old_registry(tmp_path, monkeypatch, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    before = path.read_bytes()

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        Registry(path).record(decisions["v2"], at=T0)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["releases.json"]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"format": "gpucost-lab release registry", "vers',
        b"\xff\xfe\x00",
        b"[]",
        b'{"format": "gpucost-lab release registry", "version": 99}',
    ],
)
def test_a_corrupt_registry_is_an_error_naming_the_file_and_is_never_reset(tmp_path, decisions, content):
    path = tmp_path / "releases.json"
    path.write_bytes(content)
    reg = Registry(path)
    for call in (reg.current, reg.last_known_good, reg.history, lambda: reg.record(decisions["v1"], at=T0)):
        with pytest.raises(ValueError, match="releases.json"):
            call()
    assert path.read_bytes() == content


def test_a_registry_whose_summary_disagrees_with_its_history_is_an_error(tmp_path, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    data = json.loads(path.read_text())
    data["current"] = "v9"  # edited by hand
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="edited by hand or is corrupt"):
        Registry(path).current()


def test_an_unreadable_registry_is_an_error_naming_the_file(tmp_path):
    folder = tmp_path / "releases.json"
    folder.mkdir()  # a folder where the file should be
    with pytest.raises(ValueError, match="releases.json.*cannot be read"):
        Registry(folder).current()
