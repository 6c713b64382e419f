"""measure.py: the memory pre-check, the bytes model, and an interruption never recorded as a failure."""
import dataclasses
import signal

import pytest

from normbench.harness import model
from normbench.harness.measure import memory_shortfall
from normbench.harness.plan import Case


def case(rows, d, dtype="bf16"):
    return Case(norm="layernorm", implementation="disjoint_block", rows=rows, d=d, dtype=dtype,
                weight_dtype=dtype, groups="auto")


def test_a_case_larger_than_free_memory_is_refused_before_launch():
    big = case(1 << 20, 65536)                       # 64 Gi elements: hundreds of GiB
    msg = memory_shortfall(big, 0, free_bytes=140 << 30)
    assert msg and "GiB of device memory" in msg and "140.0 GiB free" in msg
    assert memory_shortfall(case(16384, 4096), 4 << 20, free_bytes=140 << 30) is None


def test_bytes_model_counts_each_tensor_once():
    # 3 activations (x, dy in; dx out) + rstd, mean + weight in, dγ, dβ out
    assert model.bytes_moved("layernorm", 16384, 4096, "bf16", "bf16") == \
        3 * 16384 * 4096 * 2 + 16384 * 4 * 2 + 4096 * 2 * 3
    assert model.bytes_moved("rmsnorm", 10, 8, "fp32", "bf16") == 3 * 10 * 8 * 4 + 10 * 4 + 8 * 2 * 2
    assert model.peak_tbps("NVIDIA H200") == 4.8
    assert model.peak_tbps("NVIDIA H100 80GB HBM3") == 3.35
    assert model.peak_tbps("NVIDIA H200", override=5.0) == 5.0
    assert model.peak_tbps("Some CPU") is None


def _raise_wrapped(*a, **k):
    from normbench.harness.interrupt import Interrupted
    try:
        raise Interrupted(signal.SIGTERM)
    except Interrupted as e:
        raise RuntimeError("Error calling __set_name__ on 'X' instance 'y' in 'Z'") from e


def test_a_signal_that_surfaces_wrapped_is_still_an_interruption():
    """Python 3.11 wraps an exception from a descriptor's __set_name__ in a RuntimeError: a
    signal landing while a module defines such a class (torch's FakeTensor on first import)
    arrived as that RuntimeError — the CLI printed a traceback and exited 1."""
    from normbench.harness.interrupt import Interrupted, interruption

    class D:
        def __set_name__(self, owner, name):
            raise Interrupted(signal.SIGINT)
    try:
        class C:   # noqa: F841
            d = D()
    except BaseException as e:      # RuntimeError on 3.11, the Interrupted itself from 3.12
        i = interruption(e)
    assert isinstance(i, Interrupted) and i.signum == signal.SIGINT
    assert interruption(RuntimeError("no signal here")) is None


def test_a_signal_in_the_enum_module_is_raised_again_outside_it():
    """A C++ extension that casts a native enum calls Python's enum module; a signal landing
    there must not raise (CI: nanobind turned the Interrupted into a C++ exception and
    std::terminate aborted the sweep, exit -6): the handler sends the signal again, and it
    raises where it lands next."""
    import enum
    import time
    from normbench.harness import interrupt
    ns: dict = {}
    exec(compile("import sys\ndef here():\n    return sys._getframe()\n", enum.__file__, "exec"), ns)
    in_enum = ns["here"]()
    previous = interrupt.install()
    try:
        assert interrupt.raise_interrupted(signal.SIGINT, in_enum) is None
        assert interrupt.stopping() is None
        with pytest.raises(interrupt.Interrupted):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.001)
        assert interrupt.stopping() == signal.SIGINT
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        interrupt._first.clear()


def test_a_stop_dropped_in_a_finalizer_or_a_weakref_callback_is_sent_again(capfd):
    """A SIGINT that landed in a weakref callback (a WeakKeyDictionary's `remove`, run as the
    garbage collector freed a key while `report` drew its figures) raised there, where Python
    drops every exception: "Exception ignored in …" and the Interrupted's traceback, the
    command on to exit 0, and every later Ctrl-C ignored (only the first signal raises).  A
    signal landing in weakref's code is sent again a moment later, as in enum's; one whose
    Interrupted a finalizer dropped all the same (`__del__`) is sent again by the unraisable
    hook — it stops the code that runs on, with no traceback printed."""
    import gc
    import time
    import weakref
    from normbench.harness import interrupt
    ns: dict = {}
    exec(compile("import sys\ndef here():\n    return sys._getframe()\n", weakref.__file__,
                 "exec"), ns)
    previous = interrupt.install()
    try:
        assert interrupt.raise_interrupted(signal.SIGINT, ns["here"]()) is None
        with pytest.raises(interrupt.Interrupted):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.001)
        interrupt._first.clear()

        class Finalized:
            def __del__(self):
                interrupt.raise_interrupted(signal.SIGINT, None)   # the signal lands here
        with pytest.raises(interrupt.Interrupted):
            Finalized()
            gc.collect()
            assert interrupt.stopping() is None     # dropped: to be sent again
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.001)
        assert interrupt.stopping() == signal.SIGINT
        assert "Exception ignored" not in capfd.readouterr().err
    finally:
        _restore(previous)


def _restore(previous):
    from normbench.harness import interrupt
    for s, h in previous.items():
        signal.signal(s, h)
    interrupt._first.clear()
    getattr(interrupt, "_deferred", []).clear()


def _module(tmp_path, monkeypatch, name, seconds):
    """A module whose body sends this process SIGINT, then runs Python for `seconds`."""
    (tmp_path / f"{name}.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "t = time.monotonic()\n"
        f"while time.monotonic() - t < {seconds}:\n"
        "    time.sleep(0.001)\n"
        "DONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_signal_during_an_import_is_raised_once_the_import_is_done(tmp_path, monkeypatch):
    """A SIGINT 1.4 s into a run landed in Python that torch's import runs from its C++
    (pybind11): the Interrupted became 'pybind11::error_already_set' and std::terminate
    aborted the run (exit -6, CI).  One that torch swallowed in numpy's import left numpy
    half imported: every case then failed ("module 'numpy' has no attribute 'iterable'").
    While an import runs the handler holds the signal off; it is raised after."""
    import importlib
    import time
    from normbench.harness import interrupt
    _module(tmp_path, monkeypatch, "nb_signal_at_import", 0.3)
    imported = []
    previous = interrupt.install()
    try:
        with pytest.raises(interrupt.Interrupted):
            imported.append(importlib.import_module("nb_signal_at_import"))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.001)
        assert imported and imported[0].DONE
        assert interrupt.stopping() == signal.SIGINT
    finally:
        _restore(previous)


