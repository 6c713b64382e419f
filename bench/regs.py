"""Registers and spills of the row-loop kernel, compiled for the H200 (sm_90) on any machine.

    python bench/regs.py [--d 16384] [--norm layernorm] [--dtype bf16] [--override JSON]

Triton's wheel ships ptxas, so `triton.compile(..., target=GPUTarget("cuda", 90, 32))` works
without a GPU; `cuobjdump -res-usage` then reads the registers, stack (spills) and shared
memory of `disjoint_block`'s kernel at the launch parameters the rules pick for d (or with
--override, the same keys as strategies._tuning.OVERRIDE).  A spill shows as stack > 0: the
first thing to check before spending device time on a kernel change (docs/PERF_NOTES.md,
version 4).  A probe: the device decides what is fast.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import torch

# Kernels must be defined as compiled functions, not under the interpreter: no
# TRITON_INTERPRET (a test runner may have set it), and a GPU pretended before `strategies`
# decides (it reads both once, at import).
os.environ.pop("TRITON_INTERPRET", None)
torch.cuda.is_available = lambda: True
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from normbench.strategies import _tuning  # noqa: E402
from normbench.strategies.disjoint_block import _disjoint_kernel  # noqa: E402
from normbench.strategies.disjoint_fused import _fused_kernel, reduce_tile  # noqa: E402

TYPES = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32"}


def resources(d: int, norm: str, dtype: str, override: dict | None = None,
              fused_groups: int = 0) -> dict:
    """{'regs', 'stack', 'shared', 'local'} of _disjoint_kernel for one configuration, or of
    disjoint_fused's kernel with its grid-synchronised reduce over `fused_groups` programs."""
    kernel = _fused_kernel if fused_groups else _disjoint_kernel
    p = dict(_tuning.params("disjoint_block", d))
    p.update(override or {})
    if "block_d" in (override or {}):
        p["one_chunk"] = p["block_d"] >= d
    ptr = TYPES[dtype]
    sig = dict(X=ptr, DY=ptr, DX=ptr, W=ptr, Mean="*fp32", Rstd="*fp32", PW="*fp32", PB="*fp32",
               ROWS="i32", N="i32", ROWS_PER_PROG="i32", stride_x="i32", stride_dy="i32",
               stride_dx="i32", DW=ptr, DB=ptr, Counter="*i32")
    consts = dict(HAS_MEAN=norm == "layernorm", BLOCK_R=p["block_r"], BLOCK_D=p["block_d"],
                  ONE_CHUNK=p["one_chunk"], NUM_STAGES=p["num_stages"], PREFETCH=p["prefetch"],
                  RELOAD=p["reload"])
    if fused_groups:
        red_g, red_n = reduce_tile(fused_groups, d)
        consts.update(GRID_SYNC=True, RED_G=red_g, RED_N=red_n)
    names = kernel.arg_names
    sig.update({k: "constexpr" for k in consts})
    sig = {n: sig[n] for n in names}
    # what Triton assumes of aligned tensors and of sizes divisible by 16 (d a multiple of 16)
    attrs = {(names.index(n),): [["tt.divisibility", 16]]
             for n in ("X", "DY", "DX", "W", "Mean", "Rstd", "PW", "PB", "stride_x", "stride_dy",
                       "stride_dx") + (("N",) if d % 16 == 0 else ()) if n in names}
    src = ASTSource(kernel, sig, attrs=attrs,
                    constexprs={(names.index(k),): v for k, v in consts.items()})
    # the options launch_partials passes: num_warps only (the loop's stages are NUM_STAGES;
    # a loop without them gets Triton's default, as at launch)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": p["num_warps"]})
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        out = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True,
                             check=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", out)
    # `shared` is the static shared memory (reductions); `dynamic` what Triton adds at launch
    # (the pipelined loop's stages)
    return dict(regs=int(m[1]), stack=int(m[2]), shared=int(m[3]), local=int(m[4]),
                dynamic=k.metadata.shared,
                **{k: p[k] for k in ("block_r", "num_warps", "num_stages", "prefetch", "reload")})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", type=int, default=16384)
    ap.add_argument("--norm", default="layernorm", choices=["layernorm", "rmsnorm"])
    ap.add_argument("--dtype", default="bf16", choices=list(TYPES))
    ap.add_argument("--override", default="", help='e.g. \'{"reload": false}\'')
    ap.add_argument("--fused", type=int, default=0, metavar="GROUPS",
                    help="disjoint_fused's kernel (grid sync over GROUPS programs) instead")
    a = ap.parse_args()
    print(json.dumps(resources(a.d, a.norm, a.dtype, json.loads(a.override) if a.override else None,
                               a.fused)))


if __name__ == "__main__":
    main()
