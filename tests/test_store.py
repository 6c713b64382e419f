"""harness/store.py: round trip, resume, lock, errors, and kill -9 at random moments."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normbench.harness.schema import COLUMNS, KEY, case_id
from normbench.harness.store import RunStore, StoreError, is_run_dir, load_meta, load_records

REPO = Path(__file__).resolve().parents[1]
MARK = {"format": "normbench-run", "format_version": 2}     # every meta.json a store writes


def full_record(i: int, **over) -> dict:
    rec = {
        "norm": "layernorm",
        "implementation": "disjoint_block",
        "kind": "strategy",
        "rows": 4096 + i,
        "batch": 2,
        "seq": 2048,
        "d": 1000 + i,
        "dtype": "bf16",
        "weight_dtype": "fp32",
        "groups": "auto" if i % 2 else str(i),
        "groups_effective": 64,
        "status": "ok",
        "error": None,
        "time_ms": 0.1 + i / 7,
        "time_p20_ms": 0.1,
        "time_p80_ms": 0.2,
        "time_samples_ms": json.dumps([0.1, 0.15, 0.2]),
        "timer": "cuda_event",
        "bytes_moved": 123456789,
        "workspace_bytes": 0,
        "gbps": 1234.5,
        "pct_peak": 25.7,
        "pct_copy": 31.0,
        "correct": True,
        "max_rel_err": 1e-7,
        "err_dx": 1e-7,
        "err_dw": 2e-7,
        "err_db": None,
        "tolerance": 1e-2,
        "deterministic": bool(i % 2),
        "distinct_results": 1,
        "repeats": 3,
        "writers_per_slot": 8,
        "deterministic_by_design": True,
        "device": "NVIDIA H200",
        "seed": 0,
        "started_at": "2026-01-01T00:00:00Z",
        "duration_s": 1.5,
    }
    rec.update(over)
    rec["case_id"] = case_id(rec)
    return rec


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_round_trip_dtypes_csv_equals_parquet(tmp_path):
    recs = [full_record(i) for i in range(5)]
    recs.append({"case_id": "sparse", "status": "error", "error": 'boom, "quoted"\r\nsecond line'})
    with RunStore(tmp_path / "run") as s:
        for r in recs:
            s.append(r)
        in_memory = s.records()
    from_csv = load_records(tmp_path / "run", source="csv")
    from_parquet = load_records(tmp_path / "run", source="parquet")
    assert list(from_csv.columns) == list(COLUMNS)
    assert {c: str(t) for c, t in from_csv.dtypes.items()} == COLUMNS
    assert_same(from_csv, from_parquet)
    assert_same(from_csv, in_memory)
    assert_same(from_csv, load_records(tmp_path / "run"))
    assert from_csv["case_id"].tolist() == [r["case_id"] for r in recs]
    row = from_csv.iloc[0]
    assert row["rows"] == 4096 and row["time_samples_ms"] == "[0.1, 0.15, 0.2]"
    assert row["correct"] is True or row["correct"] == True  # noqa: E712  (numpy/pandas bool)
    assert pd.isna(row["err_db"]) and pd.isna(row["error"])
    sparse = from_csv.iloc[-1]
    assert sparse["error"] == 'boom, "quoted"\r\nsecond line'
    assert pd.isna(sparse["rows"]) and pd.isna(sparse["correct"]) and pd.isna(sparse["time_ms"])


text = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.sampled_from(["NA", "nan", "None", "-", "  lead", "a,b", '"', "\r", "\n", "#x", "1e5", "True"]),
)
number = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))
integer = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
flag = st.one_of(st.none(), st.booleans())
samples = st.one_of(st.none(), st.lists(st.floats(allow_nan=False, allow_infinity=False),
                                        max_size=5).map(json.dumps))
_KIND = {"string": text, "Float64": number, "Int64": integer, "boolean": flag}


@st.composite
def records(draw):
    rec = {c: draw(_KIND[t]) for c, t in COLUMNS.items() if c not in ("case_id", "status")}
    rec["time_samples_ms"] = draw(samples)       # JSON text of numbers: list<double> in parquet
    rec["status"] = draw(st.sampled_from(["ok", "error", "skipped", "timeout"]))
    return rec


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(records(), min_size=1, max_size=4))
def test_fuzzed_values_round_trip(tmp_path_factory, recs):
    run = tmp_path_factory.mktemp("fuzz")
    with RunStore(run, parquet_interval_s=0) as s:
        for i, r in enumerate(recs):
            s.append({**r, "case_id": f"c{i}"})
        in_memory = s.records()
    from_csv = load_records(run, source="csv")
    assert_same(from_csv, load_records(run, source="parquet"))
    assert_same(from_csv, in_memory)
    for i, r in enumerate(recs):
        for col, value in r.items():
            got = from_csv.at[i, col]
            if value is None or value == "" or (isinstance(value, float) and value != value):
                assert pd.isna(got), (col, value, got)
            else:
                assert got == value, (col, value, got)


def test_record_validation(tmp_path):
    with RunStore(tmp_path) as s:
        with pytest.raises(ValueError, match="unknown record keys: bogus"):
            s.append({**full_record(0), "bogus": 1})
        with pytest.raises(ValueError, match="rows"):
            s.append(full_record(0, rows=1.5))
        with pytest.raises(ValueError, match="correct"):
            s.append(full_record(0, correct="yes"))
        with pytest.raises(ValueError, match="status"):
            s.append(full_record(0, status="running"))
        with pytest.raises(ValueError, match="status"):
            s.append({"case_id": "x"})
        with pytest.raises(ValueError, match="case_id"):
            s.append({"status": "ok", "norm": "rmsnorm"})  # no case_id and no KEY to make one
        rec = full_record(1)
        del rec["case_id"]
        s.append(rec)  # computed from KEY
        assert s.done_keys() == {"|".join(str(rec[k]) for k in KEY)}
        assert len(s) == 1
    assert len(load_records(tmp_path)) == 1


def test_resume_skips_done_and_refuses_duplicates(tmp_path):
    run = tmp_path / "run"
    with RunStore(run) as s:
        for i in range(3):
            s.append(full_record(i, status=["ok", "error", "timeout"][i]))
        s.write_meta({"config": "a.yaml", "n": 1})
    before = load_records(run)
    with RunStore(run, resume=True) as s:
        assert_same(s.records(), before)
        assert s.done_keys() == {full_record(i)["case_id"] for i in range(3)}
        assert s.meta == {**MARK, "config": "a.yaml", "n": 1}
        with pytest.raises(ValueError, match="already recorded"):
            s.append(full_record(1))
        s.append(full_record(3, status="skipped"))
        s.update_meta(n=2, finished=True)
    frame = load_records(run)
    assert len(frame) == 4 and frame["case_id"].is_unique
    assert_same(frame.iloc[:3], before)  # rewritten on resume, unchanged
    assert_same(frame, load_records(run, source="parquet"))
    assert load_meta(run) == {**MARK, "config": "a.yaml", "n": 2, "finished": True}


def test_refuses_non_resume_into_run_with_records(tmp_path):
    with RunStore(tmp_path) as s:
        s.append(full_record(0))
        s.append(full_record(1))
    with pytest.raises(StoreError) as err:
        RunStore(tmp_path)
    assert str(err.value) == (
        f"{tmp_path} already holds 2 records; use --resume to finish it or choose another --out"
    )
    # The refusal left the lock free and the records alone.
    with RunStore(tmp_path, resume=True) as s:
        assert len(s) == 2


def test_empty_run_dir_can_be_reused_and_resumed(tmp_path):
    RunStore(tmp_path).close()
    assert is_run_dir(tmp_path) and len(load_records(tmp_path)) == 0
    RunStore(tmp_path).close()  # no records: not refused
    with RunStore(tmp_path / "new", resume=True) as s:  # resuming nothing starts fresh
        assert s.done_keys() == set()


def test_a_run_without_records_is_not_written_over(tmp_path):
    """A directory whose meta.json records a run (its config and device) holds that run with
    no record — a shard that got no case, a run stopped before its first: a new store
    replaced it as if it were empty.  Refused as one holding records is; resumed."""
    with RunStore(tmp_path) as s:
        s.write_meta({"device_name": "cpu", "config_hash": "h", "completed": False})
    with pytest.raises(StoreError) as err:
        RunStore(tmp_path, occupied_hint="choose another")
    assert str(err.value) == f"{tmp_path} already holds a run, stopped with no record; " \
                             "choose another"
    with RunStore(tmp_path, resume=True) as s:
        assert s.meta["config_hash"] == "h" and s.done_keys() == set()
        s.update_meta(completed=True, shard={"spec": "8/10"})
    with pytest.raises(StoreError, match="holds shard 8/10, finished with no record; use"):
        RunStore(tmp_path)


def test_parquet_throttled_csv_always_current(tmp_path):
    with RunStore(tmp_path, parquet_interval_s=3600) as s:
        s.append(full_record(0))
        s.append(full_record(1))
        assert len(load_records(tmp_path, source="csv")) == 2
        assert len(load_records(tmp_path, source="parquet")) == 0  # written at open, not since
        s.flush()
        assert len(load_records(tmp_path, source="parquet")) == 2
        s.append(full_record(2))
    assert_same(load_records(tmp_path, source="csv"), load_records(tmp_path, source="parquet"))


def test_parquet_rewrites_spaced_by_their_own_duration(tmp_path, monkeypatch):
    """A rewrite of records.parquet is O(rows): at 10,000 records (~1 s a rewrite) every 5 s
    was a quarter of a 1.2 s case's time.  append now waits PARQUET_SPACING times the last
    rewrite's duration (when longer than parquet_interval_s); close() still writes it whole.
    A fake clock: each case takes 1 s, each parquet rewrite 1 s."""
    from types import SimpleNamespace
    from normbench.harness import store as store_mod
    clock = [1000.0]
    monkeypatch.setattr(store_mod, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    writes, real = [], RunStore._write

    def timed(self, name, write):
        if name == "records.parquet":
            writes.append(clock[0])
            clock[0] += 1.0
        real(self, name, write)
    monkeypatch.setattr(RunStore, "_write", timed)
    with RunStore(tmp_path, parquet_interval_s=5) as s:
        opened = len(writes)
        for i in range(90):
            clock[0] += 1.0                     # the case's measurement
            s.append(full_record(i))
        periodic = writes[opened:]
        assert periodic, "append never rewrote records.parquet"
        gaps = [b - (a + 1.0) for a, b in zip(writes, writes[1:])]    # end of one to next
        assert min(gaps) >= store_mod.PARQUET_SPACING * 1.0, gaps
        # rewriting took at most 1/(SPACING + 1) of the time since the store opened
        assert len(periodic) * 1.0 <= (clock[0] - writes[0]) / (store_mod.PARQUET_SPACING + 1) + 1
        assert len(load_records(tmp_path, source="parquet")) < 90      # it lags the CSV
    assert len(writes) == opened + len(periodic) + 1            # close() wrote the rest
    assert_same(load_records(tmp_path, source="csv"), load_records(tmp_path, source="parquet"))
    assert len(load_records(tmp_path, source="parquet")) == 90


def test_append_many_writes_what_appends_one_by_one_write_at_once(tmp_path, monkeypatch):
    """append_many: the same records.csv (to the byte) and records.parquet as appending one
    by one, with records.csv written once; refused as append refuses, writing nothing."""
    recs = [full_record(i) for i in range(7)]
    with RunStore(tmp_path / "one", parquet_interval_s=3600) as s:
        for r in recs:
            s.append(r)
    writes, real = [], RunStore._write

    def counting(self, name, write):
        writes.append(name)
        return real(self, name, write)
    monkeypatch.setattr(RunStore, "_write", counting)
    with RunStore(tmp_path / "many", parquet_interval_s=3600) as s:
        opened = writes.count("records.csv")
        s.append_many(r for r in recs[:5])          # any iterable
        s.append_many([])
        assert writes.count("records.csv") == opened + 1
        assert len(s) == 5 and s.done_keys() == {case_id(r) for r in recs[:5]}
        s.append_many(recs[5:])
        assert_same(s.records(), load_records(tmp_path / "one"))
    assert ((tmp_path / "many" / "records.csv").read_bytes()
            == (tmp_path / "one" / "records.csv").read_bytes())
    assert_same(load_records(tmp_path / "many", source="parquet"),
                load_records(tmp_path / "one", source="parquet"))


@pytest.mark.parametrize("bad,needle", [
    ({"nonsense": 1}, "nonsense"),                           # as append refuses it
    ({"status": "great"}, "status"),
    ({"rows": "many"}, "rows"),
    ({"case_id": "c0"}, "is already recorded"),              # recorded before the batch
    ({"case_id": "c2"}, "is given twice among the records"),  # twice in the batch
])
def test_append_many_refuses_a_bad_record_and_writes_none(tmp_path, bad, needle):
    with RunStore(tmp_path, parquet_interval_s=0) as s:
        s.append({**full_record(0), "case_id": "c0"})
        before = (tmp_path / "records.csv").read_bytes()
        batch = [{**full_record(i), "case_id": f"c{i}"} for i in (1, 2, 3)]
        batch.insert(2, {**full_record(9), "case_id": "c9", **bad})
        with pytest.raises(ValueError, match=needle):
            s.append_many(batch)
        if bad.get("case_id") != "c2":
            with pytest.raises(ValueError, match=needle):   # append says the same of it
                s.append(batch[2])
        assert (tmp_path / "records.csv").read_bytes() == before
        assert len(s) == 1 and s.done_keys() == {"c0"} and len(s.records()) == 1
        s.append_many(batch[:2] + batch[3:])          # the good ones still go in
    assert list(load_records(tmp_path)["case_id"]) == ["c0", "c1", "c2", "c3"]
    assert_same(load_records(tmp_path, source="csv"), load_records(tmp_path, source="parquet"))


def test_meta_and_is_run_dir(tmp_path):
    assert not is_run_dir(tmp_path)
    assert load_meta(tmp_path) == {}
    with RunStore(tmp_path) as s:
        s.write_meta({"device": "cpu", "when": pd.Timestamp("2026-01-01")})
        s.update_meta(status="running")
        assert load_meta(tmp_path) == {**MARK, "device": "cpu", "when": "2026-01-01 00:00:00",
                                       "status": "running"}
    assert is_run_dir(tmp_path)
    assert not is_run_dir(tmp_path / "records.csv")
    (tmp_path / "meta.json").write_text("[1, 2")
    with pytest.raises(StoreError, match="meta.json"):
        load_meta(tmp_path)


def test_closed_store_refuses_writes(tmp_path):
    s = RunStore(tmp_path)
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.append(full_record(0))


def test_unreadable_records_message(tmp_path):
    (tmp_path / "records.csv").write_text('"case_id","rows"\n"a","not a number"\n')
    with pytest.raises(StoreError) as err:
        load_records(tmp_path)
    assert "records.csv" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(StoreError, match="no records"):
        load_records(tmp_path / "nothing")


def test_a_bad_cell_or_a_missing_key_column_is_named(tmp_path):
    """A hand-edited records.csv: the error names the column, the record and the value; a
    file without a key column or status (a gate would read every case as missing) is refused."""
    with RunStore(tmp_path / "run") as store:
        for i in range(5):
            store.append(full_record(i))
    path = tmp_path / "run" / "records.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col, bad in (("time_ms", "NaN"), ("correct", "yes"), ("rows", "7.5")):
        edited = frame.copy()
        edited.loc[3, col] = bad
        edited.to_csv(path, index=False)
        with pytest.raises(StoreError, match=rf"column '{col}', record 4: '{re.escape(bad)}' "
                                             r"is not a \w+$"):
            load_records(tmp_path / "run")
    for col in ("status", "case_id", "weight_dtype"):
        frame.drop(columns=[col]).to_csv(path, index=False)
        with pytest.raises(StoreError, match=f"no '{col}' column"):
            load_records(tmp_path / "run")
    frame.to_csv(path, index=False)
    assert len(load_records(tmp_path / "run")) == 5


def test_an_integer_out_of_range_is_one_line_without_numpy_s_warnings(tmp_path):
    """rows = 1e30 in records.csv was named in one line, after 8 to 16 lines of numpy's
    "RuntimeWarning: invalid value encountered in cast" (one per read of the column)."""
    with RunStore(tmp_path / "run") as store:
        for i in range(3):
            store.append(full_record(i))
    path = tmp_path / "run" / "records.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[1, "rows"] = "1e30"
    frame.to_csv(path, index=False)
    (tmp_path / "run" / "records.parquet").unlink()
    (tmp_path / "run" / "meta.json").write_text(json.dumps({**MARK, "completed": True}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "NORMBENCH_QUIET": "1"}
    r = subprocess.run([sys.executable, "-m", "normbench", "report", str(tmp_path / "run")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"report: cannot read {path}: column 'rows', record 2: '1e30' ")


@pytest.mark.parametrize("col,bad,needle", [
    ("status", "OK", "'OK' is not one of ok, error, skipped, timeout"),
    ("status", "", "an empty field is not one of ok, error, skipped, timeout"),
    *[("time_samples_ms", bad, f"{bad!r} is not a JSON list of finite numbers")
      for bad in ("garbage", '{"a":1}', '["x"]', "[true]", "[NaN]", "[1, [2]]")],
])
def test_a_status_or_samples_cell_the_store_never_writes_is_named_as_it_is_read(
        tmp_path, col, bad, needle):
    """A hand-edited status ("OK") or time_samples_ms ("garbage") was read, and a resume or a
    merge of the run then died in a traceback (json.loads rewriting records.parquet, append
    refusing the status).  Refused as the records are read, naming the file, the column and
    the record; a resume leaves the file as it was."""
    with RunStore(tmp_path / "run") as store:
        for i in range(3):
            store.append(full_record(i))
    path = tmp_path / "run" / "records.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[1, col] = bad
    frame.to_csv(path, index=False)
    (tmp_path / "run" / "records.parquet").unlink()
    text = path.read_bytes()
    want = f"cannot read {path}: column '{col}', record 2: {needle}"
    with pytest.raises(StoreError) as err:
        load_records(tmp_path / "run")
    assert str(err.value) == want
    with pytest.raises(StoreError) as err:
        RunStore(tmp_path / "run", resume=True)
    assert str(err.value) == want
    assert path.read_bytes() == text and not (tmp_path / "run" / "records.parquet").exists()


def test_unwritable_out_dir(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as err:
        RunStore(blocker / "run")
    msg = str(err.value)
    assert str(blocker / "run") in msg and "Not a directory" in msg and "\n" not in msg
    with pytest.raises(StoreError, match="not a directory"):
        RunStore(blocker)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_read_only_out_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="ro"):
            RunStore(ro / "run")
        with pytest.raises(StoreError, match="permission denied|Permission denied"):
            RunStore(ro)
    finally:
        ro.chmod(0o700)


# --------------------------------------------------------------------------- other processes


def _python(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


HOLDER = """
    import sys, time
    from normbench.harness.store import RunStore
    s = RunStore(sys.argv[1], resume=True)
    print("held", flush=True)
    time.sleep(120)
