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
    run_dir, _ = synthetic.reported_run()
    yield from _chromium(run_dir / "report.html")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the tests that each write a report of their own: each
    shows its page with _show (a Chromium starts in about 2.5 s here; `page` keeps its own,
    which these tests never navigate away from)."""
    blank = tmp_path_factory.mktemp("blank") / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    yield from _chromium(blank)


def _show(driver, html: Path):
    """`driver` showing `html`, the browser log of whatever it showed before read and
    dropped (so a test's SEVERE check sees its own page's entries only)."""
    driver.get_log("browser")
    driver.get(html.resolve().as_uri())
    return driver


def _chromium(html: Path):
    """A headless Chromium showing `html`, quit (and its profile removed) when done."""
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

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
        driver.get(html.resolve().as_uri())
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


def _row(driver, impl: str) -> dict:
    """The widget's cells for one implementation, by class."""
    tr = driver.find_element("css selector", f'tr[data-implementation="{impl}"]')
    return {c: tr.find_element("css selector", f"td.w-{c}").text.strip()
            for c in ("geff", "writers", "workspace", "det", "meas")}


def test_widget_rows_come_from_the_registry(page):
    from normbench import strategies
    shown = page.execute_script(
        "return Array.from(document.querySelectorAll('#w-model-body tr'))"
        ".map(t => t.getAttribute('data-implementation'));")
    assert set(strategies.known()) <= set(shown)       # one row per registered entry
    for e in strategies.entries():                     # strategies first, then baselines
        if e.kind == "baseline":
            assert shown.index(e.name) > max(shown.index(x.name) for x in strategies.entries()
                                             if x.kind == "strategy")


