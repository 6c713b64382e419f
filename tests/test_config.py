"""harness/config.py: valid configs normalize; every bad input is one ConfigError line."""
from __future__ import annotations

import os
import pickle
import re
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from normbench.harness.config import ConfigError, Sweep, load_config, parse_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
IMPLS = ["atomic", "grouped_atomic", "spin_lock", "disjoint_block", "torch"]

VALID = {
    "name": "example",
    "description": "text",
    "norm": ["layernorm", "rmsnorm"],
    "rows": [4096, 16384],
    "d": [1024, 4096],
    "dtype": ["bf16", "fp16", "fp32"],
    "weight_dtype": "same",
    "groups": [64, 256, "auto"],
    "implementations": IMPLS,
    "timing": {"warmup_ms": 25, "rep_ms": 100},
    "determinism": {"repeats": 10},
    "peak_tbps": None,
    "seed": 0,
    "timeout_s": 120,
}


def dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def error_of(text: str, known=IMPLS, file: str = "c.yaml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, file, known_implementations=known)
    return info.value


def assert_one_line(e: ConfigError, file: str = "c.yaml", field: str | None = None):
    s = str(e)
    assert len(s.splitlines()) == 1 and "\n" not in s and "\r" not in s, s
    assert s.startswith(f"config error: {file}: "), s
    assert s == f"config error: {e.file}: {e.field}: {e.problem}"
    if field is not None:
        assert e.field == field, s
    assert "Traceback" not in s and "pydantic" not in s.lower(), s


def with_(**changes) -> str:
    data = dict(VALID)
    for k, v in changes.items():
        if v is ...:
            data.pop(k, None)
        else:
            data[k] = v
    return dump(data)


# ----------------------------------------------------------------------------- valid input

def test_full_example_normalizes():
    s = parse_config(dump(VALID), "ex.yaml", known_implementations=IMPLS)
    assert isinstance(s, Sweep)
    assert s.name == "example" and s.description == "text"
    assert s.rows == [4096, 16384] and s.batch is None and s.seq is None and s.shapes is None
    assert s.d == [1024, 4096]
    assert s.weight_dtype == ["same"]
    assert s.groups == [64, 256, "auto"]
    assert s.implementations == IMPLS
    assert (s.timing.warmup_ms, s.timing.rep_ms) == (25.0, 100.0)
    assert isinstance(s.timing.rep_ms, float) and isinstance(s.timeout_s, float)
    assert s.determinism.repeats == 10 and s.seed == 0 and s.peak_tbps is None
    assert s.source_path == "ex.yaml"


def test_defaults_and_scalars():
    text = "rows: 4096\nd: 1024\n"
    s = parse_config(text, "configs/my-sweep.yaml")
    assert s.name == "my-sweep"
    assert s.norm == ["layernorm", "rmsnorm"]
    assert s.rows == [4096] and s.d == [1024]
    assert s.dtype == ["bf16"] and s.weight_dtype == ["same"] and s.groups == ["auto"]
    assert s.implementations is None
    assert (s.timing.warmup_ms, s.timing.rep_ms, s.determinism.repeats) == (25, 100, 10)
    assert s.seed == 0 and s.timeout_s == 120 and s.peak_tbps is None
    assert s.source_text == text
    assert parse_config("norm: rmsnorm\nrows: 1\nd: 1\ngroups: 8").norm == ["rmsnorm"]
    assert parse_config("rows: 1\nd: 1\n").name == "sweep"


def test_batch_seq_and_shapes():
    s = parse_config("batch: [2, 4]\nseq: 4096\nd: 4096\n")
    assert s.batch == [2, 4] and s.seq == [4096] and s.rows is None
    s = parse_config("shapes: [[16384, 4096], {rows: 2048, d: 768}]\n")
    assert [(x.rows, x.d) for x in s.shapes] == [(16384, 4096), (2048, 768)]
    assert s.d is None and s.rows is None


def test_a_single_shape_mapping_is_a_one_element_list():
    """The docstring's "every list field also takes a single value", for shapes: one
    {rows, d} mapping.  One bare [rows, d] pair would read as two shapes: refused, saying
    how to write it."""
    s = parse_config("shapes: {rows: 4, d: 8}\n")
    assert [(x.rows, x.d) for x in s.shapes] == [(4, 8)] and s.rows is None and s.d is None
    with pytest.raises(ConfigError, match=r"s.yaml: shapes.d: must be at most 65536"):
        parse_config("shapes: {rows: 4, d: 70000}\n", "s.yaml")     # shown without [0]
    with pytest.raises(ConfigError, match=r"s.yaml: shapes: must be a list of \[rows, d\] "
                                          r"pairs; for one shape write \[\[4, 8\]\] or "
                                          r"\{rows: 4, d: 8\}"):
        parse_config("shapes: [4, 8]\n", "s.yaml")


def test_optional_nulls_and_weight_dtypes():
    s = parse_config("rows: 1\nd: 1\nimplementations: null\npeak_tbps: 4.8\n"
                     "weight_dtype: [same, fp32]\ntimeout_s: 0.5\nseed: 7\n")
    assert s.implementations is None and s.peak_tbps == 4.8
    assert s.weight_dtype == ["same", "fp32"] and s.timeout_s == 0.5 and s.seed == 7
    assert parse_config("rows: 1\nd: 1\ndescription:\n").description == ""   # null: no text


def test_hash_is_of_the_verbatim_text_and_sweep_is_frozen():
    a = parse_config("rows: 1\nd: 1\n")
    b = parse_config("rows: 1\nd: 1\n# comment\n")
    assert a.config_hash != b.config_hash
    assert len(a.config_hash) == 16 and re.fullmatch("[0-9a-f]{16}", a.config_hash)
    assert a.config_hash == parse_config("rows: 1\nd: 1\n").config_hash
    with pytest.raises(Exception):
        a.seed = 3


def test_a_loaded_config_still_hashes_as_its_text():
    """Runs on disk resume: a config loaded from a file hashes as sha256 of its text."""
    import hashlib
    text = "rows: 1\nd: 1\n"
    s = parse_config(text)
    assert s.config_hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert s.from_text and s.config_text == text and s.model_copy().config_hash == s.config_hash


def test_a_sweep_built_in_python_hashes_and_records_its_settings():
    """Sweep(...) hashed the empty source_text: every sweep built in Python had the hash
    e3b0c44298fc1c14, so a resume took another sweep into the same run, merge and compare
    could not tell two apart, and meta.json's config_text was ''.  Its hash is now its
    settings', its config_text those settings as YAML, which load back as the same sweep."""
    kw = dict(name="nb", norm=["rmsnorm"], rows=[3], implementations=["torch"])
    a, b = Sweep(d=[8], **kw), Sweep(d=[16], dtype=["fp32"], seed=5, **kw)
    empty = "e3b0c44298fc1c14"
    assert empty not in (a.config_hash, b.config_hash) and a.config_hash != b.config_hash
    assert a.config_hash == Sweep(d=[8], **kw).config_hash
    assert empty not in (a.text_hash, a.raw_data_hash)        # the old hash resumes nothing
    assert not a.from_text and a.config_text.startswith("# normbench: ") \
        and "built in Python" in a.config_text.splitlines()[0]
    again = parse_config(a.config_text)
    assert again.model_dump(exclude={"source_text", "source_path"}) == \
        a.model_dump(exclude={"source_text", "source_path"})
    assert again.config_hash == a.config_hash


def test_a_sweep_changed_after_loading_hashes_and_records_what_runs():
    """load(...).model_copy(update={"d": [16, 24]}) kept the file's hash and its text in
    meta.json's config_text, which named the d it did not run: both are now its settings'."""
    text = "rows: 4\nd: 8\n"
    s = parse_config(text)
    c = s.model_copy(update={"d": [16, 24]})
    assert c.config_hash != s.config_hash and c.text_hash == c.raw_data_hash == c.config_hash
    assert not c.from_text and "changed after it was loaded" in c.config_text.splitlines()[0]
    again = parse_config(c.config_text)
    assert again.d == [16, 24] and again.rows == [4] and again.config_hash == c.config_hash
    assert s.model_copy(update={"d": [8]}).config_hash == s.config_hash   # the same settings


def test_unknown_implementation_not_checked_without_a_list():
    s = parse_config("rows: 1\nd: 1\nimplementations: [mine]\n", known_implementations=None)
    assert s.implementations == ["mine"]


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_load(path):
    names = yaml.safe_load(path.read_text()).get("implementations")
    s = load_config(path, known_implementations=names or [])
    assert s.name == path.stem and s.source_path == str(path)


def test_shipped_configs_exist():
    assert {p.name for p in CONFIGS.glob("*.yaml")} >= {
        "default.yaml", "quick.yaml", "cpu.yaml", "seed-worked-example.yaml", "peers.yaml"}


def test_shipped_configs_name_registered_implementations():
    strategies = pytest.importorskip("strategies")
    if not hasattr(strategies, "known"):
        pytest.skip("strategies registry not there yet")
    for path in CONFIGS.glob("*.yaml"):
        load_config(path, known_implementations=strategies.known())


# ----------------------------------------------------------------------------- bad input

BAD = [
    # (text, field, words the problem must contain)
    (with_(rows=["4096"]), "rows[0]", "must be an integer, got string '4096'"),
    (with_(rows="4096"), "rows", "must be an integer, got string '4096'"),
    (with_(rows=True), "rows", "got boolean true"),
    (with_(rows=[1, False]), "rows[1]", "got boolean false"),
    (with_(d=[1024, 4096.0]), "d[1]", "got float 4096.0"),
    (with_(d=[1024, 0]), "d[1]", "at least 1"),
    (with_(rows=[-3]), "rows[0]", "at least 1"),
    (with_(d=[1024, 4096, 65537]), "d[2]", "at most 65536"),
    # what the kernels can index (strategies/_args.MAX_ROWS): 2^31 − 1 rows wrapped
    (with_(rows=[2**31 - 1]), "rows[0]", "at most 1073741824"),
    (with_(rows=..., batch=[2**15], seq=[2**15 + 1]), "seq", "batch*seq must be at most 1073741824"),
    (with_(d=[]), "d", "must not be empty"),
    (with_(d=[1024, 1024]), "d[1]", "duplicate"),
    (with_(groups=["auto", "auto"]), "groups[1]", "duplicate"),
    (with_(groups=[64, "many"]), "groups[1]", "integer or 'auto'"),
    (with_(groups=[0]), "groups[0]", "at least 1"),
    (with_(d=...), "d", "required field is missing"),
    (with_(rows=...), "rows", "required field is missing"),
    (with_(batch=[4]), "batch", "not allowed together with 'rows'"),
    (with_(rows=..., batch=[4]), "seq", "required when 'batch'"),
    (with_(rows=..., seq=[4]), "batch", "required when 'seq'"),
    (with_(shapes=[[1, 2]]), "rows", "not allowed together with 'shapes'"),
    (with_(rows=..., d=..., shapes=[[1, 2, 3]]), "shapes[0]", "[rows, d] pair"),
    (with_(rows=..., d=..., shapes=[[1, 70000]]), "shapes[0].d", "at most 65536"),
    (with_(rows=..., d=..., shapes=[{"rows": 1}]), "shapes[0].d", "required field is missing"),
    (with_(rows=..., d=..., shapes=[[1, 2], [1, 2]]), "shapes[1]", "duplicate"),
    # a misspelt key is named, not the field it leaves missing
    (with_(rows=..., d=..., shapes=[{"Rows": 5, "D": 33}]), "shapes[0].Rows",
     "unknown key; did you mean 'rows'?"),
    (with_(rows=..., d=..., shapes=[{"rows": 5, "dd": 33}]), "shapes[0].dd", "did you mean 'd'"),
    (with_(rows=..., d=..., shapes=[]), "shapes", "must not be empty"),
    (with_(norm="lyernorm"), "norm", "did you mean 'layernorm'"),
    (with_(norm=["layernorm", "batchnorm"]), "norm[1]", "unknown norm 'batchnorm'"),
    (with_(dtype=["bf16", "fp8"]), "dtype[1]", "unknown dtype 'fp8'"),
    (with_(dtype="bfloat16"), "dtype", "did you mean 'bf16'"),
    (with_(weight_dtype="int8"), "weight_dtype", "unknown weight dtype"),
    (with_(implementations=["atomc"]), "implementations[0]", "did you mean 'atomic'"),
    (with_(implementations=["torch", "nope"]), "implementations[1]", "unknown implementation"),
    (with_(implementations=["torch", "torch"]), "implementations[1]", "duplicate"),
    (with_(grups=[64]), "grups", "unknown key; did you mean 'groups'?"),
    (with_(impls=["torch"]), "impls", "did you mean 'implementations'"),
    (with_(repeats=3), "repeats", "did you mean 'determinism.repeats'"),
    (with_(source_text="x"), "source_text", "unknown key"),
    (with_(timing={"warmup_ms": 25, "rep_mss": 1}), "timing.rep_mss", "did you mean 'rep_ms'"),
    (with_(timing={"rep_ms": 0}), "timing.rep_ms", "greater than 0"),
    (with_(timing={"rep_ms": "100"}), "timing.rep_ms", "must be a number"),
    (with_(timing={"rep_ms": True}), "timing.rep_ms", "must be a number"),
    (with_(timing={"rep_ms": float("inf")}), "timing.rep_ms", "finite"),
    (with_(timing={"warmup_ms": 1e300}), "timing.warmup_ms", "at most 3600000 (an hour a case)"),
    (with_(timeout_s=1e9), "timeout_s", "at most 604800 (a week)"),
    (with_(timeout_s=604800.5), "timeout_s", "at most 604800 (a week), got 604800.5"),
    (with_(timing=[25, 100]), "timing", "must be a mapping"),
    (with_(timing=None), "timing", "must be a mapping, got null"),
    (with_(determinism={"repeats": 1}), "determinism.repeats", "at least 2"),
    (with_(determinism={"repeats": 2.5}), "determinism.repeats", "must be an integer"),
    (with_(peak_tbps=-1), "peak_tbps", "greater than 0"),
    (with_(seed="0"), "seed", "must be an integer"),
    (with_(timeout_s=0), "timeout_s", "greater than 0"),
    (with_(name="has space"), "name", "letters"),
    (with_(name=None), "name", "must be a string"),
    (with_(norm=None), "norm", "must be a list, got null"),
    (with_(d={"a": 1}), "d", "must be a list, got mapping"),
    ("rows: 1\nd: 1\nd: 2\n", "line 3", "duplicate key 'd'"),
    ("rows: [1, 2\nd: 1\n", "line 2", "invalid yaml"),
    ("rows: 1\n d: 1\n  x: : 3\n", "line 2", "invalid yaml"),
    ("- rows\n- d\n", "(top level)", "must be a mapping"),
    ("just a string", "(top level)", "must be a mapping"),
    ("", "(file)", "is empty"),
    ("   \n\n", "(file)", "is empty"),
    ("# only a comment\n", "(file)", "no settings"),
    ("rows: 1\x00\nd: 1", "(file)", "NUL"),
    ("rows: 1\nd: \x07\n", "line 2", "control character"),
    ("rows: 1\nd: 1\n---\nrows: 2\n", "line 3", "single document"),
    ("rows: 1\nd: !!python/object:os.system x\n", "line 2", "invalid yaml"),
    ("rows: 1\n1: x\nd: 1\n", "1", "unknown key"),
]


@pytest.mark.parametrize("text,field,words", BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_bad_input_one_precise_line(text, field, words):
    e = error_of(text)
    assert_one_line(e, field=field)
    assert words in e.problem, str(e)
    assert e.problem == e.problem.strip() and e.problem[:1].islower(), str(e)


def test_error_pickles_and_keeps_fields():
    e = error_of(with_(d=[1, 1]))
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) and back.field == "d[1]"


def test_file_errors(tmp_path):
    missing = tmp_path / "nope.yaml"
    cases = [(missing, "does not exist"), (tmp_path, "directory")]
    (tmp_path / "bin.yaml").write_bytes(b"rows: 1\n\xff\xfe\nd: 1\n")
    cases.append((tmp_path / "bin.yaml", "not UTF-8"))
    (tmp_path / "nul.yaml").write_bytes(b"rows: 1\x00\n")
    cases.append((tmp_path / "nul.yaml", "NUL"))
    (tmp_path / "empty.yaml").write_bytes(b"")
    cases.append((tmp_path / "empty.yaml", "empty"))
    (tmp_path / "big.yaml").write_bytes(b"#" * (2 << 20))
    cases.append((tmp_path / "big.yaml", "larger than"))
    if os.name == "posix" and os.geteuid() != 0:
        locked = tmp_path / "locked.yaml"
        locked.write_text("rows: 1\nd: 1\n")
        locked.chmod(0)
        cases.append((locked, "permission denied"))
    for path, words in cases:
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert_one_line(info.value, file=str(path), field="(file)")
        assert words in info.value.problem


def test_load_config_reads_file(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text("rows: 1\nd: 1\n", encoding="utf-8")
    s = load_config(p)
    assert s.name == "ok" and s.source_text == "rows: 1\nd: 1\n"


def test_suspicious_text_stays_on_one_line():
    e = error_of(with_(norm="bad\nnorm\u2028x"))
    assert_one_line(e, field="norm")
    e = error_of(dump({"rows": 1, "d": 1, "we\nird": 1}))
    assert_one_line(e)


# ----------------------------------------------------------------------------- fuzzing

yaml_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["auto", "same", "bf16", "layernorm", "torch", "4096", "1e3", "", "yes"]),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.text(max_size=8), st.integers()),
                                            inner, max_size=3)),
    max_leaves=8,
)
keys = st.one_of(st.sampled_from(sorted(VALID) + ["batch", "seq", "shapes", "grups", "timing"]),
                 st.text(string.ascii_lowercase + "_", min_size=1, max_size=10))


