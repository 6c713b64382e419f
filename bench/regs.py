"""Registers, spills and code of a strategy's kernel, compiled for the H200 (sm_90) on any machine.

    python bench/regs.py [--name disjoint_block] [--d 16384] [--norm layernorm] [--dtype bf16]
                         [--weight-dtype same] [--override JSON] [--fused GROUPS] [--asm DIR]
    python bench/regs.py --table [--names a,b] [--ds 3072,12288,16384] [--dtypes bf16,fp32]

Triton's wheel ships ptxas, so `triton.compile(..., target=GPUTarget("cuda", 90, 32))` works
without a GPU; `cuobjdump -res-usage` then reads the registers, stack (spills) and shared
memory of a strategy's kernel (the `*_kernel` jit function of its module; disjoint_smem's
Gluon kernel, strategies/_smem_kernel.py, at its rule's stages and warps for contiguous rows)
at the launch parameters its rule picks for d (or with --override, a JSON object of the same
keys as strategies._tuning.OVERRIDE, refused in one line where `_tuning.params` would refuse
it: an unknown key such as "num_warp", a value of the wrong kind, ...).  A spill shows as stack > 0: the first thing to check before
spending device time on a kernel change (docs/PERF_NOTES.md, version 4).  --asm DIR writes the
PTX and SASS too, to compare a refactor's code before and after.  --table prints one line per
(name, norm, d, dtype, weight dtype).  A probe: the device decides what is fast.
"""
from __future__ import annotations

import argparse
import inspect
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from types import SimpleNamespace

import torch

# Kernels must be defined as compiled functions, not under the interpreter: no
# TRITON_INTERPRET (a test runner may have set it), and a GPU pretended before `strategies`
# decides (it reads both once, at import).
os.environ.pop("TRITON_INTERPRET", None)
torch.cuda.is_available = lambda: True
# an H200's compute capability, so that the rules that depend on the GPU's features (the
# staged kernel of disjoint_smem, which disjoint_strided takes above 8192) pick what it runs
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness.model import ITEMSIZE  # noqa: E402
from normbench.strategies import _tuning  # noqa: E402
from normbench.strategies.disjoint_fused import reduce_tile, tail_tile  # noqa: E402

TYPES = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32"}
# kernel argument -> which dtype it carries: the activations', the weight's, fp32, int32
ACT, WEIGHT = ("X", "DY", "DX"), ("W", "DW", "DB")
F32 = ("Mean", "Rstd", "PW", "PB", "AW", "AB")
I32_PTR = ("Locks", "Counter")
ALIGNED = ACT + WEIGHT + F32 + I32_PTR + ("XS", "stride_x", "stride_dy", "stride_dx")
TOOLS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")


def kernel_of(name: str) -> JITFunction:
    """The kernel a strategy launches: the `*_kernel` jit function defined in its module, or
    where it defines none, the one it imports (disjoint_strided runs disjoint_block's)."""
    mod = sys.modules[strategies.get(name).fn.__module__]
    kernels = [v for k, v in vars(mod).items() if isinstance(v, JITFunction) and k.endswith("_kernel")]
    found = [v for v in kernels if v.fn.__module__ == mod.__name__] or kernels
    if len(found) != 1:
        raise SystemExit(f"regs.py: {name}: expected one *_kernel in {mod.__name__}, found {len(found)}")
    return found[0]


