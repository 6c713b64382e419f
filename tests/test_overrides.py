"""harness/overrides.py: shipped configs by name, stdin, KEY=VALUE overrides and --shape,
validated exactly like a file, every error one line naming the override."""
from __future__ import annotations

import io
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from normbench.harness.config import ConfigError, Sweep, parse_config
from normbench.harness.overrides import apply, load, locate, shipped

IMPLS = ["atomic", "disjoint_block", "torch"]
BASE = "name: base\nnorm: [layernorm]\nrows: [64]\nd: [128]\ndtype: bf16\n"


def err(*args, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        apply(BASE, "base.yaml", *args, known_implementations=IMPLS, **kw)
    s = str(info.value)
    assert len(s.splitlines()) == 1 and s.startswith("config error: "), s
    return info.value


def test_shipped_configs_are_found_by_name_and_a_path_wins():
    names = shipped()
    assert {"quick", "cpu", "default", "peers"} <= set(names)
    assert locate("quick") == names["quick"] and locate("quick.yaml") == names["quick"]
    assert load("quick").name == "quick"
    assert locate("configs/quick.yaml").as_posix() == "configs/quick.yaml"
    with pytest.raises(ConfigError, match=r"nosuch: \(file\): does not exist \(nor is it a "
                                          r"shipped config: cpu, default"):
        load("nosuch")


def test_a_directory_never_hides_a_shipped_config_and_a_missing_copy_names_it(tmp_path,
                                                                            monkeypatch):
    """`normbench run cpu --out cpu`, then `run cpu` again: the run's folder ./cpu was taken
    for the config ("cpu: (file): is a directory").  A directory is no config; a file of the
    name still wins; configs/default.yaml outside a checkout says the shipped one is by name."""
    names = shipped()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cpu").mkdir()
    (tmp_path / "quick.yaml").mkdir()
    assert locate("cpu") == names["cpu"] and locate("quick.yaml") == names["quick"]
    assert load("cpu").name == "cpu"
    (tmp_path / "default").write_text(BASE)
    assert locate("default").resolve() == tmp_path / "default" and load("default").name == "base"
    (tmp_path / "mine").mkdir()
    with pytest.raises(ConfigError, match=r"mine: \(file\): is a directory"):
        load("mine")
    for given, name in (("configs/default.yaml", "default"), ("x/quick", "quick"),
                        ("cpu.yml", "cpu")):
        with pytest.raises(ConfigError) as info:
            load(given)
        assert str(info.value) == (f"config error: {given}: (file): does not exist (a config "
                                   f"named {name} is shipped with normbench: give it by name, "
                                   f"normbench run {name})")
    with pytest.raises(ConfigError, match=r"x/nosuch.yaml: \(file\): does not exist$"):
        load("x/nosuch.yaml")


def test_a_path_object_names_a_config_as_its_string_does(tmp_path, monkeypatch):
    """load(Path("nope.yaml")) raised TypeError ("argument of type 'PosixPath' is not
    iterable") where load("nope.yaml") says the file does not exist; any os.PathLike (and
    bytes) is now taken as its string — except that Path('-') is a file, not stdin."""
    class PL:
        def __init__(self, p): self.p = p
        def __fspath__(self): return self.p

    monkeypatch.chdir(tmp_path)
    for given in ("nope.yaml", "x/nope.yaml", "x/quick.yaml"):
        with pytest.raises(ConfigError) as want:
            load(given)
        for as_path in (Path(given), PL(given), given.encode()):
            with pytest.raises(ConfigError) as got:
                load(as_path)
            assert str(got.value) == str(want.value) and len(str(got.value).splitlines()) == 1
    assert locate(Path("quick")) == shipped()["quick"] and load(PL("quick")).name == "quick"
    with pytest.raises(ConfigError, match=r"-: \(file\): does not exist"):
        load(Path("-"), stdin=io.StringIO(BASE))
    (tmp_path / "-").write_text(BASE)
    assert load(Path("-")).name == "base"


def test_overrides_change_the_config_and_its_recorded_text():
    s = apply(BASE, "base.yaml", ["d=[5120]", "dtype=fp16", "timing.rep_ms=50",
                                  "implementations=[disjoint_block, torch]"], known_implementations=IMPLS)
    assert s.d == [5120] and s.dtype == ["fp16"] and s.timing.rep_ms == 50.0
    assert s.timing.warmup_ms == 25.0 and s.rows == [64] and s.name == "base"
    assert s.implementations == ["disjoint_block", "torch"]
    assert "d=[5120]" in s.source_text.splitlines()[0]          # the text says what changed
    again = parse_config(s.source_text, "x.yaml")             # and it is the config that ran
    assert again.d == s.d and again.timing == s.timing
    plain = apply(BASE, "base.yaml")
    assert plain.source_text == BASE and plain.config_hash != s.config_hash
    assert apply(BASE, "b.yaml", ["d=1", "d=2"]).d == [2]      # the later one wins


def test_shape_overrides_replace_the_other_ways_of_giving_shapes():
    s = apply(BASE, "b.yaml", shapes=["16384x5120", "8 x 8"])
    assert [(x.rows, x.d) for x in s.shapes] == [(16384, 5120), (8, 8)] and s.rows is None
    s = apply("shapes: [[4, 8]]\n", "b.yaml", ["rows=[2]", "d=[3]"])
    assert s.rows == [2] and s.d == [3] and s.shapes is None
    s = apply(BASE, "b.yaml", ["batch=[2]", "seq=[3]"])
    assert s.batch == [2] and s.seq == [3] and s.rows is None


@pytest.mark.parametrize("overrides,shapes,where,field,problem", [
    (["d=[x]"], [], "override 'd=[x]'", "d[0]", "must be an integer, got string 'x'"),
    (["d=[5"], [], "override 'd=[5'", "d", "invalid yaml"),
    (["d=0"], [], "override 'd=0'", "d", "must be at least 1"),
    (["dtyp=fp16"], [], "override 'dtyp=fp16'", "dtyp", "did you mean 'dtype'"),
    (["timing.rep=1"], [], "override 'timing.rep=1'", "timing.rep", "unknown key"),
    (["seed.x=1"], [], "override 'seed.x=1'", "seed.x", "has no keys"),
    (["d"], [], "override 'd'", "(override)", "expected KEY=VALUE"),
    (["implementations=[nosuch]"], [], "override 'implementations=[nosuch]'",
     "implementations[0]", "unknown implementation 'nosuch'"),
    (["rows="], [], "override 'rows='", "rows", "got null"),
    ([], ["16384"], "--shape '16384'", "shapes", "expected ROWSxD"),
    ([], ["4x8", "4x70000"], "--shape '4x70000'", "shapes[1].d", "at most 65536"),
    ([], ["4x8", "4x8"], "--shape '4x8'", "shapes[1]", "duplicate"),
    (["rows=[2]"], ["4x8"], "--shape '4x8'", "shapes", "not allowed together with override 'rows=[2]'"),
    # two overrides of one mapping's keys: the fault names the one that set the key at fault,
    # not the last one of the mapping (which named 'timing.warmup_ms=5' for rep_ms=0)
    (["timing.rep_ms=0", "timing.warmup_ms=5"], [], "override 'timing.rep_ms=0'",
     "timing.rep_ms", "greater than 0"),
    (["timing.rep=1", "timing.warmup_ms=5"], [], "override 'timing.rep=1'", "timing.rep",
     "unknown key"),
    (["timing={rep_ms: 0}", "timing.warmup_ms=5"], [], "override 'timing={rep_ms: 0}'",
     "timing.rep_ms", "greater than 0"),
    (["timing.rep_ms=5", "timing={rep_ms: 0}"], [], "override 'timing={rep_ms: 0}'",
     "timing.rep_ms", "greater than 0"),
])
def test_errors_name_the_override(overrides, shapes, where, field, problem):
    e = err(overrides, shapes)
    assert e.file == where and e.field == field and problem in e.problem, str(e)


def test_d_over_a_shapes_config_asks_for_rows():
    with pytest.raises(ConfigError, match="override 'd=8': d: the config gives shapes"):
        apply("shapes: [[4, 8]]\n", "b.yaml", ["d=8"])
    # with --shape given, d= is refused beside it, as over a config of rows and d (the advice
    # above, "or use --shape ROWSxD", was given to a command line that did)
    for text in ("shapes: [[4, 8]]\n", "rows: [4]\nd: [8]\n"):
        with pytest.raises(ConfigError, match=r"^config error: --shape '5x9': shapes: not "
                                              r"allowed together with override 'd=8'$"):
            apply(text, "b.yaml", ["d=8"], ["5x9"])


def test_the_config_s_own_faults_name_the_file():
    with pytest.raises(ConfigError, match=r"^config error: bad.yaml: d\[0\]"):
        apply("rows: [1]\nd: [x]\n", "bad.yaml", ["dtype=fp16"])
    with pytest.raises(ConfigError, match=r"^config error: bad.yaml: dtype"):
        apply("d: [8]\ndtype: fp99\n", "bad.yaml", shapes=["4x8"])  # a field kept: the file's


def test_a_fault_in_a_field_the_command_line_drops_is_no_fault():
    """--shape and shapes= drop the file's rows and d, rows= its batch, seq and shapes: the
    merged config never reads them.  A fault there was refused as the file's (`--shape 5x33`
    on a file of `d: [0]`, exit 2), where `rows=[5] d=[33]`, which sets the same, ran."""
    for overrides, shapes in (([], ["5x33"]), (["shapes=[[5, 33]]"], []), (["d=[33]"], [])):
        s = apply("rows: [5]\nd: [0]\n", "bad.yaml", overrides, shapes)
        pairs = ([(x.rows, x.d) for x in s.shapes] if s.shapes else
                 [(r, d) for r in s.rows for d in s.d])
        assert pairs == [(5, 33)], (overrides, shapes)
    assert apply("batch: [0]\nseq: [4]\nd: [33]\n", "bad.yaml", ["rows=[5]"]).rows == [5]
    assert apply("d: [x]\n", "bad.yaml", shapes=["4x8"]).shapes[0].d == 8
    with pytest.raises(ConfigError, match=r"^config error: bad.yaml: d\[0\]"):
        apply("rows: [5]\nd: [0]\n", "bad.yaml", ["rows=[6]"])     # d kept: the file's
    # nor is a conflict with a field dropped: rows= drops the shapes that `d` conflicted with
    # (refused as the file's "d: not allowed together with 'shapes'", where `rows=[5] d=[8]`
    # ran), seq= the rows that `batch` did
    s = apply("shapes: [[4, 8]]\nd: [8]\n", "bad.yaml", ["rows=[5]"])
    assert (s.rows, s.d, s.shapes) == ([5], [8], None)
    s = apply("rows: [4]\nbatch: [2]\nd: [8]\n", "bad.yaml", ["seq=[3]"])
    assert (s.rows, s.batch, s.seq) == (None, [2], [3])
    with pytest.raises(ConfigError, match=r"^config error: bad.yaml: rows: not allowed"):
        apply("shapes: [[4, 8]]\nrows: [8]\n", "bad.yaml", ["d=[4]"])    # shapes kept


def test_a_config_that_leaves_its_shapes_to_the_command_line(tmp_path):
    """A base missing only rows / d is completed by --shape or an override; still missing
    after them, it is the config's fault and names the file, as without any override."""
    bare, rows_only = "implementations: [torch]\n", "rows: [4]\nimplementations: [torch]\n"
    for text, o, sh in ((bare, [], ["4x8"]), (rows_only, ["d=[8]"], []),
                        (rows_only, [], ["4x8"]), (bare, ["batch=[2]", "seq=3", "d=8"], [])):
        s = apply(text, "ns.yaml", o, sh)
        assert s.name == "ns" and [(c.rows, c.d) for c in s.shapes or []] in ([], [(4, 8)])
    cfg = tmp_path / "noshape.yaml"
    cfg.write_text(bare)
    assert load(str(cfg), shapes=["4x8"]).name == "noshape"
    assert load("-", shapes=["4x8"], stdin=io.StringIO(bare)).name == "sweep"
    for o in ([], ["dtype=fp16"], ["d=[8]"]):
        with pytest.raises(ConfigError, match=r"^config error: ns.yaml: rows: required field"):
            apply(bare, "ns.yaml", o)
    with pytest.raises(ConfigError, match=r"^config error: ns.yaml: d: required field"):
        apply(rows_only, "ns.yaml", ["seed=1"])
    # a complete base made incomplete by an override: the override's fault, as before
    with pytest.raises(ConfigError, match=r"^config error: override 'batch=\[2\]': seq:"):
        apply(rows_only + "d: [8]\n", "ns.yaml", ["batch=[2]"])
    with pytest.raises(ConfigError, match=r"^config error: ns.yaml: d: must be at least 1"):
        apply("d: 0\n", "ns.yaml", ["rows=4"])       # not a missing shape: the file's


def test_an_empty_config_path_is_named_as_given():
    """'' is Path('.'): it was 'config error: .: (file): is a directory'."""
    with pytest.raises(ConfigError, match=r"^config error: '': \(file\): an empty path is no "
                                          r"config"):
        load("")


def test_config_from_stdin():
    s = load("-", ["rows=3"], stdin=io.StringIO("d: 8\nrows: 4\n"))
    assert s.rows == [3] and s.d == [8] and s.name == "sweep" and s.source_path == "<stdin>"
    with pytest.raises(ConfigError, match=r"<stdin>: \(file\): is empty"):
        load("-", stdin=io.StringIO(""))


def test_stdin_is_limited_in_bytes_as_a_file_is(tmp_path):
    """A config's 1 MiB is bytes, on stdin as in a file: 0.6 M two-byte characters (1.2 MB)
    were taken on stdin, counted as characters, and refused as a file; 1.5 M three-byte ones
    read as 'not UTF-8 text', the read cut mid-character, not as too large."""
    class Piped(io.TextIOWrapper):          # a pipe: bytes underneath, not a terminal
        def isatty(self):
            return False

    for text in ("description: " + "é" * 600_000 + "\nd: 8\nrows: 4\n",
                 "description: " + "€" * 1_500_000 + "\nd: 8\nrows: 4\n"):
        f = tmp_path / "big.yaml"
        f.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=r"big.yaml: \(file\): is larger than 1 MiB"):
            load(str(f))
        for stream in (Piped(io.BytesIO(text.encode())), io.StringIO(text)):
            with pytest.raises(ConfigError, match=r"^config error: <stdin>: \(file\): is larger "
                                                  r"than 1 MiB"):
                load("-", stdin=stream)
    ok = "description: " + "é" * 1000 + "\nd: 8\nrows: 4\n"           # well under: taken
    assert load("-", stdin=Piped(io.BytesIO(ok.encode()))).description.endswith("é")
    with pytest.raises(ConfigError, match=r"<stdin>: \(file\): is not UTF-8 text \(bad byte "
                                          r"at offset 3\)"):
        load("-", stdin=Piped(io.BytesIO(b"d: \xff\n")))