def test_an_import_that_does_not_end_is_still_interrupted(tmp_path, monkeypatch):
    import importlib
    import time
    from normbench.harness import interrupt
    monkeypatch.setattr(interrupt, "IMPORT_WAIT_S", 0.2)
    _module(tmp_path, monkeypatch, "nb_import_hangs", 30)
    previous = interrupt.install()
    t0 = time.monotonic()
    try:
        with pytest.raises(interrupt.Interrupted):
            importlib.import_module("nb_import_hangs")
        assert time.monotonic() - t0 < 10
    finally:
        _restore(previous)


def test_a_stop_swallowed_before_the_sweep_still_stops_it_and_what_fails_after_is_its(
        tmp_path, monkeypatch):
    """The CLI installs the handler first; the sweep installed it again and forgot a stop
    whose Interrupted had been swallowed in between: the sweep measured on, each case the
    error of a half-imported module.  Nothing is measured; a failure while the stop is
    pending is the stop's."""
    from rich.console import Console
    from normbench.harness import interrupt, run
    from normbench import strategies
    from normbench.harness.config import parse_config
    from normbench.harness.measure import failed_record
    from normbench.harness.plan import expand
    sweep = parse_config("rows: [4, 6]\nd: [8]\nimplementations: [torch]\n")
    cases = expand(sweep, uses_groups=lambda n: strategies.get(n).uses_groups,
                   available=strategies.known())
    measured = []
    monkeypatch.setattr(run, "measure", lambda case, settings: measured.append(case) or
                        failed_record(case, settings, "error", "stub", 0.0))
    previous = interrupt.install()          # the CLI's, from its first moment
    try:
        try:
            interrupt.raise_interrupted(signal.SIGINT, None)
        except interrupt.Interrupted:       # swallowed where it landed
            pass
        out = run.execute(sweep, cases, tmp_path, console=Console(stderr=True, quiet=True))
        assert out.interrupted == signal.SIGINT and not measured
        i = interrupt.interruption(AttributeError("module 'numpy' has no attribute 'iterable'"))
        assert isinstance(i, interrupt.Interrupted) and i.signum == signal.SIGINT
    finally:
        _restore(previous)
    assert interrupt.interruption(AttributeError("no stop has arrived")) is None


def test_a_wrapped_interruption_stops_measure_instead_of_becoming_a_record(monkeypatch):
    import pytest
    from normbench import strategies
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.measure import Settings, measure
    e = strategies.get("disjoint_block")
    monkeypatch.setattr(e, "effective_groups", _raise_wrapped)
    s = Settings(warmup_ms=1, rep_ms=1, repeats=1, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name="cpu")
    with pytest.raises(Interrupted):
        measure(case(8, 16), s)
    monkeypatch.setattr(e, "effective_groups", lambda *a, **k: 1 / 0)
    assert measure(case(8, 16), s)["status"] == "error"     # an ordinary failure: a record


# ------------------------------------------------- compile_s, notes, the GPU-time columns (fair)
def _settings():
    from normbench.harness.measure import Settings
    return Settings(warmup_ms=1, rep_ms=5, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                    device_name="cpu")


def _fake(monkeypatch, name, fn):
    """Register `fn` as implementation `name` for this test only."""
    from normbench.strategies import _registry
    e = _registry.Entry(name=name, kind="baseline", deterministic_by_design=True,
                        uses_groups=False, fn=fn, doc="test")
    monkeypatch.setitem(_registry._REGISTRY, name, e)
    return e


def _case(impl, norm="layernorm"):
    return Case(norm=norm, implementation=impl, rows=4, d=8, dtype="fp32", weight_dtype="fp32",
                groups="-")


@pytest.mark.parametrize("models, error", [
    (dict(workspace=lambda rows, d, g, hb: -5),
     "ValueError: its workspace(): column 'workspace_bytes' cannot hold -5: it takes an int >= 0"),
    (dict(writers=lambda rows, g: 0),
     "ValueError: its writers(): column 'writers_per_slot' cannot hold 0: it takes an int >= 1"),
    (dict(writers=lambda rows, g: float("nan")),
     "ValueError: its writers(): column 'writers_per_slot' cannot hold nan: it takes an int >= 1"),
    (dict(writers=lambda rows, g: float("inf")),
     "ValueError: its writers(): column 'writers_per_slot' (Int64) cannot hold float inf"),
])
def test_a_model_value_no_call_can_have_is_the_records_error(monkeypatch, models, error):
    """A plugin's workspace of -5 bytes or 0 writers into a slot was recorded ok with
    workspace_bytes -5 (writers 0), and NaN writers as none: each is now the case's error,
    by the check the report's widget uses too (measure.model_value)."""
    from normbench import strategies
    from normbench.harness.measure import measure
    e = _fake(monkeypatch, "test_bad_model", strategies.get("torch").fn)
    monkeypatch.setattr(e, "workspace", models.get("workspace", e.workspace))
    monkeypatch.setattr(e, "writers", models.get("writers", e.writers))
    rec = measure(_case("test_bad_model"), _settings())
    assert rec["status"] == "error" and rec["error"] == error


@pytest.mark.parametrize("norm, weight_dtype, workspace", [
    ("layernorm", "fp32", 0), ("rmsnorm", "fp32", 0), ("layernorm", "bf16", 64),
    ("rmsnorm", "fp16", 32)])
def test_atomic_records_no_workspace_with_an_fp32_weight(norm, weight_dtype, workspace):
    """atomic's fp32 [d] buffer (×2 with dβ) is the dγ (dβ) output when the weight is fp32, so
    the call allocates no workspace: recorded as d·4 B (×2) all the same, 64 B for LayerNorm at
    d = 8.  The record's workspace model now gets the case's weight dtype."""
    from normbench.harness.measure import measure
    rec = measure(Case(norm=norm, implementation="atomic", rows=4, d=8, dtype="fp32",
                       weight_dtype=weight_dtype, groups="-"), _settings())
    assert rec["status"] == "ok" and rec["correct"], rec.get("error")
    assert rec["workspace_bytes"] == workspace


def test_the_first_call_is_compile_s_and_never_a_sample(monkeypatch):
    import json
    import time as _time
    from normbench import strategies
    from normbench.harness.measure import measure
    torch_fn = strategies.get("torch").fn
    calls = []

    def slow_first(x, dy, w, mean, rstd, *, groups=None):
        calls.append(1)
        if len(calls) == 1:
            _time.sleep(0.3)                       # "compiling"
        return torch_fn(x, dy, w, mean, rstd)
    _fake(monkeypatch, "test_slow_first", slow_first)
    rec = measure(_case("test_slow_first"), _settings())
    assert rec["status"] == "ok" and rec["compile_s"] >= 0.3
    samples = json.loads(rec["time_samples_ms"])
    assert samples and max(samples) < 300 and rec["time_ms"] < 300