"""


def test_lock_refused_while_held_and_taken_over_after_kill9(tmp_path):
    run = tmp_path / "run"
    holder = _python(HOLDER, str(run))
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        with pytest.raises(StoreError) as err:
            RunStore(run, resume=True)
        assert str(err.value).startswith(f"{run} is in use by another run (pid {holder.pid} on ")
        assert " since " in str(err.value)
        # Other directories are not affected.
        with RunStore(tmp_path / "other") as s:
            s.append(full_record(0))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    with RunStore(run, resume=True) as s:  # stale lock of a dead holder: taken over
        assert s.stale_lock is not None and s.stale_lock["pid"] == holder.pid
    with RunStore(run, resume=True) as s:  # clean close leaves nothing stale behind
        assert s.stale_lock is None


def test_second_store_in_same_process_refused(tmp_path):
    """Refused as held by this very process, not "by another run (pid <our own pid> …)":
    a store opened earlier here and not closed (an execute() that failed before closing)."""
    with RunStore(tmp_path):
        with pytest.raises(StoreError) as err:
            RunStore(tmp_path, resume=True)
        assert str(err.value).startswith(
            f"{tmp_path} is in use by this very process (pid {os.getpid()}, since ")
        assert "did not close" in str(err.value) and "\n" not in str(err.value)
    RunStore(tmp_path, resume=True).close()


APPENDER = """
    import json, sys
    from normbench.harness.store import RunStore
    run_dir, start = sys.argv[1], int(sys.argv[2])
    with RunStore(run_dir, resume=True, parquet_interval_s=0) as s:
        print("ready", flush=True)
        i = start
        while True:
            cid = f"case{i}"
            s.append({"case_id": cid, "status": "ok", "rows": i, "time_ms": i / 3,
                      "time_samples_ms": json.dumps([i, i + 0.5]), "error": "a,\\"b\\"\\nc"})
            print(cid, flush=True)
            if i % 3 == 0:
                s.update_meta(last=cid, n=i)
            i += 1
