"""Facts about this machine for meta.json: device, versions, git state, environment.

Everything here is read, never assumed: a fact that cannot be read here is null (None), never
a guess.  GPU facts come from NVML (`nvidia-ml-py`, imported as pynvml) where it answers, from
torch.cuda otherwise; on CPU they are empty.
"""
from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import torch

# strategies first: it sets TRITON_INTERPRET (no GPU) before triton.language is imported, which
# decides whether Triton's own jit functions (tl.sum …) run under the interpreter
from normbench import __version__, strategies  # noqa: I001
import triton  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Distributions whose version can move a result: ours' dependencies and the peers'.
PACKAGES = ("torch", "triton", "numpy", "liger-kernel", "quack-kernels", "nvidia-cutlass-dsl",
            "cuda-python", "nvidia-ml-py")
ENV_PREFIXES = ("TRITON_", "CUDA_", "NORMBENCH_", "PYTORCH_")
# Not recorded: set by the harness itself for the processes it measures in (harness.isolate's
# worker, a cluster worker's measuring child: their environment() is meta's), and steering no
# measurement (it silences a note on stderr).  Recorded, a --gpus or --scheduler shard differed
# from a plain one in a variable nobody set (merge's environment_differs, the report's warning)
NOT_RECORDED = ("NORMBENCH_QUIET",)
# Recorded, and the workers of one cluster run may differ in them (harness.distributed
# _check_env): set for each worker by the cluster itself (dask-cuda, and harness.distributed
# without it, put the worker's GPU first), a place on the worker's node (Triton's cache, the
# host-load folder), or compared as what they stand for (the commit, its dirty flag and the
# plugins: distributed._stack, summarize_facts)
PER_WORKER = ("CUDA_VISIBLE_DEVICES", "TRITON_CACHE_DIR", "NORMBENCH_HOSTLOAD_DIR",
              "NORMBENCH_GIT_COMMIT", "NORMBENCH_GIT_DIRTY", "NORMBENCH_PLUGINS")


