"""Synthetic recorded runs for the report / compare tests (no GPU, no kernels).

    records = sweep_records()                    # several impls, shapes, GROUPS, an error row,
                                                 # a nondeterministic atomic
    run_dir = write_run(tmp_path / "run", records, meta())

Run directories are written through harness.store.RunStore, so the report and compare code read
them exactly as they read a real run.
"""
from __future__ import annotations

import itertools
import json
import math
import random
import statistics
from pathlib import Path

from normbench.harness import model
from normbench.harness.schema import COLUMNS, case_id

DEVICE = "NVIDIA H200"
COPY_CEILING_GBPS = 4000.0
PEAK_TBPS = 4.8


def meta(**over) -> dict:
    m = {
        "device_name": DEVICE, "sm_count": 132, "driver_version": "560.35.03",
        "cuda_version": "12.6", "torch_version": "2.6.0", "triton_version": "3.2.0",
        "python_version": "3.11.7", "git_commit": "0123456789abcdef", "git_dirty": False,
        "config_name": "seed-worked-example", "config_path": "configs/seed-worked-example.yaml",
        "config_text": "name: seed-worked-example\nrows: [1024, 8192]\n", "config_hash": "abc123",
        "copy_ceiling_gbps": COPY_CEILING_GBPS, "peak_tbps": PEAK_TBPS, "interpreted": False,
        "timer": "cuda_event", "started_at": "2025-01-01T00:00:00Z",
        "ended_at": "2025-01-01T00:10:00Z", "hostname": "gpu-runner-1",
    }
    m.update(over)
    return m


def samples(median: float, spread: float = 0.01, n: int = 10, seed: int = 0) -> list[float]:
    """n samples around `median`, evenly spread over ±spread (relative), shuffled: their
    median is `median` and their p20-p80 is about ±0.6·spread."""
    if n == 1:
        return [median]
    xs = [median * (1 - spread + 2 * spread * i / (n - 1)) for i in range(n)]
    random.Random(seed).shuffle(xs)
    return xs


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def record(*, norm="rmsnorm", implementation="torch", rows=1024, d=1024, dtype="bf16",
           weight_dtype="fp32", groups="-", groups_effective=None, status="ok", error=None,
           time_ms=0.1, spread=0.01, n_samples=10, seed=0, deterministic=True,
           distinct_results=1, repeats=5, correct=True, writers_per_slot=None,
           workspace_bytes=0, deterministic_by_design=None, kind=None, timer="cuda_event",
           **extra) -> dict:
    """One record with every schema column; numbers are left empty unless status is ok."""
    r = {c: None for c in COLUMNS}
    r.update(norm=norm, implementation=implementation, rows=rows, d=d, dtype=dtype,
             weight_dtype=weight_dtype, groups=str(groups),
             groups_effective=groups_effective, status=status, error=error,
             kind=kind or ("baseline" if implementation in ("torch", "liger", "quack") else "strategy"),
             timer=timer, device=DEVICE, seed=0, started_at="2025-01-01T00:00:00Z",
             duration_s=0.5, repeats=repeats,
             deterministic_by_design=(deterministic_by_design if deterministic_by_design is not None
                                      else implementation.startswith("disjoint")))
    r["bytes_moved"] = model.bytes_moved(norm, rows, d, dtype, weight_dtype)
    r["workspace_bytes"] = workspace_bytes
    r["writers_per_slot"] = writers_per_slot
    if status == "ok":
        xs = samples(time_ms, spread, n_samples, seed)
        r.update(time_ms=float(statistics.median(xs)), time_p20_ms=_quantile(xs, 0.2), time_p80_ms=_quantile(xs, 0.8),
                 time_samples_ms=json.dumps(xs), correct=correct, max_rel_err=1e-3 if correct else 0.5,
                 err_dx=1e-3, err_dw=1e-3, err_db=1e-3 if norm == "layernorm" else None,
                 tolerance=1e-2, deterministic=deterministic, distinct_results=distinct_results)
        r["gbps"] = model.gbps(r["bytes_moved"], r["time_ms"])
        r["pct_copy"] = 100 * r["gbps"] / COPY_CEILING_GBPS
        r["pct_peak"] = 100 * r["gbps"] / (PEAK_TBPS * 1000)
    r.update(extra)
    r["case_id"] = case_id(r)
    return r


