"""The course widgets in a real browser: JupyterLab serves the chapters, headless Chromium runs them and moves a slider.

What a learner does, end to end: open the chapter, Run > Run All Cells, wait for the kernel, move the slider, read
the verdict and the table. It checks what the Python-only tests (`tests/widgets/`) cannot: that the
widget
front end (ipywidgets 8 in JupyterLab 4) renders the widgets, that a slider moved in the page reaches the kernel, and
that the redrawn HTML comes back to the page.

Expected values, by hand (the course numbers; full derivations: tests/widgets/test_ledger.py, test_predictor.py):

- ledger (chapter 04), static 3.2 GB, 0.34 GB/sample, 24 GB device, 10% reserve, 10 blocks; budget 21.6 GB.
  Microbatch 32: peak 3.2 + 0.34 x 32 = 14.08 GB, fits with 21.6 - 14.08 = 7.52 GB of headroom.
  Microbatch 60: each block adds 0.34 x 60 / 10 = 2.04 GB; block 9 holds 3.2 + 9 x 2.04 = 21.56 GB (fits), block 10
  holds 23.6 GB: out of memory at block 10, 23.6 - 21.6 = 2 GB over.
  Full recomputation (activation checkpointing): largest microbatch floor(18.4 / (0.034 x 1.9)) = 284, so the slider
  reaches 285; at 284 the peak is 3.2 + 0.034 x 284 x 1.9 = 21.546 GB, fits. Accumulation K = 2 at 284: global batch
  568, step time (1 + 0.15) x 4/3 = 1.533.
- predictor (chapter 03), steps +25%: gain +20% -> 1.25 / 1.20 = 1.042, more expensive (8 x 1.042 = 8.33 h misses
  the 8 h window, $17.50 against $16.80); gain +30% -> 1.25 / 1.30 = 0.962, cheaper (8 x 0.962 = 7.69 h, $16.15).

The chapters are served from a temporary copy of `chapters/`, with autosave off: running them in a browser must
not write outputs into the committed notebooks (tests/course/test_notebooks.py). Screenshots, before and after
each move,
go to `artifacts/browser/` (and a full-page one on failure).

Needs Debian's Chromium at /usr/bin/chromium (`apt-get install -y chromium`; `make test` installs it when it is
missing) or another Chromium named by GPUCOST_CHROMIUM, and the `playwright` Python package (the `test` extra),
which drives that browser; Playwright's own browser download is never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = os.environ.get("GPUCOST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "gpucost-browser-test"
SERVER_START_S = 90
STEP_TIMEOUT_MS = 30_000  # one UI step: a click, a redraw after a slider move
RUN_ALL_TIMEOUT_MS = 120_000  # a chapter runs in under 20 s on 2 cores; allow for a slow, shared machine

# JupyterLab user settings for the test profile: no autosave (the notebooks stay as committed), no news prompt
# over the page, every cell kept in the DOM (no windowing) so the test can read every prompt.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

# The notebook in the current tab (JupyterLab keeps other tabs' panels in the DOM, hidden).
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# Every code cell of that notebook has run ([n]:), none is queued or running ([*]:), and its kernel says idle.
ALL_CELLS_RAN_AND_IDLE = """(panel) => {
    const root = document.querySelector(panel);
    if (!root) return false;
    const prompts = [...root.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent);
    const indicator = root.querySelector('.jp-Notebook-ExecutionIndicator');
    return prompts.length > 0 && prompts.every(t => /\\[\\d+\\]/.test(t))
        && (!indicator || indicator.dataset.status === 'idle');
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on loopback with a token, serving a copy of the chapters; yields its base URL."""
    base = tmp_path_factory.mktemp("jupyterlab")
    served = base / "course"
    shutil.copytree(
        ROOT / "chapters", served / "chapters", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    )
    settings = base / "user-settings"
    for name, values in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    # the kernel gets a learner's environment: no user-level Jupyter settings or kernels, matplotlib's inline backend
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "PYTHONPATH")}
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
    )
    port = _free_port()
    log = open(base / "jupyterlab.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--ServerApp.token={TOKEN}",
            f"--ServerApp.root_dir={served}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={base / 'workspaces'}",
        ],
        cwd=served,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5):
                    break
            except OSError:
                assert proc.poll() is None, (base / "jupyterlab.log").read_text()[-3000:]
                assert time.monotonic() < deadline, f"JupyterLab did not answer within {SERVER_START_S} s"
                time.sleep(0.3)
        yield url
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (it shuts its kernels down), SIGKILL it if it lingers."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


@contextlib.contextmanager
def chromium_context(profile: Path):
    """Headless Debian Chromium, driven by Playwright, with the profile (user data dir) ``profile``; always closed."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: run `apt-get install -y chromium` "
            "(`make test` does it as root when it is missing), or point GPUCOST_CHROMIUM at a Chromium binary",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the Python package `playwright` is missing: "
            '.venv/bin/python -m pip install -c constraints.txt -e ".[course,test]"',
            pytrace=False,
        )
    pw = sync_playwright().start()
    context = None
    try:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
            timeout=60_000,
        )
        yield context
    finally:
        try:
            if context is not None:
                context.close()
        finally:
            pw.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Debian Chromium with a fresh profile."""
    for old in ARTIFACTS.glob("*.png"):  # this run's screenshots only
        old.unlink()
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture
def notebook_page(browser, lab, request):
    """A new tab; on failure, a full-page screenshot to artifacts/browser/<test>-failure.png. Afterwards the tab is
    closed and the server's kernels are shut down, so the next test starts from a quiet machine."""
    page = browser.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    try:
        yield page
        if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
            _screenshot(page, f"{request.node.name}-failure.png", full_page=True)
    finally:
        page.close()
        _shut_down_kernels(lab)


