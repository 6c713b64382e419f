"""harness/report.py on synthetic recorded runs (CPU only, no kernels)."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import sys
from pathlib import Path

import pandas as pd

import pytest
from PIL import Image

import synthetic
from normbench.harness import model
from normbench.harness.report import build_report, write_report
from tests import forkcli

ROOT = Path(__file__).resolve().parent.parent

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def full():
    run_dir, written = synthetic.reported_run()
    return run_dir, written, (run_dir / "report.html").read_text(), (run_dir / "report.md").read_text()


def _expected_answer(records, shape):
    """Fastest and fastest measured-deterministic passing record of one shape, by hand."""
    norm, rows, d = shape
    comp = [r for r in records if (r["norm"], r["rows"], r["d"]) == shape
            and r["status"] == "ok" and r["correct"] is True]
    fast = min(comp, key=lambda r: r["time_ms"])
    det = min((r for r in comp if r["deterministic"] is True), key=lambda r: r["time_ms"])
    return fast, det


def test_every_file_written_and_pngs_valid(full):
    run_dir, written, _, _ = full
    assert {"report.html", "report.md"} <= set(written)
    pngs = [k for k in written if k.startswith("plots/")]
    names = {k.split("/")[1] for k in pngs}
    # bandwidth per norm, a GROUPS heatmap per grouped strategy, determinism, speedup, workspace
    assert {"bandwidth_rmsnorm.png", "bandwidth_layernorm.png", "groups_grouped_atomic.png",
            "groups_spin_lock.png", "groups_disjoint_block.png", "determinism.png",
            "speedup_vs_torch.png", "workspace_vs_writers.png", "samples.png",
            "roofline.png"} <= names
    for key, path in written.items():
        assert path.exists() and path.stat().st_size > 0, key
        assert path.parent in (run_dir, run_dir / "plots")
    for key in pngs:
        data = written[key].read_bytes()
        assert data[:8] == PNG_MAGIC, key
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
            assert im.size[0] > 200 and im.size[1] > 100


def test_html_is_self_contained_and_embeds_every_plot(full):
    run_dir, written, html, _ = full
    for key in (k for k in written if k.startswith("plots/")):
        b64 = base64.b64encode(written[key].read_bytes()).decode()
        assert f'src="data:image/png;base64,{b64}"' in html, key
    # nothing fetched from anywhere: every src/href is a data URI or an in-page anchor
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), refs
    assert "<script src" not in html and "<link rel=\"stylesheet\"" not in html
    assert 'id="w-data"' in html and 'id="w-rows"' in html


def test_report_opens_with_the_answer(full):
    _, _, html, md = full
    for text in (html, md):
        i_answer = text.index("The answer: best deterministic, best nondeterministic and best peer")
        assert i_answer < text.index("Failures") < text.index("Environment") < text.index("Plots")
    records = synthetic.sweep_records()
    shape = ("layernorm", 8192, 4096)
    comp = [r for r in records if (r["norm"], r["rows"], r["d"]) == shape
            and r["status"] == "ok" and r["correct"] is True]
    # by hand: deterministic = strategies deterministic by design (the disjoint ones)
    det = min((r for r in comp if r["kind"] == "strategy" and r["deterministic_by_design"]),
              key=lambda r: r["time_ms"])
    nondet = min((r for r in comp if r["kind"] == "strategy" and not r["deterministic_by_design"]),
                 key=lambda r: r["time_ms"])
    peer = min((r for r in comp if r["kind"] == "baseline"), key=lambda r: r["time_ms"])
    assert (det["implementation"], nondet["implementation"], peer["implementation"]) == \
        ("disjoint_block", "grouped_atomic", "torch")
    row = next(line for line in md.splitlines() if line.startswith("| layernorm | 8192 × 4096 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == f"disjoint_block (G={det['groups']})"
    assert cells[4] == f"{det['time_ms'] * 1000:.1f}"
    assert cells[5] == f"{det['time_p20_ms'] * 1000:.1f}–{det['time_p80_ms'] * 1000:.1f}"
    assert cells[6] == f"grouped_atomic (G={nondet['groups']})"
    assert cells[9] == "torch" and cells[10] == f"{peer['time_ms'] * 1000:.1f}"
    assert cells[12] == f"{det['time_ms'] / nondet['time_ms']:.2f}"
    assert cells[13] == f"{peer['time_ms'] / det['time_ms']:.2f}"
    assert "GPU time not measured" in md


def test_failures_listed_with_error_text(full):
    _, _, html, md = full
    section = md[md.index("## Failures"):md.index("## Environment")]
    assert "CompilationError: out of resources" in section
    assert section.count("liger-kernel is not installed") == 8
    assert "error" in section and "skipped" in section
    # errors come before skips
    assert section.index("CompilationError") < section.index("liger-kernel")
    assert "CompilationError: out of resources" in html


def test_environment_and_bandwidth_prediction(full):
    _, _, html, md = full
    assert "NVIDIA H200" in md and "560.35.03" in md and "0123456789abcdef" in md
    assert "name: seed-worked-example" in md            # config text verbatim
    assert "CPU wall-clock" not in md                   # a GPU run: no interpreter warning
    assert "a race cannot show" not in md
    sec = md[md.index("## Measured time against the bandwidth bound"):md.index("## Plots")]
    nb = model.bytes_moved("rmsnorm", 8192, 4096, "bf16", "fp32")
    floor_copy = model.bandwidth_bound_ms(nb, synthetic.COPY_CEILING_GBPS / 1000) * 1000
    floor_peak = model.bandwidth_bound_ms(nb, synthetic.PEAK_TBPS) * 1000
    assert f"| {floor_copy:.1f} | {floor_peak:.1f} |" in sec


def test_markdown_references_plots_by_relative_path(full):
    _, written, _, md = full
    for key in (k for k in written if k.startswith("plots/")):
        assert f"]({key})" in md
    assert "base64" not in md
    # a grouped strategy measured at a single GROUPS is skipped with a note
    assert "`disjoint_fused`: skipped — only one GROUPS value per shape measured and passing (66)" in md


def test_all_errors_run_still_reports(tmp_path):
    recs = [synthetic.record(implementation=impl, status=st, error=f"{impl} failed: boom {i}",
                             rows=1024 * (i + 1))
            for i, (impl, st) in enumerate([("atomic", "error"), ("torch", "timeout"),
                                            ("disjoint_block", "error"), ("liger", "skipped")])]
    run_dir = synthetic.write_run(tmp_path / "run", recs, synthetic.meta(config_name="quick"))
    written = write_report(run_dir)
    html = (run_dir / "report.html").read_text()
    md = (run_dir / "report.md").read_text()
    assert (run_dir / "report.html").exists() and (run_dir / "report.md").exists()
    assert "No implementation passed" in md
    for i in range(4):
        assert f"boom {i}" in md and f"boom {i}" in html
    assert "timeout" in md
    assert not [k for k in written if k.startswith("plots/")]     # nothing to plot
    assert "Skipped" in md


def test_odd_run_interpreter_single_impl_nans_no_groups(tmp_path):
    recs = [synthetic.record(implementation="atomic", rows=r, d=256, timer="cpu_wall",
                             writers_per_slot=r, workspace_bytes=1024, time_ms=5.0 + r / 1000)
            for r in (64, 128)]
    recs.append(synthetic.record(implementation="atomic", rows=256, d=256, timer="cpu_wall",
                                 correct=None, deterministic=None, distinct_results=None))
    recs[-1].update(time_ms=float("nan"), time_p20_ms=None, time_p80_ms=None,
                    time_samples_ms=None, gbps=None, pct_copy=None, pct_peak=None)
    recs.append(synthetic.record(implementation="atomic", rows=512, d=256, timer="cpu_wall",
                                 correct=False))
    for r in recs:                  # measured against no ceiling and no peak, as meta says
        r.update(pct_copy=None, pct_peak=None)
    meta = synthetic.meta(interpreted=True, timer="cpu_wall", device_name="cpu",
                          config_name="cpu", copy_ceiling_gbps=None, peak_tbps=None)
    run_dir = synthetic.write_run(tmp_path / "run", recs, meta)
    write_report(run_dir)                                      # baseline torch is absent
    md = (run_dir / "report.md").read_text()
    assert "CPU wall-clock under the Triton interpreter" in md
    assert "a race cannot show, so these verdicts say nothing of a GPU's" in md
    assert "baseline `torch` is not in this run" in md
    assert "no implementation in this run uses GROUPS" in md
    assert "correctness not checked" in md and "incorrect" in md
    assert "Measured time against the bandwidth bound" not in md   # no copy/peak, not seed
    assert "Warning:** " in md and "plot failed" not in md


def test_crafted_names_stay_inside_plots(tmp_path):
    recs = [synthetic.record(implementation=name, groups=g, groups_effective=g, rows=r,
                             time_ms=0.01 * g + r / 1e5, writers_per_slot=1, workspace_bytes=64)
            for name in ("../x", "a/b", "torch") for g in (2, 4) for r in (64, 128)]
    run_dir = synthetic.write_run(tmp_path / "run", recs, synthetic.meta(config_name="crafted"))
    written = write_report(run_dir, baseline="../x")
    plots = (run_dir / "plots").resolve()
    for key, path in written.items():
        assert path.resolve().parent in (run_dir.resolve(), plots), key
    assert not (tmp_path / "x.png").exists() and not list(tmp_path.glob("*.png"))
    names = {p.name for p in plots.iterdir()}
    assert {"groups_.._x.png", "groups_a_b.png", "speedup_vs_.._x.png"} <= names
    assert all("/" not in n and not n.startswith(".") for n in names)


def test_one_shape_one_groups_and_samples_as_lists(tmp_path):
    recs = [synthetic.record(implementation=n, rows=2048, d=768, groups="auto", groups_effective=66,
                             kind=k, deterministic_by_design=det, time_ms=t,
                             writers_per_slot=1, workspace_bytes=100)
            for n, k, det, t in (("s_det", "strategy", True, 0.02), ("s_nd", "strategy", False, 0.01),
                                 ("torch", "baseline", True, 0.03))]
    for r in recs:
        r["time_samples_ms"] = json.loads(r["time_samples_ms"])     # the parquet form: a list
    df = pd.DataFrame(recs)
    rep = build_report(df, synthetic.meta(config_name="one"))
    names = {f.name for f in rep.figures}
    assert "samples" in names and "roofline" in names
    assert not any(n.startswith("groups_") for n in names)          # no one-cell heatmaps
    md = rep.markdown()
    assert "only one GROUPS value per shape" in md
    # bf16 activations with an fp32 weight: the weight named, though the only one of the run
    assert "| rmsnorm | 2048 × 768 | bf16/fp32 | s_det (G=auto→66) | 20.0 | 19.9–20.1 | s_nd" in md


def test_baseline_not_in_run_is_one_line(tmp_path):
    run_dir = synthetic.write_run(tmp_path / "run", [synthetic.record()], synthetic.meta())
    r = forkcli.run([sys.executable, ROOT / "run_bench.py", "report", run_dir, "--baseline",
                     "nosuch"], text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "'nosuch' is not an implementation" in r.stderr
    assert "Traceback" not in r.stderr


def test_report_of_a_run_without_torch_needs_no_baseline(tmp_path):
    """`report DIR` with no --baseline reports a run that has no torch record (the speedup
    plot is left out), as the committed results/h200-hang is."""
    rec = synthetic.record(implementation="s_det", deterministic_by_design=True)
    run_dir = synthetic.write_run(tmp_path / "run", [rec], synthetic.meta())
    r = forkcli.run([sys.executable, ROOT / "run_bench.py", "report", run_dir], text=True,
                    cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert (run_dir / "report.html").stat().st_size > 0


def test_plugin_strategy_appears_everywhere(tmp_path):
    """A strategy in one file under tests/, loaded as plugins are, runs in a tiny sweep and shows
    up in the report's tables, plots and widget with no other edit."""
    cfg = tmp_path / "p.yaml"
    cfg.write_text(json.dumps({"name": "plugin", "norm": ["layernorm"], "rows": [6], "d": [16],
                               "dtype": ["fp32"], "groups": [2, 3],
                               "implementations": ["test_plugin_rows", "torch"],
                               "timing": {"warmup_ms": 1, "rep_ms": 1},
                               "determinism": {"repeats": 2}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NORMBENCH_PLUGINS": "tests.plugin_strategy",
           "NORMBENCH_QUIET": "1", "COLUMNS": "200"}
    r = forkcli.run([sys.executable, ROOT / "run_bench.py", "run", cfg, "--out", tmp_path / "run"],
                    text=True, cwd=ROOT, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "test_plugin_rows" in r.stdout                           # the terminal table
    run_dir = tmp_path / "run"
    md, html = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
    assert "| test_plugin_rows (G=" in md.split("## Failures")[0]     # the answer table
    assert (run_dir / "plots" / "groups_test_plugin_rows.png").exists()
    data = json.loads(re.search(r'<script type="application/json" id="w-data">(.*?)</script>',
                                html, re.S).group(1))
    entry = next(e for e in data["entries"] if e["name"] == "test_plugin_rows")
    gi = data["grid"]["groups"].index(2)
    ri, di = data["grid"]["rows"].index(6), data["grid"]["d"].index(16)
    assert entry["writers"][ri][di][gi] == 3                        # its own model: ceil(6 / 2)
    assert entry["workspace_ln"][ri][di][gi] == 7 * 2 * 16 * 2


def test_host_bound_records_measured_next_to_others_are_flagged():
    """issue 18 §2: a host-bound call measured while other cases ran on the host is marked ‡
    in the answer (and counted in its bullets) and listed in its own section; the same run
    measured alone has neither."""
    def run(concurrent):
        recs = [synthetic.record(implementation="disjoint_block", kind="strategy",
                                 deterministic_by_design=True, groups="64", groups_effective=64,
                                 time_ms=0.05, seed=1),            # 50 µs: host-bound
                synthetic.record(implementation="atomic", kind="strategy",
                                 deterministic_by_design=False, time_ms=2.0, seed=2),
                synthetic.record(implementation="torch", kind="baseline", time_ms=0.08, seed=3)]
        for r in recs:
            r.update(concurrent_cases=concurrent, hostname="node7", gpu_index=0)
        return build_report(pd.DataFrame(recs), synthetic.meta())

    alone, together = run(1), run(3)
    table = next(b[1] for b in together.blocks if b[0] == "table" and b[2] == "answer")
    assert table.iloc[0]["det µs"].endswith("‡") and table.iloc[0]["peer µs"].endswith("‡")
    assert not table.iloc[0]["nondet µs"].endswith("‡")             # 2 ms: not host-bound
    md = together.markdown()
    assert "## Measured next to other cases" in md and "2 of them are host-bound" in md
    assert "2 of the times in this table are marked ‡" in md
    (flagged,) = [b[1] for b in together.blocks if b[0] == "table" and b[2] == "contention"]
    assert set(flagged["implementation"]) == {"disjoint_block (G=64)", "torch"}
    assert set(flagged["host"]) == {"node7"} and set(flagged["concurrent"]) == {"3"}
    md = alone.markdown()
    assert "‡" not in md.split("## Failures")[0].replace("‡ a host-bound", "")
    assert "Measured next to other cases" not in md
    # report --markdown-table marks the same cells and says why (it dropped the ‡)
    from normbench.harness.report.answer import markdown_table
    recs = [synthetic.record(implementation="disjoint_block", kind="strategy",
                             deterministic_by_design=True, groups="64", groups_effective=64,
                             time_ms=0.05, seed=1, concurrent_cases=3, hostname="node7"),
            synthetic.record(implementation="torch", kind="baseline", time_ms=0.08, seed=3,
                             concurrent_cases=3, hostname="node7")]
    text = markdown_table(pd.DataFrame(recs))
    assert "**50.0 ‡** disjoint_block" in text and "| 80.0 ‡ |" in text
    assert "2 of the times in this table are marked ‡" in text
    for r in recs:
        r["concurrent_cases"] = 1
    assert "‡" not in markdown_table(pd.DataFrame(recs))


def test_shapes_where_the_deciding_clock_is_unknown_are_counted_apart():
    """A shape whose peer has no GPU time is unknown ("decided on" blank), not "GPU": the
    bullet counts it apart instead of "host at 0 of 2 shapes"."""
    recs = []
    for rows in (64, 1024):
        for impl, kind, t, g in (("disjoint_block", "strategy", 0.05, 0.04),
                                 ("torch", "baseline", 0.08, 0.07)):
            recs.append(synthetic.record(implementation=impl, kind=kind, rows=rows, time_ms=t,
                                         groups="4" if kind == "strategy" else "-",
                                         gpu_time_ms=None if rows == 64 and impl == "torch"
                                         else g))
    md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    assert ("the ranking is decided on the host at 0 of 1 shapes where it is known; unknown "
            "at 1") in md
    for r in recs:
        r["gpu_time_ms"] = None if r["implementation"] == "torch" else r["gpu_time_ms"]
    md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    assert "where the ranking is decided is unknown at all 2 shapes" in md


def test_tiny_ratios_keep_significant_digits():
    from normbench.harness.report.fmt import fmt_ratio
    assert [fmt_ratio(v) for v in (0.0012345, 0.853, 1.0, 1.2949, 12.34, 1234.5)] == \
        ["0.00123", "0.853", "1.00", "1.29", "12.3", "1234"]
    assert fmt_ratio(float("nan")) == "" and fmt_ratio(None) == ""


def test_an_incorrect_record_names_the_outputs_past_their_own_tolerance():
    import pandas as pd
    from normbench.harness.report.sections import _over_tolerance
    r = pd.Series(dict(tolerance=3e-2, tolerance_dw=1e-4, err_dx=2e-3, err_dw=5e-3,
                       err_db=float("inf"), max_rel_err=float("inf")))
    assert _over_tolerance(r) == "past its tolerance: dγ 0.005 > 0.0001, dβ inf > 0.0001 (dx 0.002 within)"
    old = pd.Series(dict(tolerance=3e-2, tolerance_dw=pd.NA, err_dx=0.5, err_dw=1e-3,
                         err_db=None, max_rel_err=0.5))      # a run from before tolerance_dw
    assert _over_tolerance(old) == "past its tolerance: dx 0.5 > 0.03 (dγ 0.001 within)"


def test_the_answer_says_none_passed_only_where_the_run_has_such_a_strategy():
    """A run of deterministic strategies and peers only: its nondeterministic column says
    "not in run", not "none passed" (which reads as a failure)."""
    import pandas as pd
    from normbench.harness.report.answer import answer_table
    recs = [synthetic.record(implementation="torch", kind="baseline"),
            synthetic.record(implementation="disjoint_block", groups=4, deterministic=True,
                             deterministic_by_design=True),
            synthetic.record(implementation="disjoint_block", rows=64, groups=4,
                             deterministic=True, deterministic_by_design=True),
            synthetic.record(implementation="atomic", rows=64, status="error", error="x",
                             deterministic=None, deterministic_by_design=False)]
    t, _ = answer_table(pd.DataFrame(recs))
    assert t["best nondeterministic"].tolist() == ["none passed", "not in run"]   # 64, 1024 rows
    assert t["best peer"].tolist() == ["not in run", "torch"]
    # deterministic by design, its repeats differing: it competes as nondeterministic, and
    # the deterministic column says none passed (it is in the run)
    flip = [synthetic.record(implementation="disjoint_block", groups=4, deterministic=False,
                             distinct_results=2, deterministic_by_design=True),
            synthetic.record(implementation="torch", kind="baseline")]
    t, _ = answer_table(pd.DataFrame(flip))
    assert t["best deterministic"].tolist() == ["none passed"]


def test_the_markdown_table_of_a_run_where_nothing_passed(tmp_path):
    from normbench.harness.report import write_table
    run = synthetic.write_run(tmp_path / "r", [
        synthetic.record(implementation="torch", status="error", error="x"),
        synthetic.record(implementation="disjoint_block", groups=4, status="timeout",
                         error="t")], synthetic.meta())
    text = write_table(run)
    assert "| RMS | 1024 × 1024 |" in text


def test_records_measured_against_different_copy_ceilings_draw_no_single_one(tmp_path):
    """Merged shards from GPUs of different ceilings: meta holds their median, each record
    its own % of copy — the report draws and predicts from no single ceiling then."""
    from normbench.harness.report.fmt import one_copy_ceiling, plain
    from normbench.harness.store import load_records
    a = synthetic.record(implementation="torch", time_ms=0.2)
    b = synthetic.record(implementation="atomic", time_ms=0.2)
    a["pct_copy"] = a["gbps"] / 2000 * 100           # measured on a 2000 GB/s GPU
    b["pct_copy"] = b["gbps"] / 4000 * 100           # and on a 4000 GB/s one
    meta = synthetic.meta(copy_ceiling_gbps=3000.0)
    run = synthetic.write_run(tmp_path / "m", [a, b], meta)
    df = plain(load_records(run))
    assert one_copy_ceiling(df, meta) is None
    same = synthetic.write_run(tmp_path / "s", [synthetic.record(implementation="torch")],
                               synthetic.meta())
    assert one_copy_ceiling(plain(load_records(same)), synthetic.meta()) == \
        synthetic.COPY_CEILING_GBPS
    rep = build_report(load_records(run), meta)
    assert "different copy ceilings" in rep.markdown()


def test_markdown_cells_show_html_never_render_it():
    from normbench.harness.cells import md_cell
    assert md_cell("<script>x</script> | y") == "&lt;script&gt;x&lt;/script&gt; \\| y"


def test_a_directory_that_is_not_a_run_is_never_written(tmp_path):
    """write_report replaces a run's plots/*.png: a directory of the user's own is refused."""
    from normbench.harness.report import ReportError, write_report
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "mine.png").write_bytes(b"png")
    (tmp_path / "report.md").write_text("my notes")
    with pytest.raises(ReportError, match="not a run directory"):
        write_report(tmp_path)
    assert (tmp_path / "plots" / "mine.png").exists()
    assert (tmp_path / "report.md").read_text() == "my notes"


def test_an_ok_correct_record_without_a_positive_finite_time_is_listed_not_dropped():
    """A hand-edited records.csv: an ok and correct record whose median is empty, inf, 0 or
    negative does not compete; the failures section says so, and the bandwidth-bound table
    never shows its time (nor a negative measured / floor)."""
    recs = [synthetic.record(implementation="torch", kind="baseline", time_ms=0.05)]
    for i, t in enumerate((None, float("inf"), 0.0, -5.0)):
        recs.append(synthetic.record(implementation=f"bad{i}", time_ms=0.04, seed=i))
        recs[-1]["time_ms"] = t
    md = build_report(pd.DataFrame(recs), synthetic.meta(completed=True)).markdown()
    fails = md.split("## Failures")[1].split("\n## ")[0]
    assert "(4)" in fails and "4 no positive finite time." in fails
    assert "median time -5 ms" in fails and "median time empty" in fails
    pred = next(t for t in md.split("\n\n") if "| measured µs |" in t)
    assert [r.split("|")[1].strip() for r in pred.splitlines()[2:]] == ["torch"]
    assert "-5000" not in md


def test_a_plugin_model_giving_inf_or_negative_values_is_its_entry_error(tmp_path, monkeypatch):
    """A plugin's writers model that gives inf at 2^20 rows (or a workspace of -5 bytes) made
    every report fail, whatever the run measured: the widget's JSON cannot hold inf ('report:
    cannot write the report of …: ValueError: Out of range float values are not JSON
    compliant', exit 2, so every run ended without its report).  Each value is now checked as
    a record's is: that entry alone says why, naming the value and the point of the grid."""
    from normbench.strategies import _registry

    def fake(name, **models):
        e = _registry.Entry(name=name, kind="strategy", deterministic_by_design=False,
                            uses_groups=False, fn=lambda *a, **k: None, doc="test", **models)
        monkeypatch.setitem(_registry._REGISTRY, name, e)
    fake("test_inf_writers", writers=lambda rows, g: float("inf") if rows > 2 ** 19 else rows)
    fake("test_negative_workspace", workspace=lambda rows, d, g, hb: -5)
    fake("test_zero_writers", writers=lambda rows, g: 0)
    fake("test_nan_writers", writers=lambda rows, g: float("nan"))
    run_dir = synthetic.write_run(tmp_path / "run", [synthetic.record(implementation="torch")],
                                  synthetic.meta())
    write_report(run_dir)
    html = (run_dir / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="w-data">(.*?)</script>',
                                html, re.S).group(1))
    errors = {e["name"]: e["error"] for e in data["entries"]}
    assert errors["test_inf_writers"] == (
        "model not evaluable here: ValueError: its writers(): column 'writers_per_slot' (Int64) "
        "cannot hold float inf (at rows=1048576, d=16)")
    assert errors["test_negative_workspace"].endswith(
        "its workspace(): column 'workspace_bytes' cannot hold -5: it takes an int >= 0 "
        "(at rows=1, d=16)")
    assert "cannot hold 0: it takes an int >= 1" in errors["test_zero_writers"]
    assert "cannot hold nan" in errors["test_nan_writers"]
    assert errors["torch"] is None and errors["disjoint_block"] is None   # the others' models


def test_an_implementation_unavailable_where_the_report_is_written_keeps_its_model(
        tmp_path, monkeypatch):
    """A report written on a CPU from an H200's records said "not available here: Gluon
    kernels do not run under the Triton interpreter" beside disjoint_smem's measured µs, and
    for liger and quack, with no model.  A Gluon strategy declares its contention model as
    data whether it can run or not: the widget evaluates it; an entry without one (a peer,
    whose partial rows come from its package) says plainly it has no model on the machine
    that wrote the report, and why."""
    from normbench import strategies
    for name in ("disjoint_smem", "disjoint_cluster"):      # available or not on this machine
        assert strategies.get(name).contention is not None
    synthetic.register_unavailable_test_entries(monkeypatch)
    run_dir = synthetic.write_run(tmp_path / "run", [
        synthetic.record(implementation="test_gluon", norm="layernorm", rows=8192, d=4096,
                         groups=64, groups_effective=64, deterministic_by_design=True),
        synthetic.record(implementation="test_peer", kind="baseline", norm="layernorm",
                         rows=8192, d=4096, deterministic_by_design=True)], synthetic.meta())
    write_report(run_dir)
    html = (run_dir / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="w-data">(.*?)</script>',
                                html, re.S).group(1))
    got = {e["name"]: e for e in data["entries"]}
    gluon, peer = got["test_gluon"], got["test_peer"]
    assert gluon["error"] is None and not gluon["available"]
    r, d, g = (data["grid"][k].index(v) for k, v in (("rows", 8192), ("d", 4096), ("groups", 64)))
    assert gluon["writers"][r][d][g] == 1 and gluon["groups_effective"][r][d][g] == 64
    assert gluon["workspace_ln"][r][d][g] == 64 * 4096 * 4 * 2
    assert peer["error"] == ("no model: test_peer is not available on the machine that wrote "
                             "this report (test-peer is not installed)")
    assert "writers" not in peer and peer["deterministic_by_design"] is True
    assert "not available here" not in html


