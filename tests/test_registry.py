"""The registry refuses a registration whose fields are not of their types (one line when a
plugin loads), and a GROUPS rule whose answer is no GROUPS is the case's error, not a record."""
import functools
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests import forkcli

from normbench import strategies
from normbench.harness.measure import Settings, measure
from normbench.harness.plan import Case
from normbench.strategies import _registry, _tuning

ROOT = Path(__file__).resolve().parent.parent


def _fn(x, dy, weight, mean, rstd, *, groups=None):
    return strategies.get("torch").fn(x, dy, weight, mean, rstd)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))


@pytest.mark.parametrize("bad", [
    dict(deterministic_by_design=1), dict(uses_groups="yes"), dict(doc=5),
    dict(auto_groups=3), dict(writers="rows"), dict(workspace=0.5), dict(max_groups=[2]),
    dict(launch={"num_warps": 4}), dict(contention="rows/groups")])
def test_a_field_of_the_wrong_type_is_refused_at_registration(registry, bad):
    fields = dict(kind="strategy", deterministic_by_design=True, uses_groups=True) | bad
    with pytest.raises(TypeError, match=f"implementation 'x_bad': {next(iter(bad))} must be"):
        _registry.register("x_bad", **fields)(_fn)
    assert "x_bad" not in _registry.known()


def test_an_entry_added_whole_is_checked_too(registry):
    with pytest.raises(TypeError, match="not callable"):
        _registry.add(_registry.Entry(name="x_nofn", kind="baseline", deterministic_by_design=True,
                                      uses_groups=False, fn="torch"))
    with pytest.raises(TypeError, match="reason must be a str"):
        _registry.register_unavailable("x_why", kind="baseline", reason=404)
    # doc None is no doc: `list` escapes it as text
    e = _registry.add(_registry.Entry(name="x_nodoc", kind="baseline", deterministic_by_design=True,
                                      uses_groups=False, fn=_fn, doc=None))
    assert e.doc == ""


def _list_with_plugin(plugin_path, name: str, flag: str, signature: str) -> list[str]:
    """`run_bench.py list` with plugin module `name` registering one strategy (its
    deterministic_by_design `flag`, its function `signature`): it must fail with exit 2 and
    one line of stderr, which is returned."""
    return _list_with_source(plugin_path, name, (
        "from normbench.strategies import register\n"
        f"@register('{name}', kind='strategy', {flag}, uses_groups=False)\n"
        f"{signature}\n    pass\n"))


def _list_with_source(plugin_path, name: str, source: str) -> list[str]:
    """`run_bench.py list` with plugin module `name` of `source` (written into conftest's
    plugin_path folder, one for this module: the calls share one environment, so
    tests/forkcli.py's server forks every call but the first): it must fail with exit 2 and
    one line of stderr, which is returned."""
    folder, pythonpath = plugin_path
    (folder / f"{name}.py").write_text(source)
    env = {**os.environ, "NORMBENCH_PLUGINS": name, "NORMBENCH_QUIET": "1",
           "PYTHONPATH": pythonpath}
    r = forkcli.run([sys.executable, str(ROOT / "run_bench.py"), "list"], cwd=folder,
                    env=env, timeout=300)
    err = [ln for ln in r.stderr.decode().splitlines() if ln.strip()]
    assert r.returncode == 2 and len(err) == 1, r.stderr.decode()
    return err


def test_a_plugin_with_a_flag_of_1_is_one_line_when_it_loads(plugin_path):
    """deterministic_by_design=1 passed `list`, then its first record stopped the sweep with a
    traceback (the boolean column refuses 1)."""
    err = _list_with_plugin(plugin_path, "nb_flag", "deterministic_by_design=1",
                            "def f(x, dy, weight, mean, rstd, *, groups=None):")
    assert "plugin nb_flag " in err[0] and "deterministic_by_design must be True or False" in err[0]


@pytest.mark.parametrize("value", [-3, 0, 2.5, None, True])
def test_an_auto_rule_that_gives_no_groups_is_the_cases_error(registry, value):
    """auto_groups giving -3 was taken: the strategy called with groups=-5, its record ok."""
    seen = []

    def fn(x, dy, weight, mean, rstd, *, groups):
        seen.append(groups)
        return _fn(x, dy, weight, mean, rstd)

    _registry.register("x_auto", kind="strategy", deterministic_by_design=True, uses_groups=True,
                       auto_groups=lambda rows, d, sms, launch: value)(fn)
    s = Settings(warmup_ms=1, rep_ms=1, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name="cpu")
    rec = measure(Case(norm="layernorm", implementation="x_auto", rows=4, d=8, dtype="fp32",
                       weight_dtype="fp32", groups="auto"), s)
    assert rec["status"] == "error" and "auto_groups rule gave" in rec["error"], rec["error"]
    assert seen == []
    # an integral GROUPS of numpy's kind is a GROUPS
    import numpy as np
    e = strategies.get("x_auto")
    e.auto_groups = lambda rows, d, sms, launch: np.int64(2)
    assert e.effective_groups(4, 8, None, "cpu") == 2


