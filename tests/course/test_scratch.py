"""gpucost_lab.course.scratch: a chapter's scratch folder is there while its process runs and gone once it exits.

Each process runs with TMPDIR set to a folder of the test's own, so whatever it leaves behind is there to see (and no
other program's temporary files are in the way). Exits: a script's end, ``sys.exit``, and a forked child that exits
first (the folder must survive it). A real IPython kernel restarted and then shut down is test_scratch_kernel.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.course.scratch import scratch_folder

from .helpers import _left


def _python(code: str, tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TMPDIR=str(tmp))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=60
    )


MAKE_AND_FILL = """
    import json, os, sys
    from gpucost_lab.course.scratch import scratch_folder

    folder = scratch_folder("02")
    (folder / "trace.json").write_text("{}")
    (folder / "inner").mkdir()
    (folder / "inner" / "checkpoint.pt").write_bytes(b"x" * 10)
    print(json.dumps({"folder": str(folder), "is_dir": folder.is_dir(), "files": len(list(folder.rglob("*")))}))
"""


def test_the_folder_is_made_in_the_temporary_folder_and_gone_when_the_process_ends(tmp_path):
    done = _python(MAKE_AND_FILL, tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    folder = Path(seen["folder"])
    assert folder.parent == tmp_path and folder.name.startswith("gpucost-ch02-")
    assert seen["is_dir"] and seen["files"] == 3  # trace.json, inner/, inner/checkpoint.pt
    assert _left(tmp_path) == [], "the folder and what it held are removed at exit"


def test_sys_exit_removes_it_too(tmp_path):
    done = _python(textwrap.dedent(MAKE_AND_FILL) + "scratch_folder('05')\nsys.exit(3)\n", tmp_path)
    assert done.returncode == 3, done.stderr
    assert _left(tmp_path) == []


def test_a_forked_child_that_exits_leaves_its_parent_s_folder(tmp_path):
    code = """
        import os, sys
        from gpucost_lab.course.scratch import scratch_folder

        folder = scratch_folder("07")
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # runs the exit handlers the child inherited
        os.waitpid(pid, 0)
        print(folder.is_dir())
    """
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", "a child's exit must not remove the folder its parent still uses"
    assert _left(tmp_path) == []


def test_every_call_makes_a_new_folder(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    first, second = scratch_folder("04"), scratch_folder("04")
    assert first != second and first.is_dir() and second.is_dir()
    assert {first.name[:13], second.name[:13]} == {"gpucost-ch04-"}
    named = scratch_folder("plan")
    assert named.name.startswith("gpucost-plan-")


@pytest.mark.parametrize("chapter", ["2", "002", "ch.02", "../02", "Plan", "", "a" * 33, 2, None])
def test_a_bad_chapter_is_refused_naming_it(chapter):
    with pytest.raises(InputError, match=r"^chapter must be a chapter's two digits \('02'\)") as err:
        scratch_folder(chapter)
    assert err.value.field == "chapter" and repr(chapter) in str(err.value)
