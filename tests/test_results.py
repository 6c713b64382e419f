"""The committed H200 run directories stay readable and self-consistent."""
import shutil
from pathlib import Path

import pytest

from normbench.harness.compare import compare, exit_code
from normbench.harness.schema import COLUMNS
from normbench.harness.store import load_meta, load_records

RESULTS = Path(__file__).resolve().parent.parent / "results"
RUNS = sorted(p for p in RESULTS.iterdir() if (p / "records.csv").exists())


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_committed_run_loads(run):
    df = load_records(run)
    assert list(df.columns) == list(COLUMNS) and len(df) and df["case_id"].is_unique
    meta = load_meta(run)
    assert meta["device_name"] == "NVIDIA H200" and meta["timer"] == "cuda_event"
    ok = df[df["status"] == "ok"]
    # ours are right everywhere; a peer may be recorded wrong (since 30862c7 each output is
    # judged by its own dtype's tolerance: liger's RMSNorm dγ with an fp32 weight fails)
    assert ok.loc[ok["kind"] == "strategy", "correct"].all()
    # the one peer failure known and written in the README: liger's RMSNorm dγ with an fp32
    # weight; any other wrong peer record is news (a fraction would hide it in a run where
    # that failure is a tenth of the records, as in h200-targets-narrow-rms)
    bad = ok[(ok["kind"] == "baseline") & ~ok["correct"].astype(bool)]
    known = ((bad["implementation"] == "liger") & (bad["norm"] == "rmsnorm")
             & (bad["weight_dtype"] == "fp32"))
    assert known.all(), bad.loc[~known, ["implementation", "norm", "dtype", "weight_dtype"]]


def test_the_ci_baseline_s_two_runs_compare_clean_and_a_copy_is_no_baseline(tmp_path):
    """The workflow's baseline (h200-quick-runs, two runs of one commit): each run against the
    other, with the workflow's selection, passes both ways.  A copy of a run is its own
    measurement, no baseline for it: refused, alone or beside the other run (there it widened
    the envelope to hold the candidate, so a copy of anything passed)."""
    from normbench.harness.compare import CompareError
    runs = RESULTS / "h200-quick-runs"
    gate = dict(only="kind:strategy", exclude="atomic")
    assert exit_code(compare(runs / "run-1", runs / "run-2", **gate)) == 0
    assert exit_code(compare(runs / "run-2", runs / "run-1", **gate)) == 0
    shutil.copytree(runs / "run-2", tmp_path / "run-2")
    for base in (runs, runs / "run-2"):
        with pytest.raises(CompareError, match="holds only measurements the candidate"):
            compare(base, tmp_path / "run-2", **gate)
    shutil.copytree(RESULTS / "h200-quick", tmp_path / "copy")
    with pytest.raises(CompareError, match=r"\(a copy\)"):
        compare(RESULTS / "h200-quick", tmp_path / "copy")
