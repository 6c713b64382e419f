"""Timers and order statistics (pure where possible).

GPU: `triton.testing.do_bench` (CUDA events, L2 flushed before every sample) returns every
sample; CPU (Triton interpreter): wall-clock time of each call, same warm-up/repeat budget.
"""
from __future__ import annotations

import time

import numpy as np

from normbench.harness.interrupt import reraise_if_interrupted


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


# ------------------------------------------------------------------------------ GPU busy time
GPU_TIMER = ("cuda_graph_replay: the call captured once in a CUDA graph (after warm-up calls on "
             "the capture stream) and replayed, the L2 flushed (256 MiB written) before each "
             "replay, CUDA events around each replay; the host queues replays ahead of the GPU, so "
             "a sample is the time the call's kernels keep the GPU busy (with the gaps between "
             "them). Where capture fails or a replay does not reproduce the call's output: eager "
             "calls queued behind a GPU sleep (so that the host runs ahead), events around each; "
             "gpu_time_note says which")
NO_GPU_NOTE = "no CUDA GPU here (Triton interpreter on CPU tensors): GPU time not measured"
_FLUSH: dict = {}


def gpu_columns(samples_ms: list[float] | None, note: str) -> dict:
    """The GPU-time columns from the samples (None or empty: the columns stay empty)."""
    if not samples_ms:
        return {"gpu_time_ms": None, "gpu_time_p20_ms": None, "gpu_time_p80_ms": None,
                "gpu_time_note": note}
    s = summarize(samples_ms)
    return {"gpu_time_ms": s["time_ms"], "gpu_time_p20_ms": s["time_p20_ms"],
            "gpu_time_p80_ms": s["time_p80_ms"], "gpu_time_note": note}


def _flush_buffer(device):
    import torch
    buf = _FLUSH.get(device)
    if buf is None:
        buf = _FLUSH[device] = torch.empty(64 << 20, dtype=torch.int32, device=device)
    return buf


def _same(a, b) -> bool:
    import torch
    return all((x is None and y is None) or (x is not None and y is not None and x.shape == y.shape
               and torch.equal(x, y)) for x, y in zip(a, b))


def _close(a, b) -> bool:
    import torch
    return all((x is None and y is None) or (x is not None and y is not None and x.shape == y.shape
               and torch.allclose(x.float(), y.float(), rtol=1e-2, atol=1e-3 * (y.float().abs().max().item() or 1.0)))
               for x, y in zip(a, b))


def _graph_samples(fn, n: int, eager_out) -> tuple[list[float], str]:
    import torch
    dev = torch.device("cuda", torch.cuda.current_device())
    flush = _flush_buffer(dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):       # per-stream state (workspaces) is made outside the capture
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=side):
        out = fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in ev:
        flush.zero_()
        a.record()
        g.replay()
        b.record()
    torch.cuda.synchronize()
    if eager_out is not None and not _close(out, eager_out):
        raise RuntimeError("a replay does not reproduce the call's output")
    samples = [a.elapsed_time(b) for a, b in ev]
    del g, out
    return samples, "cuda_graph_replay"


def _sleep_cycles_per_ms() -> float:
    import torch
    c = _FLUSH.get("cycles_per_ms")
    if c is None:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)                   # first launch of the sleep kernel
        a.record()
        torch.cuda._sleep(10_000_000)
        b.record()
        torch.cuda.synchronize()
        c = _FLUSH["cycles_per_ms"] = 10_000_000 / max(a.elapsed_time(b), 1e-3)
    return c


def _queued_samples(fn, n: int, host_ms: float, batch: int = 16) -> tuple[list[float], str]:
    """Eager calls queued behind a GPU sleep long enough for the host to queue the batch; a batch
    whose sleep ended before the host had queued it all is discarded (the host fell behind)."""
    import torch
    dev = torch.device("cuda", torch.cuda.current_device())
    flush = _flush_buffer(dev)
    cycles = _sleep_cycles_per_ms()
    samples: list[float] = []
    lost = 0
    while len(samples) < n and lost < 3:
        k = min(batch, n - len(samples))
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(k)]
        mark = torch.cuda.Event()
        torch.cuda._sleep(int(cycles * (2 * k * (host_ms + 0.02) + 1.0)))
        mark.record()
        for a, b in ev:
            flush.zero_()
            a.record()
            fn()
            b.record()
        ahead = not mark.query()
        torch.cuda.synchronize()
        if ahead:
            samples += [a.elapsed_time(b) for a, b in ev]
        else:
            lost += 1
    if not samples:
        raise RuntimeError("the host could not queue the calls ahead of the GPU")
    return samples, "queued_events"


def gpu_time(fn, *, time_ms: float | None, rep_ms: float, on_gpu: bool, eager_out=None) -> dict:
    """The GPU-time columns for `fn` (see GPU_TIMER); `time_ms` (the call time) sizes the sample
    count and the queue-ahead sleep.  Never raises for a failure of the implementation: the note
    says what happened."""
    if not on_gpu:
        return gpu_columns(None, NO_GPU_NOTE)
    t = max(time_ms or 0.05, 0.005)
    n = int(max(10, min(500, rep_ms / (t + 0.1))))
    try:
        samples, how = _graph_samples(fn, n, eager_out)
        return gpu_columns(samples, f"{how}, {len(samples)} replays")
    except Exception as e:      # capture unsupported by this implementation, or replay differs
        reraise_if_interrupted(e)
        failed = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
        _reset_after_capture_failure()
    try:
        samples, how = _queued_samples(fn, n, t)
        return gpu_columns(samples, f"{how}, {len(samples)} calls (CUDA graph not used: "
                                    f"{failed})")
    except Exception as e:
        reraise_if_interrupted(e)
        return gpu_columns(None, f"not measured: CUDA graph not used ({failed}); queued "
                                 f"calls failed ({type(e).__name__}: {' '.join(str(e).split())[:160]})")


def _reset_after_capture_failure() -> None:
    import torch
    try:
        torch.cuda.synchronize()
    except Exception:
        pass