def _raises(*args, **kwargs):
    return 1 // 0


_SETTINGS = Settings(warmup_ms=1, rep_ms=1, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                     device_name="cpu")


@pytest.mark.parametrize("rule", ["workspace", "auto_groups", "writers", "max_groups"])
def test_a_rule_that_raises_is_named_in_the_cases_error(registry, rule):
    """A plugin's workspace model that raised ZeroDivisionError made the record's error
    "ZeroDivisionError: integer division or modulo by zero", as if the case had raised it:
    the error says which of its rules it was, as a failing notes() is "its notes(): ..."."""
    _registry.register("x_rule_raises", kind="strategy", deterministic_by_design=True,
                       uses_groups=True, **{rule: _raises})(_fn)
    rec = measure(Case(norm="layernorm", implementation="x_rule_raises", rows=4, d=8,
                       dtype="fp32", weight_dtype="fp32", groups="auto"), _SETTINGS)
    assert rec["status"] == "error", rec
    assert rec["error"] == (f"its {rule} rule raised ZeroDivisionError: integer division or "
                            "modulo by zero"), rec["error"]
    # the exception itself goes on as it was, to a caller of the API
    e = strategies.get("x_rule_raises")
    with pytest.raises(ZeroDivisionError):
        e.workspace_bytes(4, 8, None)
        e.writers_per_slot(4, 8, None)


def test_an_interruption_in_a_rule_still_stops_the_sweep(registry):
    """Ctrl-C landing in a rule is no failure of the case: it propagates, the very exception."""
    from normbench.harness.interrupt import Interrupted
    stop = Interrupted(signal.SIGINT)

    def interrupted(rows, d, g, has_bias):
        raise stop

    _registry.register("x_rule_stops", kind="strategy", deterministic_by_design=True,
                       uses_groups=True, workspace=interrupted)(_fn)
    with pytest.raises(Interrupted) as caught:
        measure(Case(norm="layernorm", implementation="x_rule_stops", rows=4, d=8,
                     dtype="fp32", weight_dtype="fp32", groups="auto"), _SETTINGS)
    assert caught.value is stop


def _no_groups(x, dy, weight, mean, rstd):
    return _fn(x, dy, weight, mean, rstd)


def _four_args(x, dy, weight, rstd, *, groups=None):
    return _fn(x, dy, weight, None, rstd)


def _extra_keyword(x, dy, weight, mean, rstd, *, groups, scale):
    return _fn(x, dy, weight, mean, rstd)


@pytest.mark.parametrize("fn, fault", [
    (_no_groups, "got an unexpected keyword argument 'groups'"),
    (_four_args, "too many positional arguments"),
    (_extra_keyword, "missing a required argument: 'scale'")])
def test_a_function_that_cannot_take_the_call_is_refused_at_registration(registry, fn, fault):
    """def f(x, dy, weight, mean, rstd) (no groups) passed `list`, then every record was
    'TypeError: f() got an unexpected keyword argument 'groups''."""
    with pytest.raises(TypeError, match=f"implementation 'x_sig': its function {fn.__name__}"
                                        rf"\(.*cannot be called as fn\(x, dy, weight, mean, "
                                        rf"rstd, groups=\.\.\.\): {fault}"):
        _registry.register("x_sig", kind="strategy", deterministic_by_design=True,
                           uses_groups=False)(fn)
    assert "x_sig" not in _registry.known()


class _Callable:
    def __call__(self, x, dy, weight, mean, rstd, groups=None):
        return _fn(x, dy, weight, mean, rstd)


class _Unreadable:
    """A callable whose signature inspect cannot read: taken as it is."""
    __signature__ = "not a signature"

    def __call__(self, *args, **kwargs):
        return _fn(*args, **kwargs)


@pytest.mark.parametrize("fn", [
    lambda *a, **k: None, lambda x, dy, weight, mean, rstd, *, groups: None,
    lambda x, dy, weight, mean, rstd, *rest, groups=None, **more: None,
    functools.partial(lambda scale, x, dy, weight, mean, rstd, *, groups: None, 2.0),
    _Callable(), _Unreadable(), max])
