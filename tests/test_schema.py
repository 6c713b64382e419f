"""harness/schema.py: a column declared once reaches the store, compare's JSON and its gate."""
from __future__ import annotations

import json

import pytest

import synthetic
from normbench.harness import compare as cmp
from normbench.harness import schema, stats
from normbench.harness.report import build_report
from normbench.harness.store import load_records


@pytest.fixture
def extra_columns(monkeypatch):
    """Add columns through the declaration alone (undone after the test)."""
    def add(*cols):
        monkeypatch.setattr(schema, "DECLARATION", schema.DECLARATION + list(cols))
        schema.rebuild()
    yield add
    monkeypatch.undo()
    schema.rebuild()


def test_derived_views_match_the_declaration():
    assert list(schema.COLUMNS) == [c.name for c in schema.DECLARATION if c.derive is None]
    assert schema.KEY == ("norm", "implementation", "rows", "d", "dtype", "weight_dtype", "groups")
    assert schema.metrics()["call"].name == "time_ms" and schema.metrics()["gpu"].name == "gpu_time_ms"
    assert {c.name for c in schema.gated(schema.TRUE_TO_FALSE)} == {"correct", "deterministic"}
    assert schema.column("time_ms").heading == "median (ms)"
    assert schema.column_format("gbps", 1234.56) == "1235"
    assert schema.column_format("time_ms", None) == ""


def test_a_declaration_that_refers_to_nothing_is_refused(monkeypatch):
    bad = schema.Column("x_ms", "Float64", gate=schema.SLOWER, metric="x", p20="nope")
    monkeypatch.setattr(schema, "DECLARATION", schema.DECLARATION + [bad])
    with pytest.raises(ValueError, match="undeclared column 'nope'"):
        schema.rebuild()
    monkeypatch.undo()
    schema.rebuild()


def test_a_column_added_through_the_schema_alone(tmp_path, extra_columns):
    extra_columns(
        schema.Column("fits_l2", "boolean", gate=schema.TRUE_TO_FALSE, label="fits L2",
                      context=("reduce_ms",)),
        schema.Column("reduce_ms", "Float64", unit="ms", gate=schema.SLOWER, metric="reduce",
                      p20="reduce_p20_ms", p80="reduce_p80_ms"),
        schema.Column("reduce_p20_ms", "Float64", unit="ms"),
        schema.Column("reduce_p80_ms", "Float64", unit="ms"))

    def run(name, fits, reduce_ms):
        recs = [synthetic.record(implementation=impl, rows=8192, d=4096, time_ms=0.2, seed=i,
                                 fits_l2=fits if impl == "torch" else True, reduce_ms=r,
                                 reduce_p20_ms=r * 0.99, reduce_p80_ms=r * 1.01)
                for i, (impl, r) in enumerate([("torch", 0.05), ("atomic", reduce_ms)])]
        return synthetic.write_run(tmp_path / name, recs, synthetic.meta())

    a, b = run("a", True, 0.05), run("b", False, 0.08)
    df = load_records(b)
    assert "fits_l2" in df.columns and "reduce_ms" in df.columns
    assert df.set_index("implementation").loc["torch", "fits_l2"] == False   # noqa: E712
    # the gate: True -> False is a regression, the time metric is unchanged
    result = cmp.compare(a, b)
    (reg,) = result.regressions
    assert reg.key["implementation"] == "torch" and reg.verdict == stats.UNCHANGED
    assert reg.regressions == ["fits_l2 True -> False (reduce_ms 0.05)"]
    doc = json.loads(cmp.render(result, "json"))
    case = next(c for c in doc["cases"] if c["implementation"] == "torch")
    assert case["values"]["fits_l2"] == {"baseline": [True], "candidate": False}
    assert case["values"]["reduce_ms"]["candidate"] == pytest.approx(0.05)
    assert "fits_l2 True -> False" in doc["method"] and "reduce (reduce_ms)" in doc["method"]
    # the report's table of all records shows both, headed from the declaration
    rep = build_report(df, synthetic.meta())
    (table,) = [b[1] for b in rep.blocks if b[0] == "table" and b[2] == "records"]
    torch_row = table[table["impl"] == "torch"].iloc[0]
    assert torch_row["fits L2"] == "False" and torch_row["reduce_ms (µs)"] == "50.0"
    assert "median (µs)" in table.columns and "samples" not in table.columns
    # the new time column is a --metric choice of its own
    result = cmp.compare(a, b, metric="reduce")
    assert {c.key["implementation"] for c in result.regressions} == {"torch", "atomic"}
    atomic = next(c for c in result.cases if c.key["implementation"] == "atomic")
    assert atomic.verdict == stats.REGRESSION and atomic.ratio == pytest.approx(1.6)