def test_a_non_blocking_stdin_is_read_to_its_end():
    """A pipe its parent set non-blocking (`run - ` under a parent that shares such a pipe):
    the read before the writer's first bytes gave None (TypeError: object of type 'NoneType'
    has no len(), a traceback), and one between two of its writes took the first part for
    the whole config ('<stdin>: rows: required field is missing').  Both wait for the end."""
    import os
    import threading
    import time
    for first in (b"", b"d: 8\n"):
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.write(w, first)

        def rest(w=w, first=first):
            time.sleep(0.3)
            os.write(w, (b"" if first else b"d: 8\n") + b"rows: 4\nimplementations: [torch]\n")
            os.close(w)
        writer = threading.Thread(target=rest)
        writer.start()
        try:
            with open(r, "r", encoding="utf-8") as stream:
                s = load("-", stdin=stream, known_implementations=IMPLS)
        finally:
            writer.join()
        assert (s.rows, s.d, s.implementations) == ([4], [8], ["torch"])


# ---------------------------------------------------------------------------- fuzzing

yaml_scalar = st.one_of(st.integers(-5, 70000), st.floats(allow_nan=True), st.booleans(),
                        st.none(), st.text(string.printable, max_size=8),
                        st.sampled_from(["auto", "fp16", "bf16", "rmsnorm", "same", "torch"]))