def test_a_config_holding_a_fence_stays_inside_the_verbatim_block():
    """A config whose description holds an indented ``` line closed report.md's fence early:
    the next line rendered as a heading, </details> closed, and the real closing fence opened a
    block that swallowed the rest of the report.  The fence is now longer than any backtick
    run in the config, so the whole config is one code block and nothing after it is code."""
    from normbench.harness.report import build_report
    cfg = ("name: fenced\ndescription: |\n  text\n  ```\n  # Injected heading\n  ````\n"
           "rows: [1024]\n")
    recs = pd.DataFrame([synthetic.record()])
    md = build_report(recs, synthetic.meta(config_text=cfg)).markdown()
    assert "`````\n" + cfg + "`````\n" in md
    markdown_it = pytest.importorskip("markdown_it")
    tokens = markdown_it.MarkdownIt("commonmark").parse(md)
    assert not any(t.type == "heading_open" and "Injected" in tokens[i + 1].content
                   for i, t in enumerate(tokens))
    fences = [t for t in tokens if t.type == "fence"]
    assert [t.content for t in fences] == [cfg]
    # the report's last line is prose after the block, not inside a code block
    assert not md.rstrip("\n").endswith("`````")


def _two_impl_run(run_dir: Path) -> Path:
    recs = [synthetic.record(implementation=n, rows=r, d=256, time_ms=t * r / 1024, seed=r,
                             writers_per_slot=r, workspace_bytes=1024)
            for n, t in (("torch", 0.03), ("atomic", 0.02)) for r in (1024, 2048)]
    return synthetic.write_run(run_dir, recs, synthetic.meta(config_name="two"))


