"""JupyterHub configuration of the course's class on one machine (`make hub`, tests/hub; see README.md here).

It reads the class that ``hubctl.py`` prepared in the folder named by GPUCOST_HUB_STATE: everything listens on
127.0.0.1 only; the instructor and the learners log in with the shared password (SharedPasswordAuthenticator, a
test authenticator); each user's server is a local process (SimpleLocalProcessSpawner) in its own home folder under
the class folder, with the course's Python environment; nbgrader's exchange is the class folder's ``exchange/``.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hubctl  # noqa: E402

c = get_config()  # noqa: F821  (provided by traitlets when JupyterHub loads this file)

klass, secrets = hubctl.load(os.environ["GPUCOST_HUB_STATE"])
state = klass.state

# Loopback only: the proxy (public), its API and the hub.
c.JupyterHub.bind_url = f"http://127.0.0.1:{klass.port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = klass.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{klass.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(hubctl.chp_path())]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
# Stopping the hub stops the proxy and every server (the defaults, stated).
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# Who: the instructor and the learners, with one shared password.
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = secrets["password"]
c.Authenticator.allowed_users = set(klass.users)

# Each user's server: JupyterLab from the course's environment, as a local process in the user's home folder.
c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "home" / "{username}")
c.Spawner.cmd = [str(hubctl.VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.ip = "127.0.0.1"
c.Spawner.default_url = "/lab"
c.Spawner.environment = {
    "PATH": f"{hubctl.VENV_BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
    hubctl.MARKER_ENV: klass.marker,
}
c.Spawner.args = ["--ServerApp.allow_root=True"] if os.geteuid() == 0 else []
# A class starting at once on a small machine: time for every server to come up.
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
c.JupyterHub.concurrent_spawn_limit = 200


def _pre_spawn(spawner):
    hubctl.prepare_home(klass, spawner.user.name)


c.Spawner.pre_spawn_hook = _pre_spawn

# A token for tests and scripts that drive the class (tests/hub): create users' tokens, start and stop servers.
if secrets.get("api_token"):
    c.JupyterHub.services = [{"name": "course-driver", "api_token": secrets["api_token"]}]
    c.JupyterHub.load_roles = [
        {
            "name": "course-driver",
            "services": ["course-driver"],
            "scopes": ["admin:users", "admin:servers", "tokens", "access:servers"],
        }
    ]
