"""Tests of gpucost_lab.grading.exchange: ``nbgrader collect`` with the course's nbgrader_config.py, against nbgrader's
own collect as the control. Files of a learner's inbound submission replaced by links to the course's files after
``nbgrader submit`` (collected with the instructor's rights, they would be autograded beside her notebook and
released back to her with her feedback) leave her submission uncollected.
"""

import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from .helpers import ROOT, VENV_BIN

pytestmark = pytest.mark.grading

STAND_IN = "stand-in gradebook: every learner's id and score"


def _nbgrader(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(VENV_BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_collect_leaves_out_a_submission_whose_files_became_links_to_the_course(tmp_path):
    """release, submit (alice, mallory, trudy), then mallory's and trudy's inbound files replaced by a symbolic and a
    hard link to a course file, then collect with the course's nbgrader_config.py (the plugin it sets) and, as the
    control, with nbgrader's own collect, which copies the course file."""
    exchange, course = tmp_path / "exchange", tmp_path / "course"
    exchange.mkdir()
    exchange.chmod(0o1777)  # everyone writes into it, as nbgrader's exchange requires
    (course / "labs" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_bytes((ROOT / "nbgrader_config.py").read_bytes())  # its root: course/
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), course / "labs/ps1/ps1.ipynb")
    (course / "private").mkdir()
    secret = course / "private" / "gradebook.db"
    secret.write_text(STAND_IN, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),  # no nbgrader settings but the course's
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
    }
    root = f"--Exchange.root={exchange}"
    _nbgrader(course, env, "release_assignment", "ps1", root)
    for learner in ("alice", "mallory", "trudy"):
        home = tmp_path / learner
        (home / "ps1").mkdir(parents=True)
        (home / "ps1" / "ps1.ipynb").write_bytes((course / "labs/ps1/ps1.ipynb").read_bytes())
        (home / "ps1" / "notes.txt").write_text(f"{learner}'s notes", encoding="utf-8")
        _nbgrader(
            home,
            env,
            *("submit", "ps1", "--course=gpucost-lab", root, f"--CourseDirectory.student_id={learner}"),
            f"--Exchange.cache={home / 'cache'}",
        )
    inbound = {p.name.split("+")[0]: p for p in (exchange / "gpucost-lab" / "inbound").iterdir()}
    assert sorted(inbound) == ["alice", "mallory", "trudy"]
    (inbound["mallory"] / "notes.txt").unlink()
    (inbound["mallory"] / "notes.txt").symlink_to(secret)
    (inbound["trudy"] / "notes.txt").unlink()
    os.link(secret, inbound["trudy"] / "notes.txt")

    # the control: nbgrader's own collect copies the course's file through both links
    _nbgrader(
        course,
        env,
        *("collect", "ps1", root, "--CourseDirectory.submitted_directory=control"),
        "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect",
    )
    for learner in ("mallory", "trudy"):
        assert (course / "control" / learner / "ps1" / "notes.txt").read_text(encoding="utf-8") == STAND_IN

    proc = _nbgrader(course, env, "collect", "ps1", root)
    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["alice"]
    assert (submitted / "alice" / "ps1" / "notes.txt").read_text(encoding="utf-8") == "alice's notes"
    assert sorted(p.name for p in (submitted / "alice" / "ps1").iterdir()) == sorted(
        p.name for p in inbound["alice"].iterdir()
    )
    assert not any(STAND_IN in p.read_text(encoding="utf-8") for p in submitted.rglob("*") if p.is_file())
    errors = [line for line in proc.stderr.splitlines() if "Not collecting" in line]
    assert len(errors) == 2, proc.stderr
    mallory, trudy = sorted(errors, key=lambda line: "trudy" in line)
    assert "the submission of mallory" in mallory and f"notes.txt is a symbolic link to '{secret}'" in mallory
    assert "the submission of trudy" in trudy and "notes.txt is a hard link" in trudy