def test_callables_that_can_take_the_call_are_registered(registry, fn):
    _registry.register("x_ok", kind="baseline", deterministic_by_design=True,
                       uses_groups=False, doc="d")(fn)
    assert _registry.get("x_ok").fn is fn


def test_every_shipped_implementation_registers_with_its_signature_checked():
    """The shipped strategies and peers (and the test plugins) pass the check: their
    functions are called as fn(x, dy, weight, mean, rstd, groups=...)."""
    for e in _registry.entries():
        if e.fn is not None:
            _registry._check_signature(e.name, e.fn)


def test_a_plugin_with_a_wrong_signature_is_one_line_when_it_loads(plugin_path):
    err = _list_with_plugin(plugin_path, "nb_sig", "deterministic_by_design=True",
                            "def f(x, dy, weight, mean, rstd):")
    assert err[0].startswith("plugin nb_sig (NORMBENCH_PLUGINS) cannot be loaded: TypeError: "
                             "implementation 'nb_sig': its function f(x, dy, weight, mean, rstd) "
                             "cannot be called"), err[0]


def _ws_no_dtype(rows, d, g, has_bias, weight_dtype):
    return 0


@pytest.mark.parametrize("rule, value, call", [
    ("writers", lambda rows: rows, "writers(rows, groups)"),
    ("workspace", lambda rows, d: 0, "workspace(rows, d, groups, has_bias)"),
    # takes weight_dtype, so it is called with it, and without it where it is not known
    ("workspace", _ws_no_dtype, "workspace(rows, d, groups, has_bias)"),
    ("max_groups", lambda rows, d, launch, sms: 4, "max_groups(rows, d, launch)"),
    ("auto_groups", lambda rows, d: 4, "auto_groups(rows, d, sms, launch)"),
    ("auto_groups", lambda rows, d, sms, launch, extra: 4, "auto_groups(rows, d, sms, launch)"),
    ("auto_groups", lambda rows, d, *, sms: 4, "auto_groups(rows, d, sms)")])
def test_a_rule_that_cannot_take_its_call_is_refused_at_registration(registry, rule, value,
                                                                     call):
    """writers=lambda rows: ... (or a workspace, max_groups or auto_groups rule of the wrong
    arity) passed `list`, then every record was its TypeError."""
    with pytest.raises(TypeError, match=rf"implementation 'x_rule': its {rule} rule .* cannot "
                                        rf"be called as {re.escape(call)}: "):
        _registry.register("x_rule", kind="strategy", deterministic_by_design=True,
                           uses_groups=True, **{rule: value})(_fn)
    assert "x_rule" not in _registry.known()


@pytest.mark.parametrize("rules", [
    dict(writers=lambda rows, g: 1, max_groups=lambda rows, d, launch: 2,
         auto_groups=lambda rows, d, sms, launch=None: 2,
         workspace=lambda rows, d, g, has_bias, *, weight_dtype=None: 0),
    dict(auto_groups=lambda rows, d, sms: 2, workspace=lambda rows, d, g, has_bias: 0),
    dict(writers=lambda *a: 1, workspace=lambda *a, **k: 0, max_groups=_Unreadable()),
    dict(writers=max, max_groups=min),       # builtins: no signature to read, taken
    dict(contention=strategies.Contention(writers="rows/groups", partial_rows="groups"))])
def test_rules_that_can_take_their_calls_are_registered(registry, rules):
    _registry.register("x_rules", kind="strategy", deterministic_by_design=True,
                       uses_groups=True, **rules)(_fn)
    e = _registry.get("x_rules")
    if "auto_groups" in rules:            # the older form called without launch
        assert e.effective_groups(8, 16, None, "cpu") == 2


def test_a_plugin_with_a_rule_of_the_wrong_signature_is_one_line_when_it_loads(plugin_path):
    err = _list_with_plugin(plugin_path, "nb_rule", "deterministic_by_design=True, "
                            "writers=lambda rows: rows",
                            "def f(x, dy, weight, mean, rstd, *, groups=None):")
    assert err[0].startswith("plugin nb_rule (NORMBENCH_PLUGINS) cannot be loaded: TypeError: "
                             "implementation 'nb_rule': its writers rule <lambda>(rows) cannot "
                             "be called as writers(rows, groups)"), err[0]