@st.composite
def mutated_configs(draw):
    data = dict(VALID)
    if draw(st.booleans()):
        data.pop("rows")
        if draw(st.booleans()):
            data["batch"], data["seq"] = [4], [4096]
        else:
            data.pop("d")
            data["shapes"] = [[16384, 4096], {"rows": 7, "d": 33}]
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["drop", "rename", "replace", "add", "nested"]))
        present = sorted(data, key=str)
        if op == "drop" and present:
            data.pop(draw(st.sampled_from(present)))
        elif op == "rename" and present:
            k = draw(st.sampled_from(present))
            data[draw(keys)] = data.pop(k)
        elif op == "replace" and present:
            data[draw(st.sampled_from(present))] = draw(yaml_values)
        elif op == "add":
            data[draw(keys)] = draw(yaml_values)
        elif op == "nested":
            k = draw(st.sampled_from(["timing", "determinism", "shapes", "d", "groups"]))
            v = data.get(k)
            if isinstance(v, dict):
                v = dict(v)
                v[draw(keys)] = draw(yaml_values)
            elif isinstance(v, list) and v:
                v = list(v)
                v[draw(st.integers(0, len(v) - 1))] = draw(yaml_values)
            data[k] = v
    return data


def check_outcome(text: str, file: str = "fuzz.yaml"):
    try:
        s = parse_config(text, file, known_implementations=IMPLS)
    except ConfigError as e:
        assert_one_line(e, file=file)
        assert e.field and e.problem
        return None
    assert isinstance(s, Sweep)
    assert s.norm and s.dtype and s.weight_dtype and s.groups
    assert (s.shapes is None) == (s.d is not None)
    return s


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(mutated_configs())
def test_fuzz_mutated_configs(data):
    check_outcome(dump(data))


