"""deploy/hub/hubctl.py without a hub: the class it lays out, and bad input as one line with status 2."""

import json
import subprocess
import sys

import pytest
from hubrun import hubctl


def test_the_class_folder(tmp_path):
    klass = hubctl.prepare(tmp_path / "class", ["ana", "bo"], password="long-enough")
    assert klass.users == ["instructor", "ana", "bo"] and klass.exchange.stat().st_mode & 0o1777 == 0o1777
    course_config = (klass.course / "nbgrader_config.py").read_text()
    assert course_config.startswith((hubctl.ROOT / "nbgrader_config.py").read_text())  # the course's own grading
    assert f"c.Exchange.root = {str(klass.exchange)!r}" in course_config
    assert (klass.course / "solutions" / hubctl.LAB / f"{hubctl.LAB}.ipynb").is_file()
    ana = klass.home("ana") / ".jupyter"
    assert "c.CourseDirectory.student_id = 'ana'" in (ana / "nbgrader_config.py").read_text()
    extensions = json.loads((ana / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    disabled = json.loads((ana / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    instructor_plugins = {f"@jupyter/nbgrader:{name}" for name in ("formgrader", "course-list", "create-assignment")}
    assert {name for name, off in disabled.items() if off} == instructor_plugins  # the assignment list's menu stays
    instructor = klass.home("instructor") / ".jupyter"
    assert not (instructor / "jupyter_server_config.json").exists()
    assert "student_id" not in (instructor / "nbgrader_config.py").read_text()
    assert (klass.state / "secrets.json").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "args, named", [(["--port", "0"], "port"), (["--learners", "0"], "learners"), (["--password", "short"], "password")]
)
def test_bad_input_is_one_line_and_status_2(tmp_path, args, named):
    done = subprocess.run(
        [sys.executable, str(hubctl.HERE / "hubctl.py"), "prepare", "--state", str(tmp_path / "c"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr, done.stderr


def test_a_bad_learner_name_is_named(tmp_path):
    with pytest.raises(ValueError, match="learner must be a user name .* got 'Bad Name'"):
        hubctl.prepare(tmp_path / "c", ["Bad Name"])