yaml_value = st.one_of(yaml_scalar, st.lists(yaml_scalar, max_size=3),
                       st.dictionaries(st.sampled_from(["warmup_ms", "rep_ms", "repeats", "x"]),
                                       yaml_scalar, max_size=2))
KEY = st.sampled_from(["d", "rows", "dtype", "norm", "groups", "weight_dtype", "seed",
                       "timing", "determinism", "peak_tbps", "timeout_s", "name",
                       "implementations", "batch", "shapes", "description"])


@settings(max_examples=300, deadline=None)
@given(KEY, yaml_value)
def test_an_override_validates_exactly_like_the_file(key, value):
    """KEY=<value as YAML> succeeds or fails exactly as the same value written in the file."""
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    raw = f"{key}={text}"
    file_data = yaml.safe_load(BASE)
    file_data[key] = yaml.safe_load(text) if text else None
    if key == "shapes":
        for k in ("rows", "d"):
            file_data.pop(k)
    if key == "batch":
        file_data.pop("rows")
    try:
        want = parse_config(yaml.safe_dump(file_data), "base.yaml", IMPLS)
    except ConfigError as e:
        want = e
    try:
        got = apply(BASE, "base.yaml", [raw], known_implementations=IMPLS)
    except ConfigError as e:
        got = e
    if isinstance(want, Sweep):
        assert isinstance(got, Sweep), str(got)
        assert got.model_dump(exclude={"source_text"}) == want.model_dump(exclude={"source_text"})
    else:
        assert isinstance(got, ConfigError), (raw, str(want))
        assert (got.field, got.problem) == (want.field, want.problem)
        assert got.file == " ".join(f"override {raw!r}".split())   # one line, as every error


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(string.printable + "×é", max_size=20), max_size=3),
       st.lists(st.text("0123456789xX× ,-", max_size=12), max_size=2))