def test_widget_numbers_follow_the_inputs(page):
    from normbench import strategies
    _set(page, "w-norm", "layernorm")
    _set(page, "w-rows", 8192)
    _set(page, "w-d", 4096)
    _set(page, "w-groups", 64)
    assert _row(page, "atomic")["writers"] == "8,192"
    assert _row(page, "grouped_atomic")["writers"] == "128"           # ceil(8192 / 64)
    assert _row(page, "disjoint_block")["writers"] == "1"
    ws = strategies.get("grouped_atomic").workspace_bytes(8192, 4096, 64, True)
    assert ws == 64 * 4096 * 4 * 2 and _row(page, "grouped_atomic")["workspace"] == "2.000 MiB"
    assert "nondeterministic" in _row(page, "grouped_atomic")["det"]
    assert "deterministic by design" in _row(page, "disjoint_block")["det"]
    # the run measured this case (layernorm 8192 x 4096, GROUPS 64): times shown beside the model
    assert "µs" in _row(page, "grouped_atomic")["meas"]
    assert "µs" in _row(page, "disjoint_block")["meas"]
    assert int(_text(page, "w-measured-count")) >= 4

    _set(page, "w-groups", 128)                                 # never measured at GROUPS=128
    assert _row(page, "grouped_atomic")["writers"] == "64"
    assert _row(page, "grouped_atomic")["meas"] == "not measured"
    assert "µs" in _row(page, "atomic")["meas"]                 # atomic does not use GROUPS

    _set(page, "w-norm", "rmsnorm")
    _set(page, "w-groups", 64)
    assert _row(page, "grouped_atomic")["workspace"] == "1.000 MiB"     # dγ only

    _set(page, "w-rows", 1024)
    assert _row(page, "atomic")["writers"] == "1,024"
    assert _row(page, "grouped_atomic")["writers"] == "16"             # ceil(1024 / 64)
    _set(page, "w-rows", 2)                                            # rows < GROUPS: capped
    assert _row(page, "grouped_atomic")["geff"] == "2"
    assert _text(page, "w-measured-count").startswith("none")
    severe = [e for e in page.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe


def test_answer_and_sample_views_render(page):
    headers = page.execute_script(
        "return Array.from(document.querySelectorAll('table.answer th')).map(t => t.textContent);")
    assert headers[3:6] == ["best deterministic", "det µs", "det p20–p80 µs"]
    assert "det ÷ nondet" in headers and "peer ÷ det" in headers
    for name in ("samples", "roofline"):
        ok = page.execute_script(
            f"const im = document.querySelector('#plot-{name} img');"
            "return im !== null && im.complete && im.naturalWidth > 300;")
        assert ok, name


def test_widget_shows_medians_of_correct_records_only_and_both_dtypes(tmp_path, browser):
    """A record that ran but failed against fp64 was shown as a measured median, and two
    records of one shape told apart by their weight dtype both read "(bf16)".  Now: a median
    only where the record is correct, ✗ incorrect where it is not, each labelled dtype /
    weight dtype; the records table has a correctness column."""
    from normbench.harness.report import write_report
    common = dict(norm="layernorm", rows=1024, d=1024, implementation="torch", kind="baseline")
    run = synthetic.write_run(tmp_path / "run", [
        synthetic.record(weight_dtype="bf16", time_ms=0.020, **common),
        synthetic.record(weight_dtype="fp32", time_ms=0.010, correct=False, **common)],
        synthetic.meta())
    write_report(run)
    for driver in (_show(browser, run / "report.html"),):
        _set(driver, "w-norm", "layernorm")
        _set(driver, "w-rows", 1024)
        _set(driver, "w-d", 1024)
        assert _row(driver, "torch")["meas"] == "20.0 µs (bf16 / bf16); ✗ incorrect (bf16 / fp32)"
        rows = driver.execute_script(
            "return Array.from(document.querySelectorAll('#w-measured tr'))"
            ".map(t => Array.from(t.cells).map(c => c.textContent));")
        heads = driver.execute_script(
            "return Array.from(document.querySelectorAll('#w-measured-table th'))"
            ".map(t => t.textContent);")
        got = {r[2]: dict(zip(heads, r)) for r in rows}
        assert got["bf16 / bf16"]["correct (vs fp64)"] == "yes"
        assert got["bf16 / fp32"]["correct (vs fp64)"] == "✗ no"
        assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def test_widget_of_an_implementation_without_a_model_still_says_it_is_deterministic(
        tmp_path, monkeypatch, browser):
    """The determinism cell of an entry without a model here (registered unavailable, or
    not registered on the machine writing the report) showed only the error — "not available
    here: …" for two Gluon strategies deterministic by design.  It says "bitwise
    deterministic by design" where the entry (or the record) says so, then why there is no
    model; an unavailable entry with a declared model shows it as an available one does."""
    from normbench.harness.report import write_report
    synthetic.register_unavailable_test_entries(monkeypatch)
    common = dict(norm="layernorm", rows=1024, d=1024)
    run = synthetic.write_run(tmp_path / "run", [
        synthetic.record(implementation="test_gluon", groups=64, groups_effective=64,
                         deterministic_by_design=True, time_ms=0.02, **common),
        synthetic.record(implementation="test_peer", kind="baseline", time_ms=0.03,
                         deterministic_by_design=True, **common),
        synthetic.record(implementation="test_elsewhere", kind="baseline", time_ms=0.04,
                         deterministic_by_design=True, **common)], synthetic.meta())
    write_report(run)
    for driver in (_show(browser, run / "report.html"),):
        for k, v in (("w-norm", "layernorm"), ("w-rows", 1024), ("w-d", 1024), ("w-groups", 64)):
            _set(driver, k, v)
        gluon, peer, other = (_row(driver, n) for n in ("test_gluon", "test_peer",
                                                         "test_elsewhere"))
        assert (gluon["writers"], gluon["geff"]) == ("1", "64")
        assert gluon["det"] == "bitwise deterministic by design"
        assert gluon["meas"].startswith("20.0 µs")
        assert peer["det"] == ("bitwise deterministic by design; no model: test_peer is not "
                               "available on the machine that wrote this report (test-peer "
                               "is not installed)")
        assert peer["writers"] == "—" and peer["meas"].startswith("30.0 µs")
        assert other["det"] == ("bitwise deterministic by design; no model: test_elsewhere is "
                                "not registered on the machine that wrote this report")
        assert not [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