def _shut_down_kernels(lab_url: str) -> None:
    with urllib.request.urlopen(f"{lab_url}/api/kernels?token={TOKEN}", timeout=10) as r:
        kernels = json.load(r)
    for kernel in kernels:
        request = urllib.request.Request(f"{lab_url}/api/kernels/{kernel['id']}?token={TOKEN}", method="DELETE")
        with urllib.request.urlopen(request, timeout=30):
            pass


def _screenshot(target, name: str, **kwargs) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    target.screenshot(path=str(path), **kwargs)
    return path


def _error_outputs(panel) -> str:
    """The tracebacks shown in the notebook, for a failure message."""
    return "\n---\n".join(
        panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    )[-3000:]


def _open_and_run_all(page, lab_url: str, chapter: str):
    """Open a chapter as a learner would, wait for its kernel, then Run > Run All Cells and wait until it is done.

    Returns the notebook's panel. `reset` starts from an empty workspace (no tabs left from an earlier test)."""
    page.goto(f"{lab_url}/lab/tree/chapters/{chapter}?reset&token={TOKEN}", timeout=60_000)
    panel = page.locator(PANEL)
    panel.locator(".jp-CodeCell").first.wait_for(timeout=60_000)
    tab = page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel", has_text=chapter)
    tab.wait_for(timeout=STEP_TIMEOUT_MS)
    # the status bar names the kernel and its state: "Python 3 (ipykernel) | Idle" once it has started
    page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\|\s*Idle")).wait_for(timeout=60_000)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    try:
        page.wait_for_function(ALL_CELLS_RAN_AND_IDLE, arg=PANEL, timeout=RUN_ALL_TIMEOUT_MS)
    except Exception as err:  # playwright's TimeoutError
        raise AssertionError(
            f"{chapter}: Run All Cells did not finish with an idle kernel in "
            f"{RUN_ALL_TIMEOUT_MS / 1000:.0f} s ({err}); errors shown:\n{_error_outputs(panel)}"
        ) from err
    return panel


def _wait_for_text(locator, pattern: str, timeout_ms: int = STEP_TIMEOUT_MS) -> str:
    """Wait until the element's rendered text matches `pattern` (a regex); return that text."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout_ms / 1000
    text = ""
    while time.monotonic() < deadline:
        text = locator.inner_text(timeout=timeout_ms)
        if regex.search(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"text never matched {pattern!r} within {timeout_ms / 1000:.0f} s; last text:\n{text}")


def _rows(table_text: str) -> dict[str, list[str]]:
    """The rendered table's rows (tab-separated cells), keyed by their first cell."""
    rows = {}
    for line in table_text.splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) > 1:
            rows[cells[0]] = cells[1:]
    return rows