"""


def test_kill9_at_random_moments_loses_and_tears_nothing(tmp_path):
    run = tmp_path / "run"
    rng = random.Random()
    acknowledged: set[str] = set()
    for round_ in range(5):
        child = _python(APPENDER, str(run), str(round_ * 1_000_000))
        if round_ % 3 == 2:
            # Anywhere from interpreter start-up through opening (resume rewrites every file).
            time.sleep(rng.uniform(0.0, 2.0))
        else:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
            time.sleep(rng.uniform(0.0, 0.5))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        # Only complete lines: the print after append() returned may itself be cut short.
        acknowledged |= {line for line in out.split("\n")[:-1] if line.startswith("case")}

        if not is_run_dir(run):
            continue  # killed before the store created anything
        frame = load_records(run, source="csv")
        ids = frame["case_id"].tolist()
        assert len(ids) == len(set(ids)), "duplicate records"
        assert acknowledged <= set(ids), f"lost: {sorted(acknowledged - set(ids))[:5]}"
        assert (frame["error"] == 'a,"b"\nc').all()
        pq_ids = load_records(run, source="parquet")["case_id"].tolist()
        assert len(pq_ids) == len(set(pq_ids)) and set(pq_ids) <= set(ids)
        meta = load_meta(run)
        assert isinstance(meta, dict)
        for tmp in run.glob(".*.tmp"):  # a kill mid-write leaves a temporary, never a torn file
            assert tmp.name.startswith((".records.", ".meta.json.", ".normbench.lock.json."))
        with RunStore(run, resume=True) as s:  # the dead run's lock is taken over
            assert len(s) == len(ids) and s.done_keys() == set(ids)
        assert not list(run.glob(".*.tmp"))
    assert acknowledged, "the child never got to append: the test measured nothing"
    final = load_records(run)
    assert_same(final, load_records(run, source="parquet"))


# --------------------------------------------------------------------------- issue 20: safety

from normbench.harness.store import (FORMAT_VERSION, check_not_in_use,  # noqa: E402
                                     check_out_dir, check_run_dir, run_dir_version,
                                     write_file_atomic)


def test_a_foreign_directory_is_refused_and_left_untouched(tmp_path):
    """Issue 20.1: only new, empty or run directories are written into."""
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "mine.png").write_bytes(b"png")
    (tmp_path / "meta.json").write_text('{"a": 1}')
    (tmp_path / "report.md").write_text("notes")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for call in (lambda: RunStore(tmp_path), lambda: RunStore(tmp_path, resume=True),
                 lambda: check_run_dir(tmp_path), lambda: check_out_dir(tmp_path)):
        with pytest.raises(StoreError) as err:
            call()
        assert "not" in str(err.value) and "\n" not in str(err.value)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert run_dir_version(tmp_path) is None and not is_run_dir(tmp_path)
    with pytest.raises(StoreError, match="not a directory"):
        check_run_dir(tmp_path / "report.md")
    with pytest.raises(StoreError, match="does not exist"):
        check_run_dir(tmp_path / "nothing")
    with pytest.raises(StoreError, match="too long"):
        check_out_dir(tmp_path / ("a" * 300))
    check_out_dir(tmp_path / "new")                # a new path is fine


def test_marker_written_from_the_start_and_format_1_still_read(tmp_path):
    run = tmp_path / "run"
    s = RunStore(run)
    assert json.loads((run / "meta.json").read_text()) == MARK     # before any meta is given
    s.write_meta({"format": "other", "format_version": 99, "x": 1})   # cannot be overwritten
    assert list(load_meta(run))[:2] == ["format", "format_version"]
    assert load_meta(run) == {**MARK, "x": 1} and run_dir_version(run) == FORMAT_VERSION
    s.close()
    # a format-1 run: meta.json without the marker, a lock file of its time
    old = tmp_path / "v1"
    old.mkdir()
    (old / "meta.json").write_text(json.dumps({"device_name": "cpu", "config_hash": "ab"}))
    (old / ".normbench.lock").write_text("")
    assert run_dir_version(old) == 1
    check_run_dir(old)
    with RunStore(old, resume=True) as s:
        s.append(full_record(0))
        assert s.meta["device_name"] == "cpu"
    assert run_dir_version(old) == 2 and load_meta(old)["config_hash"] == "ab"
    # a format-1 run stopped before its meta.json: recognised by its records.csv
    bare = tmp_path / "bare"
    RunStore(bare).close()
    (bare / "meta.json").unlink()
    assert run_dir_version(bare) == 1


def test_the_lock_survives_deleting_files_and_a_closed_run_leaves_none(tmp_path):
    """Issue 20.2: the lock is the directory's flock, not a file a user can delete."""
    run = tmp_path / "run"
    holder = _python(HOLDER, str(run))
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        for p in run.iterdir():
            if p.name.startswith(".normbench"):
                p.unlink()                       # the natural reflex
        with pytest.raises(StoreError, match="in use by another run"):
            RunStore(run, resume=True)
        with pytest.raises(StoreError, match="in use by another run"):
            check_not_in_use(run)             # the look the CLI takes before it starts
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    check_not_in_use(run)                       # free again, and the look took nothing
    with RunStore(run, resume=True) as s:
        s.append(full_record(0))
    assert sorted(p.name for p in run.iterdir()) == ["meta.json", "records.csv", "records.parquet"]


