"""A class of the course on a JupyterHub on this machine: lay out its folders, then start the hub (`make hub`).

``prepare()`` writes a class's state folder:

- ``exchange/``: nbgrader's exchange, shared by every server (release, fetch, submit, collect);
- ``home/<instructor>/``: the instructor's home and the course folder, a copy of ``solutions/`` and the repository's
  ``nbgrader_config.py`` with this hub's exchange added, so the instructor's formgrader and ``nbgrader`` commands grade
  the course's way (sandboxed execution, the ``passed`` column on export);
- ``home/<learner>/``: each learner's home, whose ``.jupyter/`` names the course and the exchange and turns off the
  instructor's tools (formgrader, course list, create-assignment) in their JupyterLab;
- ``class.json`` (ports, users, paths) and ``secrets.json`` (the shared password, an optional API token; mode 0600),
  which ``jupyterhub_config.py`` reads.

``python deploy/hub/hubctl.py start --state DIR`` prepares the class and runs JupyterHub in the foreground on
``127.0.0.1`` (Ctrl-C stops the hub, the proxy and every learner's server). The servers run as local processes of
the user who starts the hub, one home folder each: a demo and test set-up, not isolation between learners (README).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import secrets as _secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COURSE_ID = "gpucost-lab"
LAB = "profile_training_loop"
INSTRUCTOR = "instructor"
DEMO_PASSWORD = "gpucost-demo"
VENV_BIN = Path(sys.executable).parent
USER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
#: Set in the environment of the hub, the proxy and every server it spawns: teardown finds them all by it.
MARKER_ENV = "GPUCOST_HUB_MARKER"

# What a learner's JupyterLab leaves out: the instructor's tools (nbgrader's multi-user set-up). The Nbgrader menu
# stays, for its Assignment List (fetch, submit); with the formgrader's and course list's plugins left out, their
# entries leave the menu too. (`make lab` and Binder leave out the menu itself: binder/jupyter_config/.)
LEARNER_SERVER_CONFIG = {
    "ServerApp": {
        "jpserver_extensions": {
            "nbgrader.server_extensions.formgrader": False,
            "nbgrader.server_extensions.course_list": False,
        }
    }
}
LEARNER_PAGE_CONFIG = {
    "disabledExtensions": {
        "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True,
        "@jupyter/nbgrader:formgrader": True,
    }
}
# JupyterLab without the news prompt over the page, for everyone on the hub.
LAB_NOTIFICATIONS = {"fetchNews": "false", "checkForUpdates": False}


def chp_path() -> Path:
    """configurable-http-proxy as `make hub-proxy` installs it (npm, into deploy/hub/node_modules)."""
    return HERE / "node_modules" / ".bin" / "configurable-http-proxy"


def proxy_problem() -> str | None:
    """None when the proxy is installed, else what is missing and how to get it."""
    if chp_path().exists():
        return None
    if shutil.which("npm") is None:
        return (
            "npm is missing, so configurable-http-proxy (the hub's proxy, an npm package) cannot be installed: "
            "install Node.js and npm (Debian: apt-get install -y nodejs npm), then run `make hub-proxy`"
        )
    return f"configurable-http-proxy is not installed at {chp_path()}: run `make hub-proxy`"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class HubClass:
    """One class on one hub: where everything is and who is in it."""

    state: Path
    learners: list[str]
    port: int
    hub_port: int
    proxy_api_port: int
    marker: str
    instructor: str = INSTRUCTOR
    course_id: str = COURSE_ID

    @property
    def users(self) -> list[str]:
        return [self.instructor, *self.learners]

    @property
    def exchange(self) -> Path:
        return self.state / "exchange"

    @property
    def course(self) -> Path:
        """The instructor's home, which is the course folder."""
        return self.home(self.instructor)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.state / "home" / user

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["state"] = str(self.state)
        return data


def check_user(field: str, name: str) -> str:
    if not isinstance(name, str) or not USER_NAME.match(name):
        raise ValueError(
            f"{field} must be a user name of 1-32 lower-case letters, digits, '-' or '_', starting "
            f"with a letter, got {name!r}"
        )
    return name


def prepare(
    state: str | os.PathLike,
    learners: list[str],
    *,
    port: int | None = None,
    password: str = DEMO_PASSWORD,
    api_token: str | None = None,
    instructor: str = INSTRUCTOR,
) -> HubClass:
    """Lay out (or refresh) a class's state folder; learners' work and the gradebook are kept if already there."""
    check_user("instructor", instructor)
    for name in learners:
        check_user("learner", name)
    if instructor in learners or len(set(learners)) != len(learners):
        raise ValueError(f"learners must be distinct and differ from the instructor, got {learners!r}")
    if len(password) < 8:
        raise ValueError(f"password must have 8 characters or more, got {len(password)}")
    state = Path(state).resolve()
    klass = HubClass(
        state=state,
        learners=list(learners),
        port=port or free_port(),
        hub_port=free_port(),
        proxy_api_port=free_port(),
        marker=_secrets.token_hex(8),
        instructor=instructor,
    )
    state.mkdir(parents=True, exist_ok=True)
    klass.exchange.mkdir(exist_ok=True)
    klass.exchange.chmod(0o1777)  # everyone writes into it, as nbgrader's exchange requires; sticky like /tmp
    course = klass.course
    course.mkdir(parents=True, exist_ok=True)
    if not (course / "solutions").exists():
        shutil.copytree(
            ROOT / "solutions", course / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
        )
    (course / "nbgrader_config.py").write_text(course_config(klass), encoding="utf-8")
    for user in klass.users:
        prepare_home(klass, user)
    (state / "class.json").write_text(json.dumps(klass.to_json(), indent=1), encoding="utf-8")
    secrets_file = state / "secrets.json"
    secrets_file.write_text(json.dumps({"password": password, "api_token": api_token}), encoding="utf-8")
    secrets_file.chmod(0o600)
    return klass