def _declared_fn(x, dy, weight, mean, rstd, *, groups=None):    # gets .params: its own
    return _fn(x, dy, weight, mean, rstd)


@pytest.fixture
def rules(monkeypatch):
    monkeypatch.setattr(_tuning, "RULES", dict(_tuning.RULES))


def _declare(name, k=2, **changed):
    """A registering function, as a plugin's entry point may name one: its lambdas (and its
    launch rule's) are made anew at every call."""
    fields = dict(kind="strategy", deterministic_by_design=True, uses_groups=True,
                  auto_groups=lambda rows, d, sms, launch: k,
                  launch=strategies.Rule(params=lambda d: {"block_d": 16}), doc="d") | changed
    return _registry.register(name, **fields)(_declared_fn)


def test_the_same_declaration_again_is_no_change(registry, rules):
    """A registering function run twice (an entry point's module:function that its module's
    import runs too) declares the same function with the same properties again: no change."""
    _declare("x_again")
    first = _registry.get("x_again")
    _declare("x_again")
    _registry.register("x_plain", kind="baseline", deterministic_by_design=False,
                       uses_groups=False)(_fn)
    _registry.register("x_plain", kind="baseline", deterministic_by_design=False,
                       uses_groups=False, doc=None)(_fn)      # doc None and "": the docstring
    assert _registry.get("x_again") is first
    assert first.effective_groups(8, 16, None, "cpu") == 2


@pytest.mark.parametrize("changed, said", [
    (dict(deterministic_by_design=False), "deterministic_by_design True, then False"),
    (dict(deterministic_by_design=1), "deterministic_by_design True, then 1"),
    (dict(k=3), "auto_groups _declare.<locals>.<lambda> (test_registry.py:"),
    (dict(auto_groups=lambda rows, d, sms, launch: 2), "auto_groups _declare.<locals>.<lambda> "
                                                       "(test_registry.py:"),
    (dict(writers=lambda rows, g: 1), "writers None, then <lambda> (test_registry.py:"),
    (dict(partition="modulo"), "partition 'block', then 'modulo'"),
    (dict(doc="other"), "doc 'd', then 'other'")])
def test_the_same_function_declared_otherwise_is_refused(registry, rules, changed, said):
    """register() of an already registered function under its name with another property was
    dropped silently: the first declaration kept (deterministic_by_design True, say, where
    the plugin's last word was False)."""
    _declare("x_other")
    first = _registry.get("x_other")
    with pytest.raises(ValueError, match=r"^implementation 'x_other' registered twice, with "
                                         r"other properties: " + re.escape(said)):
        _declare("x_other", **changed)
    assert _registry.get("x_other") is first and first.deterministic_by_design is True


def test_a_plugin_declaring_a_function_twice_otherwise_is_one_line_when_it_loads(plugin_path):
    """The same declaration twice loads; then the function again, nondeterministic: one line
    naming the plugin, the implementation and the property, exit 2."""
    err = _list_with_source(plugin_path, "nb_twice", (
        "from normbench.strategies import register\n"
        "def f(x, dy, weight, mean, rstd, *, groups=None):\n    pass\n"
        "for det in (True, True, False):\n"
        "    register('nb_twice', kind='strategy', deterministic_by_design=det, "
        "uses_groups=False)(f)\n"))
    assert err[0] == ("plugin nb_twice (NORMBENCH_PLUGINS) cannot be loaded: ValueError: "
                      "implementation 'nb_twice' registered twice, with other properties: "
                      "deterministic_by_design True, then False"), err[0]


@pytest.mark.parametrize("name", ["grouped_atomic", "spin_lock"])
def test_a_groups_list_of_a_modulo_strategy_is_measured_as_asked(name):
    """grouped_atomic and spin_lock send row r to partial row r mod GROUPS, so every GROUPS up
    to rows leaves no partial row empty: at 100 rows, GROUPS 50, 60 and 99 were all recorded as
    50 (the contiguous-block cap, ⌈rows/⌈rows/GROUPS⌉⌉), one configuration measured three
    times under three names."""
    s = Settings(warmup_ms=1, rep_ms=1, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name="cpu")
    got = []
    for g in ("50", "60", "99"):
        rec = measure(Case(norm="rmsnorm", implementation=name, rows=100, d=4, dtype="fp32",
                           weight_dtype="fp32", groups=g), s)
        assert rec["status"] == "ok" and rec["correct"], rec.get("error")
        got.append((rec["groups_effective"], rec["writers_per_slot"], rec["workspace_bytes"]))
    assert [g for g, _, _ in got] == [50, 60, 99]
    assert [w for _, w, _ in got] == [2, 2, 2]
    assert got[2][2] > got[1][2] > got[0][2]