def test_notes_come_from_the_implementation_and_a_refusal_is_skipped(monkeypatch):
    from normbench import strategies
    from normbench.harness.measure import measure
    torch_fn = strategies.get("torch").fn

    def noted(x, dy, w, mean, rstd, *, groups=None):
        return torch_fn(x, dy, w, mean, rstd)
    noted.notes = lambda x, dy, w, mean, rstd: f"path for {x.dtype} x, {w.dtype} weight"
    _fake(monkeypatch, "test_noted", noted)
    rec = measure(_case("test_noted"), _settings())
    assert rec["status"] == "ok" and rec["notes"] == "path for torch.float32 x, torch.float32 weight"

    def refuses(x, dy, w, mean, rstd, *, groups=None):
        raise NotImplementedError("no fp32 weight with fp32 x here")
    _fake(monkeypatch, "test_refuses", refuses)
    rec = measure(_case("test_refuses"), _settings())
    assert rec["status"] == "skipped" and "no fp32 weight" in rec["error"]
    assert "no fp32 weight" in rec["notes"] and rec.get("time_ms") is None


def test_without_a_gpu_the_gpu_columns_are_empty_with_the_reason():
    from normbench.harness import timing
    from normbench.harness.measure import measure
    rec = measure(_case("torch"), _settings())
    assert rec["status"] == "ok" and rec["time_ms"] > 0
    assert rec["gpu_time_ms"] is None and rec["gpu_time_p20_ms"] is None
    assert rec.get("host_overhead_ms") is None
    assert rec["gpu_time_note"] == timing.NO_GPU_NOTE and "not measured" in rec["gpu_time_note"]


def test_gpu_columns_from_a_stand_in_timer(monkeypatch, tmp_path):
    """measure → record → store → records: the GPU clock's median/p20/p80 and the host overhead
    are what the timer measured, and survive the store."""
    from normbench.harness import measure as m, timing
    from normbench.harness.store import RunStore, load_records
    seen = {}

    def stand_in(fn, *, time_ms, rep_ms, on_gpu, eager_out=None):
        seen.update(time_ms=time_ms, out=eager_out)
        fn()                                       # the call itself is what would be timed
        return timing.gpu_columns([0.001, 0.002, 0.003, 0.004, 0.005], "stand-in, 5 replays")
    monkeypatch.setattr(timing, "gpu_time", stand_in)
    rec = m.measure(_case("torch"), _settings())
    assert rec["status"] == "ok" and seen["time_ms"] == rec["time_ms"] and seen["out"] is not None
    assert rec["gpu_time_ms"] == 0.003 and rec["gpu_time_note"] == "stand-in, 5 replays"
    assert abs(rec["gpu_time_p20_ms"] - 0.0018) < 1e-12 and abs(rec["gpu_time_p80_ms"] - 0.0042) < 1e-12
    assert rec["host_overhead_ms"] == rec["time_ms"] - 0.003
    store = RunStore(tmp_path / "run")
    store.append(rec)
    store.close()
    df = load_records(tmp_path / "run")
    assert float(df["gpu_time_ms"].iloc[0]) == 0.003
    assert float(df["host_overhead_ms"].iloc[0]) == rec["host_overhead_ms"]
    assert df["gpu_time_note"].iloc[0] == "stand-in, 5 replays"


def test_gpu_time_falls_back_and_says_why(monkeypatch):
    from normbench.harness import timing
    monkeypatch.setattr(timing, "_graph_samples", lambda fn, n, out: ([2.0, 1.0, 3.0], "cuda_graph_replay"))
    got = timing.gpu_time(lambda: None, time_ms=1.0, rep_ms=10, on_gpu=True)
    assert got["gpu_time_ms"] == 2.0 and got["gpu_time_note"] == "cuda_graph_replay, 3 replays"

    def no_capture(fn, n, out):
        raise RuntimeError("operation not permitted when stream is capturing")
    monkeypatch.setattr(timing, "_graph_samples", no_capture)
    monkeypatch.setattr(timing, "_reset_after_capture_failure", lambda: None)
    monkeypatch.setattr(timing, "_queued_samples", lambda fn, n, host_ms: ([5.0] * 4, "queued_events"))
    got = timing.gpu_time(lambda: None, time_ms=1.0, rep_ms=10, on_gpu=True)
    assert got["gpu_time_ms"] == 5.0
    assert got["gpu_time_note"].startswith("queued_events, 4 calls (CUDA graph not used: RuntimeError: "
                                           "operation not permitted")

    def behind(fn, n, host_ms):
        raise RuntimeError("the host could not queue the calls ahead of the GPU")
    monkeypatch.setattr(timing, "_queued_samples", behind)
    got = timing.gpu_time(lambda: None, time_ms=1.0, rep_ms=10, on_gpu=True)
    assert got["gpu_time_ms"] is None and got["gpu_time_note"].startswith("not measured: ")
    assert "host could not queue" in got["gpu_time_note"]


# ----------------------------------------------------------------------------------- on a GPU
def _gpu_case(monkeypatch, name, fn):
    import torch
    _fake(monkeypatch, name, fn)
    return Case(norm="layernorm", implementation=name, rows=4096, d=1024, dtype="bf16",
                weight_dtype="bf16", groups="-"), torch


