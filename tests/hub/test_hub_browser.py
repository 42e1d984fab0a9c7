"""A learner on the course's JupyterHub in a real browser: log in, open the Assignments tab, fetch the lab, submit it.

Headless Debian Chromium (the flags and the binary of tests/browser), driven by Playwright. The instructor has
released profile_training_loop (nbgrader release_assignment in the course folder); the learner logs in at the hub's
login page with the shared password, which starts their server, opens Nbgrader's Assignment List in JupyterLab,
finds the lab under the released assignments, clicks Fetch, finds it under the downloaded ones, clicks Submit, and
finds the submission listed with its time. The exchange must hold that submission under the learner's id, and the
learner's home the fetched lab. Screenshots of each step go to artifacts/hub/.
"""

from __future__ import annotations

import re
import sys

import pytest
from hubrun import ROOT, HubRun, hubctl

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from test_widgets_in_jupyterlab import chromium_context  # noqa: E402

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = ROOT / "artifacts" / "hub"
LEARNER = "ana"
LAB = hubctl.LAB
STEP_MS = 60_000  # one UI step; a server's first start on a busy 2-core machine included
LOGIN_MS = 180_000


@pytest.fixture(scope="module")
def hub(hub_ready, tmp_path_factory, request):
    run = HubRun(tmp_path_factory.mktemp("hub-browser") / "class", [LEARNER])
    request.addfinalizer(run.stop)
    hubctl.release(run.klass)  # the instructor released the lab before class
    run.start(users=[])  # the hub only: the learner's login starts their server
    return run


@pytest.fixture(scope="module")
def page(hub, tmp_path_factory, request):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        tab = context.new_page()
        tab.set_default_timeout(STEP_MS)
        yield tab


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / name))


def _assignment_row(page, list_id: str):
    return page.locator(f"#{list_id} .list_item:not(.nested_list_item)", has_text=LAB)


def test_a_learner_fetches_and_submits_from_the_assignments_tab(hub, page):
    try:
        page.goto(f"{hub.klass.url}/hub/login", timeout=STEP_MS)
        page.fill("input#username_input", LEARNER)
        page.fill("input#password_input", hub.password)
        page.click("#login_submit")
        page.locator("#jp-main-dock-panel").wait_for(timeout=LOGIN_MS)  # JupyterLab, on the learner's server
        assert f"/user/{LEARNER}/lab" in page.url
        _shot(page, "1-jupyterlab.png")

        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Nbgrader$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Assignment List$")).click()
        released = _assignment_row(page, "released_assignments_list")
        released.wait_for()
        _shot(page, "2-released.png")
        released.get_by_role("button", name="Fetch").click()

        fetched = _assignment_row(page, "fetched_assignments_list")
        fetched.wait_for()
        _shot(page, "3-fetched.png")
        assert (hub.klass.home(LEARNER) / LAB / f"{LAB}.ipynb").is_file()
        fetched.get_by_role("button", name="Submit").click()

        submitted = _assignment_row(page, "submitted_assignments_list")
        submitted.wait_for()
        _shot(page, "4-submitted.png")
    except Exception:
        _shot(page, "failure.png")
        raise
    inbound = sorted(p.name for p in (hub.klass.exchange / hub.klass.course_id / "inbound").iterdir())
    assert len(inbound) == 1 and inbound[0].startswith(f"{LEARNER}+{LAB}+"), inbound
    assert page.locator("#released_assignments_list .list_item", has_text=LAB).count() == 0


def test_the_hub_stops_and_leaves_no_process(hub):
    hub.stop()
    assert hub.left_after_hub == [], f"still running after the hub stopped: {hub.left_after_hub}"
    assert hub.left_after_kill == []
