"""`make lab` serves JupyterLab on the course (the README's first command), as a learner's JupyterLab.

One server, started by `make lab` on a free loopback port with user-level Jupyter folders of its own (so no setting
saved on this machine plays a part), answers every test here and is always stopped. It serves the chapters; it has
none of nbgrader's instructor tools, in the page (the plugins JupyterLab is told to leave out) or on the server (their
endpoints answer 404), and keeps the learner's assignment list; and saving a notebook through it writes that notebook
alone, never the text form jupytext.toml pairs it with (checked on a notebook saved under the ignored artifacts/).
"""

import json
import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from jupytext.config import load_jupytext_config
from jupytext.paired_paths import paired_paths
from labtools import make_lab_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "gpucost-test-token"
INSTRUCTOR_PLUGINS = {
    "@jupyter/nbgrader:menu",  # the Nbgrader menu: Formgrader, Course List, Create Assignment
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:create-assignment",  # the right-hand "Create Assignment" panel
    "@jupyter/nbgrader:validate-assignment",  # the notebook's "Validate" button
}


def _request(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:  # a guard against a hang, not a speed target
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`make lab` on a free port; yields its base URL, and stops it (its whole process group) afterwards."""
    with make_lab_server(tmp_path_factory.mktemp("make-lab"), TOKEN) as url:
        yield url


def test_make_lab_serves_the_chapters(lab):
    status, page = _request(f"{lab}/lab/tree/chapters")
    assert status == 200 and b"JupyterLab" in page
    _, listing = _request(f"{lab}/api/contents/chapters")
    names = {item["name"] for item in json.loads(listing)["content"]}
    assert "00_start_here.ipynb" in names


def _page_config(lab: str) -> dict:
    """The configuration the server hands the page (what JupyterLab loads and leaves out)."""
    _, page = _request(f"{lab}/lab/tree/chapters")
    return json.loads(re.search(rb'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S).group(1))


def test_the_page_leaves_out_nbgrader_s_instructor_tools_and_jupytext(lab):
    config = _page_config(lab)
    disabled = set(config["disabledExtensions"])
    assert INSTRUCTOR_PLUGINS <= disabled, INSTRUCTOR_PLUGINS - disabled
    assert "jupyterlab-jupytext" in disabled
    assert "@jupyter/nbgrader:assignment-list" not in disabled, "the learner's assignment list stays"
    loaded = {extension["name"] for extension in config["federated_extensions"]}
    assert {"@jupyter/nbgrader", "@jupyter-widgets/jupyterlab-manager"} <= loaded, "their other plugins still load"


@pytest.mark.parametrize(
    "path, loaded",
    [
        ("/formgrader", False),  # nbgrader.server_extensions.formgrader
        ("/formgraders", False),  # nbgrader.server_extensions.course_list
        ("/assignments/validate", False),  # nbgrader.server_extensions.validate_assignment (POST only when loaded)
        ("/assignments", True),  # nbgrader.server_extensions.assignment_list: the learner's list
    ],
)
def test_the_server_runs_the_assignment_list_but_none_of_the_instructor_s_endpoints(lab, path, loaded):
    status, _ = _request(f"{lab}{path}")
    assert (status != 404) == loaded, (path, status)


def test_saving_a_notebook_writes_no_text_form(lab):
    """A notebook saved under a chapters/ folder: jupytext.toml pairs it with text/chapters/, the server writes none."""
    folder = ROOT / "artifacts" / f"lab-pairing-{os.getpid()}"
    notebook = folder / "chapters" / "probe.ipynb"
    text_form = folder / "text" / "chapters" / "probe.md"
    for where in (notebook, text_form):  # both folders there, as in the course
        where.parent.mkdir(parents=True, exist_ok=True)
    try:
        config = load_jupytext_config(str(notebook))
        pairs = [Path(p) for p, _ in paired_paths(str(notebook), "ipynb", config.default_formats(str(notebook)))]
        assert pairs == [notebook, text_form], "jupytext.toml pairs this notebook with its text form"
        # as JupyterLab sends it: each source one string
        content = json.loads(json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])))
        rel = notebook.relative_to(ROOT).as_posix()
        status, _ = _request(
            f"{lab}/api/contents/{rel}", "PUT", {"type": "notebook", "format": "json", "content": content}
        )
        assert status in (200, 201), status
        assert notebook.is_file()
        assert not text_form.exists(), "the learner's JupyterLab paired the notebook with its text form"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