def _linked_plots_missing(run_dir: Path) -> list[str]:
    """The plots that report.md on disk links and plots/ lacks."""
    md = run_dir / "report.md"
    links = re.findall(r"\]\((plots/[^)]+\.png)\)", md.read_text()) if md.exists() else []
    return [x for x in links if not (run_dir / x).is_file()]


def test_a_report_rewritten_leaves_every_plot_its_pages_link_at_every_step(tmp_path,
                                                                          monkeypatch):
    """A report written again over an earlier one: at every file written (where a signal or a
    full disk may stop it) each plot report.md links is there, old or new; the earlier
    report's plots this one lacks go last.  Every old plot was unlinked first: a Ctrl-C
    then left plots/ empty under a report.md that linked them all."""
    from normbench.harness import store
    run_dir = _two_impl_run(tmp_path / "run")
    write_report(run_dir, baseline="torch")
    assert (run_dir / "plots" / "speedup_vs_torch.png").is_file()
    real, steps = store.write_file_atomic, []

    def checked(path, data):
        steps.append((Path(path).name, _linked_plots_missing(run_dir)))
        real(path, data)
    monkeypatch.setattr(store, "write_file_atomic", checked)
    written = write_report(run_dir, baseline="atomic")
    assert len(steps) > 3 and all(not missing for _, missing in steps), steps
    assert not _linked_plots_missing(run_dir)
    assert "](plots/speedup_vs_atomic.png)" in (run_dir / "report.md").read_text()
    # the earlier report's speedup plot, linked by no page now, is gone
    assert sorted(p.name for p in (run_dir / "plots").glob("*.png")) == \
        sorted(k.split("/", 1)[1] for k in written if k.startswith("plots/"))


def test_the_widget_shows_no_time_that_is_none_to_judge(tmp_path):
    """The what-if widget showed any ok record's time_ms, so a broken (hand-edited) record's 0
    read "0.00 µs" beside the answer, which leaves such a time out ("no positive finite
    time"); its data now holds no time there, as for a record without one."""
    from normbench.harness.records_io import load_records
    from normbench.harness.report.widget import _widget_records
    run = synthetic.write_run(tmp_path / "run", [
        synthetic.record(implementation="torch", time_ms=0.02),
        synthetic.record(implementation="disjoint_block", groups="4", time_ms=0.02)],
        synthetic.meta())
    df = load_records(run)
    df.loc[df["implementation"] == "disjoint_block", "time_ms"] = 0.0
    got = {r["implementation"]: r["time_ms"] for r in _widget_records(df)}
    assert got["disjoint_block"] is None and got["torch"] == pytest.approx(0.02, rel=0.2)
