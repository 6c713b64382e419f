"""Host time of one call on a machine without a GPU: the Python path with the launch stubbed.

    python bench/host_cpu.py [NAME]      # NAME: also print a cProfile of NAME's calls

Runs each deterministic strategy's `backward` on CPU tensors with the direct-launch path of
`strategies._launch` switched on and the compiled kernel replaced by a no-op, so what is timed
is exactly the Python and allocation work a GPU call pays before its kernels run (best of 7
batches of 1000 calls).  No result is computed; this is a probe, not a benchmark.
"""
import os, sys, time, cProfile, pstats, io
os.environ["NORMBENCH_QUIET"] = "1"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
from normbench import strategies
from normbench.strategies import _launch, _device
from normbench.harness.inputs import make_inputs
def fake_run(*a): pass
class AnyDict(dict):   # every launch finds a plan: (run, grid, function, metadata, tail)
    def get(self, k, d=None): return (fake_run, 1, 1, 1, None, None, ())
_launch._FAST = True
_launch._PLANS = AnyDict()
_launch._stream = lambda d: 0
torch.cuda.current_device = lambda: 0
real_interp = _device.interpreted
_device.interpreted = lambda: False
import normbench.strategies.disjoint_fused as df
df._device.interpreted = lambda: False
for norm in ["layernorm", "rmsnorm"]:
    x, dy, w, mean, rstd = make_inputs(norm, 2048, 768, "bf16", "bf16", seed=0, device="cpu")
    for name in ["disjoint_fused", "disjoint_block", "disjoint_strided"]:
        e = strategies.get(name)
        f = lambda: e.backward(x, dy, w, mean, rstd)
        for _ in range(200): f()
        best = 1e9
        for rep in range(7):
            N = 1000; t = time.perf_counter()
            for _ in range(N): f()
            best = min(best, (time.perf_counter()-t)/N*1e6)
        print(norm, name, f"{best:.1f} us")
if len(sys.argv) > 1:
    x, dy, w, mean, rstd = make_inputs("layernorm", 2048, 768, "bf16", "bf16", seed=0, device="cpu")
    e = strategies.get(sys.argv[1])
    pr = cProfile.Profile(); pr.enable()
    for _ in range(3000): e.backward(x, dy, w, mean, rstd)
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25); print(s.getvalue())