def test_a_replaced_directory_is_not_written(tmp_path):
    import shutil
    run = tmp_path / "run"
    s = RunStore(run)
    s.append(full_record(0))
    shutil.rmtree(run)
    run.mkdir()                                  # someone else's now
    with RunStore(run) as other:                 # its lock is free: the old one was on the old dir
        other.append(full_record(1))
    with pytest.raises(StoreError, match="removed or replaced"):
        s.append(full_record(2))
    with pytest.raises(StoreError, match="removed or replaced"):
        s.close()                                # nothing written, the lock released all the same
    assert s._lock is None
    assert list(load_records(run)["case_id"]) == [full_record(1)["case_id"]]


def test_write_file_atomic(tmp_path):
    p = tmp_path / "report.html"
    write_file_atomic(p, "<p>γ \udcff</p>")
    assert p.read_bytes() == "<p>γ \\udcff</p>".encode()
    write_file_atomic(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    assert [q.name for q in tmp_path.iterdir()] == ["report.html"]
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        write_file_atomic(tmp_path / "dir", "x")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["dir", "report.html"]  # no temporary


@pytest.mark.parametrize("content", [bytes(range(256)) * 3, ("[" * 100_000 + "]" * 100_000).encode()])
def test_corrupted_meta_is_one_line(tmp_path, content):
    (tmp_path / "meta.json").write_bytes(content)
    with pytest.raises(StoreError) as err:
        load_meta(tmp_path)
    assert "meta.json" in str(err.value) and "\n" not in str(err.value)


def test_undecodable_text_in_meta_reads_back(tmp_path):
    path = "/tmp/x\udcff.yaml"                   # a path of bytes that are not UTF-8
    with RunStore(tmp_path) as s:
        s.write_meta({"config_path": path})
        assert s.meta["config_path"] == path
    assert load_meta(tmp_path)["config_path"] == path


def test_resume_refuses_a_row_of_an_unknown_status(tmp_path):
    """A row whose status is none of STATUSES (edited by hand) would be measured again and its
    new record refused as a duplicate: resuming is refused first (as the records are read),
    naming the record."""
    with RunStore(tmp_path) as s:
        s.append(full_record(0))
        s.append(full_record(1))
    csv = tmp_path / "records.csv"
    text = csv.read_text()
    cid = full_record(1)["case_id"]
    lines = [ln.replace(',"ok",', ',"weird",', 1) if cid in ln else ln
             for ln in text.splitlines(keepends=True)]
    assert lines != text.splitlines(keepends=True)
    csv.write_text("".join(lines))
    (tmp_path / "records.parquet").unlink(missing_ok=True)
    with pytest.raises(StoreError, match="column 'status', record 2: 'weird' is not one of"):
        RunStore(tmp_path, resume=True)
    assert csv.read_text() == "".join(lines)          # left as it was


def test_a_failed_write_is_a_write_error_not_bad_input(tmp_path, monkeypatch):
    """A disk that fills or goes read-only mid-run: StoreWriteError (the CLI exits 1 for it,
    2 for bad input), one line."""
    import errno
    from normbench.harness import store as store_mod
    from normbench.harness.store import StoreWriteError
    run = tmp_path / "run"
    with RunStore(run) as s:
        s.append(full_record(0))
        before = (run / "records.csv").read_bytes()

        def half(fd, data):         # an append that fills the disk half-way through its record
            os.write(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(store_mod, "write_all", half)
        with pytest.raises(StoreWriteError, match="cannot write .*records.csv") as e:
            s.append(full_record(1))
        # cut back to what it held: no half record for the next append to follow
        assert (run / "records.csv").read_bytes() == before and len(s) == 1
        monkeypatch.undo()

        def full(path, write):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(store_mod, "_atomic_write", full)
        (run / "x").write_bytes(before)     # not the file the store wrote: written whole
        os.replace(run / "x", run / "records.csv")
        with pytest.raises(StoreWriteError, match="cannot write .*records.csv") as e2:
            s.append(full_record(1))
        monkeypatch.undo()          # the disk back: the store closes as usual
        s.append(full_record(2))
    assert isinstance(e.value, StoreError) and "\n" not in str(e.value)
    assert isinstance(e2.value, StoreError) and "\n" not in str(e2.value)
    assert len(load_records(run)) == 2


@pytest.mark.parametrize("step", ["append", "meta"])
def test_a_signal_as_a_file_is_replaced_leaves_memory_and_disk_agreeing(tmp_path, monkeypatch, step):
    """SIGINT during the directory fsync that follows os.replace (meta.json), or the fsync of
    records.csv's append: the file on disk is new, and the store's memory must be too — else
    records.parquet (written from memory at close) lacked a record records.csv held, and the
    next update_meta undid the last one.  The interruption is raised once the step is whole."""
    import stat
    from normbench.harness import interrupt
    previous = interrupt.install()
    try:
        with RunStore(tmp_path) as s:
            s.append(full_record(0))
            real = os.fsync

            def fsync(fd):
                real(fd)
                # meta.json replaced by now; records.csv appended to
                if stat.S_ISDIR(os.fstat(fd).st_mode) or step == "append":
                    monkeypatch.setattr(os, "fsync", real)
                    interrupt.raise_interrupted(signal.SIGINT, None)   # the signal lands here
            monkeypatch.setattr(os, "fsync", fsync)
            with pytest.raises(interrupt.Interrupted):
                if step == "append":
                    s.append(full_record(1))
                else:
                    s.update_meta(first=1)
            assert len(s) == (2 if step == "append" else 1)
            s.update_meta(second=2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        interrupt._first.clear()
    n = 2 if step == "append" else 1
    assert len(pd.read_csv(tmp_path / "records.csv")) == n
    assert len(pd.read_parquet(tmp_path / "records.parquet")) == n
    meta = load_meta(tmp_path)
    assert meta["second"] == 2 and (step == "append" or meta["first"] == 1)


def test_an_out_dir_that_cannot_be_made_is_refused_before_the_run(tmp_path):
    """--dry-run checks the output directory as the run does: a path under a file, or under a
    directory nothing can be made in (/proc), is refused there too, in one line."""
    f = tmp_path / "a.yaml"
    f.write_text("x")
    with pytest.raises(StoreError, match=r"cannot create output directory .*: Not a directory \(.*a\.yaml is not one\)"):
        check_out_dir(f / "sub" / "deeper")
    if os.path.isdir("/proc/self"):
        with pytest.raises(StoreError, match="cannot create output directory /proc/nb-x"):
            check_out_dir("/proc/nb-x/y")
    check_out_dir(tmp_path / "new" / "deeper")     # made by mkdir -p: fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml"]   # no probe left behind


def test_an_existing_out_dir_nothing_can_be_written_in_is_refused_with_its_reason(
        tmp_path, monkeypatch):
    """An existing --out on a read-only file system passed check_out_dir (run --dry-run exit
    0) where a new path under it was refused, and the store then said "permission denied"
    whatever the error was (os.access).  An existing directory is probed as a new one's
    parent is, and both say the error's own reason; no probe is left behind."""
    import errno
    import tempfile
    from normbench.harness.store import check_out_dir
    empty, run = tmp_path / "empty", tmp_path / "run"
    empty.mkdir()
    with RunStore(run) as s:
        s.append(full_record(0))

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")
    with monkeypatch.context() as m:
        m.setattr(tempfile, "mkdtemp", read_only)
        for d, open_it in ((empty, lambda: RunStore(empty)),
                           (run, lambda: RunStore(run, resume=True))):
            want = re.escape(f"cannot write to output directory {d}: Read-only file system")
            with pytest.raises(StoreError, match=want):
                check_out_dir(d)
            with pytest.raises(StoreError, match=want):
                open_it()
        with pytest.raises(StoreError, match="Read-only file system"):
            check_out_dir(empty / "new")
    check_out_dir(empty)
    check_out_dir(run)
    assert os.listdir(empty) == [] and len(load_records(run)) == 1
    assert sorted(os.listdir(run)) == ["meta.json", "records.csv", "records.parquet"]


def test_an_out_dir_through_a_part_yet_to_be_made_is_checked_as_the_directory_it_names(
        tmp_path, monkeypatch):
    """`--out new/..` names the current directory once `new` is made (mkdir -p): it was taken
    as a new path, and a run or merge wrote its files among someone else's."""
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    for named in ("nx/..", "nx/../ny/..", str(tmp_path / "a" / "..")):
        with pytest.raises(StoreError, match="is not empty and is not a normbench run"):
            check_out_dir(named)
    check_out_dir("nx/../fresh")                   # a new directory beside notes.txt: fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_store_interrupted_while_opening_leaves_no_empty_directory(tmp_path, monkeypatch):
    """A SIGTERM between the run directory's mkdir and its records.csv (a window a loaded
    machine widens) left an empty directory that report and compare refuse as no run; the
    directory the store made is removed, one that was there stays."""
    from normbench.harness import store as st

    def interrupted(self, resume):
        raise KeyboardInterrupt
    monkeypatch.setattr(st.RunStore, "_open", interrupted)
    for existed in (False, True):
        d = tmp_path / f"run-{existed}"
        if existed:
            d.mkdir()
        with pytest.raises(KeyboardInterrupt):
            st.RunStore(d)
        assert d.exists() == existed and (not existed or not any(d.iterdir()))


def test_an_out_dir_that_is_a_dangling_link_is_refused_before_the_run(tmp_path):
    """A symbolic link to a directory not made yet: --dry-run passed it, and the run's
    mkdir then failed ("File exists").  Refused by check_out_dir, naming the target; a link
    to an existing empty directory is fine."""
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "target")
    with pytest.raises(StoreError, match=r"out as output directory: .*out is a symbolic link "
                                         r"that leads nowhere \(to .*target\)"):
        check_out_dir(link)
    for inside in ("out/sub", "chain/sub"):          # a directory on the way, a chain of links
        (tmp_path / "chain").symlink_to(tmp_path / "out") if inside == "chain/sub" else None
        with pytest.raises(StoreError, match="is a symbolic link that leads nowhere"):
            check_out_dir(tmp_path / inside)
    (tmp_path / "target").mkdir()
    check_out_dir(link)


def test_a_regular_file_under_dev_is_still_replaced_whole(tmp_path, monkeypatch):
    """Only a descriptor's name (/dev/stdout, /dev/fd/N, /proc/PID/fd/N) or a target that is
    no regular file is written straight in: a regular file in /dev/shm lost its old contents
    to a write that failed part way."""
    from normbench.harness import rundir
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    f = shm / f"normbench-test-{os.getpid()}.json"
    try:
        f.write_text("old")
        assert not rundir._through(f)
        def fail(path, write):
            raise OSError(27, "File too large")
        monkeypatch.setattr(rundir, "_atomic_write", fail)
        with pytest.raises(OSError):
            write_file_atomic(f, "new" * 1000)
        assert f.read_text() == "old"
    finally:
        f.unlink(missing_ok=True)
    assert rundir._through(Path("/dev/stdout")) == os.path.exists("/dev/stdout")


# --------------------------------------------------------------------------- a records.csv cut short


def _cut_run(tmp_path, n=3):
    """A closed run of `n` records whose records.csv is cut in its last record's `"ok",`
    status field's neighbourhood: a copy or download stopped mid-record."""
    run = tmp_path / "run"
    with RunStore(run, parquet_interval_s=0) as s:
        for i in range(n):
            s.append(full_record(i))
    csv_path = run / "records.csv"
    whole = csv_path.read_bytes()
    csv_path.write_bytes(whole[:whole.rindex(b'"ok",') + 5])
    return run, whole


def test_export_and_compare_name_a_cut_records_csv_once(tmp_path):
    """export and compare prefixed the store's own 'cannot read FILE: …' with 'cannot read
    DIR: ', so the message said it twice; a reason that names no file still gets the prefix."""
    from normbench.harness.compare import CompareError, compare
    from normbench.harness.export import ExportError, export
    from normbench.harness.store import cannot_read
    run, _ = _cut_run(tmp_path)
    for call, error in ((lambda: export(str(run), "bencher"), ExportError),
                        (lambda: compare([str(run)], str(run)), CompareError)):
        with pytest.raises(error) as err:
            call()
        msg = str(err.value)
        assert msg.count("cannot read") == 1, msg
        assert f"cannot read {run / 'records.csv'}: record 3 " in msg
    assert cannot_read("d", OSError(13, "Permission denied")) == "cannot read d: Permission denied"
    assert cannot_read("d", ValueError("two\nlines")) == "cannot read d: two lines"


def test_a_records_csv_cut_short_is_refused_not_read_with_its_lost_fields_empty(tmp_path):
    """pandas fills a short row with NA: a records.csv cut mid-record read as a record with
    no verdict (report exit 0, export exported it).  The field count and the final newline
    the writer always ends with are checked: one line naming the file and the record."""
    run, whole = _cut_run(tmp_path)
    n = len(COLUMNS)
    status = list(COLUMNS).index("status") + 1
    with pytest.raises(StoreError) as err:
        load_records(run)
    assert str(err.value).startswith(
        f"cannot read {run / 'records.csv'}: record 3 has {status + 1} of {n} fields — the file is cut short; "
        "records.parquet beside it may hold the record whole")
    assert len(load_records(run, source="parquet")) == 3        # which it does
    (run / "records.csv").write_bytes(whole[:-1])               # all fields, no newline
    with pytest.raises(StoreError, match=re.escape(
            f"cannot read {run / 'records.csv'}: record 3 does not end with a newline — the file is cut "
            "short")):
        load_records(run)
    (run / "records.parquet").unlink()
    lines = whole.split(b"\n")
    lines[1] = lines[1][:lines[1].rindex(b",")]                 # a middle record damaged
    (run / "records.csv").write_bytes(b"\n".join(lines))
    with pytest.raises(StoreError, match=re.escape(
            f"record 1 has {n - 1} of {n} fields — the file is damaged")) as err:
        load_records(run)
    assert "parquet" not in str(err.value)
    lines[1] += b',"",""'                                       # one field too many
    (run / "records.csv").write_bytes(b"\n".join(lines))
    with pytest.raises(StoreError, match=f"record 1 has {n + 1} fields, its header {n} "):
        load_records(run)
    # what the project writes still reads: CRLF line ends, a field longer than the csv
    # module's default limit, an error message holding newlines and commas
    (run / "records.csv").write_bytes(whole.replace(b"\n", b"\r\n"))
    assert len(load_records(run)) == 3
    (run / "records.csv").unlink()
    with RunStore(run) as s:
        s.append(full_record(0, time_samples_ms=[0.5] * 40000, error='a,\n"b"\r\nc'))
    assert len(load_records(run)["time_samples_ms"][0]) > 131072
    assert load_records(run)["error"][0] == 'a,\n"b"\r\nc'


def test_report_of_a_records_csv_cut_short_exits_2_in_one_line(tmp_path):
    run, _ = _cut_run(tmp_path)
    (run / "meta.json").write_text(json.dumps({**MARK, "completed": True}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "NORMBENCH_QUIET": "1"}
    for cmd in (["report", str(run)], ["export", str(run), "--format", "bencher"]):
        r = subprocess.run([sys.executable, "-m", "normbench", *cmd], env=env,
                           capture_output=True, text=True, timeout=300)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (cmd, r.stdout, r.stderr)
        assert "records.csv: record 3 has" in lines[0] and "cut short" in lines[0]


def test_resume_never_rewrites_a_parquet_fuller_than_its_csv(tmp_path):
    """--resume and merge rewrite both files from records.csv: a cut one destroyed the whole
    record records.parquet held.  A cut CSV is refused as it is read; one that reads but
    lacks what the parquet file holds (a record, or a field of one) is refused naming both
    files, which are left as they were; a parquet that lags (a crash) is caught up."""
    run, whole = _cut_run(tmp_path)
    pq = (run / "records.parquet").read_bytes()
    for resume in (True, False):
        with pytest.raises(StoreError, match="record 3 has .* cut short"):
            RunStore(run, resume=resume)
    lines = whole.split(b"\n")
    fields = lines[3].split(b",")
    fields[list(COLUMNS).index("time_ms")] = b""                # a number: no comma inside
    edits = {
        "a field": b"\n".join([*lines[:3], b",".join(fields), b""]),
        "a record": b"\n".join([*lines[:3], b""]),
        "all": lines[0] + b"\n",
    }
    for what, text in edits.items():
        (run / "records.csv").write_bytes(text)
        for resume in (True, False):
            with pytest.raises(StoreError) as err:
                RunStore(run, resume=resume)
            msg = str(err.value)
            assert msg.startswith(f"{run / 'records.parquet'} holds ") and \
                f"which {run / 'records.csv'} lacks" in msg, (what, msg)
            assert "move records.csv away to go on from records.parquet" in msg
            assert (run / "records.parquet").read_bytes() == pq
            assert (run / "records.csv").read_bytes() == text
    (run / "records.csv").unlink()                              # the recovery it names
    with RunStore(run, resume=True) as s:
        assert len(s) == 3
    assert_same(load_records(run), load_records(run, source="parquet"))
    with RunStore(run, resume=True, parquet_interval_s=3600) as s:   # a parquet that lags
        s.append(full_record(3))
        lagging = (run / "records.parquet").read_bytes()        # as a kill -9 now leaves it
    (run / "records.parquet").write_bytes(lagging)
    assert len(load_records(run, source="parquet")) == 3
    with RunStore(run, resume=True) as s:
        assert len(s) == 4
    assert len(load_records(run, source="parquet")) == 4


# --------------------------------------------------------------------------- two stores, one new path


def test_two_stores_racing_for_a_new_directory_one_wins(tmp_path, monkeypatch):
    """Both saw the path as new: the one that lost the flock removed the directory (its
    own, it thought) between the winner's flock and its first write, and the winner failed
    too ("was removed or replaced while this run held it").  Only a store holding the lock
    removes a directory it made: the loser is refused, the winner goes on."""
    from normbench.harness import store as st
    run = tmp_path / "run"
    real_lock, real_lexists = st._lock_dir, os.path.lexists
    losers = []

    def lock_then_race(path):
        fd = real_lock(path)
        if not losers:          # the winner holds the flock, its sidecar not yet written
            losers.append(1)
            with monkeypatch.context() as m:     # the loser looked before the winner's mkdir
                m.setattr(os.path, "lexists",
                          lambda p: False if Path(p) == run else real_lexists(p))
                with pytest.raises(StoreError, match="is in use by another run"):
                    st.RunStore(run)
            assert run.is_dir()
        return fd

    monkeypatch.setattr(st, "_lock_dir", lock_then_race)
    with st.RunStore(run) as s:
        s.append(full_record(0))
    assert losers and len(load_records(run)) == 1


def test_records_are_appended_and_a_record_cut_by_a_dead_run_is_no_record(tmp_path):
    """Each record rewrote records.csv whole: 40 ms an append at 5,000 records, quadratic in
    the run.  Once the file holds records, a record is appended (the same file, grown by its
    line).  A kill -9 mid-append can then leave its last record cut short: where the run's
    lock note is there (a run held the directory and died), readers read the records before
    it and a resume drops it, to measure its case again; without the note (a copy stopped
    mid-record) it is refused as before, and so is a record damaged in the middle."""
    from normbench.harness.rundir import LOCK_INFO
    run = tmp_path / "run"
    csv_path = run / "records.csv"
    with RunStore(run, parquet_interval_s=0) as s:
        s.append(full_record(0))
        ino = csv_path.stat().st_ino
        for i in range(1, 4):
            s.append(full_record(i))
        assert csv_path.stat().st_ino == ino        # appended to, never replaced
    whole = csv_path.read_bytes()
    assert load_records(run).equals(load_records(run, source="parquet"))
    last = whole[whole.rindex(b"\n", 0, len(whole) - 1) + 1:]
    for cut in (len(last) // 2, len(last) - 1, 3):  # mid-record, all but the newline, a start
        csv_path.write_bytes(whole + last[:cut])
        with pytest.raises(StoreError, match="cut short"):
            load_records(run)                       # no lock note: a copy cut short
        (run / LOCK_INFO).write_text(json.dumps({"pid": 1, "host": "h", "since": "s"}))
        assert load_records(run)["case_id"].tolist() == \
            load_records(run, source="parquet")["case_id"].tolist()
        (run / LOCK_INFO).unlink()
    lines = whole.split(b"\n")
    lines[1] = lines[1][:lines[1].rindex(b",")]     # a record in the middle damaged
    csv_path.write_bytes(b"\n".join(lines) + last[:10])
    (run / LOCK_INFO).write_text(json.dumps({"pid": 1, "host": "h", "since": "s"}))
    with pytest.raises(StoreError, match="record 1 has .* the file is damaged"):
        load_records(run)
    csv_path.write_bytes(whole + last[:len(last) // 2])
    with RunStore(run, resume=True) as s:           # the dead run's lock taken over
        assert s.stale_lock == {"pid": 1, "host": "h", "since": "s"} and len(s) == 4
        s.append(full_record(9))
    assert not (run / LOCK_INFO).exists()
    assert len(load_records(run)) == 5 and csv_path.read_bytes().startswith(whole)


NFS_HOLDER = """
    import errno, sys, time
    from normbench.harness import store
    def no_flock(fd):
        raise OSError(errno.EBADF, "Bad file descriptor")
    store._flock = no_flock                      # as NFS answers a directory's flock
    s = store.RunStore(sys.argv[1], resume=True)
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_filesystem_without_a_directory_flock_locks_a_file_instead(tmp_path, monkeypatch):
    """NFS emulates flock as a POSIX lock, which an exclusive one cannot take on a directory
    (EBADF), and Lustre without -o flock answers ENOSYS: every run into a directory there was
    refused ("cannot lock output directory … Bad file descriptor") — a job array's shards on a
    cluster's shared disk.  There the lock is a POSIX lock on LOCK_FILE: a second run is
    refused, this process's own second store too, a dead holder's is taken over, a closed run
    leaves no file; where no POSIX lock can be had either, one line says what to do."""
    import errno
    from normbench.harness import store
    from normbench.harness.store import in_use

    def no_flock(fd):
        raise OSError(errno.EBADF, "Bad file descriptor")
    monkeypatch.setattr(store, "_flock", no_flock)
    run = tmp_path / "run"
    holder = _python(NFS_HOLDER, str(run))
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        assert (run / store.LOCK_FILE).exists() and in_use(run)
        with pytest.raises(StoreError, match="in use by another run"):
            RunStore(run, resume=True)
        with pytest.raises(StoreError, match="in use by another run"):
            check_not_in_use(run)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    assert not in_use(run)
    with RunStore(run, resume=True) as s:       # a dead holder's lock: taken over
        assert s.stale_lock is not None and s.stale_lock["pid"] == holder.pid
        s.append(full_record(0))
        with pytest.raises(StoreError, match="in use by this very process"):
            RunStore(run, resume=True)
        check = pytest.raises(StoreError, match="in use by this very process")
        with check:
            check_not_in_use(run)
        assert in_use(run)                       # and the looks left our lock in place
        assert store._file_locked(run / store.LOCK_FILE)
    assert sorted(p.name for p in run.iterdir()) == ["meta.json", "records.csv", "records.parquet"]

    def no_lockf(fd, how):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(store.fcntl, "lockf", no_lockf)
    with pytest.raises(StoreError) as err:
        RunStore(tmp_path / "lustre")
    assert "takes neither a flock" in str(err.value) and "\n" not in str(err.value)
    assert not list((tmp_path / "lustre").iterdir())