@pytest.mark.gpu
def test_gpu_time_leaves_out_the_hosts_time(monkeypatch):
    """A call that spends 2 ms on the host before its kernels: the call clock sees it, the GPU
    clock does not (within the kernels' own time)."""
    import time as _time
    from normbench import strategies
    from normbench.harness.measure import Settings, measure
    torch_fn = strategies.get("torch").fn

    def host_heavy(x, dy, w, mean, rstd, *, groups=None):
        t = _time.perf_counter() + 0.002
        while _time.perf_counter() < t:
            pass
        return torch_fn(x, dy, w, mean, rstd)
    case, torch = _gpu_case(monkeypatch, "test_host_heavy", host_heavy)
    s = Settings(warmup_ms=5, rep_ms=50, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name=torch.cuda.get_device_name())
    heavy = measure(case, s)
    plain = measure(dataclasses.replace(case, implementation="torch"), s)
    assert heavy["status"] == plain["status"] == "ok"
    assert heavy["time_ms"] > 1.9 and heavy["host_overhead_ms"] > 1.5
    assert heavy["gpu_time_note"].startswith("cuda_graph_replay")
    assert heavy["gpu_time_ms"] < 0.5 * heavy["time_ms"]
    assert abs(heavy["gpu_time_ms"] - plain["gpu_time_ms"]) < 0.2 * plain["gpu_time_ms"] + 0.01


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", ["bf16", "fp32"])
def test_gpu_every_implementation_gets_both_clocks(wdt):
    import torch
    from normbench import strategies
    from normbench.harness.measure import Settings, measure
    s = Settings(warmup_ms=5, rep_ms=30, repeats=2, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name=torch.cuda.get_device_name())
    for name in strategies.names():
        if name.startswith("test_"):
            continue
        e = strategies.get(name)
        case = Case(norm="rmsnorm", implementation=name, rows=8192, d=1024, dtype="bf16",
                    weight_dtype=wdt, groups="auto" if e.uses_groups else "-")
        rec = measure(case, s)
        print(f"\n{name} bf16/{wdt}: {rec['status']} call {rec.get('time_ms')} gpu "
              f"{rec.get('gpu_time_ms')} compile_s {rec.get('compile_s')} | "
              f"{rec.get('gpu_time_note')} | {rec.get('notes')} | {rec.get('error')}")
        if rec["status"] == "skipped":
            continue
        assert rec["status"] == "ok" and rec["correct"], rec["error"]
        if e.kind == "baseline" and name not in ("torch", "torch_compile") \
                and rec["gpu_time_ms"] is None:
            # a peer whose call can be neither captured nor queued ahead: empty, and why
            assert rec["gpu_time_note"].startswith("not measured: "), rec["gpu_time_note"]
            continue
        assert rec["gpu_time_ms"] is not None and 0 < rec["gpu_time_ms"], rec["gpu_time_note"]
        # the same kernels on both clocks: the GPU's share can't exceed the call by much
        assert rec["gpu_time_ms"] < 1.2 * rec["time_ms"] + 0.005
        assert rec["compile_s"] > 0

# --------------------------------------------------------------------------- issue 20.3, 20.5, 20.6

_FAKES: dict = {}


@pytest.fixture
def fakes():
    """tests/fake_impls.py's implementations in the registry for one test, removed after it
    (other test files list strategies.names() and must not meet test_hang)."""
    import importlib
    from normbench import strategies
    from normbench.strategies import _registry
    strategies.known()                            # the configured plugins first
    before = dict(_registry._REGISTRY)
    if not _FAKES:
        importlib.import_module("tests.fake_impls")
        _FAKES.update({n: e for n, e in _registry._REGISTRY.items() if n not in before})
        _FAKES.update({n: e for n, e in before.items() if n.startswith("test_")})
    _registry._REGISTRY.update(_FAKES)
    yield
    for n in _FAKES:
        if n not in before:
            del _registry._REGISTRY[n]


def _fake_name(name):
    from normbench import strategies
    assert name in strategies.known()
    return name


def _rel_settings(repeats=3):
    from normbench.harness.measure import Settings
    return Settings(warmup_ms=1, rep_ms=1, repeats=repeats, seed=0, peak_tbps=None,
                    copy_gbps=None, device_name="cpu")


def _measure_impl(impl, rows=4, d=8, norm="layernorm", repeats=3):
    from normbench.harness.measure import measure
    c = Case(norm=norm, implementation=impl, rows=rows, d=d, dtype="fp32",
             weight_dtype="fp32", groups="-")
    return measure(c, _rel_settings(repeats))


def test_a_mutating_implementation_is_the_faulty_one_and_the_others_are_unharmed(fakes):
    bad = _measure_impl(_fake_name("test_mutates"))
    assert bad["status"] == "error" and "modified its inputs (x, weight)" in bad["error"]
    assert bad["correct"]           # its outputs were right: the record says what was wrong
    for impl in ("torch", "disjoint_block", "torch"):     # same case, the cached inputs
        rec = _measure_impl(impl)
        assert rec["status"] == "ok" and rec["correct"], rec["error"]
        assert rec["max_rel_err"] < 1e-5


