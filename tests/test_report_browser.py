"""The HTML report in a real headless Chromium: no console errors, plots decode, widget reacts.

Needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver) and the
selenium package; installs nothing itself.  Set NORMBENCH_SKIP_BROWSER=1 to skip.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

import synthetic

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "apt-get install -y chromium chromium-driver"


def _require_browser():
    if os.environ.get("NORMBENCH_SKIP_BROWSER") == "1":
        pytest.skip("NORMBENCH_SKIP_BROWSER=1")
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not found: run `{INSTALL}` "
                    "(or set NORMBENCH_SKIP_BROWSER=1 to skip the browser tests)", pytrace=False)
    if importlib.util.find_spec("selenium") is None:
        pytest.fail("selenium is not installed: `pip install -e .[test]` (or set "
                    "NORMBENCH_SKIP_BROWSER=1 to skip the browser tests)", pytrace=False)


@pytest.fixture(scope="module")
def page():
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    run_dir, _ = synthetic.reported_run()
    profile = tempfile.mkdtemp(prefix="normbench-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                 "--window-size=1400,1000"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        driver.get((run_dir / "report.html").resolve().as_uri())
        yield driver
    finally:
        driver.quit()
        import shutil
        shutil.rmtree(profile, ignore_errors=True)


def _text(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text.strip()


def _set(driver, element_id: str, value) -> None:
    """Set an input's value and fire the events a person typing would."""
    driver.execute_script(
        "const el = document.getElementById(arguments[0]); el.value = arguments[1];"
        "el.dispatchEvent(new Event('input', {bubbles: true}));"
        "el.dispatchEvent(new Event('change', {bubbles: true}));", element_id, str(value))


def test_page_loads_without_console_errors(page):
    assert page.title.startswith("normbench report")
    severe = [e for e in page.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe
    # every plot is an inline image that actually decodes
    n, ok = page.execute_script(
        "const im = Array.from(document.images);"
        "return [im.length, im.every(i => i.complete && i.naturalWidth > 0 && i.src.startsWith('data:'))];")
    assert n >= 8 and ok


def test_widget_numbers_follow_the_inputs(page):
    _set(page, "w-norm", "layernorm")
    _set(page, "w-rows", 8192)
    _set(page, "w-d", 4096)
    _set(page, "w-groups", 64)
    assert _text(page, "w-atomic-writers") == "8,192"
    assert _text(page, "w-grouped-writers") == "128"            # ceil(8192 / 64)
    assert _text(page, "w-disjoint-writers") == "1"
    assert _text(page, "w-workspace") == "2.000 MiB"            # 64 * 4096 * 4 B * 2 (dγ, dβ)
    assert "nondeterministic" in _text(page, "w-grouped-det")
    assert "deterministic" in _text(page, "w-disjoint-det")
    # the run measured this case (layernorm 8192 x 4096, GROUPS 64): times shown beside the model
    assert "ms" in _text(page, "w-meas-grouped_atomic")
    assert "ms" in _text(page, "w-meas-disjoint")
    rows_measured = int(_text(page, "w-measured-count"))
    assert rows_measured >= 4

    _set(page, "w-groups", 100)                                 # never measured at GROUPS=100
    assert _text(page, "w-grouped-writers") == "82"             # ceil(8192 / 100)
    assert _text(page, "w-meas-grouped_atomic") == "not measured"
    assert "ms" in _text(page, "w-meas-atomic")                 # atomic does not use GROUPS

    _set(page, "w-norm", "rmsnorm")
    _set(page, "w-groups", 64)
    assert _text(page, "w-workspace") == "1.000 MiB"            # dγ only

    page.find_element("id", "w-rows").clear()                   # typing, not only events
    page.find_element("id", "w-rows").send_keys("1000")
    assert _text(page, "w-atomic-writers") == "1,000"
    assert _text(page, "w-grouped-writers") == "16"             # ceil(1000 / 64)
    assert _text(page, "w-measured-count").startswith("none")

    _set(page, "w-rows", "")                                    # bad input: no exception
    assert _text(page, "w-atomic-writers") == "—"
    severe = [e for e in page.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe
