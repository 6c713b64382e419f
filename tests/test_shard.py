"""Shards and merge (harness/shard.py, harness/merge.py): the partition, shards 0/3-2/3 +
merge equal to the serial run, each refusal of merge (exit 2, one line), --resume per shard."""
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from normbench.harness.config import load_config
from normbench.harness.plan import expand
from normbench.harness.shard import ShardError, parse, partition, select
from normbench.harness.store import load_records
from tests import forkcli

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NORMBENCH_PLUGINS": "tests.fake_impls", "NORMBENCH_QUIET": "1",
       "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
SAME = ["case_id", "status", "correct", "deterministic", "distinct_results", "max_rel_err",
        "groups_effective", "workspace_bytes", "writers_per_slot"]


def cli(*args, timeout=300, env=None):
    return forkcli.run([sys.executable, ROOT / "run_bench.py", *args], cwd=ROOT,
                       env={**ENV, **(env or {})}, text=True, timeout=timeout)


def write_config(path, **fields):
    base = {"name": "shards", "norm": ["layernorm", "rmsnorm"], "rows": [5, 9], "d": [16],
            "dtype": ["fp32"], "groups": [2],
            "implementations": ["disjoint_block", "torch", "test_nondeterministic"],
            "timing": {"warmup_ms": 1, "rep_ms": 1}, "determinism": {"repeats": 3}}
    base.update(fields)
    path.write_text(json.dumps(base))
    return path


def same_records(a, b, exact_errors=True):
    """Equal record sets: keys, statuses, correctness, determinism verdicts, errors, model.

    exact_errors=False leaves out max_rel_err: a Dask worker runs torch's CPU ops on one
    thread (dask sets OMP_NUM_THREADS=1), which sums the CPU reference's rows in another
    order than the serial run's threads do."""
    a = a.set_index("case_id").sort_index()
    b = b.set_index("case_id").sort_index()
    assert list(a.index) == list(b.index)
    cols = [c for c in SAME if c != "case_id" and (exact_errors or c != "max_rel_err")]
    if "max_rel_err" in cols:
        # A nondeterministic-by-design implementation's first output (the one checked against
        # fp64) may differ between two runs (tests/fake_impls.test_nondeterministic flips a
        # bit on every other call of the process): its error is compared to the tolerance's
        # verdict (`correct`, in SAME), the deterministic ones' to the last bit.
        nd = a["deterministic_by_design"].astype(str) == "False"
        a, b = a.copy(), b.copy()
        a.loc[nd, "max_rel_err"] = b.loc[nd, "max_rel_err"] = None
    assert a[cols].astype(str).equals(b[cols].astype(str)), (a[cols], b[cols])


def test_parse():
    assert parse("0/3") == (0, 3) and parse(" 2 / 3 ") == (2, 3)
    for bad in ("3/3", "1", "a/b", "-1/2", "0/0", "1/2/3"):
        with pytest.raises(ShardError):
            parse(bad)
    for bad in ("1/99999999999999999999", "0/100001", "１/２"):   # too many; not ASCII digits
        with pytest.raises(ShardError, match="--shard"):
            parse(bad)


@pytest.mark.parametrize("entry,needle", [
    ("0/2", "shard: expected a mapping, got str"),
    ({"index": 0, "count": 2, "spec": "0/2", "plan_digest": "d", "plan_size": 2, "keys": []},
     "shard.plan_keys: expected list, got nothing"),
    ({"index": "x", "count": 2, "spec": "0/2", "plan_digest": "d", "plan_size": 2,
      "plan_keys": [], "keys": []}, "shard.index: expected int, got str"),
    ({"index": 3, "count": 2, "spec": "0/2", "plan_digest": "d", "plan_size": 2,
      "plan_keys": ["a"], "keys": []}, "shard.index: 3 is not in [0, 2)"),
    ({"index": 0, "count": 2, "spec": "0/2", "plan_digest": "d", "plan_size": 2,
      "plan_keys": [1], "keys": []}, "shard.plan_keys: expected a list of case keys"),
])
def test_a_hand_broken_shard_entry_is_one_error_naming_the_field(tmp_path, entry, needle):
    from normbench.harness.merge import MergeError, check
    with pytest.raises(MergeError, match=re.escape(needle)):
        check([tmp_path], [{"shard": entry}])


def test_partition_is_balanced_deterministic_and_complete():
    costs = [5.0, 1.0, 1.0, 4.0, 2.0, 2.0, 3.0, 3.0]
    part = partition(costs, 3)
    assert part == partition(list(costs), 3)                 # the same every time
    loads = [sum(c for c, p in zip(costs, part) if p == j) for j in range(3)]
    assert sorted(loads) == [7.0, 7.0, 7.0]
    assert partition(costs, 1) == [0] * len(costs)
    assert sorted(set(partition([1.0] * 4, 8))) == [0, 1, 2, 3]   # more parts than cases


