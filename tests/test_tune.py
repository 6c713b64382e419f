"""bench/tune.py's round 9 (issue 16) and the device call that runs it (bench/device_targets.sh):
the candidates it times, and the script end to end on CPU under the interpreter, tiny."""
import csv
import io
import os
import subprocess
import sys
import tarfile

import pytest

from normbench import strategies  # noqa: F401  (sets TRITON_INTERPRET first)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import tune  # noqa: E402


@pytest.fixture
def round9(monkeypatch):
    monkeypatch.setattr(tune, "ROUND9", True)


def overrides(name, d):
    return [ov for ov, g, again in tune.grid(name, d, 132) if ov]


def test_round9_candidates(round9):
    """Rows read twice (12288, 16384): the weight as a tile; partly masked tiles (3072, 7168):
    a fourth stage, and twice the rows a tile at 3072; powers of two and the one-row
    strategies: the default alone (timed twice, first and last)."""
    for name in ("disjoint_block", "disjoint_fused"):
        assert overrides(name, 16384) == overrides(name, 12288) == [{"w_tile": True}]
        assert overrides(name, 3072) == [{"num_stages": 4}, {"block_r": 4}]
        assert overrides(name, 7168) == [{"num_stages": 4}]
        for d in (1024, 4096, 8192, 20000, 700):
            assert overrides(name, d) == []
        assert [again for _, _, again in tune.grid(name, 4096, 132)] == [False, True]
    assert list(tune.grid("grouped_atomic", 3072, 132)) == [({}, None, False)]


def test_device_targets_script_on_cpu(tmp_path):
    """The whole device call, tiny: every grid writes its tune.csv, every timing correct."""
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "J": "1", "REP": "1",
           "NAMES": "disjoint_block", "NORMS": "rmsnorm", "WIDE": "2x40", "WIDE_BF16": "2x40",
           "POW2": "2x1100", "K": "nothing_selected", "PYTHONPATH": ROOT}
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "device_targets.sh")], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    with tarfile.open(tmp_path / "targets.tgz") as tar:
        names = tar.getnames()
        for grid in ("wide-fp32w", "wide-bf16", "pow2"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            ours = [x for x in rows if x["name"] == "disjoint_block"]
            assert ours and all(x["status"] == "ok" for x in rows), (grid, rows)
            want = "fp32" if grid == "wide-fp32w" else "bf16"
            assert {x["weight_dtype"] for x in rows} == {want}
        # d = 1100 is a partly masked tile of 2048: round 9's candidates were timed
        pow2 = list(csv.DictReader(io.TextIOWrapper(tar.extractfile("t/pow2/tune.csv"))))
    assert {x["override"] for x in pow2 if x["name"] == "disjoint_block"} == {
        "", '{"num_stages": 4}', '{"block_r": 8}'}
    assert "t/gpu-tests.log" in names