def test_ledger_slider_to_60_runs_out_of_memory_at_block_10(notebook_page, lab):
    page = notebook_page
    ledger = _open_and_run_all(page, lab, "04_memory_budget.ipynb").locator(".gpucost-ledger")
    assert ledger.count() == 1, "chapter 04 displays one memory ledger widget"
    slider = ledger.locator(".gpucost-ledger-microbatch")
    verdict, table = ledger.locator(".gpucost-ledger-verdict"), ledger.locator(".gpucost-ledger-table")

    before = _wait_for_text(verdict, r"fits: peak 14\.08 GB")
    assert "headroom 7.52 GB" in before and "largest microbatch that fits: 54" in before
    table_before = _wait_for_text(table, r"microbatch 32")
    assert _rows(table_before)["block 10"] == ["10.88", "14.08", "fits"]
    assert slider.locator(".widget-readout").inner_text().strip() == "32"
    ledger.scroll_into_view_if_needed()
    _screenshot(ledger, "ledger-before.png")

    # Move the slider the way a learner types a value: click its readout, replace the number, press Enter.
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("60")
    page.keyboard.press("Enter")

    after = _wait_for_text(verdict, r"out of memory at block 10")
    assert "23.6 GB resident, 2 GB over the 21.6 GB budget" in after
    assert "largest microbatch that fits: 54" in after
    table_after = _wait_for_text(table, r"microbatch 60")
    rows = _rows(table_after)
    assert rows["block 9"] == ["18.36", "21.56", "fits"]
    assert rows["block 10"] == ["20.4", "23.6", "over budget"]
    assert after != before and table_after != table_before
    assert readout.inner_text().strip() == "60"
    _screenshot(ledger, "ledger-after.png")


def _type_into_readout(page, control, value: str) -> None:
    """Set a slider the way a learner types a value: click its readout, replace the number, press Enter."""
    control.locator(".widget-readout").click()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


def test_ledger_full_recomputation_extends_the_slider_to_284(notebook_page, lab):
    page = notebook_page
    ledger = _open_and_run_all(page, lab, "04_memory_budget.ipynb").locator(".gpucost-ledger")
    slider, verdict = ledger.locator(".gpucost-ledger-microbatch"), ledger.locator(".gpucost-ledger-verdict")
    _wait_for_text(verdict, r"fits: peak 14\.08 GB")

    ledger.locator(".gpucost-ledger-recompute").get_by_label("full (activation checkpointing)").check()
    _wait_for_text(verdict, r"with activation checkpointing: 284 \(54 without\)")
    _type_into_readout(page, slider, "284")  # above the old end of 128: the page must have the new one
    after = _wait_for_text(verdict, r"fits: peak 21\.546 GB")
    assert slider.locator(".widget-readout").inner_text().strip() == "284"
    _type_into_readout(page, ledger.locator(".gpucost-ledger-accumulation"), "2")
    after = _wait_for_text(verdict, r"global batch 568")
    assert "takes 1.533 times as long" in after and "cost to target rises by the same factor" in after
    table = _wait_for_text(ledger.locator(".gpucost-ledger-table"), r"global batch 568")
    assert _rows(table)["recompute block 10"][:3] == ["18.346", "21.546", "fits"]
    ledger.scroll_into_view_if_needed()
    _screenshot(ledger, "ledger-full-recomputation.png")


def test_predictor_gain_slider_flips_the_verdict_to_cheaper(notebook_page, lab):
    page = notebook_page
    predictor = _open_and_run_all(page, lab, "03_price_the_result.ipynb").locator(".gpucost-predictor")
    assert predictor.count() == 1, "chapter 03 displays one cost predictor widget"
    gain = predictor.locator(".gpucost-predictor-gain")
    verdict, table = predictor.locator(".gpucost-predictor-verdict"), predictor.locator(".gpucost-predictor-table")

    before = _wait_for_text(verdict, r"relative cost 1\.042")
    assert "more expensive" in before and "cheaper" not in before
    table_before = _wait_for_text(table, r"candidate")
    assert _rows(table_before)["candidate"] == ["8.33", "$17.50", "no, 0.33 h late"]
    assert gain.locator(".widget-readout").inner_text().strip() == "+20%"
    predictor.scroll_into_view_if_needed()
    _screenshot(predictor, "predictor-before.png")

    # Move the slider the way a keyboard user does: focus its handle, ten presses of the right arrow (+1% each).
    handle = gain.locator(".noUi-handle")
    handle.focus()
    for _ in range(10):
        page.keyboard.press("ArrowRight")

    # wait for the final value: from +26% on the verdict already reads "cheaper" while later key presses are in flight
    after = _wait_for_text(verdict, r"relative cost 0\.962")
    assert "cheaper" in after and "more expensive" not in after
    assert _wait_for_text(gain.locator(".widget-readout"), r"^\s*\+30%\s*$")
    table_after = _wait_for_text(table, r"7\.69")
    rows = _rows(table_after)
    assert rows["candidate"] == ["7.69", "$16.15", "yes"]
    assert rows["baseline"] == ["8.00", "$16.80", "yes"]
    assert after != before and table_after != table_before
    _screenshot(predictor, "predictor-after.png")