def test_shards_cover_the_plan_once(tmp_path):
    from normbench import strategies
    cfg = write_config(tmp_path / "c.yaml", rows=[5, 9, 300, 4096], d=[16, 1024],
                       dtype=["fp32", "bf16"], implementations=["disjoint_block", "torch"])
    sweep = load_config(cfg, known_implementations=strategies.known())
    cases = expand(sweep, uses_groups=lambda n: strategies.get(n).uses_groups, available=[])
    parts = [select(cases, sweep, i, 3) for i in range(3)]
    keys = [c.key for p in parts for c in p]
    assert sorted(keys) == sorted(c.key for c in cases) and len(set(keys)) == len(keys)
    assert [c.key for c in parts[1]] == [c.key for c in select(cases, sweep, 1, 3)]
    assert all(abs(len(p) - len(cases) / 3) <= len(cases) / 6 for p in parts)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The serial run and its three shards."""
    tmp = tmp_path_factory.mktemp("shards")
    cfg = write_config(tmp / "c.yaml")
    r = cli("run", cfg, "--out", tmp / "serial", "--no-report")
    assert r.returncode == 0, r.stderr
    for i in range(3):
        r = cli("run", cfg, "--shard", f"{i}/3", "--out", tmp / f"s{i}", "--no-report")
        assert r.returncode == 0, r.stderr
    return tmp, cfg


def test_shards_and_merge_equal_the_serial_run(runs, tmp_path):
    tmp, _ = runs
    sizes = [len(load_records(tmp / f"s{i}")) for i in range(3)]
    assert sum(sizes) == 12 and min(sizes) >= 1
    meta = json.loads((tmp / "s1" / "meta.json").read_text())
    assert meta["shard"]["spec"] == "1/3" and meta["shard"]["plan_size"] == 12
    assert len(meta["shard"]["keys"]) == sizes[1]
    r = cli("merge", tmp_path / "m", tmp / "s2", tmp / "s0", tmp / "s1")
    assert r.returncode == 0, r.stderr
    merged = load_records(tmp_path / "m")
    same_records(merged, load_records(tmp / "serial"))
    assert list(merged["case_id"]) == list(load_records(tmp / "serial")["case_id"])  # plan order
    m = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert m["completed"] and not m["merge"]["partial"] and "shard" not in m
    assert [s["shard"] for s in m["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert (tmp_path / "m" / "report.html").exists()
    r = cli("compare", tmp / "serial", tmp_path / "m", "--threshold", "100000%")
    assert r.returncode == 0, r.stdout + r.stderr


def _edit_meta(d, **fields):
    p = d / "meta.json"
    p.write_text(json.dumps({**json.loads(p.read_text()), **fields}))


def _refusal(r, *needles):
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("merge: ") and "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize("field,value,needle", [
    ("config_hash", "0123abcd", "different config"),
    ("device_name", "NVIDIA B200", "different GPU model"),
    ("torch_version", "9.9.9", "different torch version"),
    ("triton_version", "0.0.1", "different triton version"),
    # a peer's package lives inside package_versions, not at the top
    ("package_versions", {"liger-kernel": "0.0.1"}, "different liger-kernel version"),
])
def test_merge_refuses_shards_of_different_runs(runs, tmp_path, field, value, needle):
    tmp, _ = runs
    shutil.copytree(tmp / "s1", tmp_path / "s1")
    if isinstance(value, dict):                  # one entry of a mapping, the rest kept
        value = {**json.loads((tmp_path / "s1" / "meta.json").read_text())[field], **value}
    _edit_meta(tmp_path / "s1", **{field: value})
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp_path / "s1", tmp / "s2"), needle)
    assert not (tmp_path / "m" / "records.csv").exists()


@pytest.mark.parametrize("field,value", [("started_at", 1733430000), ("ended_at", 1.5),
                                         ("hostname", ["h"]), ("config_name", {"a": 1})])
def test_merge_refuses_a_shard_meta_field_of_another_type_in_one_line(runs, tmp_path, field,
                                                                      value):
    """A shard whose meta.json holds `"started_at": 1733430000` (or ended_at a number,
    hostname a list) was a traceback of the merge (TypeError comparing or joining them,
    exit 1).  Refused by name: one line, exit 2, nothing merged."""
    tmp, _ = runs
    shutil.copytree(tmp / "s1", tmp_path / "s1")
    _edit_meta(tmp_path / "s1", **{field: value})
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp_path / "s1", tmp / "s2"),
             f"{tmp_path / 's1' / 'meta.json'}: {field}: expected str, got "
             f"{type(value).__name__}")
    assert not (tmp_path / "m" / "records.csv").exists()


def test_merge_refuses_a_shard_whose_records_csv_is_cut_short(runs, tmp_path):
    """A shard's records.csv cut mid-record was merged with the record's lost fields empty
    (no verdict, no time).  Refused as it is read, naming the shard's file and record."""
    tmp, _ = runs
    shutil.copytree(tmp / "s1", tmp_path / "s1")
    csv_path = tmp_path / "s1" / "records.csv"
    csv_path.write_bytes(csv_path.read_bytes()[:-40])
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp_path / "s1", tmp / "s2"),
             f"{csv_path}: record ", " — the file is cut short")
    assert not (tmp_path / "m" / "records.csv").exists()


@pytest.mark.parametrize("col,bad", [("status", "OK"), ("time_samples_ms", "garbage"),
                                     ("time_samples_ms", '{"a":1}'), ("time_samples_ms", '["x"]')])
def test_merge_refuses_a_shard_record_of_a_status_or_samples_the_store_never_writes(
        runs, tmp_path, col, bad):
    """A shard's records.csv edited by hand (status "OK", time_samples_ms "garbage"), its
    parquet gone: the merge was a traceback (exit 1) that left the output half made (meta.json,
    an empty records.csv).  Refused in one line naming the file, the record and the column;
    nothing made."""
    tmp, _ = runs
    shutil.copytree(tmp / "s1", tmp_path / "s1")
    csv_path = tmp_path / "s1" / "records.csv"
    frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    frame.loc[0, col] = bad
    frame.to_csv(csv_path, index=False)
    (tmp_path / "s1" / "records.parquet").unlink()
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp_path / "s1", tmp / "s2"),
             f"{csv_path}: column '{col}', record 1: {bad!r} is not ")
    assert not (tmp_path / "m").exists()


def test_merge_checks_every_record_before_it_makes_the_output(runs, tmp_path, monkeypatch):
    """A record the store refuses (here a status, read past load_records' own check) was
    refused by append_many after the output was made: a traceback (ValueError, which the CLI
    does not catch) and a half-made directory.  A MergeError naming the shard and the case,
    before anything is made."""
    from normbench.harness import merge as merge_mod
    tmp, _ = runs
    read = merge_mod.load_records

    def edited(d):
        frame = read(d)
        if Path(d) == tmp / "s1":
            frame.loc[0, "status"] = "OK"
        return frame
    monkeypatch.setattr(merge_mod, "load_records", edited)
    cid = read(tmp / "s1")["case_id"].iloc[0]
    with pytest.raises(merge_mod.MergeError,
                       match=rf"^{re.escape(str(tmp / 's1'))}: case {re.escape(cid)}: .*'OK'"):
        merge_mod.merge(tmp_path / "m", [tmp / "s0", tmp / "s1", tmp / "s2"])
    assert not (tmp_path / "m").exists()


def test_merge_refuses_a_shard_a_run_still_holds(runs, tmp_path):
    """A shard still being measured (or resumed) was merged as it stood: "merged 3 shard(s)",
    a finished merge whose report said the shard had stopped before finishing, and which no
    merge into the same directory could replace once the shard had finished.  Refused, one
    line naming the shard and its holder, before the output is made."""
    from normbench.harness.merge import MergeError, merge
    from normbench.harness.store import RunStore
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
    with RunStore(shards[1], resume=True):          # its run, still going
        with pytest.raises(MergeError, match=rf"^shard {re.escape(str(shards[1]))} is in use "
                           r"by .*: merge once that run has finished$"):
            merge(tmp_path / "m", shards, allow_partial=True)
    assert not (tmp_path / "m").exists()
    assert merge(tmp_path / "m", shards)["completed"]          # once it has finished


def test_merge_into_a_shard_s_plots_folder_is_refused(runs, tmp_path):
    """A shard written with --no-report has no plots/ yet: `merge S0/plots S0 ...` made the
    merged run there, and the shard's report then wrote its plots into the merged run (and
    the merged run's report its pages into the shard's plots/).  One line, exit 2; a folder
    of its own inside a shard stays a place to merge into."""
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
    _refusal(cli("merge", shards[0] / "plots", *shards, "--no-report"),
             f"{shards[0] / 'plots'}: one of the files of the run directory {shards[0]}")
    assert not (shards[0] / "plots").exists()
    r = cli("merge", shards[0] / "merged", *shards, "--no-report")
    assert r.returncode == 0, r.stderr


def test_a_short_commit_id_and_its_full_id_are_one_commit(runs, tmp_path):
    """NORMBENCH_GIT_COMMIT=2792e69 on one machine, the checkout's full HEAD on another: one
    commit, merged under the full id; another commit's short id is still refused."""
    from normbench.harness.merge import MergeError, merge
    tmp, _ = runs
    full = "2792e69de66e0c1d4b7a3f5e8d9c0b1a2f3e4d5c"
    for i, commit in enumerate(("2792E69", full, "2792e69de66e")):
        shutil.copytree(tmp / f"s{i}", tmp_path / f"s{i}")
        _edit_meta(tmp_path / f"s{i}", git_commit=commit)
    shards = [tmp_path / f"s{i}" for i in range(3)]
    assert merge(tmp_path / "m", shards)["git_commit"] == full
    _edit_meta(tmp_path / "s0", git_commit="2792e6a")
    with pytest.raises(MergeError, match="different commit: .*'2792e6a'"):
        merge(tmp_path / "m2", shards)


def test_a_shard_resumed_at_another_commit_or_config_is_refused(runs, tmp_path):
    """A shard's resumes measured with what its `resumes` entries say: another commit, or a
    forced resume with another config, is another run; an entry from before the commit was
    recorded (config and device only) and a plain resume's config hash pass."""
    from normbench.harness.merge import MergeError, merge
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
    meta = json.loads((shards[1] / "meta.json").read_text())
    old = {"at": "2026-12-05T00:00:00+00:00", "forced": False, "differs": [],
           "config_hash": "other-text-hash", "device_name": meta["device_name"]}
    _edit_meta(shards[1], resumes=[old])
    assert merge(tmp_path / "m0", shards)["git_commit"] == meta["git_commit"]
    _edit_meta(shards[1], resumes=[old, dict(old, git_commit="0123456789abcdef",
                                             git_dirty=False)])
    with pytest.raises(MergeError, match=r"different commit: .*its resume 2.*0123456789abcdef"):
        merge(tmp_path / "m1", shards)
    _edit_meta(shards[1], resumes=[dict(old, forced=True, differs=["another config"])])
    with pytest.raises(MergeError, match=r"different config: .*its resume 1.*other-text-hash"):
        merge(tmp_path / "m2", shards)


def test_merge_refuses_shards_measured_with_other_plugin_versions(runs, tmp_path):
    """merge refuses shards whose package versions differ, yet merged shards measured with
    different versions of a plugin silently (meta.json did not record plugins).  Now a
    plugin's version is compared as a package's: shards of one version merge (`plugins` once,
    at the top level), another version — in a shard, or in what a shard's resume measured
    with — or a plugin one shard lacks is refused, naming it."""
    from normbench.harness.merge import MergeError, merge
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    meta = json.loads((tmp / "s0" / "meta.json").read_text())
    assert [p["module"] for p in meta["plugins"]] == ["tests.fake_impls"]

    def plugin(version):
        return {"source": "entry point", "module": "nb_p.impl", "entry_point": "nb_p",
                "distribution": "nb-p", "version": version}
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
        _edit_meta(d, plugins=meta["plugins"] + [plugin("0.1")])
    merged = merge(tmp_path / "m", shards)
    assert merged["plugins"] == meta["plugins"] + [plugin("0.1")]
    assert all("plugins" not in s for s in merged["merged_from"])
    _edit_meta(shards[1], plugins=meta["plugins"] + [plugin("0.2")])
    with pytest.raises(MergeError, match=r"different plugin nb-p version: .*'0.1'.*'0.2'"):
        merge(tmp_path / "m2", shards)
    _edit_meta(shards[1], plugins=meta["plugins"])
    with pytest.raises(MergeError, match=r"different plugin nb-p version: .*None"):
        merge(tmp_path / "m3", shards)
    resumed = {"at": "2026-12-05T00:00:00+00:00", "forced": False, "differs": [],
               "device_name": meta["device_name"], "plugins": meta["plugins"] + [plugin("0.2")]}
    _edit_meta(shards[1], plugins=meta["plugins"] + [plugin("0.1")], resumes=[resumed])
    with pytest.raises(MergeError, match=r"different plugin nb-p version: .*its resume 1"):
        merge(tmp_path / "m4", shards)


def test_a_shard_resumed_without_a_plugin_or_with_another_is_refused(runs, tmp_path):
    """A shard lacking a plugin the others loaded is refused; a shard whose resume lacked it
    (resumed without NORMBENCH_PLUGINS), or loaded a plugin no shard had, was merged without
    a word, the merged top level saying every record was measured with the shards' plugins.
    Such a resume is refused as such a shard is; one whose entry does not record its plugins
    (written before they were kept) is not compared on them."""
    from normbench.harness.merge import MergeError, merge
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    meta = json.loads((tmp / "s0" / "meta.json").read_text())
    ep = {"source": "entry point", "module": "nb_p.impl", "entry_point": "nb_p",
          "distribution": "nb-p", "version": "0.1"}
    other = dict(ep, module="nb_q.impl", entry_point="nb_q", distribution="nb-q")
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
        _edit_meta(d, plugins=meta["plugins"] + [ep])
    resumed = {"at": "2026-12-05T00:00:00+00:00", "forced": False, "differs": [],
               "device_name": meta["device_name"], "git_commit": meta["git_commit"],
               "measured": 1}
    _edit_meta(shards[1], resumes=[dict(resumed, plugins=meta["plugins"])])
    with pytest.raises(MergeError, match=r"different plugin nb-p version: .*its resume 1"):
        merge(tmp_path / "m1", shards)
    _edit_meta(shards[1], resumes=[dict(resumed, plugins=meta["plugins"] + [ep, other])])
    with pytest.raises(MergeError, match=r"different plugin nb-q version: .*its resume 1"):
        merge(tmp_path / "m2", shards)
    _edit_meta(shards[1], resumes=[resumed])        # no `plugins`: an entry from before
    assert merge(tmp_path / "m3", shards)["plugins"] == meta["plugins"] + [ep]
    _edit_meta(shards[1], resumes=[dict(resumed, plugins=meta["plugins"] + [ep])])
    assert merge(tmp_path / "m4", shards)["plugins"] == meta["plugins"] + [ep]


def test_shards_that_loaded_the_same_plugins_in_another_order_agree_on_them(runs, tmp_path):
    """Shards that loaded the same plugins in another order (NORMBENCH_PLUGINS=a,b on one
    machine, b,a on another) were compared as lists: the merged meta.json had `plugins` null,
    named in merge.differs, and in no merged_from entry — which plugin code measured was lost.
    The same plugins agree whatever their order, kept in one order; plugins that do differ
    (one version of a distribution loaded from other modules, which check() lets through) are
    null at the top, named in merge.differs and kept in each shard's entry."""
    from normbench.harness.merge import merge
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    (fake,) = json.loads((tmp / "s0" / "meta.json").read_text())["plugins"]
    local = {"source": "NORMBENCH_PLUGINS", "module": "nb_local", "entry_point": None,
             "distribution": None, "version": None}
    ep = {"source": "entry point", "module": "nb_p.impl", "entry_point": "nb_p",
          "distribution": "nb-p", "version": "0.1"}
    orders = [[fake, local, ep], [local, ep, fake], [ep, fake, local]]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
        _edit_meta(d, plugins=orders[i])
    merged = merge(tmp_path / "m", shards)
    assert merged["plugins"] == [local, fake, ep]        # NORMBENCH_PLUGINS' by module first
    assert "plugins" not in merged["merge"]["differs"]
    assert all("plugins" not in s for s in merged["merged_from"])
    assert merge(tmp_path / "m2", shards[::-1])["plugins"] == [local, fake, ep]
    other = dict(ep, source="NORMBENCH_PLUGINS", module="nb_p.other", entry_point=None)
    _edit_meta(shards[1], plugins=[local, other, fake])
    merged = merge(tmp_path / "m3", shards)
    assert merged["plugins"] is None and "plugins" in merged["merge"]["differs"]
    assert [s["plugins"] for s in merged["merged_from"]] == [orders[0], [local, other, fake],
                                                              orders[2]]


def test_a_resume_that_measured_nothing_does_not_block_merge(runs, tmp_path):
    """`--resume` at another commit of a shard stopped after its last record (meta.json not
    yet completed; a complete one is left as it is) measures nothing: merge compares and
    folds in only resumes that measured records — a forced one of another config, from a
    dirty tree, that counted 0 too; one that measured is still another run."""
    from normbench.harness.merge import MergeError, merge
    tmp, cfg = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
        _edit_meta(d, git_dirty=False)
    _edit_meta(shards[0], completed=False, ended_at=None)
    r = cli("run", cfg, "--shard", "0/3", "--out", shards[0], "--resume", "--no-report",
            env={"NORMBENCH_GIT_COMMIT": "f5a10b2"})
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads((shards[0] / "meta.json").read_text())["resumes"]
    assert (entry["git_commit"], entry["measured"]) == ("f5a10b2", 0)
    idle = dict(entry, forced=True, differs=["another config"], config_hash="0ther",
                git_dirty=True)
    _edit_meta(shards[1], resumes=[idle])
    assert merge(tmp_path / "m", shards)["git_dirty"] is False
    _edit_meta(shards[1], resumes=[dict(idle, measured=1)])
    with pytest.raises(MergeError, match=r"different (config|commit): .*its resume 1"):
        merge(tmp_path / "m2", shards)


def test_the_merged_meta_keeps_each_shard_s_resumes_with_the_shard(runs, tmp_path):
    """The merged top level had the first-listed shard's `resumes` only: each shard's stay in
    its merged_from entry, and a resume of the merged directory starts a list of its own
    (once it has something to do: a complete merge with nothing left is left as it is)."""
    from normbench.harness.merge import merge
    tmp, cfg = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
    entry = {"at": "2026-12-05T00:00:00+00:00", "forced": False, "differs": [], "measured": 0}
    _edit_meta(shards[1], resumes=[entry])
    _edit_meta(shards[2], resumes=[entry, entry])
    meta = merge(tmp_path / "m", [shards[2], shards[0], shards[1]])
    assert "resumes" not in meta
    assert [len(s["resumes"]) for s in meta["merged_from"]] == [0, 1, 2]
    r = cli("run", cfg, "--out", tmp_path / "m", "--resume", "--no-report")
    assert r.returncode == 0 and "nothing left to measure" in r.stderr, r.stderr
    assert "resumes" not in json.loads((tmp_path / "m" / "meta.json").read_text())
    _edit_meta(tmp_path / "m", completed=False, ended_at=None)    # stopped after its last
    r = cli("run", cfg, "--out", tmp_path / "m", "--resume", "--no-report")
    assert r.returncode == 0, r.stderr
    assert len(json.loads((tmp_path / "m" / "meta.json").read_text())["resumes"]) == 1


def test_the_merged_tree_state_is_unknown_where_a_shard_s_was(runs, tmp_path):
    """git_dirty: true if any shard's tree was dirty, null if any was unknown, else false."""
    from normbench.harness.merge import merge
    tmp, _ = runs
    for flags, want in (((False, None, False), None), ((None, True, False), True),
                        ((False, False, False), False)):
        for i, f in enumerate(flags):
            shutil.rmtree(tmp_path / f"s{i}", ignore_errors=True)
            shutil.copytree(tmp / f"s{i}", tmp_path / f"s{i}")
            _edit_meta(tmp_path / f"s{i}", git_dirty=f)
        shutil.rmtree(tmp_path / "m", ignore_errors=True)
        assert merge(tmp_path / "m", [tmp_path / f"s{i}" for i in range(3)])["git_dirty"] is want


def test_the_merged_meta_keeps_each_shard_s_machine_and_only_what_all_agree_on(runs,
                                                                               tmp_path):
    """The merged meta.json was the first-listed shard's: its GPU facts, cpu_model,
    environment, argv and workers/gpus stood for the whole run, the argument order changed
    the result (a shard run with --gpus 2 merged with plain ones: workers 2 or null), and a
    shard run with TRITON_DEFAULT_FP_FUSION=0 lost the setting silently.  Each merged_from
    entry keeps its shard's; the top level keeps what every shard agrees on (else null, named
    in merge.differs), the same in any order; a variable set differently is named on stderr,
    in merge.environment_differs and in the report."""
    from normbench.harness.store import load_meta
    tmp, _ = runs
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, d in enumerate(shards):
        shutil.copytree(tmp / f"s{i}", d)
    env = json.loads((shards[1] / "meta.json").read_text())["environment"]
    gpus = [{"hostname": "h", "gpu_uuid": f"GPU-{i}", "gpu_index": i} for i in range(2)]
    _edit_meta(shards[1], workers=2, gpus=gpus, cpu_model="Another CPU", gpu_uuid="GPU-1",
               power_limit_w=500.0, environment={**env, "TRITON_DEFAULT_FP_FUSION": "0"})
    metas = []
    for name, order in (("m1", shards), ("m2", shards[::-1])):
        r = cli("merge", tmp_path / name, *order)
        assert r.returncode == 0, r.stderr
        assert ("merge: note: the shards ran with environment variables set differently: "
                "TRITON_DEFAULT_FP_FUSION (") in r.stderr
        report = (tmp_path / name / "report.md").read_text()
        assert "`TRITON_DEFAULT_FP_FUSION`" in report and "`cpu_model`" in report
        metas.append(load_meta(tmp_path / name))
    m = metas[0]
    assert metas[1] == {**m, "merged_from": metas[1]["merged_from"]}
    assert [e["dir"] for e in metas[1]["merged_from"]] == [str(d) for d in shards]
    for key in ("workers", "gpus", "cpu_model", "gpu_uuid", "power_limit_w", "environment",
                "argv", "invocations"):
        assert m[key] is None and key in m["merge"]["differs"], key
    assert m["merge"]["environment_differs"] == ["TRITON_DEFAULT_FP_FUSION"]
    own = m["merged_from"][1]
    assert (own["workers"], own["gpus"], own["cpu_model"], own["gpu_uuid"]) == (
        2, gpus, "Another CPU", "GPU-1")
    assert own["environment"]["TRITON_DEFAULT_FP_FUSION"] == "0"
    assert "1/3" in own["argv"] and "1/3" in own["invocations"][0]["argv"]
    assert m["merged_from"][0]["cpu_model"] == m["merged_from"][2]["cpu_model"] != "Another CPU"
    # what all agree on stays, and no shard's entry repeats the run's config or versions
    assert m["config_path"] and m["plan_implementations"] and m["torch_version"]
    assert "config_text" not in own and "torch_version" not in own and "shard" in own


def test_a_shard_resumed_in_another_environment_is_named_in_environment_differs():
    """A shard resumed with NORMBENCH_FAST_LAUNCH=0 measured its resume's records so, which
    its meta's `environment` (the start's) does not say: its `resumes` entry records the
    resume's, and merge names the variable as it does for shards set differently (a resume
    that measured nothing is left out)."""
    from normbench.harness.merge import environment_differs
    base = {"TRITON_INTERPRET": "1"}
    plain = {"environment": base}
    resumed = {"environment": base, "resumes": [
        {"environment": {**base, "NORMBENCH_FAST_LAUNCH": "0"}, "measured": 2},
        {"environment": {**base, "TRITON_DEBUG": "1"}, "measured": 0}]}
    assert environment_differs([plain, resumed]) == ["NORMBENCH_FAST_LAUNCH"]
    assert environment_differs([plain, {"environment": base, "resumes": [{"measured": 1}]}]) == []


def test_merge_into_an_empty_path_is_refused_not_written_into_the_working_directory(
        runs, tmp_path):
    """`merge "$OUT" runs/x-*` with OUT empty merged into the working directory (an empty
    path is "."), where run --out "" is refused.  One line, exit 2, nothing written."""
    tmp, _ = runs
    here = tmp_path / "cwd"
    here.mkdir()
    r = forkcli.run([sys.executable, ROOT / "run_bench.py", "merge", "", tmp / "s0",
                     tmp / "s1", tmp / "s2", "--no-report"], cwd=here, env=ENV, text=True,
                    timeout=300)
    _refusal(r, "an empty path")
    assert list(here.iterdir()) == []


