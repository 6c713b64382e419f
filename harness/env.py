"""Facts about this machine for meta.json: device, versions, git state."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import torch
import triton

from normbench import strategies

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def device_name() -> str:
    if strategies.interpreted():
        return f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"
    return torch.cuda.get_device_name()


def describe() -> dict:
    """Everything about the environment a reader of the results needs."""
    interp = strategies.interpreted()
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
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        # a copy of the tree (a lent GPU machine) can be told its commit: such a copy may
        # carry no .git, or a stale one, so the variable, when set, wins
        "git_commit": os.environ.get("NORMBENCH_GIT_COMMIT") or _git("rev-parse", "HEAD"),
        "git_dirty": (False if os.environ.get("NORMBENCH_GIT_COMMIT")
                      else bool(_git("status", "--porcelain", "--untracked-files=no"))),
        "argv": sys.argv,
    }
    if not interp:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["driver_version"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, IndexError):
            pass
        props = torch.cuda.get_device_properties(0)
        info["gpu_memory_bytes"] = props.total_memory
    return info
