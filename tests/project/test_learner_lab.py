"""The learner's JupyterLab configuration (binder/jupyter_config/), as `make lab` and Binder's start script apply it.

`make lab` puts binder/jupyter_config/ first on JUPYTER_CONFIG_PATH for its server alone. There, nbgrader's
instructor tools are off (the Nbgrader menu, the formgrader, the course list, the Create Assignment panel, the
notebook's Validate button: their lab plugins and their server extensions) and so is jupytext (its server extension,
whose contents manager writes a notebook's paired text form on save, and its lab extension); the learner's assignment
list is not. Every name switched off is one the environment has (a misspelt name would switch nothing off). The
environment itself keeps every tool, for the instructor's nbgrader and `make hub`. Nothing is started here;
tests/project/test_make_lab.py checks the running server.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEARNER_CONFIG = ROOT / "binder" / "jupyter_config"
PREFIX_CONFIG = Path(sys.prefix, "etc", "jupyter")
NBGRADER_LAB = Path(sys.prefix, "share", "jupyter", "labextensions", "@jupyter", "nbgrader")

INSTRUCTOR_PLUGINS = {
    "@jupyter/nbgrader:menu",
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:validate-assignment",
}
INSTRUCTOR_SERVER_EXTENSIONS = {
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
    "nbgrader.server_extensions.validate_assignment",
}
ASSIGNMENT_LIST = ("@jupyter/nbgrader:assignment-list", "nbgrader.server_extensions.assignment_list")
JUPYTEXT = ("jupyterlab-jupytext", "jupyterlab_jupytext")  # its lab extension, its server extension


def _disabled_plugins() -> dict:
    return json.loads((LEARNER_CONFIG / "labconfig" / "page_config.json").read_text())["disabledExtensions"]


def _server_extensions(folder: Path) -> dict:
    """The server extensions switched on or off by the config files of one Jupyter config folder."""
    found: dict = {}
    files = [folder / "jupyter_server_config.json", *sorted((folder / "jupyter_server_config.d").glob("*.json"))]
    for path in files:
        if path.is_file():
            found.update(json.loads(path.read_text()).get("ServerApp", {}).get("jpserver_extensions", {}))
    return found


def test_make_lab_puts_the_learner_config_first_on_jupyters_config_path():
    recipe = subprocess.run(
        ["make", "-n", "-s", "lab", "PORT=1"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (line,) = [line for line in recipe.splitlines() if "JUPYTER_CONFIG_PATH=" in line]
    assert re.search(rf'JUPYTER_CONFIG_PATH="{re.escape(str(LEARNER_CONFIG))}\$\{{JUPYTER_CONFIG_PATH:\+', line), line
    assert "jupyter lab" in recipe.split("JUPYTER_CONFIG_PATH=", 1)[1], "set on the lab's own command line"


def test_binder_start_puts_the_learner_config_first_on_jupyters_config_path():
    code = "import os; print(os.environ['JUPYTER_CONFIG_PATH'])"
    env = {"PATH": os.environ["PATH"], "JUPYTER_CONFIG_PATH": "/somewhere/else"}
    out = subprocess.run([str(ROOT / "binder" / "start"), sys.executable, "-c", code], env=env, capture_output=True)
    assert out.stdout.decode().strip().split(os.pathsep) == [str(LEARNER_CONFIG), "/somewhere/else"]


def test_the_learner_lab_leaves_out_the_instructor_s_tools_and_keeps_the_assignment_list():
    disabled = {name for name, off in _disabled_plugins().items() if off}
    assert INSTRUCTOR_PLUGINS <= disabled, INSTRUCTOR_PLUGINS - disabled
    extensions = _server_extensions(LEARNER_CONFIG)
    assert {name for name, on in extensions.items() if on is False} >= INSTRUCTOR_SERVER_EXTENSIONS
    plugin, server_extension = ASSIGNMENT_LIST
    assert plugin not in disabled and extensions.get(server_extension) is not False


def test_the_learner_lab_has_no_jupytext_so_saving_writes_no_text_form():
    lab_extension, server_extension = JUPYTEXT
    assert _disabled_plugins().get(lab_extension) is True
    assert _server_extensions(LEARNER_CONFIG).get(server_extension) is False


def test_every_name_switched_off_is_one_the_environment_has():
    bundle = "".join(p.read_text(encoding="utf-8") for p in (NBGRADER_LAB / "static").glob("*.js"))
    plugins = set(re.findall(r'"(@jupyter/nbgrader:[a-z-]+)"', bundle))
    nbgrader_plugins = {name for name in _disabled_plugins() if name.startswith("@jupyter/nbgrader:")}
    assert nbgrader_plugins | {ASSIGNMENT_LIST[0]} <= plugins, nbgrader_plugins - plugins
    assert (NBGRADER_LAB.parent.parent / JUPYTEXT[0] / "package.json").is_file()
    installed = _server_extensions(PREFIX_CONFIG)
    assert set(_server_extensions(LEARNER_CONFIG)) <= set(installed)


def test_the_environment_keeps_the_instructor_s_tools():
    """Only the lab's own server reads binder/jupyter_config/: the environment (nbgrader, `make hub`) keeps them all."""
    installed = _server_extensions(PREFIX_CONFIG)
    assert all(installed.get(name) is True for name in INSTRUCTOR_SERVER_EXTENSIONS), installed
    page_config = PREFIX_CONFIG / "labconfig" / "page_config.json"
    disabled = json.loads(page_config.read_text()).get("disabledExtensions", {}) if page_config.exists() else {}
    assert not {name for name, off in disabled.items() if off} & INSTRUCTOR_PLUGINS
    hub = subprocess.run(["make", "-n", "-s", "hub"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert "JUPYTER_CONFIG_PATH" not in hub