def test_non_finite_values_after_the_first_call_are_an_error(fakes):
    import sys
    sys.modules["tests.fake_impls"]._later[0] = 0
    rec = _measure_impl(_fake_name("test_inf_later"), repeats=2)
    assert rec["status"] == "error" and "dγ of repeat 2" in rec["error"]   # named as elsewhere
    assert rec["correct"] is False   # the first call was right, the repeat's inf was not
    assert rec["err_dx"] < 1e-5 and rec["err_dw"] == float("inf")
    # the last timed call is checked too (a stated sample): inf only from the 4th call on
    calls = [0]
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    entry = strategies.get("test_inf_later")

    def late(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return (dx * float("inf") if calls[0] > 3 else dx), dw, db

    old, entry.fn = entry.fn, late
    try:
        rec = _measure_impl("test_inf_later", repeats=2)
    finally:
        entry.fn = old
    assert rec["status"] == "error" and rec["error"].endswith("dx of the last timed call")


@pytest.mark.parametrize("impl,kind", [("test_sys_exit", "SystemExit"),
                                       ("test_generator_exit", "GeneratorExit"),
                                       ("test_base_exception", "_Custom"),
                                       ("test_bad_str", "_BadStr")])
def test_a_plugin_raising_any_base_exception_is_its_own_record(fakes, impl, kind):
    rec = _measure_impl(_fake_name(impl))
    assert rec["status"] == "error" and rec["error"].startswith(kind), rec["error"]
    assert "\n" not in rec["error"]


def test_every_distinct_result_is_judged_not_only_the_first(fakes):
    """A strategy right once and then drifting (k·dγ on call k) is not correct, although
    its first call is; its worst error is the one recorded."""
    import sys
    drift = sys.modules["tests.fake_impls"]._drift
    drift[0] = 0
    rec = _measure_impl(_fake_name("test_drifts"), repeats=3)
    # the 3 repeats and the last timed call (call n, n·dγ: error n − 1; no GPU timer here)
    assert rec["status"] == "ok" and rec["distinct_results"] == 4
    assert rec["correct"] is False
    assert abs(rec["err_dw"] - (drift[0] - 1)) < 1e-3 * drift[0]
    assert rec["max_rel_err"] == rec["err_dw"] and rec["err_dx"] < 1e-5


def test_a_call_that_goes_wrong_only_while_timed_is_judged(monkeypatch):
    """Right and bitwise identical for its first 3 calls (the repeats), dγ·1.1 from its 4th on
    (the timed calls): the time would be that of wrong results, so the last timed call is
    compared and judged as a repeat is — incorrect and not deterministic, no exception, and
    the next implementation of the case is measured as before."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls = [0]

    def wrong_later(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return dx, (dw * 1.1 if calls[0] >= 4 else dw), db
    _fake(monkeypatch, "test_wrong_later", wrong_later)
    rec = _measure_impl("test_wrong_later", repeats=3)
    assert calls[0] > 3 and rec["status"] == "ok", rec["error"]
    assert rec["correct"] is False and abs(rec["err_dw"] - 0.1) < 1e-5
    assert rec["deterministic"] is False and rec["distinct_results"] == 2
    assert rec["err_dx"] < 1e-5 and rec["time_ms"] > 0
    after = _measure_impl("torch", repeats=3)                # the sweep goes on
    assert after["status"] == "ok" and after["correct"] and after["deterministic"]
    assert after["distinct_results"] == 1


def test_the_last_timed_calls_output_is_compared_though_its_buffers_are_reused(monkeypatch):
    """Every call writes into the same buffers: the kept results are copies, so a last timed
    call that differs is a new result, and one that does not is not."""
    import torch
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls, bufs, first_wrong = [0], [], [10**9]

    def reuses(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        if calls[0] >= first_wrong[0]:
            dw = dw * 1.1
        if not bufs:
            bufs.extend(torch.empty_like(o) for o in (dx, dw, db))
        for b, o in zip(bufs, (dx, dw, db)):
            b.copy_(o)
        return tuple(bufs)
    _fake(monkeypatch, "test_reuses", reuses)
    rec = _measure_impl("test_reuses", repeats=3)
    assert rec["correct"] and rec["deterministic"] and rec["distinct_results"] == 1
    assert rec["status"] == "error" and "first call's output storage" in rec["error"]
    calls[0], first_wrong[0] = 0, 4
    rec = _measure_impl("test_reuses", repeats=3)
    assert rec["correct"] is False and rec["deterministic"] is False
    assert rec["distinct_results"] == 2


def test_a_last_timed_call_not_the_contracts_tuple_is_an_error(monkeypatch):
    """Checked as a repeat is, before it is compared or judged."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls = [0]

    def short_later(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        out = torch_fn(x, dy, w, mean, rstd)
        return out if calls[0] < 4 else out[:2]
    _fake(monkeypatch, "test_short_later", short_later)
    rec = _measure_impl("test_short_later", repeats=3)
    assert rec["status"] == "error"
    assert rec["error"] == "the last timed call: returned 2 outputs, not 3 (dx, dγ, dβ)"
    assert rec["last_call_compared"] is False           # not compared: the reports say so


def test_a_record_says_its_last_timed_call_was_compared():
    """last_call_compared: True where distinct_results counts the last timed call (reports and
    export word it by this; records from before it compared the repeats only)."""
    from normbench.harness.schema import COLUMNS
    rec = _measure_impl("torch", repeats=2)
    assert rec["status"] == "ok" and rec["last_call_compared"] is True
    assert set(rec) <= set(COLUMNS)                     # the store takes it


def _measure_mixed(impl, dtype, weight_dtype, norm="layernorm"):
    from normbench.harness.measure import measure
    c = Case(norm=norm, implementation=impl, rows=6, d=40, dtype=dtype,
             weight_dtype=weight_dtype, groups="-")
    return measure(c, _rel_settings(2))


def test_each_output_is_judged_by_its_own_dtype(fakes):
    """dγ/dβ by the weight's dtype, dx by the activations': rounding an fp32 dγ through bf16
    fails with bf16 activations (it owes fp32 accuracy), and passes with a bf16 weight."""
    from normbench.harness.inputs import TOLERANCE
    bad = _measure_mixed(_fake_name("test_coarse_dw"), "bf16", "fp32")
    bf16 = TOLERANCE["bf16"]
    assert (bad["tolerance"], bad["tolerance_dw"]) == (bf16, 1e-4)
    assert bad["status"] == "ok" and bad["correct"] is False and bad["err_dw"] > 1e-4
    fine = _measure_mixed("test_coarse_dw", "fp32", "bf16")
    assert (fine["tolerance"], fine["tolerance_dw"]) == (1e-4, bf16)
    assert fine["correct"] is True and fine["err_dx"] < 1e-5
    # (PyTorch's own CPU layer-norm backward does not pass here: with bf16 x and an fp32
    # weight its dγ and dβ carry bf16 rounding, 1.6e-3 and 2.7e-3 in torch 2.13)
    for impl in ("disjoint_block", "grouped_atomic"):
        for dt, wd in (("bf16", "fp32"), ("fp32", "bf16")):
            rec = _measure_mixed(impl, dt, wd)
            assert rec["status"] == "ok" and rec["correct"], (impl, dt, wd, rec)


def test_an_output_in_another_dtype_is_an_error(fakes):
    rec = _measure_mixed(_fake_name("test_narrow_dw"), "bf16", "fp32")
    assert rec["status"] == "error"
    assert "dγ as torch.bfloat16 (expected torch.float32)" in rec["error"]
    assert "dβ as torch.bfloat16" in rec["error"]
    ok = _measure_mixed("test_narrow_dw", "bf16", "bf16")   # bf16 is the contract there
    assert ok["status"] == "ok" and ok["correct"], ok["error"]


def test_within_tolerances_judges_each_output_by_its_own_dtype():
    """The bench scripts' verdict (harness.inputs.within_tolerances): dx by the activations'
    tolerance, dγ and dβ by the weight's — an fp32 dγ 1e-3 off fails with bf16 activations,
    where dx may be that far off; a missing dβ (RMSNorm) is not judged."""
    import torch

    from normbench.harness.inputs import within_tolerances
    ref = (torch.ones(2, 4, dtype=torch.float64), torch.ones(4, dtype=torch.float64), None)
    off = lambda t, e: (t * (1 + e)).float()   # noqa: E731
    assert within_tolerances((ref[0].float(), ref[1].float(), None), ref, "bf16", "fp32")
    assert within_tolerances((off(ref[0], 1e-3), ref[1].float(), None), ref, "bf16", "fp32")
    assert not within_tolerances((ref[0].float(), off(ref[1], 1e-3), None), ref, "bf16", "fp32")
    assert within_tolerances((ref[0].float(), off(ref[1], 1e-3), None), ref, "bf16", "bf16")
    assert not within_tolerances((off(ref[0], 0.1), ref[1].float(), None), ref, "bf16", "bf16")


@pytest.mark.parametrize("name,norm,ret,why", [
    ("short", "layernorm", lambda o: o[:2], "returned 2 outputs, not 3"),
    ("long", "layernorm", lambda o: (*o, None), "returned 4 outputs, not 3"),
    ("gen", "layernorm", lambda o: (t for t in o), "returned generator, not the tuple"),
    ("no_db", "layernorm", lambda o: (o[0], o[1], None), "returned dβ as NoneType"),
    ("rms_db", "rmsnorm", lambda o: (o[0], o[1], o[1].clone()), "for RMSNorm, which has none"),
])
def test_outputs_not_the_contracts_tuple_are_an_error(monkeypatch, name, norm, ret, why):
    """(dx, dγ, dβ): a result missing dβ, one too many, or not a tuple at all is an error
    record naming it — never ok and correct on the outputs it did return."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    _fake(monkeypatch, f"test_{name}", lambda *a, **k: ret(torch_fn(*a[:5])))
    rec = _measure_impl(f"test_{name}", norm=norm)
    assert rec["status"] == "error" and why in rec["error"], rec["error"]


def test_outputs_reused_across_calls_are_still_compared(monkeypatch):
    """An implementation writing every call's result into the same buffers, different each
    call: the repeats are compared with copies, so the change is seen."""
    import torch
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    buf, calls = {}, []

    def aliasing(x, dy, w, mean, rstd, *, groups=None):
        calls.append(1)
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        for k, t in (("dx", dx), ("dw", dw), ("db", db)):
            buf.setdefault(k, torch.empty_like(t)).copy_(t)
        buf["dw"] *= 1 + 1e-3 * (len(calls) % 7)
        return buf["dx"], buf["dw"], buf["db"]
    _fake(monkeypatch, "test_aliasing", aliasing)
    rec = _measure_impl("test_aliasing", repeats=4)
    assert rec["deterministic"] is False and rec["distinct_results"] > 1
    assert rec["status"] == "error" and "first call's output storage" in rec["error"]


def test_an_output_of_another_shape_is_named(monkeypatch):
    """dγ as (1, d): an error saying so, not a record judged incorrect with an infinite error."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn

    def row_shaped(x, dy, w, mean, rstd, *, groups=None):
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return dx, dw.unsqueeze(0), db
    _fake(monkeypatch, "test_row_shaped", row_shaped)
    rec = _measure_impl("test_row_shaped", rows=4, d=8)
    assert rec["status"] == "error" and rec["error"] == "returned dγ of shape (1, 8) (expected (8,))"


def test_a_plugin_model_gets_groups_as_the_api_gives_it(fakes):
    """None where GROUPS is unused (not the record's missing value): 7 rows of 8 → 8·4·2 B."""
    rec = _measure_impl(_fake_name("test_one_buffer"), rows=7, d=8)
    assert rec["status"] == "ok", rec["error"]
    assert rec["workspace_bytes"] == 64 and rec["writers_per_slot"] == 7
    assert rec["groups_effective"] is None


def test_distinct_results_keep_each_output_once_per_distinct_value():
    """An atomic sum's dγ differs from call to call, its dx does not: the repeats keep one dx
    (the memory check counts one), yet every mix of outputs is a distinct result."""
    import torch
    from normbench.harness.measure import _Distinct
    dx, dw1, dw2 = torch.zeros(4, 8), torch.zeros(8), torch.ones(8)
    d = _Distinct()
    assert d.add((dx, dw1, None)) and d.add((dx.clone(), dw2, None))
    assert not d.add((dx.clone(), dw1.clone(), None))          # seen: same bits
    assert d.add((dx + 1, dw1, None))                          # a new dx, an old dγ: new
    assert len(d.results) == 3 and [len(k) for k in d.kept] == [2, 2, 1]
    assert not d.add((dx + 1, dw1, None))
    dw1 += 5                                                   # kept values are copies
    assert d.add((dx, dw1, None))


def test_a_peak_is_found_by_whole_names_only():
    assert model.peak_tbps("NVIDIA L40") == 0.864 and model.peak_tbps("NVIDIA L4") == 0.3
    assert model.peak_tbps("NVIDIA GH200 480GB") == 4.0 and model.peak_tbps("NVIDIA H200") == 4.8
    assert model.peak_tbps("NVIDIA H100 80GB HBM3") == 3.35


def test_the_memory_check_counts_the_fp64_references_peak():
    """The reference's temporaries peak at seven fp64 arrays of the case (measured): a case that
    fits the steady state but not that peak is refused before launch."""
    c = Case(norm="layernorm", implementation="torch", rows=1 << 20, d=2688, dtype="bf16",
             weight_dtype="bf16", groups="-")
    assert memory_shortfall(c, 0, 140 << 30) is not None


# ------------------------------------------------------------- the memory check, in any order
_GiB = 1 << 30


class _FakeAllocator:
    """The CUDA caching allocator as the memory check sees it, on a CPU: the cached inputs and
    reference of measure's last case are allocated (`held` bytes while measure._cache holds
    them), a case's run leaves `left_cached` bytes reserved but unallocated, empty_cache
    returns those to the device."""

    def __init__(self, monkeypatch, total, held, left_cached):
        import torch
        from normbench import strategies
        from normbench.harness import measure as m
        self.m, self.total, self.held, self.left_cached = m, total, held, left_cached
        self.reserved, self.measured, self.emptied = 0, [], 0
        monkeypatch.setattr(torch.cuda, "memory_allocated", self.allocated)
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: max(self.reserved,
                                                                           self.allocated()))
        monkeypatch.setattr(torch.cuda, "mem_get_info",
                            lambda *a: (self.total - torch.cuda.memory_reserved(), self.total))
        monkeypatch.setattr(torch.cuda, "empty_cache", self.empty_cache)
        monkeypatch.setattr(strategies, "default_device", lambda: torch.device("cuda", 0))
        monkeypatch.setattr(m, "_measure", self.run)     # what a case's run leaves behind
        monkeypatch.setattr(m, "_cache", {})

    def allocated(self, *a):
        return self.held(self.m._cache["key"]) if self.m._cache else 0

    def empty_cache(self):
        self.emptied += 1
        self.reserved = self.allocated()

    def run(self, case, s, entry, groups, rec, device, nbytes, done):
        self.m._cache.update(key=(case.norm, case.rows, case.d, case.dtype, case.weight_dtype,
                                  s.seed))                      # as _case_inputs does
        self.reserved = self.allocated() + self.left_cached(case)
        self.measured.append((case.rows, case.implementation))
        return done("ok")


def _ln_fp32(rows, impl="torch"):
    return Case(norm="layernorm", implementation=impl, rows=rows, d=16384, dtype="fp32",
                weight_dtype="fp32", groups="-")


def _held_bytes(key):       # x, dy (fp32) and the fp64 reference's dx of the case
    rows, d = key[1], key[2]
    return rows * d * (4 + 4 + 8)


def test_a_case_that_fits_alone_is_measured_after_a_smaller_one(monkeypatch):
    """H100 (78 GiB): LN fp32 60416 × 16384 needs about 59.0 GiB (the reference's peak) and was
    measured alone, but skipped after a 30208-row case ("56.0 GiB free"): that case's inputs
    and reference (7.7 GiB) were still held, and the 22.4 GiB PyTorch kept cached counted as
    used.  The previous case's inputs are dropped and the cache emptied before the check."""
    from normbench.harness.measure import measure
    fake = _FakeAllocator(monkeypatch, total=78 * _GiB, held=_held_bytes,
                          left_cached=lambda c: 22 * _GiB)
    s = _rel_settings()
    big = measure(_ln_fp32(60416), s)                          # alone: fits
    assert big["status"] == "ok", big["error"]
    for order in ((30208, 60416), (60416, 30208, 60416)):
        for rows in order:
            rec = measure(_ln_fp32(rows), s)
            assert rec["status"] == "ok", (order, rows, rec["error"])
    assert fake.emptied >= 4


def test_every_implementation_of_a_case_needing_most_of_the_card_is_measured(monkeypatch):
    """Implementations loop innermost: the second of a 59 GiB case found the first one's inputs
    and reference held (14.7 GiB, counted again as needed) and the ~40 GiB its run had freed
    cached in PyTorch (counted as used), so only the first implementation was measured."""
    from normbench.harness.measure import measure
    fake = _FakeAllocator(monkeypatch, total=78 * _GiB, held=_held_bytes,
                          left_cached=lambda c: 40 * _GiB)
    for name in ("test_second", "test_third"):
        _fake(monkeypatch, name, None)              # never called: _measure is the stand-in
    s = _rel_settings()
    recs = [measure(_ln_fp32(60416, impl), s) for impl in ("torch", "test_second", "test_third")]
    assert [r["status"] for r in recs] == ["ok"] * 3, [r["error"] for r in recs]
    assert len(fake.measured) == 3 and fake.emptied == 1     # the held inputs were kept


def test_the_held_inputs_count_once_and_cached_memory_counts_as_free():
    c = _ln_fp32(60416)
    n = 60416 * 16384
    assert memory_shortfall(c, 0, 0).startswith("needs about 59.0 GiB of device memory, ")
    # held: only what the implementation adds (x, dy copies, four dx: 6n·4 bytes)
    assert memory_shortfall(c, 0, int(6 * n * 4 / 0.89), held=True) is None
    msg = memory_shortfall(c, 0, int(6 * n * 4 / 0.91), held=True)
    assert msg and "more than its inputs and reference, held already" in msg
    assert memory_shortfall(c, 0, int(6 * n * 4 / 0.89), held=False) is not None


@pytest.mark.parametrize("norm,named", [("layernorm", "dγ on meta (expected cpu), dβ on meta"),
                                        ("rmsnorm", "dγ on meta (expected cpu)")])
def test_an_output_on_another_device_is_an_error(fakes, norm, named):
    """dγ.cpu() for CUDA inputs was recorded ok, correct and deterministic on an H100 (the
    comparison moves every output to the CPU first): an output not on x's device is an error
    naming it, as one in another dtype is."""
    rec = _measure_impl(_fake_name("test_other_device"), norm=norm)
    assert rec["status"] == "error" and rec["error"].startswith("returned " + named), rec["error"]
    assert rec.get("time_ms") is None


@pytest.mark.parametrize("late,why", [
    (lambda out: (out[0], out[1].double(), out[2]),
     "returned dγ as torch.float64 (expected torch.float32)"),
    (lambda out: None, "returned NoneType, not the tuple (dx, dγ, dβ)"),
])
def test_a_malformed_last_timed_call_keeps_the_time_and_claims_no_determinism(monkeypatch, late,
                                                                             why):
    """dγ in another dtype from call 4 on (the timed calls): the record threw its samples away
    (time_ms empty) yet said deterministic, 1 distinct result — a verdict that did not cover
    the call it blamed.  The samples are kept; deterministic and distinct_results are left
    empty, as a malformed repeat leaves them (the output can be neither compared nor judged).
    A last timed call returning None was not checked at all."""
    import json
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls = [0]

    def late_fn(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        out = torch_fn(x, dy, w, mean, rstd)
        return out if calls[0] < 4 else late(out)
    _fake(monkeypatch, "test_malformed_late", late_fn)
    rec = _measure_impl("test_malformed_late", repeats=3)
    assert rec["status"] == "error" and rec["error"] == "the last timed call: " + why
    assert rec["time_ms"] > 0 and rec["time_p20_ms"] > 0 and rec["gbps"] > 0
    assert len(json.loads(rec["time_samples_ms"])) >= 3
    assert rec["deterministic"] is None and rec["distinct_results"] is None
    assert rec["last_call_compared"] is False


@pytest.mark.parametrize("norm,names", [("layernorm", "dx, dγ, dβ"), ("rmsnorm", "dx, dγ")])
def test_outputs_in_the_same_storage_every_call_are_an_error(fakes, norm, names):
    """Copies into three kept buffers: right and deterministic, and it was recorded ok — but a
    caller keeping the first result (gradient accumulation) has it overwritten by the next
    call, and the time leaves out the output allocation the timed call should include."""
    rec = _measure_impl(_fake_name("test_same_buffers"), norm=norm)
    assert rec["status"] == "error", rec
    assert rec["error"] == (f"returns {names} in its first call's output storage again "
                            "(repeat 2): a caller's earlier gradients are overwritten")
    assert rec["correct"] and rec["deterministic"] and rec["time_ms"] > 0   # measured still


@pytest.mark.parametrize("norm, out, said", [
    ("layernorm", lambda x, dy, w, o: (o[0], w, o[2]), "dγ in weight's storage"),
    ("rmsnorm", lambda x, dy, w, o: (x.view(x.shape), o[1], None), "dx in x's storage"),
    ("layernorm", lambda x, dy, w, o: (o[0], o[1], w[:]), "dβ in weight's storage"),
])
def test_an_output_in_an_inputs_storage_is_an_error_saying_so(monkeypatch, norm, out, said):
    """A plugin returning its input weight as dγ was recorded as an error about 'dγ in its
    first call's output storage again (repeat 2)' — true, but not the cause: the output is an
    input (or a view of one).  The inputs are checked first, from the first call on."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn

    def aliased(x, dy, w, mean, rstd, *, groups=None):
        return out(x, dy, w, torch_fn(x, dy, w, mean, rstd))
    _fake(monkeypatch, "test_aliased", aliased)
    rec = _measure_impl("test_aliased", norm=norm)
    assert rec["status"] == "error" and rec["error"] == (
        f"returns {said} (its first call): a caller that changes the gradient changes its input")


def test_notes_that_raise_are_named_in_the_records_error(monkeypatch):
    """A plugin's notes() that raised gave the record 'ZeroDivisionError: division by zero',
    nothing saying it came from notes(), not from the implementation's call."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn

    def noted(x, dy, w, mean, rstd, *, groups=None):
        return torch_fn(x, dy, w, mean, rstd)
    noted.notes = lambda *a: 1 / 0
    _fake(monkeypatch, "test_notes_raise", noted)
    rec = _measure_impl("test_notes_raise")
    assert rec["status"] == "error"
    assert rec["error"] == "its notes(): ZeroDivisionError: division by zero"


def test_the_last_timed_call_in_the_first_calls_storage_is_an_error(monkeypatch):
    """Fresh outputs for the repeats, the first call's buffers again once timed: seen there."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls, first = [0], []

    def late_reuse(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        out = torch_fn(x, dy, w, mean, rstd)
        if calls[0] == 1:
            first.extend(out)
        elif calls[0] > 3:
            first[1].copy_(out[1])
            return out[0], first[1], out[2]
        return out
    _fake(monkeypatch, "test_late_reuse", late_reuse)
    rec = _measure_impl("test_late_reuse", repeats=3)
    assert rec["status"] == "error" and rec["error"].startswith(
        "returns dγ in its first call's output storage again (the last timed call)")


def _kept_from(n):
    """torch's answer, fresh for calls 1 .. n−1; from call n on one kept set of buffers filled
    in place every call (what a CUDA-graph replay or torch.compile's reduce-overhead does)."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls, kept = [0], []

    def fn(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        out = torch_fn(x, dy, w, mean, rstd)
        if calls[0] < n:
            return out
        if not kept:
            kept.extend(out)
        for a, b in zip(kept, out):
            if a is not None:
                a.copy_(b)
        return tuple(kept)
    return fn


def test_a_repeat_in_the_previous_repeats_storage_is_an_error(monkeypatch):
    """Fresh outputs on the first call, one kept set from the second on: recorded ok — only the
    first call's storage was checked, and each repeat's outputs were released before the next
    call.  The previous repeat's are held now, and checked."""
    _fake(monkeypatch, "test_kept_from_2", _kept_from(2))
    rec = _measure_impl("test_kept_from_2", repeats=5)
    assert rec["status"] == "error", rec
    assert rec["error"] == ("returns dx, dγ, dβ in repeat 2's output storage again (repeat 3): "
                            "a caller's earlier gradients are overwritten")
    assert rec["correct"] and rec["deterministic"] and rec["time_ms"] > 0   # measured still


def test_the_last_timed_call_in_the_previous_timed_calls_storage_is_an_error(monkeypatch):
    """Fresh outputs for the first call and the repeat, one kept set once timed: the last timed
    call is checked against the one before it (held while it ran), not only the first call."""
    _fake(monkeypatch, "test_kept_from_3", _kept_from(3))
    rec = _measure_impl("test_kept_from_3", repeats=2)
    assert rec["status"] == "error", rec
    assert rec["error"] == ("returns dx, dγ, dβ in the previous timed call's output storage "
                            "again (the last timed call): a caller's earlier gradients are "
                            "overwritten")
    assert rec["correct"] and rec["deterministic"] and rec["last_call_compared"]


def test_fresh_outputs_are_not_taken_for_reused_ones():
    """torch, torch_compile (mode default) and ours allocate their outputs: ok (a repeat's freed
    outputs may be reallocated at the same address, the first call's are held meanwhile)."""
    from normbench import strategies
    impls = ["torch", "disjoint_block", "atomic"] + [
        n for n in ("torch_compile",) if n in strategies.known() and strategies.get(n).available]
    for norm in ("layernorm", "rmsnorm"):
        for impl in impls:
            rec = _measure_impl(impl, norm=norm, repeats=4)
            assert rec["status"] == "ok", (impl, norm, rec["error"])


def test_only_the_last_timed_call_is_checked(monkeypatch):
    """What README and the docstring say is checked: the repeats and the last timed call.  A
    dγ doubled in calls 3–5 only (warm-up and the first timed samples; repeats=2, and at least
    one warm-up call and three samples follow) is not seen — the record is ok, correct and
    deterministic — and doubled in every call from the 3rd on it is, through the last one."""
    from normbench import strategies
    torch_fn = strategies.get("torch").fn
    calls, wrong = [0], [range(3, 6)]

    def sometimes(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return dx, (dw * 2 if calls[0] in wrong[0] else dw), db
    _fake(monkeypatch, "test_sometimes", sometimes)
    rec = _measure_impl("test_sometimes", repeats=2)
    assert calls[0] >= 6 and rec["status"] == "ok"
    assert rec["correct"] and rec["deterministic"] and rec["distinct_results"] == 1
    calls[0], wrong[0] = 0, range(3, 10**9)
    rec = _measure_impl("test_sometimes", repeats=2)
    assert rec["correct"] is False and rec["deterministic"] is False


def test_a_case_larger_than_the_hosts_memory_is_skipped_on_cpu(monkeypatch):
    """Under the interpreter (CPU tensors) no memory was checked: `--shape 1073741824x65536`
    was planned and run, an allocation error at best and, where the kernel overcommits, the
    process killed as the tensors were filled (the sweep with it).  Now a case the host's
    available memory cannot hold is a `skipped` record, as on a GPU, and one that fits runs."""
    import torch
    from normbench.harness import measure as m
    free = m.host_available()
    assert free is None or free > 0
    monkeypatch.setattr(m, "host_available", lambda: 8 * _GiB)
    s = _rel_settings()
    rec = m.measure(case(1 << 20, 65536), s)                 # 64 Gi elements
    assert rec["status"] == "skipped", rec
    assert "GiB of host memory" in rec["error"] and "8.0 GiB free" in rec["error"]
    rec = m.measure(case(4, 64), s)
    assert rec["status"] == "ok", rec["error"]
    monkeypatch.setattr(m, "host_available", lambda: None)  # unreadable: no check, as before
    assert m._shortfall(case(1 << 20, 65536), s, 0, torch.device("cpu")) is None
