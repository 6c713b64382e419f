"""Timers and order statistics (pure where possible).

GPU: `triton.testing.do_bench` (CUDA events, L2 flushed before every sample) returns every
sample; CPU (Triton interpreter): wall-clock time of each call, same warm-up/repeat budget.
"""
from __future__ import annotations

import time

import numpy as np


def summarize(samples_ms: list[float]) -> dict:
    """median, p20 and p80 of the samples (ms)."""
    a = np.asarray(samples_ms, dtype=float)
    return {"time_ms": float(np.median(a)), "time_p20_ms": float(np.quantile(a, 0.2)),
            "time_p80_ms": float(np.quantile(a, 0.8))}


def bench_gpu(fn, warmup_ms: float, rep_ms: float) -> list[float]:
    import triton.testing
    return [float(t) for t in triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms,
                                                      return_mode="all")]


def bench_cpu(fn, warmup_ms: float, rep_ms: float, min_samples: int = 3,
              max_samples: int = 1000) -> list[float]:
    """Wall-clock samples: warm up for warmup_ms (at least once), then sample for rep_ms."""
    t_end = time.perf_counter() + warmup_ms / 1e3
    fn()
    while time.perf_counter() < t_end:
        fn()
    samples: list[float] = []
    t_end = time.perf_counter() + rep_ms / 1e3
    while len(samples) < min_samples or (time.perf_counter() < t_end and len(samples) < max_samples):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def bench(fn, warmup_ms: float, rep_ms: float, on_gpu: bool) -> list[float]:
    return bench_gpu(fn, warmup_ms, rep_ms) if on_gpu else bench_cpu(fn, warmup_ms, rep_ms)


def copy_ceiling_gbps(device, on_gpu: bool, nbytes: int | None = None) -> float:
    """Device-to-device copy bandwidth, counting bytes read plus bytes written.

    GPU: a 2 GiB buffer copied with copy_ (several times the L2).  CPU: 64 MiB."""
    import torch
    nbytes = nbytes or ((2 << 30) if on_gpu else (64 << 20))
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    samples = bench(lambda: dst.copy_(src), 25 if on_gpu else 5, 200 if on_gpu else 50, on_gpu)
    t = float(np.median(samples))
    return 2 * nbytes / (t * 1e-3) / 1e9
