"""Which GPUs a run uses, and which GPU a process measures on (pure where possible).

`--gpus all|N` picks from the GPUs this process may see (CUDA_VISIBLE_DEVICES, as indices or
UUIDs, else every device); dask-cuda then starts one worker per chosen GPU with that GPU first
in the worker's CUDA_VISIBLE_DEVICES, so inside a worker device 0 is its GPU and the first
entry of the variable its physical index.
"""
from __future__ import annotations

import os
import socket


class PlacementError(ValueError):
    """--gpus cannot be satisfied; one-line message."""


def visible_gpus(cuda_visible_devices: str | None, device_count: int) -> list[str]:
    """The GPUs a process may use, as CUDA_VISIBLE_DEVICES entries, in order."""
    if cuda_visible_devices is None:
        return [str(i) for i in range(device_count)]
    entries = [e.strip() for e in cuda_visible_devices.split(",")]
    out = []
    for e in entries:
        if not e:
            break                 # CUDA stops at the first empty or invalid entry
        out.append(e)
    return out[:device_count]


def parse_gpus(spec: str) -> str | int:
    """'all' or a positive count."""
    from normbench.harness.text import count_of
    s = str(spec).strip().lower()
    if s == "all":
        return "all"
    n = count_of(s)          # ASCII digits, as --shard's: int() also read '２' and '2_0'
    if n is None:
        raise PlacementError(f"--gpus: expected 'all' or a number of GPUs, got {spec!r}")
    if n < 1:
        raise PlacementError(f"--gpus: expected at least 1 GPU, got {n}")
    return n


def choose(spec: str | int, visible: list[str]) -> list[str]:
    """The GPUs for `--gpus spec`: every visible one, or the first N."""
    if spec == "all":
        if not visible:
            raise PlacementError("--gpus all: no GPU is visible here (without a GPU, --gpus N "
                                 "runs N stand-in workers under the Triton interpreter)")
        return list(visible)
    if spec > len(visible):
        raise PlacementError(f"--gpus {spec}: only {len(visible)} GPU(s) visible here"
                             + (f" ({', '.join(visible)})" if visible else ""))
    return list(visible[:spec])


def physical_index(entry: str | None) -> int | None:
    """The index of a CUDA_VISIBLE_DEVICES entry when it is a number (UUIDs give None)."""
    try:
        return int(entry) if entry is not None else None
    except ValueError:
        return None


def local_gpu_fields() -> dict:
    """hostname, gpu_index, gpu_uuid of the GPU this process measures on (its device 0 —
    strategies.default_device()); the GPU fields are None under the interpreter."""
    from normbench import strategies
    fields = {"hostname": socket.gethostname(), "gpu_index": None, "gpu_uuid": None}
    if strategies.interpreted():
        return fields
    import torch
    dev = torch.cuda.current_device()
    visible = visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count())
    entry = visible[dev] if dev < len(visible) else None
    fields["gpu_index"] = physical_index(entry)
    if fields["gpu_index"] is None and entry is None:
        fields["gpu_index"] = dev
    try:
        uuid = str(torch.cuda.get_device_properties(dev).uuid)
        fields["gpu_uuid"] = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    except (AttributeError, RuntimeError):
        pass
    return fields