def test_merge_refuses_duplicates_missing_cases_and_non_shards(runs, tmp_path):
    tmp, _ = runs
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp / "s1", tmp / "s1", tmp / "s2"),
             "is given twice")
    dup = tmp_path / "s1dup"                       # one shard holding a record twice
    shutil.copytree(tmp / "s1", dup)
    (dup / "records.parquet").unlink()
    lines = (dup / "records.csv").read_text().splitlines()
    (dup / "records.csv").write_text("\n".join(lines + lines[-1:]) + "\n")
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", dup, tmp / "s2"), f"{dup} holds case",
             "twice")
    shutil.copytree(tmp / "s1", tmp_path / "s1copy")   # the same records in two directories
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp / "s1", tmp_path / "s1copy",
                 tmp / "s2"), f"shard 1/3 is given twice: {tmp / 's1'} and {tmp_path / 's1copy'}")
    # a first attempt of shard 0/3 that recorded nothing, beside the real 0/3: merged as 4
    # shards of 3, 12 of 12 cases, and meta.json said completed: false
    failed = tmp_path / "s0failed"
    shutil.copytree(tmp / "s0", failed)
    (failed / "records.parquet").unlink()
    header = (failed / "records.csv").read_text().splitlines()[0]
    (failed / "records.csv").write_text(header + "\n")
    _edit_meta(failed, completed=False, ended_at=None)
    _refusal(cli("merge", tmp_path / "m", failed, tmp / "s0", tmp / "s1", tmp / "s2"),
             f"shard 0/3 is given twice: {failed} and {tmp / 's0'}", "one directory per shard")
    assert not (tmp_path / "m" / "records.csv").exists()
    r = cli("merge", tmp_path / "m", tmp / "s0", tmp / "s2")
    first = load_records(tmp / "s1")["case_id"].iloc[0]
    _refusal(r, "in no shard", "0/3, 2/3", first, "--allow-partial")
    _refusal(cli("merge", tmp_path / "m", tmp / "serial", tmp / "s0"), "is not a shard")
    _refusal(cli("merge", tmp_path / "m", tmp / "s0", tmp_path / "nothing"),
             "not a run directory")
    _refusal(cli("merge", tmp / "serial", tmp / "s0", tmp / "s1", tmp / "s2"),
             "already holds", "merge into a new or empty directory")   # no --resume to offer
    r = cli("merge", tmp_path / "p", tmp / "s0", tmp / "s2", "--allow-partial", "--no-report")
    assert r.returncode == 0 and "partial" in r.stderr, r.stderr
    m = json.loads((tmp_path / "p" / "meta.json").read_text())
    assert m["merge"]["partial"] and not m["completed"]
    assert first in m["merge"]["missing_keys"]
    assert len(load_records(tmp_path / "p")) == 12 - len(load_records(tmp / "s1"))


def _full_disk_for_records(monkeypatch, after: int = 1):
    """records.csv cannot be written after its first `after` writes (the store's opening
    writes it once): a full disk as the merge writes its records."""
    import errno
    from normbench.harness import store as store_mod
    real, n = store_mod._atomic_write, [0]

    def write(path, fn):
        if path.name == "records.csv":
            n[0] += 1
            if n[0] > after:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, fn)
    monkeypatch.setattr(store_mod, "_atomic_write", write)
    return lambda: monkeypatch.setattr(store_mod, "_atomic_write", real)


def test_a_merge_stopped_midway_does_not_say_it_is_complete(runs, tmp_path, monkeypatch):
    from normbench.harness import merge as merging
    from normbench.harness.store import RunStore, StoreWriteError
    tmp, _ = runs
    restore = _full_disk_for_records(monkeypatch)
    with pytest.raises(StoreWriteError, match="No space left"):
        merging.merge(tmp_path / "m", [tmp / "s0", tmp / "s1", tmp / "s2"])
    m = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert m["completed"] is False and m["merge"]["finished"] is False
    assert len(load_records(tmp_path / "m")) == 0        # the records are written at once
    # every record appended, records.parquet the one that cannot be written: not finished
    restore()

    def no_parquet(self):
        raise StoreWriteError("cannot write records.parquet: No space left on device")
    monkeypatch.setattr(RunStore, "flush", no_parquet)
    with pytest.raises(StoreWriteError):
        merging.merge(tmp_path / "m2", [tmp / "s0", tmp / "s1", tmp / "s2"])
    m = json.loads((tmp_path / "m2" / "meta.json").read_text())
    assert m["completed"] is False and m["merge"]["finished"] is False
    assert len(load_records(tmp_path / "m2", source="csv")) == 12


def test_a_stopped_merge_resumed_to_the_end_is_finished(runs, tmp_path, monkeypatch):
    """A merge stopped by a full disk, then `run --resume` of it to the end: merge.finished
    true, and the report has no "stopped before it finished" warning."""
    from normbench.harness import merge as merging
    from normbench.harness.store import StoreWriteError
    tmp, cfg = runs
    restore = _full_disk_for_records(monkeypatch)
    with pytest.raises(StoreWriteError):
        merging.merge(tmp_path / "m", [tmp / "s0", tmp / "s1", tmp / "s2"])
    restore()
    r = cli("run", cfg, "--out", tmp_path / "m", "--resume")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert m["completed"] and m["merge"]["finished"] is True
    assert m["resumes"][-1]["measured"] == 12
    assert "Incomplete run" not in (tmp_path / "m" / "report.md").read_text()