def test_partition_is_declared_with_the_registration(registry):
    """A strategy says how it deals rows out: "modulo" runs min(GROUPS, rows) (any max_groups
    still applies), "block" (the default) what contiguous blocks allow; anything else is one
    line when it registers."""
    _registry.register("x_mod", kind="strategy", deterministic_by_design=False, uses_groups=True,
                       partition="modulo")(_fn)
    _registry.register("x_modcap", kind="strategy", deterministic_by_design=False,
                       uses_groups=True, partition="modulo",
                       max_groups=lambda rows, d, launch: 7)(_fn)
    _registry.register("x_blk", kind="strategy", deterministic_by_design=True, uses_groups=True)(_fn)
    mod, cap, blk = (strategies.get(n) for n in ("x_mod", "x_modcap", "x_blk"))
    assert [mod.effective_groups(100, 4, g) for g in (50, 60, 99, 100, 400)] == [50, 60, 99, 100, 100]
    assert [cap.effective_groups(100, 4, g) for g in (5, 60)] == [5, 7]
    assert [blk.effective_groups(100, 4, g) for g in (50, 60, 99, 400)] == [50, 50, 50, 100]
    assert blk.partition == "block"
    with pytest.raises(ValueError, match="implementation 'x_bad': partition must be one of "
                                         "'block', 'modulo', got 'mod'$"):
        _registry.register("x_bad", kind="strategy", deterministic_by_design=True,
                           uses_groups=True, partition="mod")(_fn)
    assert "x_bad" not in _registry.known()


class _KwargsModel:
    def __call__(self, rows, d, groups, has_bias, **kw):
        return 4 if kw.get("weight_dtype") == "fp32" else 8

    __hash__ = None                     # unhashable: its signature is read every call


@pytest.mark.parametrize("model, fp32, bf16", [
    (lambda rows, d, g, has_bias: d * 2, 128, 128),                       # the older form
    (lambda rows, d, g, has_bias, *, weight_dtype=None:
     d * (1 if weight_dtype == "fp32" else 2), 64, 128),                  # takes the keyword
    (_KwargsModel(), 4, 8),                                               # takes any keyword
    (functools.partial(lambda scale, rows, d, g, has_bias: scale * d, 3), 192, 192)])
def test_a_workspace_model_gets_the_weight_dtype_where_it_takes_it(registry, model, fp32, bf16):
    """The weight's dtype reaches a workspace model that takes the `weight_dtype` keyword (so
    atomic can count no workspace where its buffer is the fp32 output); a plugin's model of the
    older form (rows, d, groups, has_bias) is called as before, without it."""
    _registry.register("x_ws", kind="strategy", deterministic_by_design=True, uses_groups=True,
                       workspace=model)(_fn)
    e = strategies.get("x_ws")
    assert e.workspace_bytes(100, 64, 4, True, "fp32") == fp32
    assert e.workspace_bytes(100, 64, 4, True, weight_dtype="bf16") == bf16
    assert e.workspace_at(100, 64, 4, True, "fp32") == fp32
    assert e.workspace_bytes(100, 64, 4, True) == bf16        # no weight dtype given


def test_the_test_plugins_older_workspace_model_still_works(plugin_path):
    """tests/plugin_strategy.py registers workspace=lambda rows, d, g, has_bias: ... (no weight
    dtype): given one, it is called as it was.  A process of its own (the plugin loads as
    normbench is first imported), a script in the module's plugin folder, so that it forks
    from the server of the plugin tests' `list` calls (tests/forkcli.py)."""
    folder, pythonpath = plugin_path
    env = {**os.environ, "PYTHONPATH": pythonpath, "NORMBENCH_PLUGINS": "tests.plugin_strategy"}
    script = folder / "older_workspace_model.py"
    script.write_text(
        "from normbench import strategies; e = strategies.get('test_plugin_rows'); "
        "print(e.workspace_bytes(100, 64, 4, True, 'fp32'), e.workspace_bytes(100, 64, 4))\n")
    out = forkcli.run([sys.executable, script], env=env, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(7 * 4 * 64 * 2)] * 2