def test_any_command_line_is_a_sweep_or_one_config_error(overrides, shapes):
    try:
        s = apply(BASE, "base.yaml", overrides, shapes, known_implementations=IMPLS)
    except ConfigError as e:
        text = str(e)
        assert len(text.splitlines()) == 1 and text.startswith("config error: ")
        assert "Traceback" not in text and "pydantic" not in text.lower()
    else:
        assert isinstance(s, Sweep)


@pytest.mark.parametrize("raw,problem", [
    ("0100x33", "leading zero"), ("１２x33", "expected ROWSxD"),
    ("12345678901x33", "must be at most 1073741824"), ("0x5", "must be at least 1"),
    ("2147483647x8", "must be at most 1073741824"),      # 2^31 − 1 rows: the kernels wrapped
    ("99999999999999999999x5", "must be at most 1073741824"),     # 20 digits: said so too
    ("5x" + "9" * 400, "d must be at most 65536, got a 400-digit number"),
    ("9" * 5000 + "x5", "rows must be at most 1073741824, got a 5000-digit number"),
])
def test_shape_numbers_are_plain_ascii_decimals_in_range(raw, problem):
    with pytest.raises(ConfigError, match=problem):
        apply("rows: [1]\nd: [8]\n", "t.yaml", shapes=[raw])


