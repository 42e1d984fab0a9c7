"""`make lab` in a real browser: no "Would you like to get notified about official Jupyter news?" over the course.

JupyterLab 4 shows that prompt (a toast that stays until answered) whenever the setting `fetchNews` of
`@jupyterlab/apputils-extension:notification` is unset ("none"). The course sets it in the environment's
`share/jupyter/lab/settings/overrides.json` (binder/overrides.json, merged in by binder/install_lab_settings.py,
which `make lab` runs), and `make lab` starts the server with `--LabApp.news_url=None` and
`--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate`, so the server fetches no news and checks for no
update either.

The server is started by `make lab`, as a learner starts it, with user-level Jupyter folders (settings, workspaces,
runtime) of its own, so that no setting a person saved on this machine can answer the prompt in the course's stead.
Headless Chromium opens the server's front page, waits for JupyterLab to show the chapters folder and a few seconds
more (the prompt comes once the settings have loaded), then looks for the prompt. A screenshot goes to
`artifacts/browser/lab-news-prompt.png`. Chromium and Playwright as in test_widgets_in_jupyterlab.py.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from labtools import make_lab_server
from test_widgets_in_jupyterlab import chromium_context

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
TOKEN = "gpucost-news-test"
NOTIFICATION = "@jupyterlab/apputils-extension:notification"
NEWS_PROMPT = "Would you like to get notified about official Jupyter news?"
SETTLE_MS = 5_000  # after the app shows the chapters: the prompt, when asked, appears once the settings load


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def make_lab(tmp_path_factory):
    """`make lab` on a free loopback port with a token; yields its base URL."""
    with make_lab_server(tmp_path_factory.mktemp("make-lab"), TOKEN) as url:
        yield url


def test_make_lab_opens_on_the_chapters_without_the_news_prompt(make_lab, tmp_path):
    with chromium_context(tmp_path / "chromium-profile") as browser:
        page = browser.new_page()
        try:
            page.goto(f"{make_lab}/?token={TOKEN}", timeout=60_000)  # the front page, as `make lab` prints it
            page.locator(".jp-DirListing-item", has_text="00_start_here.ipynb").wait_for(timeout=90_000)
            assert "/lab/tree/chapters" in page.url, page.url
            page.wait_for_timeout(SETTLE_MS)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "lab-news-prompt.png"))
            # the prompt is a toast; none about news or updates may be on the page
            assert page.get_by_text(NEWS_PROMPT).count() == 0, f"JupyterLab asks: {NEWS_PROMPT!r}"
            toasts = page.locator(".Toastify__toast").all_inner_texts()
            assert not [t for t in toasts if "news" in t.lower() or "update" in t.lower()], toasts
            config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
            assert config["news"] == {"disabled": True}, "the server runs with --LabApp.news_url=None"
        finally:
            page.close()
    # the settings as the server hands them to the page: the course's overrides are the schema's defaults, and the
    # learner has saved nothing, so they are what JupyterLab uses
    settings = _get_json(f"{make_lab}/lab/api/settings/{NOTIFICATION}?token={TOKEN}")
    defaults = {key: settings["schema"]["properties"][key]["default"] for key in ("fetchNews", "checkForUpdates")}
    assert defaults == {"fetchNews": "false", "checkForUpdates": False}, "the course's overrides.json is not in effect"
    assert settings["settings"] == {}, "no user setting answers the prompt here"
    assert _get_json(f"{make_lab}/lab/api/update?token={TOKEN}")["notification"] is None, "NeverCheckForUpdate"