@FUZZ
@given(st.text(max_size=200))
def test_fuzz_random_text(text):
    check_outcome(text)


@FUZZ
@given(st.data())
def test_fuzz_edited_valid_text(data):
    text = dump(VALID)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 5)))
        text = text[:i] + data.draw(st.text(string.printable + "\x00\x85\u2028", max_size=4)) \
            + text[j:]
    check_outcome(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes_as_file(raw):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.yaml"
        path.write_bytes(raw)
        try:
            load_config(path, known_implementations=IMPLS)
        except ConfigError as e:
            assert_one_line(e, file=str(path))


# --------------------------------------------------------------------------- issue 20.7-20.9

@pytest.mark.parametrize("value", ["0100", "0512", "1:30", "0x10", "0o10", "0b11", "1_000",
                                   "+0100", "00"])
def test_sizes_are_decimal_or_rejected(value):
    """YAML 1.1 read 0100 as 64 and 1:30 as 90: such sizes are rejected, never misread."""
    for key in ("rows", "d"):
        e = error_of(dump({**VALID, key: None}).replace(f"{key}: null", f"{key}: [{value}]"))
        assert_one_line(e, field=f"{key}[0]")
        assert "decimal" in e.problem or "must be at least" in e.problem, e.problem
    assert parse_config("rows: [100]\nd: [512]").rows == [100]
    with pytest.raises(ConfigError, match="decimal"):
        parse_config("rows: [!!int 0100]\nd: [16]")


def test_numbers_as_yaml_1_2_writes_them():
    s = parse_config("rows: [4]\nd: [8]\ntimeout_s: 1e3\ntiming: {rep_ms: 2.5E1, warmup_ms: .5}")
    assert s.timeout_s == 1000.0 and s.timing.rep_ms == 25.0 and s.timing.warmup_ms == 0.5
    assert parse_config("rows: [4]\nd: [8]\ntimeout_s: 1e5").timeout_s == 1e5
    assert parse_config("rows: [4]\nd: [8]\nseed: 0").seed == 0
    assert parse_config("rows: [4]\nd: [8]\ndescription: 1:30").description == "1:30"
    with pytest.raises(ConfigError, match="rows.*must be an integer, got float 1000.0"):
        parse_config("rows: [1e3]\nd: [8]")


def test_booleans_as_yaml_1_2_writes_them():
    """YAML 1.1 read yes, no, on and off as booleans: `name: off` was refused as "got boolean
    false"; in 1.2 they are strings, and true/false the booleans (a size still refuses one)."""
    s = parse_config("name: off\ndescription: yes\nrows: [4]\nd: [8]\nnorm: [rmsnorm]")
    assert (s.name, s.description) == ("off", "yes")
    assert parse_config("name: 'On'\nrows: [4]\nd: [8]").name == "On"
    for text in ("true", "True", "FALSE"):
        with pytest.raises(ConfigError, match=r"rows\[0\].*boolean"):
            parse_config(f"rows: [{text}]\nd: [8]")


def test_a_fifo_is_refused_not_read(tmp_path):
    import threading
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    result = []
    t = threading.Thread(target=lambda: result.append(_try_load(fifo)), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "load_config blocked on a FIFO"
    (e,) = result
    assert isinstance(e, ConfigError) and "FIFO" in e.problem and e.field == "(file)"
    e = _try_load(Path("/dev/null"))
    assert isinstance(e, ConfigError) and "device" in e.problem


def _try_load(path):
    try:
        load_config(path)
    except ConfigError as e:
        return e
    return None


def test_split_modules_reexported_from_config():
    """The names that moved to config_yaml/config_fields still import from config (issue 14)."""
    import pickle

    from normbench.harness import config, config_fields, config_yaml
    assert config.ConfigError is config_yaml.ConfigError
    assert config.MAX_FILE_BYTES == config_yaml.MAX_FILE_BYTES == 1 << 20
    assert config._load_yaml is config_yaml._load_yaml
    assert config.NORMS == config_fields.NORMS and config.Size is config_fields.Size
    e = pickle.loads(pickle.dumps(config.ConfigError("f.yaml", "d", "bad")))
    assert str(e) == "config error: f.yaml: d: bad"


@pytest.mark.parametrize("text", ["rows: [5]\nd: [33]\nshapes:\n", "batch:\nseq: [4]\nd: [8]\n",
                                  "shapes: [[5, 33]]\nd:\n", "rows:\nd: [8]\n"])
def test_a_shape_key_given_empty_is_an_error_not_left_out(text):
    with pytest.raises(ConfigError, match="must be a list, got null"):
        parse_config(text)


def test_peak_tbps_must_be_a_bandwidth():
    for bad in ("1e-320", "2000"):
        with pytest.raises(ConfigError, match="between 0.001 and 1000"):
            parse_config(f"rows: 1\nd: 1\npeak_tbps: {bad}\n")