def test_config_hash_ignores_the_command_lines_spelling(tmp_path):
    """The same sweep reached by another path or another order of overrides hashes alike
    (merge and --resume compare it); a different value does not."""
    import shutil
    from normbench.harness import overrides
    copy = tmp_path / "other" / "cpu.yaml"
    copy.parent.mkdir()
    shutil.copy(overrides.locate("cpu"), copy)
    a = overrides.load("cpu", ["rows=[5]", "d=[33]"])
    b = overrides.load(str(copy), ["d=[33]", "rows=[5]"])
    assert a.source_text != b.source_text and a.config_hash == b.config_hash
    # keys the config lacks, set in either order (their order in the text differs)
    c, e = (overrides.load("cpu", o)
            for o in (["seed=1", "timeout_s=5"], ["timeout_s=5", "seed=1"]))
    assert c.config_hash == e.config_hash
    assert overrides.load("cpu", ["rows=[6]", "d=[33]"]).config_hash != a.config_hash
    assert overrides.load("cpu").config_hash != a.config_hash


@pytest.mark.parametrize("one,other", [
    ("norm=rmsnorm", "norm=[rmsnorm]"), ("d=8", "d=[8]"), ("timing.rep_ms=5", "timing.rep_ms=5.0"),
    ("dtype=fp16", "dtype=[fp16]"),
])
def test_config_hash_ignores_the_spelling_of_a_value(one, other):
    """The hash is of the validated settings (lists normalized, numbers as floats), not of
    the YAML as typed: `run ... norm=rmsnorm` is resumed by `run ... 'norm=[rmsnorm]'`."""
    a, b = (apply(BASE, "b.yaml", [o]) for o in (one, other))
    assert a.source_text != b.source_text and a.config_hash == b.config_hash


def test_a_run_hashed_by_the_overridden_text_s_data_is_still_resumed():
    """Runs started before the settings hash recorded the hash of the merged text's YAML data
    (raw_data_hash), or earlier of the whole text (text_hash): both still resume."""
    from normbench.harness.run import resume_mismatch
    new, old = apply(BASE, "b.yaml", ["d=[8]"]), apply(BASE, "b.yaml", ["d=8"])
    assert old.raw_data_hash != new.raw_data_hash          # the old scheme saw the spelling
    for recorded in (old.config_hash, old.raw_data_hash, old.text_hash):
        meta = {"device_name": "x", "config_hash": recorded}
        assert resume_mismatch(meta, old, device=False) == []
    assert resume_mismatch({"device_name": "x", "config_hash": apply(BASE, "b.yaml", [
        "d=[9]"]).raw_data_hash}, old, device=False)


