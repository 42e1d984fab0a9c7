"""`make lab` in a real browser is the learner's JupyterLab: none of nbgrader's instructor tools on the page.

binder/jupyter_config/ (which `make lab` puts first on JUPYTER_CONFIG_PATH) leaves out nbgrader's instructor plugins;
tests/project/test_make_lab.py checks the page config and the server's endpoints, and this test what a learner sees
once JupyterLab has loaded: no Nbgrader menu in the menu bar, no Create Assignment panel in the sidebars, and no
Validate button in a notebook's toolbar. The notebook opened is a throw-away one under the ignored artifacts/ (never
a chapter, which the page could save), removed afterwards. The server comes from test_lab_news_prompt.py's fixture
(`make lab` with user-level Jupyter folders of its own), Chromium as in test_widgets_in_jupyterlab.py; a screenshot
goes to `artifacts/browser/learner-lab.png`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from test_lab_news_prompt import TOKEN, make_lab  # noqa: F401 - the `make lab` fixture, used by name
from test_widgets_in_jupyterlab import chromium_context

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
SETTLE_MS = 3_000  # after the notebook's toolbar shows: every plugin has activated


def test_the_learner_lab_shows_none_of_nbgrader_s_instructor_tools(make_lab, tmp_path):  # noqa: F811
    folder = ROOT / "artifacts" / f"learner-lab-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    notebook = folder / "probe.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), notebook)
    try:
        with chromium_context(tmp_path / "chromium-profile") as browser:
            page = browser.new_page()
            try:
                page.goto(f"{make_lab}/lab/tree/{notebook.relative_to(ROOT).as_posix()}?token={TOKEN}", timeout=60_000)
                toolbar = page.locator(".jp-NotebookPanel-toolbar").first
                toolbar.wait_for(timeout=90_000)
                page.wait_for_timeout(SETTLE_MS)
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "learner-lab.png"))
                menus = [m.strip() for m in page.locator(".lm-MenuBar-itemLabel").all_inner_texts()]
                assert "File" in menus and "Nbgrader" not in menus, menus
                assert "Validate" not in toolbar.inner_text(), "the notebook's toolbar has nbgrader's Validate button"
                assert page.locator("#nbgrader-create_assignemnt").count() == 0, "a Create Assignment panel"
                assert page.get_by_title("Nbgrader Create Assignment").count() == 0
            finally:
                page.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
