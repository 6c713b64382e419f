"""bench/tune.py's round 9 (issue 16) and the device call that runs it (bench/device_targets.sh):
the candidates it times, and the script end to end on CPU under the interpreter, tiny."""
import csv
import json
import io
import os
import subprocess
import sys
import tarfile

import pytest

from normbench import strategies  # noqa: F401  (sets TRITON_INTERPRET first)
from tests import forkcli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import tune  # noqa: E402


@pytest.fixture
def round9(monkeypatch):
    monkeypatch.setattr(tune, "ONLY_ROUND", 9)


def _served(env):
    """The environment the device scripts' `python3` calls run in, served by a fork server
    (forkcli.script_env): device_start.sh's PYTHONPATH, which is peers_env.sh's too (the
    checkout alone) where the script is started without one (_device_script) — one server
    for both, where a PYTHONPATH given to the script (`ROOT:ROOT` after device_start.sh)
    needed a second (some 10 s of CPU a test process: torch, Dynamo, Inductor imported)."""
    return [{**env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": ROOT}]


def _tune_py(*args):
    """`python3 bench/tune.py ARGS` from the repository root (PYTHONPATH the checkout), forked
    from the server that serves the device scripts' calls in that environment (peers_env.sh's:
    unbuffered, which changes nothing the tests read): its CompletedProcess, text."""
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(["python3", os.path.join(ROOT, "bench", "tune.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=forkcli.script_env(env, *_served(env)))


def _device_script(tmp_path, script, **env):
    """Run bench/`script` on CPU, tiny (DEVICE=cpu, one warm job, 1 ms a timing, its $OUT in
    tmp_path) with `env` added (its shapes and names); it must exit 0."""
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "J": "1", "REP": "1",
           "PYTHONPATH": "", **env}         # device_start.sh puts the checkout on it
    served = _served(env)
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", script)], cwd=ROOT,
                       env=forkcli.script_env(env, *served), capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def _ours_ok(tgz, grids, name):
    """{grid: rows of tune.csv} from a device script's tarball, with every row of `name` (the
    strategy tuned) there and correct."""
    out = {}
    with tarfile.open(tgz) as tar:
        for grid in grids:
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            ours = [x for x in rows if x["name"] == name]
            assert ours and all(x["status"] == "ok" for x in ours), grid
            out[grid] = rows
    return out


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


@pytest.fixture
def round10(monkeypatch):
    monkeypatch.setattr(tune, "ONLY_ROUND", 10)


def test_round10_candidates(round10):
    """Rows of 12288 and 16384: the row shared by two programs, its part held or read twice,
    and at 12288 (three parts of exactly 4096) by three; rows wider than a block: parts of
    16384 and of 8192; partly masked tiles at 1024 < d < 4096: a fourth stage and twice the
    rows a tile; powers of two and the one-row strategies: the default alone."""
    two = [{"col_split": 2, "num_stages": 2, "reload": False},
           {"col_split": 2, "num_stages": 2, "reload": True}]
    three = [{"col_split": 3, "block_r": 1, "num_warps": w} for w in (8, 16)]
    for name in ("disjoint_block", "disjoint_fused"):
        assert overrides(name, 16384) == two
        assert overrides(name, 12288) == two + three
        assert overrides(name, 32768) == [{"col_split": 2}, {"col_split": 4, "num_stages": 2}]
        assert overrides(name, 3072) == [{"num_stages": 4}, {"block_r": 4}]
        assert overrides(name, 1536) == [{"num_stages": 4}, {"block_r": 8}]
        for d in (1024, 2048, 4096, 8192, 7168, 700):
            assert overrides(name, d) == []
    assert list(tune.grid("grouped_atomic", 16384, 132)) == [({}, None, False)]


def test_round11_candidates(monkeypatch):
    """Rows of 12288 and 16384: the row shared by two programs that exchange their row sums,
    polling 0, 4 or 16 times, and at 12288 by three; rows wider than a block: parts of 8192
    and of 16384, exchanging; narrower rows and the one-row strategies: the default alone."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 11)
    two = [{"col_split": 2, "num_stages": 2, "exchange": True, "spin": s} for s in (0, 4, 16)]
    three = [{"col_split": 3, "block_r": 1, "num_warps": 16, "exchange": True, "spin": 4}]
    for name in ("disjoint_block", "disjoint_fused"):
        assert overrides(name, 16384) == two
        assert overrides(name, 12288) == two + three
        assert overrides(name, 32768) == [
            {"col_split": 4, "num_stages": 2, "exchange": True, "spin": 4},
            {"col_split": 2, "exchange": True, "spin": 4}]
        for d in (1024, 3072, 4096, 8192, 700):
            assert overrides(name, d) == []
    assert list(tune.grid("grouped_atomic", 16384, 132)) == [({}, None, False)]


def test_round12_candidates(monkeypatch):
    """The L2 prefetch: rows read twice 1, 2 or 4 tiles ahead, rows in chunks 1 or 2, the
    pipelined rows 4 or 8; the one-row strategies: the default alone."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 12)
    for name in ("disjoint_block", "disjoint_fused"):
        for d in (16384, 12288, 9000):
            assert overrides(name, d) == [{"l2_ahead": a} for a in (1, 2, 4)]
        assert overrides(name, 32768) == [{"l2_ahead": a} for a in (1, 2)]
        for d in (700, 1024, 3072, 8192):
            assert overrides(name, d) == [{"l2_ahead": a} for a in (4, 8)]
    assert list(tune.grid("grouped_atomic", 16384, 132)) == [({}, None, False)]


def test_round14_candidates(monkeypatch):
    """disjoint_smem's own parameters: 32 and 128 KB in flight at every width, the other
    warps from 4096, twice the rule's programs up to 4096; every other strategy at its default
    alone (a control), the row loop's rounds not applied to it."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 14)
    inflight = [{"inflight": 32768}, {"inflight": 131072}]
    other = {"num_warps": 8, "wide_weight_warps": 16}
    assert overrides("disjoint_smem", 16384) == inflight + [other]
    assert overrides("disjoint_smem", 4096) == inflight + [other]
    assert overrides("disjoint_smem", 1024) == inflight
    assert [g for ov, g, _ in tune.grid("disjoint_smem", 1024, 132) if g] == [528]
    assert [g for ov, g, _ in tune.grid("disjoint_smem", 4096, 132) if g] == [264]
    assert [again for _, _, again in tune.grid("disjoint_smem", 8192, 132)][-1] is True
    for name in ("disjoint_block", "disjoint_fused", "grouped_atomic"):
        assert list(tune.grid(name, 16384, 132)) == [({}, None, False)]


def test_round15_candidates(monkeypatch):
    """The split rows against the rule's choice where they change the parts (12288, not
    16384, 7168 or 10000): the rule splits there since round 15, so the candidate is the
    unsplit row; and round 14's candidates at d ≤ 8192 alone."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 15)
    assert overrides("disjoint_smem", 12288) == [{"split": False}]
    assert overrides("disjoint_smem", 16384) == overrides("disjoint_smem", 10000) == []
    monkeypatch.setattr(tune, "ONLY_ROUND", 14)
    r14 = overrides("disjoint_smem", 7168)
    monkeypatch.setattr(tune, "ONLY_ROUND", 15)
    assert overrides("disjoint_smem", 7168) == r14 and r14
    assert list(tune.grid("disjoint_block", 12288, 132)) == [({}, None, False)]


def test_round16_candidates(monkeypatch):
    """pdl for both strategies that launch the reduce after a kernel of their own (a
    control: every other at its default alone)."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 16)
    for name in ("disjoint_block", "disjoint_smem"):
        for d in (1024, 3072, 16384):
            assert overrides(name, d) == [{"pdl": True}]
    for name in ("disjoint_fused", "grouped_atomic"):
        assert list(tune.grid(name, 4096, 132)) == [({}, None, False)]


def test_round17_candidates(monkeypatch):
    """The pipelined row loop's own (d ≤ 8192): interleave everywhere there, tiles of twice
    the rows at 16 warps from d = 2048; nothing for rows read twice or in chunks, nor for the
    strategies not in the round."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 17)
    for name in ("disjoint_block", "disjoint_fused"):
        assert overrides(name, 1024) == [{"interleave": True}]
        assert overrides(name, 4096) == [{"interleave": True}, {"block_r": 4, "num_warps": 16}]
        assert overrides(name, 7168) == [{"interleave": True}, {"block_r": 2, "num_warps": 16}]
        assert overrides(name, 16384) == overrides(name, 32768) == []
    assert list(tune.grid("disjoint_smem", 4096, 132)) == [({}, None, False)]


def test_device_round17_script_on_cpu(tmp_path):
    """Round 17's device call, tiny: every grid writes its tune.csv, every timing correct,
    the candidates among them; the timeline says it needs a GPU (in its log) instead of
    failing the call."""
    _device_script(tmp_path, "device_round17.sh", NORMS="rmsnorm", SHAPES="3x40", FP32W="3x40",
                   FP32="3x40")
    with tarfile.open(tmp_path / "round17.tgz") as tar:
        for grid in ("bf16", "fp32w", "fp32"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/r17-{grid}/tune.csv"))))
            ours = [x for x in rows if x["name"] in ("disjoint_block", "disjoint_fused")]
            assert ours and all(x["status"] == "ok" for x in ours), grid
            assert {x["override"] for x in ours} == {"", '{"interleave": true}'}, grid
        log = tar.extractfile("t/timeline.log").read().decode()
        assert "needs a CUDA GPU" in log


def test_round18_candidates(monkeypatch):
    """disjoint_smem's own where its rule stages rows wider than 8192: interleave, alone and
    with pdl; nothing at d ≤ 8192, nothing for the other strategies (controls)."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 18)
    for d in (12288, 14336, 16384):
        assert overrides("disjoint_smem", d) == [{"interleave": True},
                                                 {"interleave": True, "pdl": True}]
    assert overrides("disjoint_smem", 8192) == overrides("disjoint_smem", 1024) == []
    for name in ("disjoint_strided", "disjoint_block"):
        assert list(tune.grid(name, 16384, 132)) == [({}, None, False)]


@pytest.mark.parametrize("script,control,env", [
    ("device_round14.sh", "disjoint_block", dict(SHAPES="2x40", FP32="2x40")),
    ("device_round18.sh", "disjoint_strided", dict(SHAPES="2x40", EXTRA="3x40"))])
def test_device_staged_round_scripts_on_cpu(tmp_path, script, control, env):
    """Rounds 14's and 18's device calls (disjoint_smem's candidates), tiny: every grid writes
    its tune.csv; the control strategy correct at its default alone; disjoint_smem cannot run
    on CPU: its lines are recorded as not available, not lost; the GPU tests' log is kept."""
    _device_script(tmp_path, script, NORMS="rmsnorm", K="nothing_selected", **env)
    with tarfile.open(tmp_path / script.replace("device_", "").replace(".sh", ".tgz")) as tar:
        for grid in ("bf16", "fp32w", "fp32"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            ctl = [x for x in rows if x["name"] == control]
            assert ctl and all(x["status"] == "ok" and not x["override"] for x in ctl), grid
            staged = [x for x in rows if x["name"] == "disjoint_smem"]
            assert staged and all("not available" in x["status"] for x in staged), grid
        assert "t/gpu-tests.log" in tar.getnames()


def test_round19_times_the_defaults_alone(monkeypatch):
    """Round 19 compares source files, not parameters: every strategy at its default, once."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 19)
    for name in ("disjoint_smem", "disjoint_strided", "disjoint_block"):
        for d in (1024, 16384):
            assert list(tune.grid(name, d, 132)) == [({}, None, False)]


def test_round20_candidates(monkeypatch):
    """disjoint_strided's row loop (d ≤ 8192): pdl, one stage more, and — where the rule's
    programs leave some a tile more than the others — the largest GROUPS within 10 % below
    that deals the tiles out evenly, alone and with pdl; nothing at the staged widths, nothing
    for the other strategies (controls)."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 20)
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})

    def cands(d, rows):
        return [(ov, g) for ov, g, again in tune.grid("disjoint_strided", d, 132, rows)][1:-1]
    # 16384 rows, 2 a tile: 8192 tiles, 132 programs -> 128 (64 tiles each)
    assert cands(4096, 16384) == [({"pdl": True}, None), ({"num_stages": 4}, None),
                                  ({}, 128), ({"pdl": True}, 128)]
    # d = 1024: 4 rows a tile, 264 programs (4 warps: two a SM) -> 256
    assert cands(1024, 65536)[2:] == [({}, 256), ({"pdl": True}, 256)]
    # 3072: a fourth stage in the rule already, so a fifth
    assert cands(3072, 32768)[1] == ({"num_stages": 5}, None)
    # tiles that the rule's programs already share evenly (132 · 64 rows): no GROUPS candidate
    assert cands(8192, 132 * 64) == [({"pdl": True}, None), ({"num_stages": 4}, None)]
    # no divisor within 10 %: 8191 tiles (prime) — none either
    assert len(cands(8192, 8191)) == 2
    assert cands(16384, 8192) == []
    assert list(tune.grid("disjoint_block", 4096, 132, 16384)) == [({}, None, False)]


def test_device_round20_script_on_cpu(tmp_path):
    """Round 20's device call, tiny: every grid writes its tune.csv, every timing correct,
    the candidates among them (3 rows of 40 make one tile, for 3 programs: no GROUPS
    candidate — so pdl and the stage)."""
    _device_script(tmp_path, "device_round20.sh", NORMS="rmsnorm", SHAPES="3x40")
    for grid, rows in _ours_ok(tmp_path / "round20.tgz", ("bf16", "fp32w", "fp32"),
                               "disjoint_strided").items():
        assert {x["override"] for x in rows if x["name"] == "disjoint_strided"} == {
            "", '{"pdl": true}', '{"num_stages": 4}'}, grid


def test_round21_candidates(monkeypatch):
    """The staged kernel at rows it stages in two parts (12288 = 8192 + 4096, 10240, 11264):
    the other warps and 32 / 128 KB in flight, for disjoint_smem and disjoint_strided; nothing
    at one part (16384, 14336 — whose rest is not narrower than half a block —, 8192 and
    narrower) and nothing for the other strategies (controls)."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 21)
    want = [{"num_warps": 8, "wide_weight_warps": 16}, {"inflight": 32768}, {"inflight": 131072}]
    for name in ("disjoint_smem", "disjoint_strided"):
        for d in (12288, 10240, 11264):
            assert overrides(name, d) == want, (name, d)
            assert [again for _, _, again in tune.grid(name, d, 132)] == [False] * 4 + [True]
        for d in (16384, 14336, 8192, 3072, 1024):
            assert overrides(name, d) == [], (name, d)
    assert list(tune.grid("disjoint_block", 12288, 132, 8192)) == [({}, None, False)]


def test_device_round21_script_on_cpu(tmp_path):
    """Round 21's device call, tiny: every grid writes its tune.csv and every timing of the
    strategy that runs here is correct (the staged kernel needs a CUDA GPU: disjoint_smem is
    recorded as not available, disjoint_strided takes its row loop)."""
    _device_script(tmp_path, "device_round21.sh", NORMS="rmsnorm", SHAPES="3x40")
    for grid, rows in _ours_ok(tmp_path / "round21.tgz", ("bf16", "fp32w", "fp16w"),
                               "disjoint_strided").items():
        staged = [x for x in rows if x["name"] == "disjoint_smem"]
        assert staged and all("not available" in x["status"] for x in staged), grid


def test_round22_candidates(monkeypatch):
    """disjoint_strided's row loop where its tile is partly masked: twice the rows a tile (at
    the rule's stages and one fewer) and half the warps; nothing at powers of two, at the
    staged widths or for the other strategies (controls)."""
    monkeypatch.setattr(tune, "ONLY_ROUND", 22)
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    # 3072: [2, 4096] tiles, 4 stages, 16 warps
    assert overrides("disjoint_strided", 3072) == [
        {"block_r": 4}, {"block_r": 4, "num_stages": 3}, {"num_warps": 8}]
    # 1536: [4, 2048] tiles at 8 warps; 7168: [1, 8192] at 4 stages (round 36), 16 warps
    assert overrides("disjoint_strided", 1536) == [
        {"block_r": 8}, {"block_r": 8, "num_stages": 3}, {"num_warps": 4}]
    assert overrides("disjoint_strided", 7168) == [
        {"block_r": 2}, {"block_r": 2, "num_stages": 3}, {"num_warps": 8}]
    for d in (4096, 1024, 8192, 16384, 12288):
        assert overrides("disjoint_strided", d) == [], d
    assert [again for _, _, again in tune.grid("disjoint_strided", 3072, 132)] == [False] * 4 + [True]
    assert list(tune.grid("disjoint_block", 3072, 132, 32768)) == [({}, None, False)]


def test_device_round22_script_on_cpu(tmp_path):
    """Round 22's device call, tiny: every grid writes its tune.csv, every timing correct and
    the candidates among them (40 columns: a partly masked tile of 64 at 4 warps — twice the
    rows a tile at two stage counts, no fewer warps)."""
    _device_script(tmp_path, "device_round22.sh", NORMS="layernorm", SHAPES="3x40",
                   SHAPES_FP32="3x40")
    for grid, rows in _ours_ok(tmp_path / "round22.tgz", ("bf16", "fp32w", "fp16", "fp32"),
                               "disjoint_strided").items():
        assert {x["override"] for x in rows if x["name"] == "disjoint_strided"} == {
            "", '{"block_r": 32}', '{"block_r": 32, "num_stages": 2}'}, grid


def test_device_round22b_ab_step_on_cpu(tmp_path):
    """Round 22's second call, its A/B step alone (RUN=0: no GPU tests or run), tiny: each
    configuration timed once a round, first-slot turns rotated, every answer correct."""
    _device_script(tmp_path, "device_round22b.sh", SHAPES="3x40", ROUNDS="2", RUN="0")
    with tarfile.open(tmp_path / "round22b.tgz") as tar:
        rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile("t/ab/ab.csv"))))
    assert len(rows) == 4 and all(x["status"] == "ok" for x in rows)
    assert [x["config"] for x in rows if x["slot"] == "0"] == ['{"num_warps": 16}',
                                                               '{"num_warps": 8}']


def test_passes_time_every_configuration_again_in_a_rotated_order(tmp_path):
    """--passes 2: each configuration (the strategy's and torch's) twice, its correctness
    judged once, the second pass starting one configuration later; the summary prints."""
    r = _tune_py("--device", "cpu", "--names", "disjoint_strided", "--norms", "rmsnorm",
                 "--shapes", "3x40", "--round22", "--rep", "1", "--passes", "2", "--out",
                 str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    rows = list(csv.DictReader(open(tmp_path / "tune.csv")))
    assert all(x["status"] == "ok" for x in rows) and len(rows) == 10
    first = [(x["name"], x["override"], x["config"]) for x in rows if x["pass"] == "0"]
    second = [(x["name"], x["override"], x["config"]) for x in rows if x["pass"] == "1"]
    assert second == first[1:] + first[:1]
    assert "== rmsnorm 3x40" in r.stdout


def test_tune_csv_says_what_launched(tmp_path):
    """tune.csv's launch_id and launched say what ran beside what was asked for: the default's
    two timings share one id, a GROUPS that comes to the auto's (8 at 200 rows) has the
    default's id too (and the summary names it as the rule timed again), a real change (12)
    has another; `launched` holds the kernel's constexprs as launched."""
    r = _tune_py("--device", "cpu", "--names", "disjoint_strided", "--norms", "rmsnorm",
                 "--shapes", "200x96", "--new-only", "--rep", "1", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [x for x in csv.DictReader(open(tmp_path / "tune.csv"))
            if x["name"] == "disjoint_strided"]
    ids = {(x["config"], x["override"], x["groups"]): x["launch_id"] for x in rows}
    default = {v for (c, _, _), v in ids.items() if c}
    assert len(default) == 1 and all(len(v) == 12 for v in ids.values())
    capped = [k for k, v in ids.items() if not k[0] and v in default]
    assert capped and all(k[2] for k in capped)     # GROUPS asked past the cap: the rule again
    assert any(v not in default for v in ids.values())
    assert all(x["launched"].startswith("_disjoint_kernel grid=") for x in rows)
    peers = [x for x in csv.DictReader(open(tmp_path / "tune.csv")) if x["name"] == "torch"]
    assert peers and all(x["launch_id"] == x["launched"] == "" for x in peers)
    assert "launched what the default launches" in r.stdout and "groups=" in r.stdout


def test_device_ab_script_on_cpu(tmp_path):
    """bench/device_ab.sh, tiny: A, the variant, A again, each with its tune.csv and every
    timing correct; the variant's file recorded as swapped in, and this tree's file back in
    place afterwards, byte for byte."""
    target = os.path.join(ROOT, "strategies", "grouped_atomic.py")
    original = open(target, "rb").read()
    variant = tmp_path / "v1" / "strategies"
    variant.mkdir(parents=True)
    (variant / "grouped_atomic.py").write_bytes(original + b"# a variant of round 19's test\n")
    out = tmp_path / "out"
    out.mkdir()
    _device_script(out, "device_ab.sh",
                   GRIDS=f"tiny|--norms rmsnorm --names grouped_atomic --shapes 2x40|{tmp_path}/v1")
    assert open(target, "rb").read() == original
    with tarfile.open(out / "ab.tgz") as tar:
        for name in ("a", "v1", "a2"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/tiny/{name}/tune.csv"))))
            ours = [x for x in rows if x["name"] == "grouped_atomic"]
            assert len(ours) == 1 and ours[0]["status"] == "ok", name
        swapped = tar.extractfile("t/swapped.txt").read().decode()
        assert "strategies/grouped_atomic.py" in swapped


def test_device_round12_script_on_cpu(tmp_path):
    """Round 12's device call, tiny: every grid writes its tune.csv, every timing correct
    (under the interpreter the prefetch is off: the candidates run the rule's code)."""
    _device_script(tmp_path, "device_round12.sh", NAMES="disjoint_block", NORMS="rmsnorm",
                   WIDE="2x40", WIDE_W="2x40", WIDER="2x48", FP32="2x40", PIPE="3x40",
                   K="nothing_selected")
    with tarfile.open(tmp_path / "round12.tgz") as tar:
        for grid in ("wide-bf16", "wide-fp32w", "wider", "fp32", "pipe"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), (grid, rows)
            assert {x["override"] for x in rows if x["name"] == "disjoint_block"} == {
                "", '{"l2_ahead": 4}', '{"l2_ahead": 8}'}, grid
        assert "t/gpu-tests.log" in tar.getnames()


def test_device_round10_script_on_cpu(tmp_path):
    """Round 10's device call, tiny (widths where no candidate applies but a partly masked
    tile's: the interpreter is slow at wide rows; test_round10_candidates checks the grid and
    test_strategies the shared rows): every grid writes its tune.csv, every timing of ours
    correct.  The control, torch on CPU, gets dγ of bf16 x with an fp32 γ outside the fp32
    weight's tolerance (as the harness judges it too: each output by its own dtype), so
    there it is recorded WRONG — and timed all the same."""
    _device_script(tmp_path, "device_round10.sh", NAMES="disjoint_block", NORMS="layernorm",
                   WIDE="2x40", WIDER="2x48", POW2="2x1100", FP32="2x40", K="nothing_selected")
    with tarfile.open(tmp_path / "round10.tgz") as tar:
        rows = {}
        for grid in ("wide-bf16", "wide-fp32w", "wider", "pow2", "fp32"):
            rows[grid] = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            ours = [x for x in rows[grid] if x["name"] != "torch"]
            assert ours and all(x["status"] == "ok" for x in ours), (grid, rows[grid])
            ctl = [x for x in rows[grid] if x["name"] == "torch"]
            assert ctl and all(x["status"] in ("ok", "WRONG") and float(x["us"]) > 0 for x in ctl)
            if grid != "wide-fp32w":
                assert all(x["status"] == "ok" for x in ctl), grid
        assert "t/gpu-tests.log" in tar.getnames()
    assert {x["override"] for x in rows["pow2"] if x["name"] == "disjoint_block"} == {
        "", '{"num_stages": 4}', '{"block_r": 8}'}
    assert {x["weight_dtype"] for x in rows["wide-fp32w"]} == {"fp32"}
    assert {x["dtype"] for x in rows["fp32"]} == {"fp32"}


def test_device_targets_script_on_cpu(tmp_path):
    """The whole device call, tiny: every grid writes its tune.csv, every timing correct."""
    _device_script(tmp_path, "device_targets.sh", NAMES="disjoint_block", NORMS="rmsnorm",
                   WIDE="2x40", WIDE_BF16="2x40", POW2="2x1100", K="nothing_selected")
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


def test_peers_split_rejoins_to_the_same_runtime(tmp_path):
    """bench/peers_split.sh N: the pieces joined in order are the runtime's parts joined, and
    every wheel is in exactly one folder (in a folder that is no git checkout, too)."""
    a, b = tmp_path / ".peers-a", tmp_path / ".peers-b"
    a.mkdir()
    b.mkdir()
    runtime = os.urandom(300_001)
    (a / "part-aa").write_bytes(runtime[:200_000])
    (b / "part-ab").write_bytes(runtime[200_000:])
    wheels = {f"w{i}-1.0-py3-none-any.whl": os.urandom(1000 * (i + 1)) for i in range(5)}
    for i, (name, data) in enumerate(wheels.items()):
        ((a if i % 2 else b) / name).write_bytes(data)
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "peers_split.sh"), "3"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    joined = b"".join((tmp_path / f".pk{k}" / f"piece-{k}-of-3").read_bytes() for k in (1, 2, 3))
    assert joined == runtime
    found = sorted(p.name for k in (1, 2, 3) for p in (tmp_path / f".pk{k}").glob("*.whl"))
    assert found == sorted(wheels)
    assert r.stdout.count("MiB of 64") == 3


def test_device_round16_script_on_cpu(tmp_path):
    """Rounds 16 and 15's device call, tiny: every grid writes its tune.csv, disjoint_block
    correct at its default and with `pdl` (a no-op under the interpreter); the flush check
    says in one line that it needs a GPU, and the call goes on."""
    r = _device_script(tmp_path, "device_round16.sh", NORMS="rmsnorm", SHAPES="2x40", FP32W="2x40",
                       R15="2x40", K="nothing_selected")
    assert "flush_check: needs a CUDA GPU" in r.stdout and "Traceback" not in r.stdout
    with tarfile.open(tmp_path / "round16.tgz") as tar:
        for grid in ("r16-bf16", "r16-fp32w", "r15-bf16", "r15-fp32w"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{grid}/tune.csv"))))
            block = [x for x in rows if x["name"] == "disjoint_block"]
            assert block and all(x["status"] == "ok" for x in block), grid
        assert {x["override"] for x in block} == {""}          # round 15: the control alone
        assert "t/gpu-tests.log" in tar.getnames() and "t/flush.log" in tar.getnames()


def _ab_on_cpu(tmp_path, monkeypatch, shape: str, rounds: int, *configs: str,
               extra=(), rc=0) -> list[dict]:
    """bench/ab_repeat.py of disjoint_strided's RMSNorm under the interpreter, OVERRIDE empty
    before (`extra`: more arguments), exiting `rc`: the rows of its ab.csv."""
    import ab_repeat
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    assert ab_repeat.main(["--device", "cpu", "--norm", "rmsnorm", "--shapes", shape,
                           "--rounds", str(rounds), "--rep", "1", "--out", str(tmp_path),
                           *extra, "--configs", *configs]) == rc
    rows = list(csv.DictReader(open(tmp_path / "ab.csv")))
    assert all(r["host_us"] == "" for r in rows)        # taken on a GPU only
    return rows


def test_ab_repeat_times_a_reduce_configuration(tmp_path, monkeypatch):
    """A configuration's "reduce" entry reaches the reduce kernel (OVERRIDE["reduce"]), the rest
    the strategy; the rule's configuration runs with the reduce's own rule; nothing is left in
    OVERRIDE afterwards."""
    from normbench.strategies import reduce
    seen = []
    real = reduce.reduce_params
    monkeypatch.setattr(reduce, "reduce_params", lambda *a: seen.append(real(*a)) or seen[-1])
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 2, "{}",
                      '{"reduce": {"BLOCK_G": 2, "BLOCK_N": 16}}')
    assert len(rows) == 4 and all(x["status"] == "ok" for x in rows)
    assert {(p["BLOCK_G"], p["BLOCK_N"]) for p in seen} == {(2, 16), (reduce.BLOCK_G, 16)}
    assert tune._tuning.OVERRIDE == {}


def test_ab_repeat_calls_with_a_configurations_groups(tmp_path, monkeypatch):
    """A configuration's "groups" entry is the GROUPS the strategy is called with (checked and
    timed), not a launch parameter; the others call it with its auto (None)."""
    from normbench import strategies
    e = strategies.get("disjoint_strided")
    seen = []
    real = type(e).backward
    monkeypatch.setattr(type(e), "backward",
                        lambda self, *a, groups=None: seen.append(groups) or real(self, *a,
                                                                                 groups=groups))
    # 40 rows: the auto GROUPS is 3 there (at 6 rows the cap brought 2 back to the auto's 1,
    # and check_launches refuses the pair as one configuration timed twice)
    assert e.effective_groups(40, 40, None) != e.effective_groups(40, 40, 2) == 2
    rows = _ab_on_cpu(tmp_path, monkeypatch, "40x40", 1, "{}", '{"groups": 2}')
    assert len(rows) == 2 and all(x["status"] == "ok" for x in rows)
    assert set(seen) == {None, 2} and tune._tuning.OVERRIDE == {}


def test_ab_repeat_raw_groups_pass_the_cap(tmp_path, monkeypatch):
    """A configuration's "raw_groups" entry reaches the kernel as given, past the registry's
    cap (the tiles dealt round-robin cap GROUPS at ⌈rows / BLOCK_R⌉): the other configuration,
    through `backward`, gets the capped GROUPS. Both checked against fp64 and timed."""
    from normbench import strategies
    e = strategies.get("disjoint_strided")
    seen = []
    real = e.fn
    monkeypatch.setattr(e, "fn", lambda *a, groups=None: seen.append(groups) or real(
        *a, groups=groups))
    capped = e.effective_groups(6, 40, 5)
    assert capped < 5           # the cap binds at this shape, or the test shows nothing
    rows = _ab_on_cpu(tmp_path, monkeypatch, "6x40", 1, '{"groups": 5}', '{"raw_groups": 5}')
    assert len(rows) == 2 and all(x["status"] == "ok" for x in rows)
    assert set(seen) == {capped, 5} and tune._tuning.OVERRIDE == {}


def test_ab_repeat_times_rows_drawn_alike(tmp_path, monkeypatch):
    """A configuration's "inputs": "alike" is timed on rows drawn alike (the recipe before
    c55c96a), made beside the default inputs: each configuration gets its own set, both
    checked against fp64; an unknown kind is one line."""
    import ab_repeat
    made = []
    for kind, fn in list(ab_repeat.INPUTS.items()):
        monkeypatch.setitem(ab_repeat.INPUTS, kind, lambda *a, _f=fn, _k=kind, **kw:
                            made.append(_k) or _f(*a, **kw))
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 2, "{}", '{"inputs": "alike"}')
    assert len(rows) == 4 and all(x["status"] == "ok" for x in rows)
    assert sorted(made) == ["alike", "default"]           # once: no --fresh-inputs
    x, dy, *_ = ab_repeat.alike_inputs("rmsnorm", 64, 512, "fp32", "fp32", seed=1, device="cpu")
    assert abs(x.mean().item() - 0.5) < 0.1 and abs(x.std().item() - 2.0) < 0.1
    assert abs(dy.std().item() - 1.0) < 0.1
    import ab_repeat        # an unknown kind: one line before timing, exit 2
    assert ab_repeat.main(["--device", "cpu", "--shapes", "5x40", "--out", str(tmp_path),
                           "--configs", '{"inputs": "other"}']) == 2


def test_ab_repeat_times_another_strategy_in_turn(tmp_path, monkeypatch):
    """A configuration's "strategy" entry calls that strategy with the rest as its OVERRIDE
    (disjoint_fused with `interleave`, checked and timed), the others --name's rule."""
    from normbench import strategies
    fused = strategies.get("disjoint_fused")
    seen = []
    real = type(fused).backward
    monkeypatch.setattr(type(fused), "backward", lambda self, *a, groups=None: seen.append(
        (self.name, dict(tune._tuning.OVERRIDE.get(self.name, {})))) or real(self, *a,
                                                                            groups=groups))
    rows = _ab_on_cpu(tmp_path, monkeypatch, "6x40", 1, "{}",
                      '{"strategy": "disjoint_fused", "interleave": true}')
    assert len(rows) == 2 and all(x["status"] == "ok" for x in rows)
    assert ("disjoint_fused", {"interleave": True}) in seen and ("disjoint_strided", {}) in seen
    assert tune._tuning.OVERRIDE == {}


def test_ab_repeat_gpu_time_column(tmp_path, monkeypatch, capsys):
    """--gpu-time: each timing's GPU time (harness.timing.gpu_time, of the same call) lands in
    gpu_us and the summary; without it, or where none is measured (CPU), gpu_us stays empty."""
    import ab_repeat
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 1, "{}", extra=["--gpu-time"])
    assert [x["gpu_us"] for x in rows] == [""]          # the interpreter: no GPU time
    calls = []
    monkeypatch.setattr(ab_repeat.timing, "gpu_time", lambda fn, **kw: calls.append(fn()) or
                        {"gpu_time_ms": 0.0421})
    capsys.readouterr()
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 2, "{}", '{"num_warps": 8}',
                      extra=["--gpu-time"])
    assert [x["gpu_us"] for x in rows] == ["42.1"] * 4 and len(calls) == 4
    assert "GPU 42.1 [42.1, 42.1]" in capsys.readouterr().out
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 1, "{}")
    assert [x["gpu_us"] for x in rows] == [""] and len(calls) == 4


def test_device_round48_script_on_cpu(tmp_path):
    """Round 48's call, tiny: each A/B step's timings are all correct — atomic on both kinds of
    inputs, the capped GROUPS against the kernel launched past the cap, the reduce's tiles —
    and the GPU tests' log is in the tarball."""
    # the reduce's steps at 2048 columns, where its rule takes 32 a program: at 48 or 64 its 16
    # was the rule's own, and ab_repeat refuses the rule timed twice
    _device_script(tmp_path, "device_round48.sh", SHAPE_ATOMIC="6x64", SHAPES_CAP="9x32",
                   SHAPES_FP32="4x2048", SHAPE_4096="5x2048", ROUNDS="1", G_T="60")
    with tarfile.open(tmp_path / "round48.tgz") as tar:
        for step, n in (("atomic_ln", 2), ("strided_ln", 2), ("cap_ln", 2), ("cap_rms", 2),
                        ("red_fp32", 4), ("red_4096w", 4)):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"./{step}/ab.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), step
            assert len({x["config"] for x in rows}) == n, step
        assert "./gpu-tests.log" in tar.getnames()


def test_device_round49_script_on_cpu(tmp_path):
    """Round 49's call, tiny: each of the reduce-tile steps lands in its folder with the rule
    and both 64-column tiles timed and correct, and the GPU tests' log is in the tarball."""
    _device_script(tmp_path, "device_round49.sh", SHAPES_WIDE="4x48,5x64", SHAPES_WIDE_W="4x48",
                   SHAPES_FP32="4x48", SHAPE_LN_FP32="5x64", SHAPE_8192="6x32", ROUNDS="1",
                   G_T="60", QUICK_N="0")
    with tarfile.open(tmp_path / "round49.tgz") as tar:
        for step in ("rms_bf16", "rms_bf16w", "rms_fp32", "ln_bf16", "ln_bf16w", "ln_fp32",
                     "rms_8192"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"./{step}/ab.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), step
            assert len({x["config"] for x in rows}) == 3, step
        assert "./gpu-tests.log" in tar.getnames()


def test_device_round50_script_on_cpu(tmp_path):
    """Round 50's call, tiny: each A/B step (8 warps at d = 4096, the reduce's 64-column tile)
    lands in its folder with the rule and the candidate timed and correct, and the quick run of
    RMSNorm with an fp32 weight leaves its records (liger is not installed here: torch and
    disjoint_strided instead)."""
    _device_script(tmp_path, "device_round50.sh", SHAPES_4096="5x64,4x64", SHAPE_4096="5x64",
                   SHAPES_WIDE="4x48,3x48", SHAPE_WIDE="4x48", ROUNDS="1",
                   L_ONLY="torch,disjoint_strided", L_ARGS="--shape 4x64")
    with tarfile.open(tmp_path / "round50.tgz") as tar:
        for step in ("w8_rms_bf16w", "w8_rms_bf16", "w8_rms_fp16w", "w8_rms_fp16", "w8_ln_bf16",
                     "r64_rms_bf16", "r64_rms_bf16w", "r64_rms_fp32", "r64_ln_bf16",
                     "r64_ln_bf16w", "r64_ln_fp32"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"./{step}/ab.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), step
            assert len({x["config"] for x in rows}) == 2, step
        recs = [n for n in tar.getnames() if n.startswith("./liger-fp32w/records")]
        assert recs, tar.getnames()


def test_device_round51_script_on_cpu(tmp_path):
    """Round 51's first call, tiny: each 8-warp A/B step lands in its folder with the rule and
    the candidate timed and correct, and the GPU tests' log (none run on
    a CPU) is in the tarball."""
    _device_script(tmp_path, "device_round51.sh", SHAPES_4096="5x64,4x64", SHAPE_4096="5x64",
                   ROUNDS="1")
    with tarfile.open(tmp_path / "round51.tgz") as tar:
        for step in ("w8_rms_bf16w", "w8_rms_bf16", "w8_rms_fp16w", "w8_rms_fp16", "w8_rms_fp32",
                     "w8_ln_bf16"):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"./{step}/ab.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), step
            assert len({x["config"] for x in rows}) == 2, step
        assert "./gpu-tests.log" in tar.getnames()


def test_device_round23c_script_on_cpu(tmp_path):
    """Round 23's third call, tiny: device_start.sh's shared `ab` step runs each A/B comparison
    into its own folder, every timing correct, the configurations in a rotated order."""
    _device_script(tmp_path, "device_round23c.sh", SHAPE_4096="3x64", SHAPE_1024="3x32",
                   ROUNDS="2")
    with tarfile.open(tmp_path / "round23c.tgz") as tar:
        for step, n in (("rms4096w", 3), ("rms1024", 4)):
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{step}/ab.csv"))))
            assert len(rows) == 2 * n and all(x["status"] == "ok" for x in rows), step
            assert rows[0]["config"] == "{}" and rows[n]["config"] != "{}"


def test_device_round24_script_on_cpu(tmp_path):
    """Round 24's first call, tiny (17 rows: tiles of 4 over the interpreter's programs leave a
    partial last round for `balance` to spread): every A/B step lands in its folder with every
    timing correct, `balance` among the configurations timed, and the GPU-test step's log."""
    _device_script(tmp_path, "device_round24.sh", SHAPE_4096="17x64", SHAPE_1024="17x32",
                   SHAPES_FP32="17x64", SHAPE_3072="17x48", ROUNDS="1", G_S="30")
    steps = ("rms4096", "rms4096w", "ln4096", "rms1024", "rms1024w", "ln1024", "rmsfp32",
             "rms3072")
    with tarfile.open(tmp_path / "round24.tgz") as tar:
        for step in steps:
            rows = list(csv.DictReader(io.TextIOWrapper(tar.extractfile(f"t/{step}/ab.csv"))))
            assert rows and all(x["status"] == "ok" for x in rows), step
            assert any("balance" in x["config"] for x in rows), step
        assert "gpu-tests.log" in {os.path.basename(n) for n in tar.getnames()}


def test_device_round25_script_on_cpu(tmp_path):
    """Round 25's first call, tiny: disjoint_strided's A/B steps time `ln_inflight`, which only
    the staged kernel (a GPU's) reads — on a CPU each step says in one line that the
    configuration launches what the rule does, and times nothing; disjoint_smem's step, which
    needs a GPU, says why in one line (no traceback); and the GPU-test step's log is there."""
    _device_script(tmp_path, "device_round25.sh", SHAPE_16384="9x64", SHAPE_16384S="5x64",
                   ROUNDS="1", G_S="30", K="nothing_selected")
    with tarfile.open(tmp_path / "round25.tgz") as tar:
        for step in ("ln16384", "ln16384s"):
            log = tar.extractfile(f"t/{step}.log").read().decode()
            assert "what config 1 does" in log and "Traceback" not in log, log
        log = tar.extractfile("t/rms16384s.log").read().decode()
        assert "disjoint_smem is not available" in log and "Traceback" not in log
        assert "gpu-tests.log" in {os.path.basename(n) for n in tar.getnames()}


def test_device_tree_hides_the_reports_from_commit_a(tmp_path):
    """bench/device_tree.sh in a scratch repository: `hide` takes the tracked reports and
    plots out of the tree (into its tarball) so that `git commit -a` finds nothing to record,
    `restore` brings them back byte for byte with git seeing no change; a second `hide` before
    a `restore` is refused (exit 2: it would overwrite the tarball)."""
    repo = tmp_path / "repo"
    (repo / "results" / "run" / "plots").mkdir(parents=True)
    files = {"results/run/report.html": "<html>", "results/run/plots/a.png": "png",
             "results/run/records.csv": "a,b\n"}
    for name, text in files.items():
        (repo / name).write_text(text)
    env = {**os.environ, "NB_HIDE": str(tmp_path / "reports.tar"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def run(*cmd, check=True):
        r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
        assert not check or r.returncode == 0, r.stderr
        return r
    run("git", "init", "-q")
    run("git", "add", ".")
    run("git", "commit", "-qm", "start")
    script = os.path.join(ROOT, "bench", "device_tree.sh")
    run("bash", script, "hide")
    assert not (repo / "results/run/report.html").exists()
    assert not (repo / "results/run/plots/a.png").exists()
    assert (repo / "results/run/records.csv").exists()
    assert run("git", "commit", "-am", "nothing", check=False).returncode != 0
    assert sum(x.startswith("h ") for x in run("git", "ls-files", "-v").stdout.splitlines()) == 2
    assert run("bash", script, "hide", check=False).returncode == 2
    run("bash", script, "restore")
    for name, text in files.items():
        assert (repo / name).read_text() == text
    assert run("git", "status", "--porcelain").stdout == ""
    assert all(x.startswith("H ") for x in run("git", "ls-files", "-v").stdout.splitlines())


def test_program_clocks_summarise_one_sample():
    """bench/timeline.py's program_clocks (timeline_staged.py's too): one sample's clock
    reads [start ns, end ns, SM] per program → times in µs from the first start, the spread
    of the starts, the first, median and last end, the mean busy time and the SMs used."""
    import torch
    import timeline
    v = torch.tensor([[5000, 9000, 3], [1000, 11000, 0], [2000, 4000, 3], [1500, 21000, 7]])
    s, st, en = timeline.program_clocks(v)
    assert st.tolist() == [4.0, 0.0, 1.0, 0.5] and en.tolist() == [8.0, 10.0, 3.0, 20.0]
    assert s == dict(start_spread=4.0, end_first=3.0, end_p50=10.0, end_last=20.0,
                     busy=(4 + 10 + 2 + 19.5) / 4, sms=3)
    assert list(s) == ["start_spread", "end_first", "end_p50", "end_last", "busy", "sms"]


def test_row_loop_candidates_stay_on_the_row_loop_where_fp32_rows_are_staged(monkeypatch):
    """Rounds 20 and 22 tune disjoint_strided's row loop; since round 30 its rule stages fp32
    rows of 7168-8192 (`stage_from`, on a GPU with the staged kernel), so each candidate there
    carries {"stage_from": 0} — without it the candidates would all time the staged path."""
    import tune
    from normbench.strategies import disjoint_smem, disjoint_strided
    from normbench.strategies import _tuning
    monkeypatch.setattr(disjoint_smem, "_WHY", "")
    _tuning._frozen.cache_clear()       # the rules kept from other tests lack stage_from
    try:
        for rnd, d in ((tune._round20, 8192), (tune._round22, 7168)):
            assert disjoint_strided.backward.params(d)["stage_from"], d
            cands = list(rnd(d, 132, 16384))
            assert cands and all(c[0].get("stage_from") == 0 for c in cands), (rnd, cands)
    finally:
        monkeypatch.undo()
        _tuning._frozen.cache_clear()


@pytest.mark.parametrize("name,config,why", [
    ("disjoint_strided", '{"num_warp": 16}', "unknown tuning option 'num_warp' for disjoint_str"),
    ("atomic", '{"num_stages": 3}', "atomic runs one row a program, whose kernel never reads"),
    ("atomic", '{"reduce": {"BLOCK_G": 2}}', "atomic has no separate reduce kernel"),
    # disjoint_fused sums its partial rows in-kernel: the override timed its rule unchanged
    ("disjoint_fused", '{"reduce": {"BLOCK_N": 64}}', "disjoint_fused has no separate reduce"),
    # a typo of the reduce's key was dropped by its launch: the shipped reduce timed again
    ("disjoint_strided", '{"reduce": {"BLOCK_n": 64}}', "unknown reduce option 'BLOCK_n'"),
    ("disjoint_strided", '{"reduce": {"BLOCK_N": 48}}', "BLOCK_N: 48 is not a power of two"),
    ("disjoint_strided", '{"reduce": {"PAIRED": 1}}', "PAIRED: 1 is not true or false"),
    ("disjoint_strided", '{"reduce": [64]}', "must be a mapping"),
    # what launches, captured without running a kernel (`_launch.capture`): an option no path
    # of a one-row kernel reads, and the fused kernel's tail left out of disjoint_block
    ("atomic", '{"ln_warps": 8}', "launches at layernorm 5x40 bf16/bf16 what config 1 does"),
    ("disjoint_block", '{"tail": 4}', "what config 1 does on this machine (the Triton interp"),
    # a value of the wrong type was a traceback from the launch check
    ("disjoint_block", '{"block_r": "16"}', "tuning option block_r = '16': expected an int or a bool, got"),
    ("disjoint_block", '{"num_warps": 8, "tail": 4}',
     "'tail' changes nothing that launches at layernorm 5x40 bf16/bf16"),
    # the reduce's own warps pinned: the rule's reduce under another name
    ("disjoint_strided", '{"reduce": {"num_warps": 4}}', "what config 1 does"),
    ("atomic", '{"groups": 4}', "atomic takes no GROUPS"),
    ("disjoint_strided", '{"num_warps": 4', "Expecting"),
    ("disjoint_strided", '[1]', "not a JSON object"),
])
def test_ab_repeat_refuses_a_bad_configuration_before_timing(tmp_path, monkeypatch, capsys,
                                                             name, config, why):
    """A configuration that would time nothing new or the wrong kernel was a traceback (exit
    1), or worse a silent timing of the rule; it is refused in one line before anything is
    timed, naming the configuration, exit 2."""
    import ab_repeat
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    called = []
    monkeypatch.setattr(ab_repeat.timing, "bench", lambda *a, **k: called.append(1))
    assert ab_repeat.main(["--device", "cpu", "--name", name, "--shapes", "5x40", "--rounds",
                           "1", "--out", str(tmp_path), "--configs", "{}", config]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ab_repeat: config 2 ({config}): ") and why in err, err
    assert "\n" not in err and not called


def test_the_reduce_kernel_is_declared_where_reduce_partials_is_called():
    """`Entry.reduce_kernel` (what ab_repeat and reduce_tune check the reduce's override
    against) is true exactly for the strategies whose source calls reduce.reduce_partials."""
    import inspect
    from normbench import strategies
    from normbench.strategies import _registry
    for name, e in _registry._REGISTRY.items():
        if e.kind != "strategy":
            assert not e.reduce_kernel, name
            continue
        mod = __import__(f"normbench.strategies.{name}", fromlist=["_"])
        assert e.reduce_kernel == ("reduce_partials(" in inspect.getsource(mod)), name
    assert strategies.get("grouped_atomic").reduce_kernel
    assert not strategies.get("atomic").reduce_kernel
    assert not strategies.get("disjoint_fused").reduce_kernel


def _refused(monkeypatch, capsys, main, argv: list) -> str:
    """`main` (a bench script's) run with sys.argv `argv`: it must exit 2 (argparse's error);
    the last line of its stderr."""
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_reduce_tune_refuses_a_strategy_without_the_reduce_kernel(monkeypatch, capsys):
    import reduce_tune
    err = _refused(monkeypatch, capsys, reduce_tune.main, [
        "reduce_tune.py", "--names", "disjoint_fused", "--device", "cpu", "--out",
        "/nonexistent/never"])
    assert "disjoint_fused: its registration declares no separate reduce kernel" in err


@pytest.mark.parametrize("args,why", [
    (["--passes", "0"], "--passes 0: at least 1"),
    (["--names", "nope"], "--names: unknown implementation 'nope'"),
    (["--shapes", "4"], "--shapes '4': '4' is not ROWSxD"),
    (["--shapes", "4x128x2"], "--shapes '4x128x2': '4x128x2' is not ROWSxD"),
    (["--shapes", "0x128"], "--shapes '0x128': '0x128' is not ROWSxD"),
    (["--dtype", "fp8"], "--dtype 'fp8': one of"),
    (["--weight-dtype", "fp8"], "--weight-dtype 'fp8': same or one of"),
    (["--norms", "rmsnorm,foo"], "--norms: 'foo' is not one of layernorm, rmsnorm"),
    (["--shapes", "4x128,4x128"], "4x128 given twice"),
    (["--rep", "0"], "--rep 0.0: a repetition time in ms, finite and > 0"),
    (["--rep", "inf"], "--rep inf:"),
    (["--device", "cuda:7"], "--device:"),
])
def test_tune_refuses_bad_arguments_before_the_sweep(tmp_path, monkeypatch, capsys, args, why):
    """Each was a traceback (--passes 0: an AttributeError from the summary of no timing;
    an unknown name a KeyError, a shape without its D a ValueError), some after tune.csv was
    begun; each is one line and exit 2 before anything is timed or written."""
    base = {"--device": "cpu", "--norms": "rmsnorm", "--rep": "1", "--names": "disjoint_block",
            "--shapes": "4x128", "--out": str(tmp_path / "out")}
    for k in args[::2]:
        base.pop(k, None)
    monkeypatch.setattr(tune.timing, "bench", lambda *a, **k: pytest.fail("timed"))
    err = _refused(monkeypatch, capsys, tune.main, [
        "tune.py", *[x for kv in base.items() for x in kv], "--round12", *args])
    assert why in err and err.startswith("tune.py: error: ")
    assert not (tmp_path / "out").exists()


def test_tune_takes_one_selection_of_candidates(tmp_path, monkeypatch, capsys):
    """--round9 --round10 silently timed round 10's alone (the highest), --new-only with a round
    the round's: two selections are refused in one line, exit 2; and --new-only's help says
    what it times (round 8's GROUPS at d <= 2048), not "the newest round's"."""
    for sel in (["--round9", "--round10"], ["--new-only", "--round22"]):
        err = _refused(monkeypatch, capsys, tune.main, [
            "tune.py", "--device", "cpu", "--names", "disjoint_block", "--norms", "rmsnorm",
            "--shapes", "4x128", "--rep", "1", "--out", str(tmp_path / "out"), *sel])
        assert "not allowed with argument" in err, err
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(sys, "argv", ["tune.py", "--help"])
    with pytest.raises(SystemExit):
        tune.main()
    text = " ".join(capsys.readouterr().out.split())
    assert "round 8's candidates" in text and "d <= 2048" in text and "newest" not in text


@pytest.mark.parametrize("args,why", [
    (["--shapes", "4"], "--shapes '4': '4' is not ROWSxD"),
    (["--shapes", "64x4096,4x0"], "'4x0' is not ROWSxD"),
    (["--norms", "foo"], "--norms: 'foo' is not one of layernorm, rmsnorm"),
    (["--shapes", "4x64,4x64"], "4x64 given twice"),
    (["--rep", "-1"], "--rep -1.0: a repetition time in ms, finite and > 0"),
    (["--device", "cuda:7"], "--device:"),
])
def test_reduce_tune_refuses_bad_arguments_before_the_sweep(tmp_path, monkeypatch, capsys,
                                                           args, why):
    """--shapes and --norms were parsed unguarded (a ValueError traceback, or an unknown norm
    reaching make_inputs after reduce.csv was begun), --rep, --device and a shape given twice
    not checked: one line, exit 2, nothing written."""
    import reduce_tune
    err = _refused(monkeypatch, capsys, reduce_tune.main, [
        "reduce_tune.py", "--device", "cpu", "--out", str(tmp_path / "out"), *args])
    assert why in err and err.startswith("reduce_tune.py: error:")
    assert not (tmp_path / "out").exists()


def test_capture_records_what_a_call_launches_and_runs_nothing(monkeypatch):
    """`_launch.capture` records each launch (kernel, grid, scalars, constexprs) and runs no
    kernel; a launch option that changes the kernel changes the record, and the override
    hook is left as it was."""
    import ab_repeat
    from normbench.strategies import _launch
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    inputs = ab_repeat.blank_inputs("layernorm", 40, 96, "bf16", "bf16", "cpu")
    ran = []
    real = _launch.described
    monkeypatch.setattr(_launch, "described", lambda *a, **k: ran.append(a[0]) or real(*a, **k))
    rule = ab_repeat.launched({}, "disjoint_strided", inputs, False)
    assert [c[0] for c in rule[1]] == ["_disjoint_kernel", "_reduce_kernel"]
    assert ab_repeat.launched({}, "disjoint_strided", inputs, False) == rule
    assert ab_repeat.launched({"num_warps": 8}, "disjoint_strided", inputs, False) != rule
    assert tune._tuning.OVERRIDE == {} and len(ran) == 6
    class Unlaunchable:                     # nothing runs: a launch of it would raise
        __name__ = "_atomic_kernel"

        def __getitem__(self, grid):
            raise AssertionError("launched under capture")
    from normbench.strategies import atomic
    monkeypatch.setattr(atomic, "_atomic_kernel", Unlaunchable())
    with _launch.capture() as got:
        strategies.get("atomic").backward(*inputs)
    assert [c[0] for c in got] == ["_atomic_kernel"]
    with pytest.raises(AssertionError, match="launched under capture"):
        strategies.get("atomic").backward(*inputs)


def test_no_launch_check_times_a_pair_the_check_refuses(tmp_path, monkeypatch, capsys):
    """--no-launch-check: a GPU command rehearsed on a CPU (where pdl is off) is timed all the
    same, and the summary says the check was off."""
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 1, "{}", '{"pdl": true}',
                      extra=["--no-launch-check"])
    assert len(rows) == 2 and "launch check off (--no-launch-check)" in capsys.readouterr().out
    import ab_repeat            # a value of the wrong type: one line without the check too
    assert ab_repeat.main(["--device", "cpu", "--shapes", "5x40", "--rounds", "1",
                           "--no-launch-check", "--out", str(tmp_path), "--configs",
                           '{"block_r": "16"}']) == 2
    assert "block_r = '16': expected an int or a bool, got str" in capsys.readouterr().err


@pytest.mark.parametrize("args,why", [
    (["--shapes", "64"], "--shapes '64': '64' is not ROWSxD"),
    (["--shapes", "64x128x2"], "'64x128x2' is not ROWSxD"),
    (["--shapes", "0x128"], "'0x128' is not ROWSxD with ROWS, D whole numbers >= 1"),
    (["--shapes", "5x40,5x40"], "5x40 given twice"),
    (["--rounds", "0"], "--rounds 0: at least 1"),
    (["--rep", "-5"], "--rep -5.0: a repetition time in ms, finite and > 0"),
    (["--rep", "nan"], "--rep nan:"),
    (["--norm", "foo"], "--norm 'foo': one of layernorm, rmsnorm"),
    (["--device", "xyz"], "--device: 'xyz' is not a device torch knows"),
    (["--configs", "{}", "{}"], "config 2 ({}): the same text as config 1"),
    (["--configs", '{"inputs": []}'], "inputs []: expected a string"),
    (["--configs", '{"strategy": ["a"]}'], "strategy ['a']: expected a string"),
    (["--configs", "{}", '{"groups": "x"}'], "groups 'x': expected a whole number >= 1"),
    (["--configs", '{"raw_groups": 0}'], "raw_groups 0: expected a whole number >= 1"),
    (["--configs", '{"groups": 4, "raw_groups": 8}'], "'groups' and 'raw_groups' together"),
])
def test_ab_repeat_refuses_bad_arguments_before_timing_or_writing(tmp_path, monkeypatch, capsys,
                                                                   args, why):
    """Each was a traceback (a header-only ab.csv first for --rounds 0, a row written before
    the ValueError of {"groups": "x"}), or timed silently (--rep -5, a shape or a configuration
    given twice: two lines ab.csv could not tell apart); each is one line and exit 2 before
    anything is timed or written, with or without the launch check."""
    import ab_repeat
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    called = []
    monkeypatch.setattr(ab_repeat.timing, "bench", lambda *a, **k: called.append(1))
    base = {"--device": "cpu", "--norm": "rmsnorm", "--shapes": "5x40", "--rounds": "1",
            "--rep": "1", "--out": str(tmp_path / "out")}
    for k in args[::2]:
        base.pop(k, None)
    argv = [x for kv in base.items() for x in kv] + ["--no-launch-check", *args]
    assert ab_repeat.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ab_repeat: ") and why in err and "\n" not in err, err
    assert not called and not (tmp_path / "out").exists()


def test_ab_repeat_without_cuda_refuses_the_default_device(tmp_path, monkeypatch, capsys):
    """--device cuda (the default) on a machine without CUDA was an AssertionError from
    torch; it is one line that names --device."""
    import ab_repeat
    if tune.torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert ab_repeat.main(["--shapes", "5x40", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ab_repeat: --device: cuda is not available here") and "\n" not in err


def test_ab_repeat_records_a_timing_that_fails_and_goes_on(tmp_path, monkeypatch, capsys):
    """A timing that raises at run time is its row's status in ab.csv ("error: ..."), without
    a time; the other configuration is timed all the same, the summary reads its figures
    alone, counting the errors, and the exit status is 1."""
    import ab_repeat
    real = ab_repeat.timing.bench

    def bench(fn, *a, **k):
        if tune._tuning.OVERRIDE.get("disjoint_strided"):
            raise RuntimeError("launch failed\nsecond line")
        return real(fn, *a, **k)
    monkeypatch.setattr(ab_repeat.timing, "bench", bench)
    capsys.readouterr()
    rows = _ab_on_cpu(tmp_path, monkeypatch, "5x40", 2, "{}", '{"num_warps": 8}', rc=1)
    assert len(rows) == 4
    bad = [x for x in rows if x["config"] == '{"num_warps": 8}']
    good = [x for x in rows if x["config"] == "{}"]
    assert all(x["status"] == "error: RuntimeError: launch failed second line" and
               x["us"] == "" and x["pct_copy"] == "" for x in bad), bad
    assert all(x["status"] == "ok" and float(x["us"]) > 0 for x in good), good
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "num_warps" in ln)
    assert "ERROR x2 (error: RuntimeError: launch failed second line)" in line and "[" not in line
    assert "ERROR" not in next(ln for ln in out.splitlines() if "5x40 {} " in ln)


def test_check_launches_lets_a_pinned_value_be(tmp_path, monkeypatch):
    """A key equal to its rule's value at the shape pins it (no change, none claimed); the
    same configuration beside a real change passes; two configurations that launch the same
    are refused whatever their keys."""
    import ab_repeat
    monkeypatch.setattr(tune._tuning, "OVERRIDE", {})
    rule = tune._tuning.rule("disjoint_block").params(96)
    configs = [{}, {"num_warps": 8, "block_d": rule["block_d"]},
               {"reduce": {"BLOCK_G": 2, "BLOCK_N": 16}}]
    ab_repeat.check_launches(configs, [json.dumps(c) for c in configs], "disjoint_block",
                             [(40, 96)], "layernorm", "bf16", "bf16", "cpu")
    with pytest.raises(SystemExit):
        twice = [{}, {"num_warps": 8}, {"num_warps": 8, "block_d": rule["block_d"]}]
        ab_repeat.check_launches(twice, [json.dumps(c) for c in twice], "disjoint_block",
                                 [(40, 96)], "layernorm", "bf16", "bf16", "cpu")


def test_an_override_of_the_rules_kind_of_value_is_taken():
    """`_tuning.params` refuses a value of another kind than its rule's (a string for a
    number: a traceback deep in the launch before) but takes what the kernels take: a mode 2
    for a flag whose rule value is False (full_sectors) and a JSON list for a tuple
    (sectors_off) — a check by exact type refused both, and 54 of the GPU suite's tests."""
    from normbench.strategies import _tuning
    rule = _tuning.Rule(lambda d: {**_tuning._row_loop(d), "full_sectors": False,
                                   "sectors_off": ()}, row_loop=True)
    _tuning.declare("t_kinds", rule)
    try:
        _tuning.OVERRIDE["t_kinds"] = {"full_sectors": 2, "sectors_off": [4096], "pdl": 1}
        p = _tuning.params("t_kinds", 4096)
        assert p["full_sectors"] == 2 and list(p["sectors_off"]) == [4096]
        for bad, why in (({"block_r": "16"}, "block_r = '16': expected an int or a bool"),
                         ({"sectors_off": 4096}, "sectors_off = 4096: expected a list")):
            _tuning.OVERRIDE["t_kinds"] = bad
            with pytest.raises(ValueError, match=why):
                _tuning.params("t_kinds", 4096)
    finally:
        _tuning.OVERRIDE.pop("t_kinds", None)
        _tuning.RULES.pop("t_kinds", None)
        _tuning._frozen.cache_clear()


def test_peers_env_unpacks_each_wheel_once(tmp_path):
    """bench/peers_env.sh, sourced by two scripts at once on one machine (a run beside
    bench/device_gpu_suite.sh), unpacked every wheel again, rewriting in place the files the
    other process was importing (session 54, an H100: a segmentation fault importing
    pydantic_core).  A wheel is unpacked once, and one that arrives later is unpacked then."""
    import zipfile

    def wheel(name, mod):
        with zipfile.ZipFile(tmp_path / ".pyd" / f"{name}-1.0-py3-none-any.whl", "w") as z:
            z.writestr(f"{mod}/__init__.py", "X = 1\n")

    (tmp_path / ".pyd").mkdir()
    wheel("fake", "fakemod")
    env = {**os.environ, "NB_SITE": str(tmp_path / "site"), "NB_PEERS": str(tmp_path / "peers")}

    def source():
        r = subprocess.run(["bash", "-c", f". {os.path.join(ROOT, 'bench', 'peers_env.sh')}; "
                            "echo \"$PYTHONPATH\""], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    source()
    f = tmp_path / "site" / "fakemod" / "__init__.py"
    assert f.read_text() == "X = 1\n"
    os.utime(f, ns=(0, 0))                      # rewritten, it would read the time of now
    wheel("later", "latermod")
    out = source()
    assert f.stat().st_mtime_ns == 0
    assert (tmp_path / "site" / "latermod" / "__init__.py").read_text() == "X = 1\n"
    if sys.version_info[:2] == (3, 12):
        assert str(tmp_path / "site") in out


def test_device_harness_check_script_on_cpu(tmp_path):
    """Session 58's CUDA check, tiny: SIGINT at random moments of a resumed quick run ends with
    the run complete and no record twice (bench/sigint_loop.py), and `run --isolate` with a
    plugin measures the plugin's strategy beside a built-in one, --strict passing.  One norm
    (RMSNorm): the loop's resume measures 8 cases, not 16, the isolate run 2, not 4 — what is
    checked (the stop, the resume, the worker loading a plugin) is the same for either norm."""
    r = _device_script(tmp_path, "device_harness_check.sh", ATTEMPTS="1", T_MIN="1", T_MAX="4",
                       SHAPE_ARGS="--shape 3x40 norm=rmsnorm")
    assert "== sigint loop (rc 0)" in r.stdout and "== isolate with a plugin (rc 0)" in r.stdout, \
        r.stdout
    with tarfile.open(tmp_path / "harness.tgz") as tar:
        log = tar.extractfile("./sigint.log").read().decode()
        assert "duplicated 0, completed True" in log, log
        recs = list(csv.DictReader(io.TextIOWrapper(tar.extractfile("./isolate/records.csv"))))
        assert {x["implementation"] for x in recs} == {"disjoint_block", "test_plugin_rows"}
        assert all(x["status"] == "ok" for x in recs), recs
        assert "./gpu-tests.log" in tar.getnames()


def test_sigint_loop_keeps_the_callers_python_path(monkeypatch):
    """bench/sigint_loop.py set PYTHONPATH to the repository alone: on the device, where
    peers_env.sh puts pydantic on the path, every run it started died on "No module named
    'pydantic'" (session 59's H100 call).  The repository comes first, the caller's path after."""
    import sigint_loop
    seen = []
    monkeypatch.setenv("PYTHONPATH", "/somewhere/site")
    monkeypatch.setattr(sigint_loop.subprocess, "Popen", lambda *a, **kw: seen.append(kw["env"]))
    sigint_loop._run("quick", "/tmp/out", [], False)
    assert seen[0]["PYTHONPATH"].split(os.pathsep) == [ROOT, "/somewhere/site"]