def course_config(klass: HubClass) -> str:
    """The repository's nbgrader configuration, read as it is (its root is the folder it lies in), and the hub's."""
    return (
        (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
        + "\n# ---- this hub's class (deploy/hub/hubctl.py writes these lines)\n"
        + f"c.Exchange.root = {str(klass.exchange)!r}\n"
        + "# Every server of this hub runs as one system user, so a submission's owner names nobody; nbgrader's\n"
        + "# exchange records who submitted it (JUPYTERHUB_USER). On a hub with one system user per learner\n"
        + "# (The Littlest JupyterHub), leave this check on.\n"
        + "c.ExchangeCollect.check_owner = False\n"
    )


def prepare_home(klass: HubClass, user: str) -> Path:
    """A user's home with the course's Jupyter settings; also the hub's pre-spawn hook (users added later)."""
    home = klass.home(user)
    jupyter = home / ".jupyter"
    (jupyter / "labconfig").mkdir(parents=True, exist_ok=True)
    learner = user != klass.instructor
    config = (
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {klass.course_id!r}\n"
        f"c.Exchange.root = {str(klass.exchange)!r}\n"
    )
    if learner:  # who submits: nbgrader takes the system user's name otherwise, here the same for everyone
        config += f"c.CourseDirectory.student_id = {user!r}\n"
    (jupyter / "nbgrader_config.py").write_text(config, encoding="utf-8")
    settings = jupyter / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps(LAB_NOTIFICATIONS), encoding="utf-8")
    for name, values in (
        ("jupyter_server_config.json", LEARNER_SERVER_CONFIG),
        ("labconfig/page_config.json", LEARNER_PAGE_CONFIG),
    ):
        if learner:
            (jupyter / name).write_text(json.dumps(values, indent=1), encoding="utf-8")
        else:
            (jupyter / name).unlink(missing_ok=True)
    return home


def load(state: str | os.PathLike) -> tuple[HubClass, dict]:
    """The class and its secrets, as ``prepare`` wrote them."""
    state = Path(state)
    data = json.loads((state / "class.json").read_text(encoding="utf-8"))
    data["state"] = Path(data["state"])
    return HubClass(**data), json.loads((state / "secrets.json").read_text(encoding="utf-8"))


def hub_command() -> list[str]:
    return [sys.executable, "-m", "jupyterhub", "-f", str(HERE / "jupyterhub_config.py")]


def hub_env(klass: HubClass) -> dict:
    """The hub's environment: this Python's tools first on PATH (nbgrader runs `alembic` by name), the marker."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR")}
    env.update(GPUCOST_HUB_STATE=str(klass.state), PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}")
    env[MARKER_ENV] = klass.marker
    return env


def instructor_env(klass: HubClass) -> dict:
    """What the instructor's terminal on the hub has: their home, their user name, this Python's tools."""
    env = hub_env(klass)
    env.update(HOME=str(klass.course), JUPYTERHUB_USER=klass.instructor)
    return env


def nbgrader(klass: HubClass, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in the course folder, as the instructor would type it in a terminal on the hub."""
    return subprocess.run(
        [str(VENV_BIN / "nbgrader"), *args],
        cwd=klass.course,
        env=instructor_env(klass),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def release(klass: HubClass, lab: str = LAB) -> None:
    """Generate the lab from the course's solutions/ and release it to the exchange (the demo class starts so)."""
    for step in (("generate_assignment", lab, "--force"), ("release_assignment", lab, "--force")):
        done = nbgrader(klass, *step)
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader {step[0]} failed:\n{done.stdout}{done.stderr}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start the course's JupyterHub on 127.0.0.1 for a demo class.")
    parser.add_argument("command", choices=["start", "prepare"])
    parser.add_argument("--state", default=str(HERE / "state"), help="the class's folder (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1 (default: %(default)s)")
    parser.add_argument("--learners", type=int, default=3, help="learner1 .. learnerN (default: %(default)s)")
    parser.add_argument(
        "--password",
        default=os.environ.get("HUB_PASSWORD", DEMO_PASSWORD),
        help="the shared password (8 characters or more; default: HUB_PASSWORD, else the demo's)",
    )
    parser.add_argument(
        "--no-release",
        action="store_true",
        help="leave the lab unreleased (the instructor releases it from the formgrader)",
    )
    args = parser.parse_args(argv)
    try:
        if not 1 <= args.port <= 65535:
            raise ValueError(f"port must be 1-65535, got {args.port}")
        if not 1 <= args.learners <= 500:
            raise ValueError(f"learners must be 1-500, got {args.learners}")
        klass = prepare(
            args.state, [f"learner{i}" for i in range(1, args.learners + 1)], port=args.port, password=args.password
        )
    except ValueError as err:
        print(f"hubctl: {err}", file=sys.stderr)
        return 2
    if args.command == "prepare":
        return 0
    problem = proxy_problem()
    if problem:
        print(f"hubctl: {problem}", file=sys.stderr)
        return 2
    if not args.no_release:
        release(klass)
    print(
        f"\nThe course's JupyterHub: {klass.url}/  (127.0.0.1 only; Ctrl-C stops it)\n"
        f"  instructor: {klass.instructor}  (formgrader: {klass.url}/user/{klass.instructor}/formgrader)\n"
        f"  learners:   {', '.join(klass.learners)}  (Assignments tab: Nbgrader > Assignments)\n"
        f"  password:   {args.password}  (everyone's)\n  class folder: {klass.state}\n",
        flush=True,
    )
    os.execve(sys.executable, hub_command(), hub_env(klass))
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