def test_a_reloaded_plugin_that_drops_its_launch_rule_leaves_none_behind(registry, rules,
                                                                          tmp_path, monkeypatch):
    """Reloaded without `launch=`, a plugin kept its old rule in _tuning.RULES: a tuning
    override (bench/tune.py, ab_repeat) was checked against the rule of code no longer run."""
    import importlib
    import os
    import sys
    src = tmp_path / "nb_rule_dropped.py"
    head = ("from normbench.strategies import register, ROW_LOOP\n"
            "@register('nb_rule_dropped', kind='strategy', deterministic_by_design=True, "
            "uses_groups=False{launch})\n"
            "def backward(x, dy, weight, mean, rstd, *, groups=None):\n"
            "    return None\n")
    src.write_text(head.format(launch=", launch=ROW_LOOP"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nb_rule_dropped", raising=False)
    mod = importlib.import_module("nb_rule_dropped")
    assert "nb_rule_dropped" in _tuning.RULES
    src.write_text(head.format(launch=""))
    importlib.invalidate_caches()
    os.utime(src, (os.stat(src).st_atime, os.stat(src).st_mtime + 10))   # a new .pyc
    importlib.reload(mod)
    assert _registry.get("nb_rule_dropped").launch is None
    assert "nb_rule_dropped" not in _tuning.RULES
    src.write_text(head.format(launch=", launch=ROW_LOOP"))
    os.utime(src, (os.stat(src).st_atime, os.stat(src).st_mtime + 20))
    importlib.reload(mod)
    assert _tuning.RULES["nb_rule_dropped"] is _tuning.ROW_LOOP
    sys.modules.pop("nb_rule_dropped", None)


def test_a_plugin_module_reloaded_replaces_its_entries(registry, rules, tmp_path, monkeypatch):
    """A kernel engineer writing a plugin in a notebook edits it and runs importlib.reload:
    its register() ran again with a new function object and was refused ("registered twice"),
    so the edit could not be tried without a new process.  The module's new definition now
    replaces the entry; another module's function of that name is still a clash."""
    import importlib
    import sys
    src = tmp_path / "nb_reloaded.py"
    body = ("from normbench.strategies import register\n"
            "@register('nb_reloaded', kind='strategy', deterministic_by_design={det}, "
            "uses_groups=False)\n"
            "def backward(x, dy, weight, mean, rstd, *, groups=None):\n"
            "    return {ret!r}\n")
    src.write_text(body.format(det=True, ret="first"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nb_reloaded", raising=False)
    mod = importlib.import_module("nb_reloaded")
    assert _registry.get("nb_reloaded").fn(None, None, None, None, None) == "first"
    src.write_text(body.format(det=False, ret="second"))
    importlib.invalidate_caches()
    import os
    os.utime(src, (os.stat(src).st_atime, os.stat(src).st_mtime + 10))   # a new .pyc
    importlib.reload(mod)
    e = _registry.get("nb_reloaded")
    assert e.fn is mod.backward and e.fn(None, None, None, None, None) == "second"
    assert e.deterministic_by_design is False
    with pytest.raises(ValueError, match="'nb_reloaded' registered twice"):
        _registry.register("nb_reloaded", kind="strategy", deterministic_by_design=True,
                           uses_groups=False)(_fn)               # another module's: a clash
    sys.modules.pop("nb_reloaded", None)


def test_an_entry_point_whose_value_is_no_module_is_named(monkeypatch):
    """An installed package's entry point `bad = "not a valid:value"`: reading its module
    for the provenance raised AttributeError outside any plugin's load, which the command
    line worded 'plugin NORMBENCH_PLUGINS= cannot be loaded: AttributeError: 'NoneType' object
    has no attribute 'group'' -- a variable never set, the entry point unnamed.  Its load
    now says what is wrong, naming the entry point and its distribution."""
    import importlib.metadata as md

    class Dist:
        name, version = "fakeplug", "1.0"
    ep = md.EntryPoint("bad", "not a valid:value", _registry.PLUGIN_GROUP)
    ep = ep._for(Dist()) if hasattr(ep, "_for") else ep
    monkeypatch.setenv("NORMBENCH_PLUGINS", "")
    monkeypatch.setattr(md, "entry_points", lambda group=None: [ep] if group else [])
    monkeypatch.setattr(_registry, "_plugins_loaded", False)
    monkeypatch.setattr(_registry, "_plugin_error", None)
    monkeypatch.setattr(_registry, "_PLUGINS", [])
    with pytest.raises(_registry.PluginError, match=r"^plugin not a valid:value \(entry point "
                                                    r"'bad' of fakeplug\) cannot be loaded: "
                                                    r"ValueError: 'not a valid:value' is not a "
                                                    r"module or module:attribute$"):
        _registry.names()
