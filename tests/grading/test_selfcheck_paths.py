"""Which notebook ``gpucost-lab self-check NOTEBOOK`` checks: the three ways a learner names their lab, and a name
found nowhere.

A course folder laid out as the repository is (``labs/LAB/LAB.ipynb``, the release `make labs` writes) and a hub
learner's home (``LAB/LAB.ipynb``, where nbgrader fetches it). From the course root, the lab's bare name is the copy
in ``labs/LAB/``; from the lab's own folder, the file there; a full path, that file; the output says which file was
checked. A name found nowhere is one line on stderr naming the path and the places looked in, exit status 2. These
tests leave the notebook's execution out (the points do not matter here); tests/grading/test_selfcheck_paths_run.py
runs the fixture lab for real.
"""

import json
import shutil
from pathlib import Path

import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.grading import selfcheck
from gpucost_lab.grading.selfcheck import find_lab_notebook

from .helpers import ROOT, cli

LAB = "profile_training_loop"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"
NAME = f"{LAB}.ipynb"


@pytest.fixture
def course(tmp_path):
    """A course folder with the released lab in labs/LAB/ (and an unrelated file at the root)."""
    root = tmp_path / "course"
    (root / "labs" / LAB).mkdir(parents=True)
    shutil.copy(RELEASE, root / "labs" / LAB / NAME)
    (root / "README.md").write_text("the course\n")
    return root


@pytest.fixture
def not_run(monkeypatch):
    """The lab is not executed: the command's choice of file is what these tests read."""
    monkeypatch.setattr(selfcheck, "_execute", lambda *args: None)


def test_a_bare_name_from_the_course_root_is_the_lab_s_copy_under_labs(course, monkeypatch):
    monkeypatch.chdir(course)
    assert find_lab_notebook(NAME) == Path("labs", LAB, NAME)


def test_a_bare_name_from_the_lab_s_folder_is_the_file_there(course, monkeypatch):
    monkeypatch.chdir(course / "labs" / LAB)
    assert find_lab_notebook(NAME) == Path(NAME)


def test_a_full_path_is_that_file_from_anywhere(course, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    full = course / "labs" / LAB / NAME
    assert find_lab_notebook(str(full)) == full


def test_a_bare_name_on_a_hub_is_the_fetched_assignment(tmp_path, monkeypatch):
    (tmp_path / LAB).mkdir()
    shutil.copy(RELEASE, tmp_path / LAB / NAME)
    monkeypatch.chdir(tmp_path)
    assert find_lab_notebook(NAME) == Path(LAB, NAME)


def test_a_file_in_the_current_folder_wins_over_the_release(course, monkeypatch):
    shutil.copy(RELEASE, course / NAME)  # the learner's own copy at the root
    monkeypatch.chdir(course)
    assert find_lab_notebook(NAME) == Path(NAME)


@pytest.mark.parametrize("name", [NAME, "optimization_plan.ipynb"])
def test_a_name_found_nowhere_names_the_path_and_where_it_looked(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as err:
        find_lab_notebook(name)
    stem = name.removesuffix(".ipynb")
    assert err.value.field == "notebook"
    assert f"notebook {name!r}: no such file in {tmp_path}, nor in its labs/{stem}/ or {stem}/" in str(err.value)


def test_the_command_from_the_course_root_says_which_file_it_checked(course, monkeypatch, capsys, not_run):
    monkeypatch.chdir(course)
    code, out = cli(capsys, "self-check", NAME, "--self-study")
    checked = f"labs/{LAB}/{NAME}"
    first, second = out.out.splitlines()[:2]
    assert first == f"{NAME} is not in this folder: checking {checked}"
    assert second.startswith(f"Self-check of {checked} ")
    code, out = cli(capsys, "self-check", NAME, "--self-study", "--json")
    assert json.loads(out.out)["notebook"] == checked


@pytest.mark.parametrize("where", ["lab folder", "full path"])
def test_the_command_from_the_lab_s_folder_or_with_a_full_path_checks_that_file(
    course, tmp_path, monkeypatch, capsys, not_run, where
):
    lab_folder = course / "labs" / LAB
    monkeypatch.chdir(lab_folder if where == "lab folder" else tmp_path)
    arg = NAME if where == "lab folder" else str(lab_folder / NAME)
    code, out = cli(capsys, "self-check", arg, "--self-study")
    assert out.out.startswith(f"Self-check of {arg} "), out.out.splitlines()[0]
    assert "is not in this folder" not in out.out


def test_the_command_with_a_name_found_nowhere_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out = cli(capsys, "self-check", NAME)
    assert code == 2 and out.out == ""
    (line,) = out.err.strip().splitlines()
    assert line.startswith(f"gpucost-lab self-check: error: notebook {NAME!r}: no such file in {tmp_path}")
    assert f"labs/{LAB}/" in line and "allowed:" in line