@pytest.mark.parametrize("stage", ["before its records", "after its records"])
def test_an_interrupted_merge_is_finished_by_the_same_merge_command(runs, tmp_path, monkeypatch,
                                                                   stage):
    """A merge stopped by SIGINT (its meta.json saying merge.finished: false, no record or
    every record written) said "nothing was being measured", and the same merge run again was
    refused ("already holds a merge of shards, stopped with no record" / "already holds 12
    records").  The line says the merge did not finish and gives the command, which replaces
    what the stopped merge wrote: the same records and meta.json as a merge never stopped.
    A finished merge, and a stopped one that a --resume has run in since, are still refused."""
    import shlex
    import signal
    from typer.testing import CliRunner
    from normbench.harness import cli as c, merge as merging
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.store import RunStore, StoreError, load_meta
    tmp, _ = runs
    shards = [str(tmp / f"s{i}") for i in range(3)]
    args = ["merge", str(tmp_path / "m"), *shards, "--no-report"]
    r = CliRunner().invoke(c.app, ["merge", str(tmp_path / "ref"), *shards, "--no-report"])
    assert r.exit_code == 0, r.output
    where = "append_many" if stage == "before its records" else "flush"
    real = getattr(RunStore, where)

    def stop(self, *a):
        raise Interrupted(signal.SIGINT)
    monkeypatch.setattr(RunStore, where, stop)
    r = CliRunner().invoke(c.app, args)
    monkeypatch.setattr(RunStore, where, real)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 130 and len(lines) == 1, r.output
    assert lines[0].startswith("merge: interrupted by SIGINT (meta.json says the merge did not "
                               "finish); the same merge command run again finishes it: "), lines
    assert shlex.split(lines[0].split("finishes it: ", 1)[1])[-len(args):] == args
    meta = load_meta(tmp_path / "m")
    assert meta["completed"] is False and meta["merge"]["finished"] is False
    held = len(load_records(tmp_path / "m", source="csv"))
    assert held == (0 if stage == "before its records" else 12)

    resumed = tmp_path / "resumed"        # a --resume may have measured there: not replaced
    shutil.copytree(tmp_path / "m", resumed)
    _edit_meta(resumed, resumes=[{"measured": 1}])
    with pytest.raises(StoreError, match="already holds"):
        merging.merge(resumed, shards)

    r = CliRunner().invoke(c.app, args)
    assert r.exit_code == 0, r.output
    assert load_records(tmp_path / "m").equals(load_records(tmp_path / "ref"))
    assert load_records(tmp_path / "m", source="csv").equals(
        load_records(tmp_path / "ref", source="csv"))
    assert load_meta(tmp_path / "m") == load_meta(tmp_path / "ref")
    r = CliRunner().invoke(c.app, args)                 # a finished merge is refused, as before
    assert r.exit_code == 2 and "already holds 12 records" in r.output, r.output


def test_merge_writes_the_records_once_whatever_their_number(runs, tmp_path, monkeypatch):
    """merge appended record by record, each append rewriting records.csv whole: O(N²)
    (2,080 records 56 s, 7,488 records 226 s).  Now each data file is written a fixed number
    of times — once as the store opens, once with every record — for 4 records as for 12."""
    from normbench.harness import merge as merging
    from normbench.harness.store import RunStore
    tmp, _ = runs
    real = RunStore._write
    for shards, name in (([tmp / "s0"], "one"), ([tmp / "s0", tmp / "s1", tmp / "s2"], "all")):
        writes: list[str] = []

        def counting(self, what, fn):
            writes.append(what)
            return real(self, what, fn)
        monkeypatch.setattr(RunStore, "_write", counting)
        merging.merge(tmp_path / name, shards, allow_partial=True)
        monkeypatch.setattr(RunStore, "_write", real)
        n = len(load_records(tmp_path / name))
        assert n == sum(len(load_records(d)) for d in shards)
        assert writes.count("records.csv") == 2, (n, writes)
        assert writes.count("records.parquet") == 2, (n, writes)
    assert len(load_records(tmp_path / "all")) == 12
    same_records(load_records(tmp_path / "all"), load_records(tmp / "serial"))


def test_resume_works_per_shard(runs, tmp_path):
    tmp, cfg = runs
    shutil.copytree(tmp / "s0", tmp_path / "s0")
    rec = (tmp_path / "s0" / "records.csv").read_text().splitlines()
    (tmp_path / "s0" / "records.csv").write_text("\n".join(rec[:-1]) + "\n")   # lost its last
    (tmp_path / "s0" / "records.parquet").unlink()
    for dry in ([], ["--dry-run"]):            # refused before anything, the dry run too
        r = cli("run", cfg, "--shard", "1/3", "--out", tmp_path / "s0", "--resume",
                "--no-report", *dry)
        assert r.returncode == 2 and "holds shard 0/3" in r.stderr, r.stderr
        assert "writing" not in r.stderr
        r = cli("run", cfg, "--out", tmp_path / "s0", "--resume", "--no-report", *dry)
        assert r.returncode == 2 and "--shard 0/3" in r.stderr, r.stderr
    r = cli("run", cfg, "--shard", "0/3", "--out", tmp_path / "s0", "--resume", "--dry-run")
    assert r.returncode == 0 and "1 of " in r.stdout and " records left" in r.stdout, r.stderr
    r = cli("run", cfg, "--shard", "0/3", "--out", tmp_path / "s0", "--resume", "--no-report")
    assert r.returncode == 0, r.stderr
    same_records(load_records(tmp_path / "s0"), load_records(tmp / "s0"))


def test_a_shard_that_gets_no_case_is_not_an_error(tmp_path):
    """More shards than cases is valid input: the empty shard exits 0 and writes its
    directory all the same (meta.json with its shard entry, no record, completed), so that
    the merge of every shard's directory — the job array's `merge runs/x runs/x-{0..N-1}` —
    takes it as a shard of none."""
    cfg = write_config(tmp_path / "c.yaml", norm=["rmsnorm"], rows=[5], implementations=["torch"])
    r = cli("run", cfg, "--shard", "1/2", "--out", tmp_path / "s1", "--no-report")
    assert r.returncode == 0, r.stderr
    assert "none of the plan's 1 case(s)" in r.stdout, r.stdout
    meta = json.loads((tmp_path / "s1" / "meta.json").read_text())
    assert meta["shard"]["spec"] == "1/2" and meta["shard"]["keys"] == [] and meta["completed"]
    assert len(load_records(tmp_path / "s1")) == 0
    r = cli("run", cfg, "--shard", "1/2", "--out", tmp_path / "s1", "--no-report", "--resume")
    assert r.returncode == 0, r.stderr                 # the job array's resubmitted task
    r = cli("run", cfg, "--shard", "0/2", "--out", tmp_path / "s0", "--no-report")
    assert r.returncode == 0, r.stderr
    r = cli("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1", "--no-report")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m" / "meta.json").read_text())
    assert m["completed"] and not m["merge"]["partial"] and len(load_records(tmp_path / "m")) == 1
    assert [s["cases"] for s in m["merged_from"]] == [1, 0]
    # the shard of none holds a run all the same: a run or a merge into it without --resume
    # replaced it (exit 0, its meta.json another run's), as no directory holding records is
    before = (tmp_path / "s1" / "meta.json").read_text()
    for args, hint in ((("run", cfg, "--only", "torch", "--out", tmp_path / "s1"), "--resume"),
                       (("run", cfg, "--shard", "0/2", "--out", tmp_path / "s1"), "--resume"),
                       (("merge", tmp_path / "s1", tmp_path / "s0"), "merge into a new")):
        r = cli(*args, "--no-report")
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip().splitlines() == [
            f"{args[0]}: {tmp_path / 's1'} already holds shard 1/2, finished with no record; "
            + r.stderr.split("; ", 1)[1].strip()], r.stderr
        assert hint in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "s1" / "meta.json").read_text() == before


