"""Can a Triton kernel split one row across the CTAs of a cluster, as quack does at 8K < d ≤ 64K?

    python bench/cluster_probe.py

Issue 16's misses at 4096 × 16384 are 31.03 rows an SM (the 32nd row of 4 programs alone is
~3 % of the call) and the fixed cost of a launch that 8192 rows pay once in twice the bytes.
quack halves a row's work per CTA with a 2-CTA cluster whose CTAs sum their row statistics
through distributed shared memory.  This probe asks the installed Triton whether it can express
that: a [1, 16384] bf16 row's sum of squares, compiled for sm_90 (no GPU needed; Triton's wheel
ships ptxas) with one CTA and with two CTAs a cluster — through Triton's `num_ctas` (the
compiler lays the row across the CTAs) and through Gluon, where the layout says so itself
(`cga_layout`).  It prints, per variant, "compiles" or the compiler's error.  With Triton 3.6
both two-CTA variants fail (docs/PERF_NOTES.md, round 37): the reduction across CTAs is not
lowered.  A probe, not a test: a later Triton may answer otherwise.
"""
from __future__ import annotations

import os
import subprocess
import sys

N = 16384


def _triton(ctas: int):
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def row_kernel(X, Y, N: tl.constexpr):
        r = tl.program_id(0) + tl.arange(0, 1)
        cols = tl.arange(0, N)
        x = tl.load(X + r[:, None] * N + cols[None, :]).to(tl.float32)
        s = tl.sum(x * x, axis=1)
        tl.store(Y + r[:, None] * N + cols[None, :], (x * s[:, None]).to(tl.bfloat16))

    src = ASTSource(fn=row_kernel, signature={"X": "*bf16", "Y": "*bf16", "N": "constexpr"},
                    constexprs={"N": N})
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_ctas": ctas})


def _gluon(ctas: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    @gluon.jit
    def row_kernel(X, Y, N: gl.constexpr, SPLIT: gl.constexpr):
        if SPLIT:   # the columns' highest bit picks the CTA: half a row each
            L: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, 8], [1, 0], [[0, 1]])
        else:
            L: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [1, 8], [1, 0])
        cols = gl.arange(0, N, layout=gl.SliceLayout(0, L))
        offs = gl.program_id(0) * N + gl.expand_dims(cols, 0)
        x = gl.load(X + offs).to(gl.float32)
        s = gl.sum(x * x, axis=1)
        gl.store(Y + offs, (x * gl.expand_dims(s, 1)).to(gl.bfloat16))

    src = GluonASTSource(row_kernel, {"X": "*bf16", "Y": "*bf16", "N": "constexpr",
                                      "SPLIT": "constexpr"},
                         constexprs={(2,): N, (3,): ctas > 1})
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_ctas": ctas})


def _one(kind: str, ctas: int) -> None:
    """Compile one variant in this process (a failed MLIR assertion aborts the process)."""
    os.environ.pop("TRITON_INTERPRET", None)
    {"triton": _triton, "gluon": _gluon}[kind](ctas)


def main() -> None:
    if len(sys.argv) == 3:
        _one(sys.argv[1], int(sys.argv[2]))
        return
    import triton
    print(f"triton {triton.__version__}, sm_90, a [1, {N}] bf16 row's sum of squares")
    for kind in ("triton", "gluon"):
        for ctas in (1, 2):
            p = subprocess.run([sys.executable, __file__, kind, str(ctas)],
                               capture_output=True, text=True)
            lines = [ln for ln in (p.stderr + p.stdout).splitlines()
                     if "error" in ln.lower() or "assert" in ln.lower()]
            why = next((ln for ln in lines if "Assertion" in ln), lines[0] if lines else "")
            verdict = "compiles" if p.returncode == 0 else "fails: " + why.strip()[-220:]
            print(f"  {kind:6s} {ctas} CTA{'s' if ctas > 1 else ''} a cluster: {verdict}")


if __name__ == "__main__":
    main()
