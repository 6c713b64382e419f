"""harness/env.py: the facts meta.json records, read and never assumed."""
from __future__ import annotations

import sys
import types

import pytest

from normbench import __version__
from normbench.harness import env


def test_describe_on_this_machine():
    info = env.describe()
    assert info["normbench_version"] == __version__
    assert set(env.PACKAGES) == set(info["package_versions"])
    assert info["package_versions"]["torch"] and info["package_versions"]["triton"]
    assert info["cpu_model"] and info["cpu_count"] >= 1
    assert all(k.startswith(env.ENV_PREFIXES) for k in info["environment"])
    assert info["invocations"][0]["argv"] == sys.argv
    if info["interpreted"]:
        assert "gpu_uuid" not in info and "compute_capability" not in info   # CPU: no GPU facts


def test_environment_keeps_only_the_variables_that_steer_the_kernels(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("SOME_TOKEN", "secret")
    got = env.environment()
    assert got["TRITON_CACHE_DIR"] == "/x" and got["CUDA_VISIBLE_DEVICES"] == "1"
    assert "SOME_TOKEN" not in got


def test_variables_the_harness_sets_itself_are_not_the_users(monkeypatch):
    """A --gpus/--scheduler worker measures in a child the harness starts with NORMBENCH_QUIET=1
    (and TRITON_INTERPRET=0 where the worker had none), and the child's environment() is
    meta's: merged with a plain shard, it read as a variable set differently."""
    from normbench.harness import gpuworker, isolate
    monkeypatch.setenv("NORMBENCH_QUIET", "1")
    assert "NORMBENCH_QUIET" not in env.environment()
    made = []

    class Worker:
        def __init__(self, target, env=None, ready=None):
            made.append(env)
            assert ready == "normbench.harness.measure:prepare_worker"   # plugins as it starts
    monkeypatch.setattr(isolate, "Worker", Worker)
    monkeypatch.delitem(gpuworker._state, "worker", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    gpuworker._child()
    assert made == [{"NORMBENCH_QUIET": "1"}]       # TRITON_INTERPRET: as the worker has it
    monkeypatch.delitem(gpuworker._state, "worker")


def test_package_versions_are_null_for_absent_packages(monkeypatch):
    monkeypatch.setattr(env, "PACKAGES", ("torch", "surely-no-such-distribution"))
    got = env.package_versions()
    assert got["torch"] and got["surely-no-such-distribution"] is None


FULL = "2792e69de66e0c1d4b7a3f5e8d9c0b1a2f3e4d5c"


@pytest.mark.parametrize("told,dirty_var,head,status,want", [
    (None, None, "abc", "", ("abc", False)),
    (None, None, "abc", " M x.py", ("abc", True)),
    ("def", None, "abc", "", ("def", None)),          # a copy told another commit: unknown
    ("abc", None, "abc", " M x.py", ("abc", True)),   # told the commit it is at: git knows
    ("def", None, None, None, ("def", None)),         # a copy without .git
    ("def", "1", None, None, ("def", True)),          # told its state as well
    ("def", "0", None, None, ("def", False)),
    (None, None, None, None, (None, None)),           # an installed copy: nothing known
    # a short id of this HEAD (the README's 7-digit ids): the full id, and git's state
    ("2792E69", None, FULL, " M x.py", (FULL, True)),
    ("2792e69", None, FULL, "", (FULL, False)),
    ("2792e6a", None, FULL, "", ("2792e6a", None)),   # another commit's short id
])
def test_git_state_is_honest(monkeypatch, told, dirty_var, head, status, want):
    for k, v in (("NORMBENCH_GIT_COMMIT", told), ("NORMBENCH_GIT_DIRTY", dirty_var)):
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    answers = {"rev-parse": head, "status": status}
    monkeypatch.setattr(env, "_git", lambda *a: answers[a[0]])
    assert env.git_state() == want


def test_an_installed_copy_asks_no_git(monkeypatch, tmp_path):
    monkeypatch.setattr(env, "ROOT", tmp_path)       # no .git: a site-packages folder
    assert env._git("rev-parse", "HEAD") is None


def test_invocations_keep_the_history_of_a_resumed_run():
    first = {"argv": ["normbench", "run", "quick"]}
    assert [i["argv"] for i in env.invocations(first)] == [first["argv"], sys.argv]
    meta = {"invocations": [{"argv": ["a"]}, {"argv": ["b"]}]}
    assert [i["argv"] for i in env.invocations(meta)][:2] == [["a"], ["b"]]
    assert len(env.invocations(meta)) == 3


def _fake_pynvml(fail: set[str] = frozenset()):
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    calls = []

    def f(name, value):
        def call(*a):
            calls.append(name)
            if name in fail:
                raise RuntimeError("not supported")
            return value(*a) if callable(value) else value
        return call

    m.nvmlInit, m.nvmlShutdown = f("init", None), f("shutdown", None)
    m.nvmlDeviceGetHandleByUUID = f("by_uuid", lambda u: ("h", u))
    m.nvmlDeviceGetHandleByIndex = f("by_index", lambda i: ("h", i))
    m.nvmlSystemGetDriverVersion = f("driver", b"570.86")
    m.nvmlDeviceGetUUID = f("uuid", lambda h: h[1])
    m.nvmlDeviceGetCudaComputeCapability = f("cc", (9, 0))
    m.nvmlDeviceGetMaxClockInfo = f("max", lambda h, k: {1: 1980, 2: 3201}[k])
    m.nvmlDeviceGetApplicationsClock = f("app", lambda h, k: {1: 1755, 2: 3201}[k])
    m.nvmlDeviceGetClockInfo = f("now", 1980)
    m.nvmlDeviceGetEnforcedPowerLimit = f("power", 700000)
    m.nvmlDeviceGetPowerManagementDefaultLimit = f("power_default", 700000)
    m.nvmlDeviceGetTemperature = f("temp", 41)
    return m, calls


def test_nvml_facts_of_the_gpu_torch_uses(monkeypatch):
    fake, calls = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    got = env._nvml("GPU-1234")
    assert got["gpu_uuid"] == "GPU-1234" and got["compute_capability"] == "9.0"
    assert got["driver_version"] == "570.86"                      # bytes decoded
    assert got["sm_clock_max_mhz"] == 1980 and got["mem_clock_max_mhz"] == 3201
    assert got["sm_clock_app_mhz"] == 1755 and got["power_limit_w"] == 700.0
    assert got["gpu_facts_from"] == "nvml" and calls[-1] == "shutdown"


def test_nvml_queries_a_gpu_does_not_support_are_left_out(monkeypatch):
    fake, _ = _fake_pynvml(fail={"app", "temp"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    got = env._nvml("GPU-1")
    assert "sm_clock_app_mhz" not in got and "temperature_c" not in got
    assert got["power_limit_w"] == 700.0


def test_no_nvml_is_no_facts(monkeypatch):
    fake, _ = _fake_pynvml(fail={"init"})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert env._nvml("GPU-1") == {}
    monkeypatch.setitem(sys.modules, "pynvml", None)              # not installed
    assert env._nvml("GPU-1") == {}


def _installed(site, dist: str, version: str, files: dict[str, str | None],
               entry_points: str = "") -> None:
    """A distribution as pip leaves it in `site`: its files (one of text None listed only),
    and a dist-info whose RECORD lists them (and whose entry_points.txt declares
    `entry_points`)."""
    for path, text in files.items():
        if text is not None:
            (site / path).parent.mkdir(parents=True, exist_ok=True)
            (site / path).write_text(text)
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)
    (info / "RECORD").write_text("".join(f"{p},,\n" for p in [*files, f"{info.name}/METADATA"]))


def test_a_run_records_the_plugins_it_loaded(tmp_path):
    """A plugin installed with an entry point left no trace in meta.json (package_versions
    lists fixed packages only): compare could not note its version changing, merge merged
    shards measured with different versions.  meta.json's `plugins` names each: how it was
    named, its module, its entry point, its distribution and version where one installed it
    (a module named in NORMBENCH_PLUGINS included; one on PYTHONPATH has none, even where
    another distribution ships a top-level package of its name)."""
    import json
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    site = tmp_path / "site"
    _installed(site, "nb_ep_plugin", "0.3", {
        "nb_ep_plugin/__init__.py": "",
        "nb_ep_plugin/impl.py": (
            "from normbench.strategies import register, get\n"
            "@register('nb_ep_impl', kind='baseline', deterministic_by_design=True,"
            " uses_groups=False)\n"
            "def f(x, dy, weight, mean, rstd, *, groups=None):\n"
            "    return get('torch').fn(x, dy, weight, mean, rstd)\n"),
        "nb_ep_plugin/extra.py": "# registers nothing\n"},
        "[normbench.implementations]\nnb_ep_impl = nb_ep_plugin.impl\n")
    # claims the top-level package `tests` (its file not written: it would hide this one's)
    _installed(site, "nb_claims_tests", "9.9", {"tests/__init__.py": None})
    out = tmp_path / "run"
    e = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{site}", "NORMBENCH_QUIET": "1",
         "NORMBENCH_PLUGINS": "tests.optional_peer,nb_ep_plugin.extra"}
    r = subprocess.run([sys.executable, str(root / "run_bench.py"), "run", "configs/cpu.yaml",
                        "rows=[5]", "d=[33]", "norm=[layernorm]", "--only", "nb_ep_impl",
                        "--no-report", "--out", str(out)],
                       cwd=root, env=e, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    plugins = json.loads((out / "meta.json").read_text())["plugins"]
    assert plugins == [
        {"source": "NORMBENCH_PLUGINS", "module": "tests.optional_peer", "entry_point": None,
         "distribution": None, "version": None},
        {"source": "NORMBENCH_PLUGINS", "module": "nb_ep_plugin.extra", "entry_point": None,
         "distribution": "nb_ep_plugin", "version": "0.3"},
        {"source": "entry point", "module": "nb_ep_plugin.impl", "entry_point": "nb_ep_impl",
         "distribution": "nb_ep_plugin", "version": "0.3"}], plugins
