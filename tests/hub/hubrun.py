"""A class on the course's JupyterHub, run for a test: start it, drive it over HTTP, stop it and everything it started.

The hub (deploy/hub/jupyterhub_config.py) runs in its own process group on free loopback ports; its proxy and every
single-user server carry the class's marker in their environment (hubctl.MARKER_ENV), so ``stop()`` finds every
process the class started, whichever session it runs in: it stops the hub (which stops the proxy and the servers),
then kills whatever is still there, and reports both.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "hub"))
import hubctl  # noqa: E402

HUB_START_S = 120
SERVER_START_S = 300  # a class of 30 starting at once on 2 cores
HTTP_TIMEOUT_S = 600  # autograding through the formgrader answers when the notebook is graded
STOP_S = 60


class HubError(AssertionError):
    pass


def marked_processes(marker: str) -> list[psutil.Process]:
    """Every running process whose environment carries the class's marker."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if (
                proc.pid != os.getpid()
                and proc.environ().get(hubctl.MARKER_ENV) == marker
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def describe(procs) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            out.append(str(proc.pid))
    return out


class HubRun:
    """One hub with one class; ``token(user)`` is that user's own API token once ``start()`` has run."""

    def __init__(self, state: Path, learners: list[str]):
        self.api_token = secrets.token_hex(24)
        self.password = secrets.token_hex(12)  # everyone's, as on the demo hub
        self.klass = hubctl.prepare(state, learners, password=self.password, api_token=self.api_token)
        self.proc: subprocess.Popen | None = None
        self.tokens: dict[str, str] = {}
        self.left_after_hub: list[str] | None = None  # what the hub's own shutdown left running
        self.left_after_kill: list[str] | None = None
        self.log_path = self.klass.state / "jupyterhub.log"

    # ------------------------------------------------------------------------------------------------ HTTP
    def request(
        self, method: str, path: str, body=None, *, user: str | None = None, timeout: float = 60, raw: bool = False
    ):
        """``method`` ``path`` on the hub's public URL, as ``user`` (their token) or as the class's driver."""
        token = self.tokens[user] if user else self.api_token
        data = json.dumps(body).encode() if body is not None else (b"" if method in ("POST", "PUT") else None)
        req = urllib.request.Request(
            self.klass.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                text = resp.read()
        except urllib.error.HTTPError as err:
            raise HubError(f"{method} {path} as {user or 'driver'}: HTTP {err.code} {err.read()[:2000]!r}") from None
        if raw:
            return text
        return json.loads(text) if text else None

    def hub_api(self, method: str, path: str, body=None):
        return self.request(method, "/hub/api" + path, body)

    def user_api(self, user: str, method: str, path: str, body=None, timeout: float = 60):
        """A request to ``user``'s own server (``/user/<user><path>``) with their own token."""
        return self.request(method, f"/user/{user}{path}", body, user=user, timeout=timeout)

    # ------------------------------------------------------------------------------------------------ life
    def start(self, users: list[str] | None = None) -> None:
        """The hub, a token for each user, and each user's server (all at once), ready."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            hubctl.hub_command(),
            cwd=self.klass.state,
            env=hubctl.hub_env(self.klass),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + HUB_START_S
        while True:
            try:
                self.hub_api("GET", "/")
                break
            except (OSError, HubError):
                if self.proc.poll() is not None:
                    raise HubError(f"the hub exited with {self.proc.returncode}:\n{self.log_tail()}") from None
                if time.monotonic() > deadline:
                    raise HubError(f"the hub did not answer within {HUB_START_S} s:\n{self.log_tail()}") from None
                time.sleep(0.3)
        users = self.klass.users if users is None else users
        for user in users:
            self.tokens[user] = self.hub_api("POST", f"/users/{user}/tokens", {"note": "tests/hub"})["token"]
        for user in users:
            self.hub_api("POST", f"/users/{user}/server")
        deadline = time.monotonic() + SERVER_START_S
        waiting = set(users)
        while waiting:
            for user in sorted(waiting):
                if self.hub_api("GET", f"/users/{user}")["servers"].get("", {}).get("ready"):
                    waiting.discard(user)
            if waiting and time.monotonic() > deadline:
                raise HubError(f"servers of {sorted(waiting)} not ready within {SERVER_START_S} s:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop the hub (SIGTERM: it stops the proxy and the servers), then kill whatever carries the marker."""
        if self.left_after_kill is not None:
            return
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10  # servers the hub signalled may still be on their way out
        while marked_processes(self.klass.marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = marked_processes(self.klass.marker)
        self.left_after_hub = describe(left)
        for proc in left:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(left, timeout=10)
        self.left_after_kill = describe(marked_processes(self.klass.marker))
        if getattr(self, "_log", None):
            self._log.close()

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # ------------------------------------------------------------------------------------------------ course
    def formgrader(self, path: str, method: str = "POST") -> dict:
        """The instructor's formgrader API (``/formgrader/api/<path>``) on the instructor's own server."""
        out = self.user_api(self.klass.instructor, method, f"/formgrader/api/{path}", timeout=HTTP_TIMEOUT_S)
        if isinstance(out, dict) and out.get("success") is False:
            raise HubError(f"formgrader {path}: {out.get('error') or out.get('log') or out}")
        return out

    def assignments(self, user: str) -> list[dict]:
        """What ``user``'s Assignments tab lists (nbgrader's assignment-list endpoint on their server)."""
        out = self.user_api(user, "GET", "/assignments?" + urllib.parse.urlencode({"course_id": self.klass.course_id}))
        assert out["success"], out
        return out["value"]

    def assignment_action(self, user: str, action: str, assignment: str) -> list[dict]:
        """Fetch or submit, as the Assignments tab's buttons do."""
        out = self.user_api(
            user,
            "POST",
            f"/assignments/{action}",
            {"course_id": self.klass.course_id, "assignment_id": assignment},
            timeout=120,
        )
        if not out.get("success"):
            raise HubError(f"{action} {assignment} as {user}: {out}")
        return out["value"]

    def read_notebook(self, user: str, path: str) -> dict:
        return self.user_api(user, "GET", f"/api/contents/{urllib.parse.quote(path)}?content=1")["content"]

    def write_notebook(self, user: str, path: str, nb: dict) -> None:
        self.user_api(
            user,
            "PUT",
            f"/api/contents/{urllib.parse.quote(path)}",
            {"type": "notebook", "format": "json", "content": nb},
        )