def _compile_gluon(kernel, consts: dict, d: int, vec: int, dtype: str, weight_dtype: str,
                   warps: int, f32=F32):
    """A Gluon kernel of the staged strategies compiled for sm_90 at constexprs `consts`:
    its tensors typed from the activations' and the weight's dtypes (`f32`: the fp32 ones),
    the rest i32, and Triton's 16-byte alignment assumed of the tensors and — where they
    divide by 16 — of the width and strides, which these kernels take in units of `vec`
    elements."""
    from triton.experimental.gluon._runtime import GluonASTSource
    act = TYPES[dtype]
    wt = act if weight_dtype == "same" else TYPES[weight_dtype]
    names = kernel.arg_names
    sig = {n: ("constexpr" if n in consts else act if n in ACT else wt if n in WEIGHT
               else "*fp32" if n in f32 else "i32") for n in names}
    units = ("N_V", "stride_x_v", "stride_dy_v", "stride_dx_v") if (d // vec) % 16 == 0 else ()
    attrs = {(names.index(n),): [["tt.divisibility", 16]]
             for n in ACT + WEIGHT[:1] + tuple(n for n in f32 if n in names) + units}
    src = GluonASTSource(kernel, sig, attrs=attrs,
                         constexprs={(names.index(k),): v for k, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})


def compile_smem(d: int, norm: str, dtype: str, weight_dtype: str = "same",
                 override: dict | None = None):
    """disjoint_smem's Gluon kernel (strategies/_smem_kernel.py) at its rule's parameters for
    contiguous, 16-byte aligned rows on an H200 (227 KB of shared memory a program)."""
    from normbench.strategies import disjoint_smem
    from normbench.strategies._smem_kernel import smem_kernel
    p = _tuning.overridden(disjoint_smem._rule(d), override or {}, d)
    elem = 4 if dtype == "fp32" else 2
    w_elem = elem if weight_dtype == "same" else (4 if weight_dtype == "fp32" else 2)
    m = disjoint_smem.launch_meta(p, d, elem, w_elem, 227 * 1024, ln=norm == "layernorm",
                                  bf16=dtype == "bf16")
    vec, st = m.vec, m.stages
    p["num_warps"] = m.warps
    if not vec:
        raise SystemExit(f"regs.py: disjoint_smem does not stage d = {d} {dtype}: it runs "
                         "disjoint_block's kernel there")
    # the constexprs the strategy launches it with (kernel_args' meta), for a call of
    # contiguous rows: only its sizes matter there
    call = SimpleNamespace(rows=1, d=d, strides=(d, d, d), has_mean=norm == "layernorm")
    _, meta = disjoint_smem.kernel_args(call, 1, m, bool(p.get("interleave")), bool(p.get("pdl")))
    consts = {k: v for k, v in meta.items() if k != "num_warps"}
    k = _compile_gluon(smem_kernel, consts, d, vec, dtype, weight_dtype, p["num_warps"],
                       f32=("Mean", "Rstd", "PW", "PB"))
    return k, {**p, "num_stages": st, "block_r": 1, "prefetch": False, "reload": False,
               "w_tile": False, "vec": vec, "block_d": m.block_d, "block_d2": m.block_d2,
               "halves": m.halves, "w_regs": m.w_regs, "pairs": m.pairs, "fma": m.fma,
               "sectors": m.sectors, "l2_ahead": m.l2_ahead}


def compile_cluster(d: int, norm: str, dtype: str, weight_dtype: str = "same",
                    override: dict | None = None):
    """disjoint_cluster's Gluon kernel (strategies/_cluster_kernel.py) at its rule's plan for
    contiguous, 16-byte aligned rows on an H200: compiled as one CTA, as it is launched
    (disjoint_cluster.launch_clusters makes the clusters)."""
    from normbench.strategies import disjoint_cluster
    from normbench.strategies._cluster_kernel import cluster_kernel, layouts
    p = _tuning.overridden(disjoint_cluster._rule(d), override or {}, d)
    elem = ITEMSIZE[dtype]
    w_elem = elem if weight_dtype == "same" else ITEMSIZE[weight_dtype]
    m = disjoint_cluster.plan(p, d, elem, w_elem, 227 * 1024)
    if not m.half:
        raise SystemExit(f"regs.py: disjoint_cluster does not split d = {d} {dtype}: "
                         "disjoint_strided runs there")
    lay, flat = layouts(m.vec, m.warps)
    consts = dict(HAS_MEAN=norm == "layernorm", HALF=m.half, VEC=m.vec, STAGES=m.stages,
                  PDL=bool(p.get("pdl")), layout=lay, flat=flat)
    k = _compile_gluon(cluster_kernel, consts, d, m.vec, dtype, weight_dtype, m.warps,
                       f32=("Mean", "Rstd", "PW", "PB", "XS"))
    return k, {**p, "num_warps": m.warps, "num_stages": m.stages, "block_d": m.half,
               "block_r": 1, "prefetch": False, "reload": False, "w_tile": False, "vec": m.vec}


def compile_kernel(name: str, d: int, norm: str, dtype: str, weight_dtype: str = "same",
                   override: dict | None = None, fused_groups: int = 0):
    """The compiled kernel of strategy `name` and the launch parameters it was compiled at."""
    if name == "disjoint_smem":
        return compile_smem(d, norm, dtype, weight_dtype, override)
    if name == "disjoint_cluster":
        return compile_cluster(d, norm, dtype, weight_dtype, override)
    # a strategy that runs disjoint_smem's staged kernel at some widths says where, and at which
    # parameters, by a module-level staged_params(d, elem) (disjoint_strided: rows wider than
    # 8192, and fp32 rows of 7168-8192 since round 30): that kernel, the override over them
    mod = sys.modules[strategies.get(name).fn.__module__]
    staged = getattr(mod, "staged_params", None)
    own = staged(d, ITEMSIZE[dtype]) if staged else None
    if own is not None:
        return compile_smem(d, norm, dtype, weight_dtype,
                            _tuning.overridden(own, override or {}, d))
    kernel = kernel_of(name)
    p = _tuning.overridden(strategies.get(name).params(d), override or {}, d)
    # the warps the launch takes (disjoint_strided: LayerNorm's own at some widths)
    # and the stages (fp32 activations: `fp32_stages` where the rule sets it)
    p = {**p, "num_warps": _tuning.row_loop_warps(p, norm == "layernorm", ITEMSIZE[dtype]),
         "num_stages": _tuning.row_loop_stages(p, ITEMSIZE[dtype])}
    act = TYPES[dtype]
    wt = act if weight_dtype == "same" else TYPES[weight_dtype]
    names = kernel.arg_names
    consts = dict(HAS_MEAN=norm == "layernorm", BLOCK_R=p["block_r"], BLOCK_D=p["block_d"],
                  ONE_CHUNK=p["one_chunk"], NUM_STAGES=p["num_stages"], PREFETCH=p["prefetch"],
                  RELOAD=p["reload"], W_TILE=p["w_tile"], COL_SPLIT=p.get("col_split", 1),
                  EXCHANGE=p.get("exchange", False), SPIN=p.get("spin", _tuning.EXCHANGE_SPIN),
                  L2_AHEAD=p.get("l2_ahead", 0), PDL=bool(p.get("pdl")),
                  INTERLEAVE=bool(p.get("interleave")))
    if "GRID_SYNC" in names:
        # the grid sync at fused_groups programs, or with an override's `tail` the last K
        # programs' reduce (at fused_groups, else 132 programs: as many partial rows as the
        # launch has, col_split programs sharing each), else the ticket path
        programs = fused_groups or 132
        tail = min(int(p.get("tail") or 0), programs)
        sync = bool(fused_groups) and not tail
        red_g, red_n = (reduce_tile(fused_groups, d) if sync
                        else tail_tile(tail, programs // p.get("col_split", 1), d,
                                       p["num_warps"]) if tail
                        else (1, 1))
        consts.update(GRID_SYNC=sync, TAIL=tail, RED_G=red_g, RED_N=red_n)
    consts = {k: v for k, v in consts.items() if k in names}
    for prm in kernel.params:      # a constexpr left at its default (reduce's WIDE): as launched
        unset = prm.default is inspect.Parameter.empty
        if prm.is_constexpr and prm.name not in consts and not unset:
            consts[prm.name] = prm.default
    sig = {}
    for n in names:
        sig[n] = ("constexpr" if n in consts else act if n in ACT else wt if n in WEIGHT
                  else "*fp32" if n in F32 else "*i32" if n in I32_PTR
                  else "*i64" if n == "XS" else "i32")
    # what Triton assumes of aligned tensors and of sizes divisible by 16 (d a multiple of 16)
    attrs = {(names.index(n),): [["tt.divisibility", 16]]
             for n in ALIGNED + (("N",) if d % 16 == 0 else ()) if n in names}
    src = ASTSource(kernel, sig, attrs=attrs,
                    constexprs={(names.index(k),): v for k, v in consts.items()})
    # the options the strategies' launches pass: num_warps only (the row loop's stages are
    # NUM_STAGES; a loop without them gets Triton's default, as at launch)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": p["num_warps"]})
    return k, p


# each SASS line's opcode (after its address comment and predicate): the line's whitespace
# matched once — `^\s*(?:/\*…\*/)?\s+`, the same matches, tried every split of each run of
# spaces between its \s* and \s+ (half a second a kernel, most of a call's own time)
_OPCODE = re.compile(r"^(?:\s*/\*[0-9a-f]+\*/\s+|\s+)(?:@!?U?P[0-9T] )?([A-Z][A-Z0-9_]*)[.\s]", re.M)


def _cuobjdump(cubin: bytes, flag: str) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([os.path.join(TOOLS, "cuobjdump"), flag, f.name], capture_output=True,
                              text=True, check=True).stdout


def resources(d: int, norm: str, dtype: str, override: dict | None = None,
              fused_groups: int = 0, name: str | None = None, weight_dtype: str = "same",
              asm_dir: str | None = None) -> dict:
    """{'regs', 'stack', 'shared', 'local', 'dynamic', ...} of strategy `name`'s kernel
    (default disjoint_block's, or disjoint_fused's with its grid-synchronised reduce over
    `fused_groups` programs) for one configuration."""
    name = name or ("disjoint_fused" if fused_groups else "disjoint_block")
    k, p = compile_kernel(name, d, norm, dtype, weight_dtype, override, fused_groups)
    out = _cuobjdump(k.asm["cubin"], "-res-usage")
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", out)
    sass = _cuobjdump(k.asm["cubin"], "-sass")
    if asm_dir:
        os.makedirs(asm_dir, exist_ok=True)
        stem = os.path.join(asm_dir, f"{name}-{norm}-{d}-{dtype}-{weight_dtype}")
        with open(stem + ".ptx", "w") as f:
            f.write(k.asm["ptx"])
        with open(stem + ".sass", "w") as f:
            # the SASS without addresses and the cubin's name: comparable between two builds
            f.write("\n".join(re.sub(r"/\*[0-9a-f]{4,}\*/", "", ln) for ln in sass.splitlines()
                              if "Function" in ln or "/*" in ln))
    # `shared` is the static shared memory (reductions); `dynamic` what Triton adds at launch
    # (the pipelined loop's stages); `ldg`/`ldgsts`/`stl`: global loads, cp.async, spill stores;
    # `lds`/`lds128`: shared-memory loads, all and 16-byte ones (disjoint_smem's staged rows);
    # `pf2`: L2 prefetches (l2_ahead: UBLKPF, bulk; CCTL.E.PF2, a line); `preexit`: the
    # `pdl` option's griddepcontrol.launch_dependents; `instrs`, `prmt`, `fadd`: the SASS's
    # instructions, all of them and two kinds (bf16_pairs leaves no PRMT to widen bf16,
    # xhat_fma leaves LayerNorm's x̂ without its FADD); `shfl`: warp shuffles (full_sectors'
    # trade within each warp); `sectors`: the Launch's (0, 1 by shuffles, 2 through shared memory)
    ops = _OPCODE.findall(sass)
    return dict(name=name, regs=int(m[1]), stack=int(m[2]), shared=int(m[3]), local=int(m[4]),
                dynamic=k.metadata.shared, ldg=len(re.findall(r"\bLDG\.", sass)),
                ldgsts=len(re.findall(r"\bLDGSTS\b", sass)), stl=len(re.findall(r"\bSTL\b", sass)),
                lds=len(re.findall(r"\bLDS\b", sass)), lds128=len(re.findall(r"\bLDS\.128\b", sass)),
                bar=len(re.findall(r"\bBAR\.", sass)),
                pf2=len(re.findall(r"\bCCTL\.E\.PF2\b|\bUBLKPF\b", sass)),
                preexit=len(re.findall(r"\bPREEXIT\b", sass)), instrs=len(ops),
                prmt=ops.count("PRMT"), fadd=ops.count("FADD"), shfl=ops.count("SHFL"),
                cluster_bar=len(re.findall(r"\bUCGABAR_ARV\b|\bCGABAR\.ARV\b|\bUCGABAR_WAIT\b|\bCGABAR", sass)),
                block_d2=p.get("block_d2", 0), halves=bool(p.get("halves")),
                w_regs=bool(p.get("w_regs")), bf16_pairs=bool(p.get("pairs")),
                xhat_fma=bool(p.get("fma")), sectors=int(p.get("sectors") or 0),
                l2_ahead=int(p.get("l2_ahead") or 0),
                **{k: p[k] for k in ("block_d", "block_r", "num_warps", "num_stages", "prefetch",
                                     "reload", "w_tile")})


def table(names, ds, norms, dtypes, weight_dtypes, override, asm_dir=None) -> None:
    """One JSON line per configuration (what docs/PERF_NOTES.md's register tables are made of)."""
    for name, d, norm, dt, wd in itertools.product(names, ds, norms, dtypes, weight_dtypes):
        if dt == "fp32" and wd != "same":
            continue
        r = resources(d, norm, dt, override, name=name, weight_dtype=wd,
                      fused_groups=132, asm_dir=asm_dir)   # a grid sync, where the kernel has one
        print(json.dumps(dict(norm=norm, d=d, dtype=dt, weight_dtype=wd, **r)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default=None, help="strategy (default disjoint_block)")
    ap.add_argument("--d", type=int, default=16384)
    ap.add_argument("--norm", default="layernorm", choices=["layernorm", "rmsnorm"])
    ap.add_argument("--dtype", default="bf16", choices=list(TYPES))
    ap.add_argument("--weight-dtype", default="same", choices=["same", *TYPES])
    ap.add_argument("--override", default="", help='e.g. \'{"reload": false}\'')
    ap.add_argument("--fused", type=int, default=0, metavar="GROUPS",
                    help="disjoint_fused's kernel (grid sync over GROUPS programs; with "
                         "an override's \"tail\" its last K programs' reduce) instead")
    ap.add_argument("--asm", default=None, metavar="DIR", help="also write PTX and SASS there")
    ap.add_argument("--table", action="store_true", help="every combination of the lists below")
    ap.add_argument("--names", default="disjoint_block")
    ap.add_argument("--ds", default="3072,4096,7168,8192,12288,16384")
    ap.add_argument("--norms", default="layernorm,rmsnorm")
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--weight-dtypes", default="same,fp32")
    a = ap.parse_args()
    if a.table:
        names = a.names.split(",")
        try:
            ds = [int(x) for x in a.ds.split(",")]
        except ValueError:
            ap.error(f"--ds: {a.ds!r} is not a comma-separated list of widths")
    else:
        names, ds = [a.name or ("disjoint_fused" if a.fused else "disjoint_block")], [a.d]
    ov = checked_override(ap, a.override, names, ds)
    if a.table:
        return table(names, ds, a.norms.split(","),
                     a.dtypes.split(","), a.weight_dtypes.split(","), ov, a.asm)
    print(json.dumps(resources(a.d, a.norm, a.dtype, ov, a.fused, a.name, a.weight_dtype, a.asm)))


def checked_override(ap, text: str, names: list, ds: list) -> dict | None:
    """--override's JSON object, refused (ap.error: one line, exit 2) where the tuning path
    would refuse it — `_tuning.params`' checks (`_tuning._checked`: an unknown key such as
    "num_warp", a value of the wrong kind, ...) for each strategy and width asked for — or
    where it is not JSON or not an object.  The names must be strategies with a launch rule."""
    for name in names:
        if name not in _tuning.RULES:
            ap.error(f"--name(s): {name!r} is not a strategy with a launch rule (known: "
                     f"{', '.join(sorted(_tuning.RULES))})")
    if not text:
        return None
    try:
        ov = json.loads(text)
    except ValueError as e:
        ap.error(f"--override: not JSON ({e})")
    if not isinstance(ov, dict):
        ap.error(f"--override: {text!r} is not a JSON object of tuning options")
    for name, d in itertools.product(names, ds):
        try:
            _tuning._checked(name, d, ov)
        except (ValueError, TypeError) as e:
            ap.error(f"--override: {' '.join(str(e).split())}")
    return ov


if __name__ == "__main__":
    main()
