"""Pure models, no I/O: the minimal bytes model, the device peak table, derived rates.

Bytes model (stated, minimal): every input is read once and every output written once.
    read  x, dy            2 * rows * d * itemsize(dtype)
    read  weight           d * itemsize(weight_dtype)
    read  mean, rstd       rows * 4 each (mean only for LayerNorm)
    write dx               rows * d * itemsize(dtype)
    write dγ (and dβ)      d * itemsize(weight_dtype) each
Workspace traffic (fp32 partial rows, locks, counters) is NOT in bytes_moved; it is reported
separately as workspace_bytes, so that a strategy is never credited for its own overhead.
"""
from __future__ import annotations

import re

ITEMSIZE = {"fp32": 4, "bf16": 2, "fp16": 2}
MIXED = "mixed: "      # meta.json's device_name for GPUs of several models (run.py, distributed.py)

# Datasheet peak memory bandwidth, TB/s, keyed by a whole-word part of
# torch.cuda.get_device_name().
# Longest matching key wins.  Overridable per sweep with `peak_tbps`.
PEAK_TBPS = {
    "H200": 4.8,
    "H100 SXM": 3.35,
    "H100 80GB HBM3": 3.35,
    "H100 NVL": 3.9,
    "H100 PCIe": 2.0,
    "H100": 3.35,
    "GH200": 4.0,
    "B200": 8.0,
    "A100-SXM4-80GB": 2.039,
    "A100 80GB PCIe": 1.935,
    "A100": 1.555,
    "L40S": 0.864,
    "L40": 0.864,
    "L4": 0.3,
    "A10G": 0.6,
    "RTX 4090": 1.008,
    "RTX 3090": 0.936,
    "V100": 0.9,
    "T4": 0.32,
}


def bytes_moved(norm: str, rows: int, d: int, dtype: str, weight_dtype: str) -> int:
    """Minimal bytes a backward pass must move (see module docstring)."""
    a, w = ITEMSIZE[dtype], ITEMSIZE[weight_dtype]
    layer = norm == "layernorm"
    activations = 3 * rows * d * a                      # x, dy in; dx out
    stats = rows * 4 * (2 if layer else 1)              # rstd (+ mean)
    params = d * w * (1 + (2 if layer else 1))          # weight in; dγ (+ dβ) out
    return activations + stats + params


def peak_tbps(device_name: str, override: float | None = None) -> float | None:
    """Datasheet peak TB/s for a device name, or the override; None if unknown, and None for
    a cluster's "mixed: A, B" (GPUs of several models): no one peak is every GPU's, and each
    record carries its own GPU's as pct_peak."""
    if override is not None:
        return float(override)
    name = device_name or ""
    if name.startswith(MIXED):
        return None
    # whole names only: "L4" is not the L40's, nor "H200" the GH200's
    hits = [k for k in PEAK_TBPS
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(k)}(?![A-Za-z0-9])", name, re.I)]
    return PEAK_TBPS[max(hits, key=len)] if hits else None


def gbps(nbytes: int, time_ms: float) -> float:
    return nbytes / (time_ms * 1e-3) / 1e9


def pct(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return 100.0 * part / whole


def bandwidth_bound_ms(nbytes: int, tbps: float) -> float:
    """The time a pass moving nbytes takes at tbps: the floor no version beats by much."""
    return nbytes / (tbps * 1e12) * 1e3