def sweep_records(norms=("rmsnorm", "layernorm"), rows_list=(1024, 8192), d_list=(512, 4096),
                  groups_list=(16, 64)) -> list[dict]:
    """A small sweep: atomic (nondeterministic at 8192 rows), grouped_atomic, spin_lock,
    disjoint_block over GROUPS, torch and an erroring disjoint_fused and a skipped liger."""
    out = []
    for norm in norms:
        for rows in rows_list:
            for d in d_list:
                nb = model.bytes_moved(norm, rows, d, "bf16", "fp32")
                floor = nb / (COPY_CEILING_GBPS * 1e9) * 1e3 + 0.004    # copy ceiling + a launch
                par = 2 if norm == "layernorm" else 1
                common = dict(norm=norm, rows=rows, d=d)
                big = rows >= 8192
                out.append(record(implementation="atomic", time_ms=floor * (1.3 + rows / 4096),
                                  deterministic=not big, distinct_results=4 if big else 1,
                                  writers_per_slot=rows, workspace_bytes=d * 4 * par,
                                  seed=1, **common))
                out.append(record(implementation="torch", time_ms=floor * 2.0, seed=2,
                                  deterministic=True, **common))
                for g in groups_list:
                    w = math.ceil(rows / g)
                    ws = g * d * 4 * par
                    out.append(record(implementation="grouped_atomic", groups=g, groups_effective=g,
                                      time_ms=floor * (1.1 + 8 / g), deterministic=not big,
                                      distinct_results=2 if big else 1, writers_per_slot=w,
                                      workspace_bytes=ws, seed=3 + g, **common))
                    out.append(record(implementation="spin_lock", groups=g, groups_effective=g,
                                      time_ms=floor * (1.5 + 16 / g), deterministic=True,
                                      writers_per_slot=w, workspace_bytes=ws + 8 * g,
                                      seed=4 + g, **common))
                    out.append(record(implementation="disjoint_block", groups=g, groups_effective=g,
                                      time_ms=floor * (1.25 + g / 256), deterministic=True,
                                      writers_per_slot=1, workspace_bytes=ws, seed=5 + g, **common))
                if rows == rows_list[-1] and d == d_list[-1]:
                    out.append(record(implementation="disjoint_fused", groups="auto", status="error",
                                      error="CompilationError: out of resources: shared memory, "
                                            "Required: 262144, Hardware limit: 232448",
                                      writers_per_slot=1, **common))
                else:
                    out.append(record(implementation="disjoint_fused", groups="auto",
                                      groups_effective=66, time_ms=floor * 1.6, deterministic=True,
                                      writers_per_slot=1, workspace_bytes=66 * d * 4 * par + 4,
                                      seed=6, **common))
                out.append(record(implementation="liger", status="skipped",
                                  error="liger-kernel is not installed", **common))
    return out


_START = "2025-01-01T00:00:00Z"       # record()'s start time
_RUNS = itertools.count(1)


def write_run(run_dir, records: list[dict], run_meta: dict | None = None) -> Path:
    """A run directory holding `records` and `run_meta`, written through harness.store."""
    run_dir = Path(run_dir)
    # each run its own measurements, as runs on a GPU are: a record left at record()'s start
    # time is stamped with this run's (the same case, time and samples in two runs would be
    # one measurement seen twice, which compare counts once -- harness/baselines.py); a record
    # that says when it started (taken from another run: a copy, a shard) keeps it
    n = next(_RUNS)
    stamp = f"2025-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.5Z"
    records = [dict(r, started_at=stamp) if r.get("started_at") == _START else r
               for r in records]
    try:
        from normbench.harness.store import RunStore
    except ImportError:                         # store not landed yet: temporary CSV fallback
        return _write_run_fallback(run_dir, records, run_meta)
    store = RunStore(run_dir, resume=False, parquet_interval_s=1e9)
    try:
        store.write_meta(run_meta if run_meta is not None else meta())
        for r in records:
            store.append(r)
    finally:
        store.close()
    return run_dir


def _write_run_fallback(run_dir: Path, records: list[dict], run_meta: dict | None) -> Path:
    import pandas as pd
    run_dir.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(records, columns=list(COLUMNS)).to_csv(run_dir / "records.csv", index=False)
    (run_dir / "meta.json").write_text(json.dumps(run_meta if run_meta is not None else meta()))
    return run_dir


_TMP: list = []


def _tmpdir(prefix: str) -> Path:
    import atexit
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix=prefix))
    if not _TMP:
        atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _TMP])
    _TMP.append(d)
    return d


_REPORTED: dict = {}


def reported_run() -> tuple[Path, dict]:
    """The sweep_records() run with its report written, built once per test session (the
    report and browser tests share it: plotting is the slow part)."""
    if "run" not in _REPORTED:
        from normbench.harness.report import write_report
        run_dir = write_run(_tmpdir("normbench-report-") / "run", sweep_records(), meta())
        _REPORTED["run"] = (run_dir, write_report(run_dir))
    return _REPORTED["run"]


def register_unavailable_test_entries(monkeypatch) -> None:
    """Two entries registered as unavailable here, for the report's model of a run measured
    elsewhere (the registry restored after the test): test_gluon, a strategy deterministic by
    design whose contention model is data (as disjoint_smem's), and test_peer, a baseline
    without one (as liger's)."""
    from normbench.strategies import _registry
    from normbench.strategies._contention import Contention
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    _registry.register_unavailable("test_gluon", kind="strategy", reason="needs a CUDA GPU",
                                   deterministic_by_design=True, uses_groups=True,
                                   contention=Contention(writers=1, partial_rows="groups"))
    _registry.register_unavailable("test_peer", kind="baseline", deterministic_by_design=True,
                                   reason="test-peer is not installed")
