"""Install the course's JupyterLab settings (binder/overrides.json) into this Python's environment.

JupyterLab 4 asks every learner "Would you like to get notified about official Jupyter news?" while the setting
``fetchNews`` of ``@jupyterlab/apputils-extension:notification`` is unset ("none"). The course answers for them:
never fetch news, never check for updates. JupyterLab reads such defaults from ``overrides.json`` in its application
settings directory, ``<application directory>/settings`` (`jupyter lab path` prints the application directory:
``{sys.prefix}/share/jupyter/lab`` unless JUPYTERLAB_DIR says otherwise), and a learner's own settings still win.

Run with the environment's Python: `make install` and `make lab` do (``.venv/bin/python``), and so does
binder/postBuild. An overrides.json already there is merged, not replaced: the course's keys are set, every other
setting in it is kept. The file is written only when it changes, atomically.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

COURSE_OVERRIDES = Path(__file__).resolve().with_name("overrides.json")


def app_settings_dir() -> Path:
    """JupyterLab's application settings directory for this Python's environment."""
    try:
        from jupyterlab.commands import get_app_dir
    except ImportError:  # JupyterLab not installed (yet): its default place in this environment
        return Path(sys.prefix, "share", "jupyter", "lab", "settings")
    return Path(get_app_dir(), "settings")


def merged(existing: dict, course: dict) -> dict:
    """``existing`` with the course's keys set, plugin by plugin; everything else in ``existing`` kept."""
    out = {plugin: dict(values) if isinstance(values, dict) else values for plugin, values in existing.items()}
    for plugin, values in course.items():
        if not isinstance(out.get(plugin), dict):
            out[plugin] = {}
        out[plugin].update(values)
    return out


def install(target: Path | None = None) -> tuple[Path, bool]:
    """Merge binder/overrides.json into ``target`` (default: the environment's overrides.json); (path, changed)."""
    target = target or app_settings_dir() / "overrides.json"
    course = json.loads(COURSE_OVERRIDES.read_text(encoding="utf-8"))
    existing = {}
    if target.exists():
        try:
            existing = json.loads(target.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise SystemExit(f"{target} is not valid JSON ({err}): fix or remove it, then run this again") from err
        if not isinstance(existing, dict):
            raise SystemExit(f"{target} must hold a JSON object of settings per plugin, got {type(existing).__name__}")
    settings = merged(existing, course)
    if settings == existing:
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target, True


if __name__ == "__main__":
    path, changed = install(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    print(f"{path}: JupyterLab fetches no news and checks for no updates{'' if changed else ' (already set)'}")
