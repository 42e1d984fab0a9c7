"""gpucost_lab.atomic: files written whole or not at all, and the temporary files of dead writers cleared, against
the file system's own view (the folder's listing, the bytes read back, the temporary name's pattern)."""

import os
import re
import subprocess
import sys
import warnings

import pytest

from gpucost_lab import atomic
from gpucost_lab._validate import InputError
from gpucost_lab.atomic import (
    STARTED_AT,
    LeftoverTemporaryFiles,
    atomic_write,
    atomic_write_bytes,
    atomic_write_stream,
    atomic_write_text,
    prepare,
    remove_stale_temporary_files,
    stale_temporary_files,
)


def dead_pid() -> int:
    """The id of a process that has ended (and, just after, no other has taken it)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def leftover(folder, name: str, age_s: float = 60.0):
    """A file ``name`` in ``folder`` last modified ``age_s`` seconds before this process started."""
    path = folder / name
    path.write_bytes(b"half a write")
    os.utime(path, (STARTED_AT - age_s, STARTED_AT - age_s))
    return path


# -- writing -------------------------------------------------------------------------------------------------------
def test_each_writer_leaves_exactly_the_target_with_its_content(tmp_path):
    assert atomic_write_text(tmp_path / "a.txt", "one\ntwo\n") == tmp_path / "a.txt"
    assert (tmp_path / "a.txt").read_bytes() == b"one\ntwo\n"
    atomic_write_text(tmp_path / "b.csv", "x,y\r\n1,2\r\n", newline="")  # a CSV writer's \r\n kept as written
    assert (tmp_path / "b.csv").read_bytes() == b"x,y\r\n1,2\r\n"
    atomic_write(tmp_path / "c.txt", lambda f: f.write("été"))  # UTF-8
    assert (tmp_path / "c.txt").read_bytes() == "été".encode()
    atomic_write_bytes(tmp_path / "d.bin", b"\x00\xff")
    atomic_write_stream(tmp_path / "e.bin", lambda f: [f.write(bytes([i])) for i in range(3)])
    assert (tmp_path / "d.bin").read_bytes() == b"\x00\xff" and (tmp_path / "e.bin").read_bytes() == b"\x00\x01\x02"
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.csv", "c.txt", "d.bin", "e.bin"]


def test_a_write_that_fails_keeps_the_old_file_and_leaves_no_temporary_one(tmp_path):
    target = tmp_path / "registry.json"
    target.write_text("the old content")

    def half_then_fail(f):
        f.write("the new cont")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "the old content" and os.listdir(tmp_path) == ["registry.json"]


def test_a_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["report.md"]


def test_a_prepared_write_is_invisible_until_committed_and_gone_when_discarded(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("before")
    pending = prepare(target, lambda f: f.write(b"after"))
    assert target.read_text() == "before"
    # the temporary name: a dot, the target's name, this process's id, 8 hex digits, ".tmp"
    assert re.fullmatch(rf"\.out\.txt\.{os.getpid()}\.[0-9a-f]{{8}}\.tmp", pending.tmp.name)
    assert pending.tmp.parent == tmp_path and pending.tmp.read_bytes() == b"after"
    assert pending.commit() == target and target.read_text() == "after" and os.listdir(tmp_path) == ["out.txt"]
    discarded = prepare(target, lambda f: f.write(b"never"))
    discarded.discard()
    assert discarded.done and target.read_text() == "after" and os.listdir(tmp_path) == ["out.txt"]


def test_a_bad_target_is_refused_by_its_field_before_anything_is_written(tmp_path):
    with pytest.raises(InputError) as err:
        atomic_write_text(tmp_path / "missing" / "x.txt", "")
    assert err.value.field == "path" and "existing folder" in str(err.value)
    with pytest.raises(InputError) as err:
        atomic_write_bytes(tmp_path, b"", name="export")
    assert err.value.field == "export"
    assert os.listdir(tmp_path) == []


# -- the temporary files of earlier writes ------------------------------------------------------------------------
def test_leftovers_of_dead_writers_are_removable_and_of_live_ones_kept(tmp_path):
    target = tmp_path / "t.json"
    dead = leftover(tmp_path, f".t.json.{dead_pid()}.0123abcd.tmp")
    older_pattern = leftover(tmp_path, ".t.json." + "ab" * 16 + ".tmp")  # no process id in it: nobody to wait for
    no_writer = leftover(tmp_path, ".t.json.0.89abcdef.tmp")  # 0 is no process's id
    mine = leftover(tmp_path, f".t.json.{os.getpid()}.deadbeef.tmp")  # this very process: still running
    leftover(tmp_path, f".t.json.{dead_pid()}.fedcba98.tmp", age_s=-3600)  # written after this process started
    leftover(tmp_path, ".other.json.1.0123abcd.tmp")  # another target's
    leftover(tmp_path, ".t.json.12.xyz.tmp")  # not the pattern
    removable, kept = stale_temporary_files(target)
    assert set(removable) == {dead, older_pattern, no_writer} and kept == [mine]


def test_removing_leftovers_warns_in_one_line_of_those_kept(tmp_path):
    target = tmp_path / "t.json"
    dead = leftover(tmp_path, f".t.json.{dead_pid()}.0123abcd.tmp")
    mine = leftover(tmp_path, f".t.json.{os.getpid()}.deadbeef.tmp")
    with pytest.warns(LeftoverTemporaryFiles) as caught:
        assert remove_stale_temporary_files(target) == [dead]
    (warning,) = caught
    text = str(warning.message)
    assert "\n" not in text and text.startswith(
        f"1 temporary file of an earlier write to {str(target)!r} left in place"
    )
    assert text.endswith(str(mine)) and mine.exists() and not dead.exists()


def test_the_next_write_clears_a_dead_writer_s_leftover(tmp_path):
    dead = leftover(tmp_path, f".t.json.{dead_pid()}.0123abcd.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left to warn about
        atomic_write_text(tmp_path / "t.json", "{}")
    assert not dead.exists() and os.listdir(tmp_path) == ["t.json"]
