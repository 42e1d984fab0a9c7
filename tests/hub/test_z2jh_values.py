"""deploy/hub/z2jh-values.yaml, the Zero to JupyterHub values for a large class: valid YAML that sets what
deploy/hub/README.md says it sets (each setting of its table is there), with the course's image, the exchange on a
shared volume mounted where every server's nbgrader looks for it, resource limits per learner and idle culling."""

import ast
import re
from pathlib import Path

import pytest
import yaml

HUB = Path(__file__).resolve().parents[2] / "deploy" / "hub"


@pytest.fixture(scope="module")
def values():
    return yaml.safe_load((HUB / "z2jh-values.yaml").read_text(encoding="utf-8"))


def _get(values: dict, dotted: str):
    node = values
    for key in dotted.split("."):
        assert isinstance(node, dict) and key in node, f"{dotted}: no {key!r}"
        node = node[key]
    return node


def readme_settings() -> list[str]:
    """The settings in the first column of the README's Zero to JupyterHub table (`a.b.c` in backquotes)."""
    text = (HUB / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Several hundred learners") :]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([a-zA-Z]+(?:\.[a-zA-Z]+)+)`", row.split("|")[1])]


def test_the_readme_lists_the_settings():
    assert len(readme_settings()) >= 12


@pytest.mark.parametrize("setting", readme_settings())
def test_every_setting_the_readme_names_is_set(values, setting):
    assert _get(values, setting) not in (None, "", [], {})


def test_the_image_and_the_limits_per_learner(values):
    image = _get(values, "singleuser.image")
    assert image["name"] and str(image["tag"])
    assert float(_get(values, "singleuser.cpu.limit")) >= float(_get(values, "singleuser.cpu.guarantee")) > 0
    assert str(_get(values, "singleuser.memory.limit")).endswith("G")


def test_the_exchange_is_one_shared_volume_where_nbgrader_looks(values):
    storage = _get(values, "singleuser.storage")
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in storage["extraVolumes"]}
    mounts = {m["name"]: m["mountPath"] for m in storage["extraVolumeMounts"]}
    assert claims == {"nbgrader-exchange": "nbgrader-exchange"}
    config = _get(values, "singleuser.extraFiles.nbgrader-config")
    assert config["mountPath"] == "/etc/jupyter/nbgrader_config.py"
    ast.parse(config["stringData"])  # Python that nbgrader can load
    root = re.search(r'c\.Exchange\.root = "([^"]+)"', config["stringData"])[1]
    assert mounts["nbgrader-exchange"] == root
    assert 'c.CourseDirectory.course_id = "gpucost-lab"' in config["stringData"]
    for name in ("server-roles",):
        ast.parse(_get(values, f"singleuser.extraFiles.{name}")["stringData"])


def test_idle_servers_are_culled(values):
    cull = _get(values, "cull")
    assert cull["enabled"] is True and 0 < cull["every"] <= cull["timeout"]


def test_the_hooks_in_hub_extra_config_are_python(values):
    for source in _get(values, "hub.extraConfig").values():
        ast.parse(source)