def test_text_that_looks_like_a_number_stays_text_through_an_override(tmp_path):
    """The config is written back out for the overrides: "1e3" must be quoted there."""
    from normbench.harness import overrides
    cfg = tmp_path / "sci.yaml"
    cfg.write_text('name: "1e3"\ndescription: "1.0e3"\nrows: [5]\nd: [33]\n')
    s = overrides.load(str(cfg), ["seed=1"], ["5x33"])
    assert s.name == "1e3" and s.description == "1.0e3" and s.seed == 1


@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\x85"])
def test_a_yaml_line_break_in_the_path_or_an_override_breaks_no_other_override(brk):
    """The merged config starts with a comment naming the file and the overrides: a character
    YAML reads as a line break (or refuses) is escaped there, not blamed on `seed=1`."""
    assert apply(BASE, f"a{brk}b.yaml", ["seed=1"]).seed == 1
    assert apply(BASE, "\udcff\x9f.yaml", ["seed=1"]).seed == 1      # undecodable, C1 control
    s = apply(BASE, "b.yaml", ["seed=1", f"description=x{brk}y"])
    assert s.seed == 1 and s.source_text.splitlines()[0].startswith('# "b.yaml" with ')
    e = err([], [f"3x4{brk}"])                     # \s took it: a shape ending in a line break
    assert e.file == f"--shape {f'3x4{brk}'!r}" and "expected ROWSxD" in e.problem


def test_blanks_around_the_dots_of_a_key_path_are_dropped():
    assert apply(BASE, "b.yaml", ["timing .rep_ms=5", " timing. warmup_ms =2"]).timing.rep_ms == 5


def test_an_override_replaces_a_field_the_file_got_wrong():
    """The merged config is what runs and what is validated: a field an override sets may be
    invalid in the file (a plugin's implementation, run without the plugin); the file's other
    faults still name the file, and the override's own ones the override."""
    plug = "rows: [4]\nd: [8]\nimplementations: [torch, plug-nogroups]\n"
    s = apply(plug, "p.yaml", ["implementations=[torch]"], known_implementations=IMPLS)
    assert s.implementations == ["torch"]
    assert apply("rows: [4]\nd: [x]\n", "p.yaml", ["d=[8]"]).d == [8]
    timing = "rows: [4]\nd: [8]\ntiming: {rep_ms: -1, warmup_ms: 5}\n"
    assert apply(timing, "p.yaml", ["timing.rep_ms=50"]).timing.rep_ms == 50.0
    with pytest.raises(ConfigError, match=r"^config error: p.yaml: timing.warmup_ms: "):
        apply(timing.replace("5}", "-5}"), "p.yaml", ["timing.rep_ms=50"])
    with pytest.raises(ConfigError, match=r"^config error: p.yaml: d\[0\]: must be an integer"):
        apply(plug.replace("[8]", "[x]"), "p.yaml", ["implementations=[torch]"],
              known_implementations=IMPLS)
    with pytest.raises(ConfigError, match=r"^config error: override 'implementations=\[nosuch\]'"
                                          r": implementations\[0\]: unknown implementation"):
        apply(plug, "p.yaml", ["implementations=[nosuch]"], known_implementations=IMPLS)
    with pytest.raises(ConfigError, match=r"^config error: p.yaml: implementations\[1\]: "):
        apply(plug, "p.yaml", ["dtype=fp16"], known_implementations=IMPLS)
    # a nested override sets one key of a mapping: a parent that is no mapping in the file is
    # the file's fault (it was dropped whole, and warmup_ms fell back to its default)
    for parent in ("5", "[1, 2]", "null"):
        with pytest.raises(ConfigError, match=r"^config error: p.yaml: timing: must be a mapping"):
            apply(f"rows: [4]\nd: [8]\ntiming: {parent}\n", "p.yaml", ["timing.rep_ms=2"])
    assert apply("rows: [4]\nd: [8]\ntiming: 5\n", "p.yaml",
                 ["timing={rep_ms: 2, warmup_ms: 1}"]).timing.rep_ms == 2.0