def test_a_shard_plans_every_known_implementation_where_the_config_names_none(tmp_path):
    """The same I/N must pick the same cases on a login node and on a GPU node: a config that
    names no implementations plans every known one under --shard (those unavailable here
    recorded as skipped), not whatever this machine has."""
    from normbench import strategies
    cfg = tmp_path / "c.yaml"
    cfg.write_text("norm: [rmsnorm]\nrows: [4]\nd: [16]\ntiming: {warmup_ms: 1, rep_ms: 1}\n"
                   "determinism: {repeats: 2}\n")
    r = cli("run", cfg, "--shard", "0/1", "--dry-run")
    assert r.returncode == 0, r.stderr
    unavailable = [n for n in strategies.known() if n not in strategies.names()]
    assert unavailable and all(n in r.stdout for n in unavailable)


def _partial_merge_missing(tmp_path, names):
    """A config naming no implementation, run as one shard of two with --only `names`
    (a name unavailable here among them) and merged --allow-partial: (config, merged
    directory, the merged plan's keys, the keys the merge lacks)."""
    from normbench import strategies
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: m\nnorm: [rmsnorm]\nrows: [4]\nd: [16]\ngroups: [2]\n"
                   "timing: {warmup_ms: 1, rep_ms: 1}\ndeterminism: {repeats: 2}\n")
    sweep = load_config(cfg, known_implementations=strategies.known())
    cases = [c for c in expand(sweep, uses_groups=lambda n: strategies.get(n).uses_groups,
                               available=strategies.known()) if c.implementation in names]
    # the shard measured here is the one without the unavailable implementation's case
    index = next(i for i in range(2) if not any(c.implementation == names[-1]
                                                for c in select(cases, sweep, i, 2)))
    only = ["--only", ",".join(names)]
    r = cli("run", cfg, "--shard", f"{index}/2", "--out", tmp_path / "s", "--no-report", *only)
    assert r.returncode == 0, r.stderr
    r = cli("merge", tmp_path / "m", tmp_path / "s", "--allow-partial", "--no-report")
    assert r.returncode == 0, r.stderr
    mine = {c.key for c in select(cases, sweep, index, 2)}
    return cfg, tmp_path / "m", [c.key for c in cases], [c.key for c in cases
                                                         if c.key not in mine]


def test_a_resumed_partial_merge_plans_the_merged_plan(tmp_path):
    """The resume of a merge plans what its shards did (every known implementation): a
    missing case of one unavailable here is recorded skipped, not left out while meta.json
    says complete; --only may name it; the count of records kept is the directory's."""
    from normbench import strategies
    gone = [n for n in strategies.known() if n not in strategies.names()]
    if not gone:
        pytest.skip("every implementation is available here")
    names = ["disjoint_block", "torch", "atomic", gone[0]]
    cfg, m, plan, missing = _partial_merge_missing(tmp_path, names)
    r = cli("run", cfg, "--out", m, "--resume", "--no-report", "--only", ",".join(names))
    assert r.returncode == 0, r.stderr
    assert f"resuming: {len(plan) - len(missing)} records already in" in r.stderr, r.stderr
    recs = load_records(m).set_index("case_id")
    assert sorted(recs.index) == sorted(plan)
    skipped = [k for k in plan if f"|{gone[0]}|" in k]
    assert skipped and all(recs.loc[k, "status"] == "skipped" for k in skipped)
    meta = json.loads((m / "meta.json").read_text())
    assert meta["completed"] is True and meta["merge"]["missing_keys"] == []
    assert sorted(meta["merge"]["measured_after_merge"]) == sorted(missing)


def test_a_resumed_merge_is_complete_only_with_its_whole_plan(tmp_path):
    """A resume of a partial merge that measures part of the missing cases (--only) leaves
    it incomplete, the rest still listed missing."""
    names = ["disjoint_block", "torch", "atomic", "grouped_atomic"]
    cfg, m, plan, missing = _partial_merge_missing(tmp_path, names)
    assert len(missing) >= 2
    first = missing[0].split("|")[1]
    r = cli("run", cfg, "--out", m, "--resume", "--no-report", "--only", first)
    assert r.returncode == 0, r.stderr
    meta = json.loads((m / "meta.json").read_text())
    assert meta["merge"]["missing_keys"] == missing[1:] and meta["merge"]["partial"]
    assert meta["completed"] is False


def test_a_resume_of_a_meta_json_with_a_mistyped_field_is_one_line(runs, tmp_path):
    """--resume (and --dry-run of it) reads meta.json's shard and merge entries: a hand-edited
    one of another type was a traceback (shard a list: AttributeError, exit 1), "holds shard
    None" (no spec), or a sweep measured whole before the report refused it (merge.plan_size
    a string).  Refused at once, one line naming the file and the field, exit 2."""
    tmp, cfg = runs
    d = tmp_path / "s0"
    for fields, needle in (({"shard": [1]}, "shard: expected dict, got list"),
                           ({"shard": {"keys": 3}}, "shard.keys: expected list, got int"),
                           ({"shard": {"index": 0}}, "shard.spec: missing"),
                           ({"merge": {"plan_size": "3"}}, "merge.plan_size: expected int")):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(tmp / "s0", d)
        _edit_meta(d, **fields)
        before = (d / "records.csv").read_bytes()
        for extra in ((), ("--dry-run",)):
            r = cli("run", cfg, "--shard", "0/3", "--out", d, "--resume", "--no-report", *extra)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1, (fields, r.stderr)
            assert f"{d / 'meta.json'}: {needle}" in lines[0] and "Traceback" not in r.stderr
        assert (d / "records.csv").read_bytes() == before