def _git(*args: str) -> str | None:
    """git's answer in a checkout; None in an installed copy (whose folder may sit inside
    some other repository) or where git fails."""
    if not (ROOT / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def told_commit_problem(environ=None) -> str:
    """'' where NORMBENCH_GIT_COMMIT is unset or a commit id (7-40 hex digits), else why not:
    a run would record whatever it says as its commit.  environ: whose variables (a cluster
    worker's, harness.distributed); this process's by default."""
    told = (os.environ if environ is None else environ).get("NORMBENCH_GIT_COMMIT") or ""
    if not told or re.fullmatch(r"[0-9a-fA-F]{7,40}", told):
        return ""
    return (f"environment NORMBENCH_GIT_COMMIT: {told[:60]!r} is not a commit id (7-40 hex "
            "digits): set it to the commit of this tree, e.g. $(git rev-parse HEAD), or unset it")


_DIRTY_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def told_dirty_problem(environ=None) -> str:
    """'' where NORMBENCH_GIT_DIRTY is unset, empty or one of 0/1 (false/true, no/yes), else
    why not: git_state would ignore it and record the tree's state (or null) instead of it."""
    environ = os.environ if environ is None else environ
    flag = environ.get("NORMBENCH_GIT_DIRTY", "").strip().lower()
    if not flag or flag in _DIRTY_WORDS:
        return ""
    return (f"environment NORMBENCH_GIT_DIRTY: {environ['NORMBENCH_GIT_DIRTY'][:60]!r} is "
            "not 0 or 1 (false/true, no/yes): set it to 1 if the tree has uncommitted changes, "
            "0 if not, or unset it")


# on/off switches the strategies read at import: 0 or 1 (unset or empty: the default)
SWITCHES = {"NORMBENCH_FAST_LAUNCH": "0 launches through kernel[grid](...) on every call",
            "NORMBENCH_INTERPRET_REPATCH": "1 keeps the Triton interpreter's own set-up"}


def told_switch_problem(environ=None) -> str:
    """'' where each of SWITCHES is unset, empty, 0 or 1, else why not: strategies/_launch.py
    turns the fast launch off for "0" alone and _device.py repatches for "1" alone, so
    NORMBENCH_FAST_LAUNCH=false left it on while meta.json's environment said false."""
    for name, what in SWITCHES.items():
        v = (os.environ if environ is None else environ).get(name, "")
        if v not in ("", "0", "1"):
            return f"environment {name}: {v[:60]!r} is not 0 or 1 ({what}); set 0 or 1, or unset it"
    return ""


def told_problem(environ=None) -> str:
    """The first of the told_*_problem()s of `environ` (this process's by default), or ''."""
    return (told_commit_problem(environ) or told_dirty_problem(environ)
            or told_switch_problem(environ))


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty).  A copy of the tree (a lent GPU machine) can be told its commit with
    NORMBENCH_GIT_COMMIT (such a copy may carry no .git, or a stale one, so the variable
    wins) and its state with NORMBENCH_GIT_DIRTY=0/1; dirty is null when nothing says.  A
    short id told (`git rev-parse --short HEAD`) that this tree's HEAD starts with is that
    HEAD: the full id is recorded (merge compares shards' commits) and the tree's state read."""
    head = _git("rev-parse", "HEAD")
    told = os.environ.get("NORMBENCH_GIT_COMMIT") or None
    if told and len(told) >= 7 and head and head.lower().startswith(told.lower()):
        told = head
    commit = told or head
    flag = os.environ.get("NORMBENCH_GIT_DIRTY", "").strip().lower()
    if flag in _DIRTY_WORDS:
        return commit, _DIRTY_WORDS[flag]
    if head is None or (told is not None and head != told):
        return commit, None                          # this tree's state is not that commit's
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status)


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def environment() -> dict[str, str]:
    """The variables that steer Triton, CUDA, PyTorch and normbench (NOT_RECORDED left out)."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(ENV_PREFIXES) and k not in NOT_RECORDED}


def device_name() -> str:
    if strategies.interpreted():
        return f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"
    return torch.cuda.get_device_name()


def _nvml(uuid: str | None) -> dict:
    """The GPU's facts from NVML (the device whose UUID torch reports); {} where NVML is not
    installed or does not answer."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:
        return {}
    facts: dict = {}
    try:
        h = (pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid
             else pynvml.nvmlDeviceGetHandleByIndex(0))
        reads = {
            "driver_version": lambda: pynvml.nvmlSystemGetDriverVersion(),
            "gpu_uuid": lambda: pynvml.nvmlDeviceGetUUID(h),
            "compute_capability": lambda: "%d.%d" % pynvml.nvmlDeviceGetCudaComputeCapability(h),
            "sm_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "sm_clock_app_mhz": lambda: pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM),
            "mem_clock_app_mhz": lambda: pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_MEM),
            "sm_clock_now_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
            "power_limit_default_w": lambda: pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000,
            "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        }
        for key, read in reads.items():
            try:
                value = read()
            except Exception:         # a query this GPU or driver does not support
                continue
            facts[key] = value.decode() if isinstance(value, bytes) else value
        if facts:
            facts["gpu_facts_from"] = "nvml"
    except Exception:
        pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return facts


def gpu_facts() -> dict:
    """UUID, compute capability, clocks, power limit, memory of the GPU in use (CPU: {})."""
    if strategies.interpreted() or not torch.cuda.is_available():
        return {}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid = getattr(props, "uuid", None)
    uuid = f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else uuid
    facts = {"gpu_uuid": None if uuid is None else str(uuid),
             "compute_capability": f"{props.major}.{props.minor}",
             "gpu_memory_bytes": props.total_memory, "gpu_facts_from": "torch.cuda"}
    facts.update(_nvml(facts["gpu_uuid"]))
    if "driver_version" not in facts:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            if out.returncode == 0 and out.stdout.strip():
                facts["driver_version"] = out.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return facts


def invocation(**fields) -> dict:
    """This process's command line and when it started (one entry of meta's invocations),
    and `fields` (a run's: `only`, the --only it narrowed its plan to)."""
    return {"argv": list(sys.argv), "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "normbench_version": __version__, **fields}


def invocations(meta: dict, **fields) -> list[dict]:
    """meta's invocations with this one added (a run written before they were kept has only
    its first argv)."""
    before = meta.get("invocations") or ([{"argv": meta["argv"]}] if meta.get("argv") else [])
    return [*before, invocation(**fields)]


def describe() -> dict:
    """Everything about the environment a reader of the results needs."""
    interp = strategies.interpreted()
    commit, dirty = git_state()
    info = {
        "device_name": device_name(),
        "sm_count": strategies.sm_count(),
        "interpreted": interp,
        "timer": "cpu_wall" if interp else "cuda_event",
        "driver_version": None,
        "cuda_version": torch.version.cuda,
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "python_version": platform.python_version(),
        "normbench_version": __version__,
        "package_versions": package_versions(),
        "plugins": strategies.plugins(),   # which plugin code: module, entry point, version
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "environment": environment(),
        "git_commit": commit,
        "git_dirty": dirty,           # null: unknown (an installed copy, or a told commit)
        "argv": sys.argv,             # the first invocation; every one is in "invocations"
        "invocations": [invocation()],
    }
    info.update(gpu_facts())
    return info