def test_a_new_case_fails_on_a_column_added_through_the_schema(tmp_path, extra_columns):
    """A case only the candidate holds regresses where a TRUE_TO_FALSE column is False (its
    only_if honoured): the declared list, not correct and deterministic by name."""
    extra_columns(schema.Column("fits_l2", "boolean", gate=schema.TRUE_TO_FALSE),
                  schema.Column("l2_claimed", "boolean"),
                  schema.Column("hit_l2", "boolean", gate=schema.TRUE_TO_FALSE,
                                only_if="l2_claimed"))
    a = synthetic.write_run(tmp_path / "a", [synthetic.record()], synthetic.meta())
    new = dict(implementation="atomic", seed=1, fits_l2=True, hit_l2=False, l2_claimed=False)

    def judged(name, **over):
        b = synthetic.write_run(tmp_path / name, [synthetic.record(), synthetic.record(
            **{**new, **over})], synthetic.meta())
        return cmp.compare(a, b)
    assert not judged("ok").regressions                      # hit_l2 False, not claimed
    (reg,) = judged("nofit", fits_l2=False).regressions
    assert reg.key["implementation"] == "atomic" and "fits_l2 False" in reg.regressions[0]
    (reg,) = judged("miss", l2_claimed=True).regressions
    assert "hit_l2 False though l2_claimed" in reg.regressions[0]
    from normbench.harness.compare_rules import method_text
    assert "fits_l2 False, hit_l2 False where l2_claimed is True) is a regression" in method_text()


def test_last_call_compared_reads_empty_from_a_run_before_it(tmp_path):
    """A records.csv written before the column loads it as NA (not False), and the report's
    records table leaves it out (it says how distinct_results was counted, not a result)."""
    import pandas as pd
    run = synthetic.write_run(tmp_path / "run", [synthetic.record(last_call_compared=True)],
                              synthetic.meta())
    assert load_records(run)["last_call_compared"].tolist() == [True]
    csv = run / "records.csv"
    pd.read_csv(csv, keep_default_na=False).drop(columns="last_call_compared").to_csv(
        csv, index=False)
    (run / "records.parquet").unlink(missing_ok=True)
    df = load_records(run)
    col = df["last_call_compared"]
    assert str(col.dtype) == "boolean" and col.isna().all()
    assert "last_call_compared" not in {c.name for c in schema.table_columns()}
    assert schema.compared_calls(10, pd.NA) == "10 repeats"
    assert schema.compared_calls(10, True) == "10 repeats and the last timed call"


def _records_table(tmp_path, records):
    run = synthetic.write_run(tmp_path / "run", records, synthetic.meta())
    rep = build_report(load_records(run), synthetic.meta())
    (table,) = [b[1] for b in rep.blocks if b[0] == "table" and b[2] == "records"]
    return table


def test_the_records_table_judges_each_output_by_its_own_tolerance(tmp_path):
    """fp32 activations with a bf16 weight: dγ's error 0.0045 is within its tolerance 0.016
    (the weight's), yet the table showed `max rel err` 0.0045 beside `tolerance` 0.0001 (dx's):
    a correct record read as 45 times over.  It now shows one column, the worst output's
    error over its own tolerance and which output, and none of the three that misled."""
    ok = synthetic.record(dtype="fp32", weight_dtype="bf16", max_rel_err=0.0045, err_dx=5e-8,
                          err_dw=0.0045, tolerance=1e-4, tolerance_dw=0.015625)
    bad = synthetic.record(implementation="atomic", dtype="fp32", weight_dtype="bf16",
                           correct=False, max_rel_err=0.0045, err_dx=3e-4, err_dw=0.0045,
                           tolerance=1e-4, tolerance_dw=0.015625, seed=1)
    table = _records_table(tmp_path, [ok, bad])
    assert {"max rel err", "tolerance", "tolerance dγ"}.isdisjoint(table.columns)
    got = dict(zip(table["impl"], table["worst err ÷ tol"]))
    assert got == {"torch": "0.29 dγ", "atomic": "3 dx"}


def test_worst_over_tolerance_reads_every_run_and_is_never_stored():
    """A run before tolerance_dw judged every output by `tolerance`; one before the per-output
    errors held only max_rel_err; a record not judged has none.  The derived column is shown,
    never stored, keyed or gated."""
    w = schema.worst_over_tolerance
    assert w(dict(err_dx=1e-3, err_dw=4e-3, err_db=2e-3, tolerance=1e-2)) == "0.4 dγ"
    assert w(dict(err_dx=2e-3, err_dw=4e-3, err_db=None, tolerance=1e-2,
                  tolerance_dw=1e-1)) == "0.2 dx"
    assert w(dict(max_rel_err=5e-2, tolerance=1e-2)) == "5"
    assert w(dict(err_dx=0.0, err_dw=0.0, tolerance=1e-4, tolerance_dw=1e-4)) == "0"
    assert w(dict(err_dx=None, tolerance=1e-2)) is None and w({}) is None
    assert "err_over_tolerance" not in schema.COLUMNS
    assert "err_over_tolerance" not in {c.name for c in schema.gated()}
    assert schema.value(dict(err_dx=1e-3, tolerance=1e-2), "err_over_tolerance") == "0.1 dx"
    assert schema.value(dict(err_dx=1e-3), "err_dx") == 1e-3


def test_a_derived_column_with_a_gate_is_refused(monkeypatch):
    bad = schema.Column("x_ratio", "Float64", gate=schema.TRUE_TO_FALSE, derive=lambda r: 1.0)
    monkeypatch.setattr(schema, "DECLARATION", schema.DECLARATION + [bad])
    with pytest.raises(ValueError, match="x_ratio: a derived column"):
        schema.rebuild()
    monkeypatch.undo()
    schema.rebuild()
