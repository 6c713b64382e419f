"""Measure one (case, implementation): correctness, determinism, time, bandwidth → one record.

Order of work, and why:
  1. skip (with the reason) what cannot run: an unavailable implementation, a case larger
     than the free device memory — decided before anything is launched, once the previous
     case's inputs are dropped (memory PyTorch caches unused counts as free), so that a case
     that fits alone is measured whatever ran before it;
  2. correctness against the fp64 reference (harness.inputs.reference) on inputs drawn from
     the sweep's seed and the case, identical for every implementation of a case: each
     implementation gets its own copies, compared bit for bit with the originals after its
     first call, after the repeats and after timing — an implementation that writes into its
     inputs is recorded as an error, and cannot poison the others;
  3. determinism: `repeats` calls in all on the same inputs (the first and `repeats` − 1
     more), every output compared bit for bit with the distinct results seen so far (no
     hashes: an exact comparison); each new result is judged against the reference too;
  4. time: every call is timed whole — argument checks, output and workspace allocation, the
     zeroing of workspaces and locks, every kernel including the reduce — because a user pays
     all of it on every call (`time_ms`, do_bench); the last timed call's output, once timing
     is over, goes through step 3's comparison (and, if new, the reference), the only one of
     the warm-up and timed calls checked (checking each would add to the time): a last timed
     call gone wrong makes the record incorrect and not deterministic; one wrong only in
     earlier timed calls is not seen (`distinct_results` may reach `repeats` + 1;
     `last_call_compared` True says so, where records from before it compared the repeats only);
     a last timed call whose output is not the contract's (`_malformed`) makes the record an
     error that keeps the samples, its verdict (`deterministic`, `distinct_results`) empty as
     a malformed repeat leaves it: that output can be neither compared nor judged;
  5. GPU time (harness.timing.gpu_time): the same call replayed from a CUDA graph, so that the
     samples hold only the time its kernels keep the GPU busy (`gpu_time_ms`);
     `host_overhead_ms` = time_ms − gpu_time_ms.  Empty without a GPU, with the reason.
The first call (step 2) compiles whatever the implementation compiles; its wall time is
`compile_s`, and it is never a timed sample.  An implementation may name the path it takes for
the inputs (`entry.fn.notes(x, dy, w, mean, rstd)` → the `notes` column; a notes() that
raises is the record's error, "its notes(): …", as one of its declared rules — auto_groups,
max_groups, workspace, writers — that raises is "its workspace rule raised …"); one that
raises NotImplementedError on the first call does not take this combination: `skipped`, with
why.
NaN/Inf: every output of the first call and of every repeat is checked, and the output of
the last timed call (checking or comparing each timed call would add to the time measured).
Fresh outputs: a call that returns an output in the storage of one of its inputs (weight as
dγ), or a repeat or the last timed call that returns one in the storage of one of the first
call's outputs or of the call's just before it (both still held while it runs), is an error
once measured — the caller's input, or its earlier gradients,
would be overwritten, and output allocation, part of every call, would be missing from the time.
A failure at any step becomes the record's status and error text; nothing is raised — not
for a plugin's SystemExit or other BaseException either (only SIGINT/SIGTERM stop a sweep).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from datetime import datetime, timezone

import torch

from normbench import strategies
from normbench.harness import isolate, model, timing
from normbench.harness.inputs import errors, make_inputs, output_tolerances, reference
from normbench.harness.interrupt import reraise_if_interrupted
from normbench.harness.plan import Case
from normbench.harness.cells import is_missing
from normbench.harness.records_io import fit
from normbench.harness.schema import SHOWN, case_id, tolerance_of
from normbench.harness.text import describe_exception


@dataclass(frozen=True)
class Settings:
    warmup_ms: float
    rep_ms: float
    repeats: int
    seed: int
    peak_tbps: float | None
    copy_gbps: float | None
    device_name: str


_cache: dict = {}   # the inputs and reference of the last case (copied for each implementation)
_INPUT_NAMES = ("x", "dy", "weight", "mean", "rstd")


def _inputs_key(case: Case, s: Settings) -> tuple:
    """What a case's inputs and reference depend on: the implementations of one case share them."""
    return (case.norm, case.rows, case.d, case.dtype, case.weight_dtype, s.seed)


def _case_inputs(case: Case, s: Settings, device):
    key = _inputs_key(case, s)
    if _cache.get("key") != key:
        _cache.clear()
        inputs = make_inputs(case.norm, case.rows, case.d, case.dtype, case.weight_dtype,
                             seed=_stable_seed(key), device=device)
        _cache.update(key=key, inputs=inputs, ref=reference(*inputs))
    return _cache["inputs"], _cache["ref"]


def _stable_seed(key) -> int:
    """A seed that depends only on the case and the sweep seed (not on PYTHONHASHSEED)."""
    import hashlib
    return int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:4], "little")


def _bytes_needed(case: Case, ws: int, held: bool = False) -> int:
    n = case.rows * case.d
    act = model.ITEMSIZE[case.dtype]
    # while the fp64 reference is computed: the pristine x and dy, and the reference's seven
    # n-element fp64 temporaries at their peak (measured); then: x and dy, the copies each
    # implementation gets, the first dx (kept for the GPU timer), its copy for the comparison
    # of the repeats and the last timed call, a repeat's dx and the previous repeat's (held
    # until it returns; while timed: the last timed call's dx and the next one's; in the GPU
    # timer: the graph's and a warm-up call's), the reference's dx
    steady = 8 * n * act + n * 8 + ws
    if held:    # the case's inputs and reference are held already: no reference to compute,
        return steady - (2 * n * act + n * 8)      # and x, dy and its dx are not new
    return max(2 * n * act + 7 * n * 8, steady)


def memory_shortfall(case: Case, workspace_bytes: int, free_bytes: int,
                     held: bool = False, where: str = "device") -> str | None:
    """Why a case cannot fit in `free_bytes` of device memory (`where`: "host" for CPU
    tensors), or None if it can; `held`: its inputs and fp64 reference are already held (by an
    earlier implementation of the case), so only the rest is needed.

    Decided before launch, so that a case too large becomes a `skipped` record rather than an
    out-of-memory failure halfway through (10 % of the free memory is kept as a margin)."""
    need = _bytes_needed(case, workspace_bytes, held)
    if need <= 0.9 * free_bytes:
        return None
    more = " more than its inputs and reference, held already" if held else ""
    return (f"needs about {need / 2**30:.1f} GiB of {where} memory{more}, "
            f"{free_bytes / 2**30:.1f} GiB free")


def host_available() -> int | None:
    """Bytes of host memory a case may still take, or None where this cannot be read: Linux's
    MemAvailable (free memory and what the kernel can reclaim), and under a cgroup v2 memory
    limit (a container's) that limit less the group's use, whichever is less."""
    avail = []
    try:
        with open("/proc/meminfo") as f:
            avail += [int(line.split()[1]) * 1024 for line in f
                      if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        cg = Path("/sys/fs/cgroup")
        limit = (cg / "memory.max").read_text().strip()
        if limit != "max":
            avail.append(max(0, int(limit) - int((cg / "memory.current").read_text())))
    except (OSError, ValueError):
        pass
    return min(avail) if avail else None


def _shortfall(case: Case, s: Settings, workspace_bytes: int, device) -> str | None:
    """memory_shortfall where the case runs, the same whatever case ran before: another case's
    inputs and reference are dropped first, and this case's, if held, are not counted again.
    On the current CUDA device the memory PyTorch caches is returned to the device first, and
    what it holds cached but unallocated counts as free (its allocator reuses it).  On CPU
    tensors (the interpreter's) the host's available memory (host_available; no check where
    it cannot be read): a case larger than that was an allocation error at best, and where
    the kernel overcommits, the process killed as the tensors were filled — the sweep with it."""
    held = _cache.get("key") == _inputs_key(case, s)
    if not held:
        _cache.clear()
    if device.type == "cpu":
        free = host_available()
        return None if free is None else memory_shortfall(case, workspace_bytes, free, held,
                                                          "host")
    if not held:
        torch.cuda.empty_cache()
    free = torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved() \
        - torch.cuda.memory_allocated()
    return memory_shortfall(case, workspace_bytes, free, held)


def _nonfinite(outputs) -> list[str]:
    """Names of the outputs holding a NaN or Inf, as errors show them (dx, dγ, dβ)."""
    return [SHOWN["err_" + k] for k, o in zip(_OUTPUTS, outputs)
            if o is not None and not bool(torch.isfinite(o).all())]


def _storage(t):
    """Where a tensor's storage starts (None for no tensor, or an empty one: it holds none)."""
    return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and \
        t.untyped_storage().nbytes() else None


def _reused(out, earlier) -> list[str]:
    """Names of the outputs held in the storage of an output of `earlier` (an earlier call's
    result, still held): a caller that keeps that result (gradient accumulation) finds it
    overwritten, and the call's time leaves out the allocation of its outputs."""
    held = {_storage(t) for t in earlier} - {None}
    return [SHOWN["err_" + k] for k, o in zip(_OUTPUTS, out) if _storage(o) in held]


def _in_inputs(out, inputs) -> list[str]:
    """"dγ in weight's storage" for each output held in the storage of one of the call's
    inputs (the input itself or a view of it): the caller's gradient is its input, and
    whatever it does to the one it does to the other."""
    where = {}
    for n, t in zip(_INPUT_NAMES, inputs):
        where.setdefault(_storage(t), n)
    where.pop(None, None)
    return [f"{SHOWN['err_' + k]} in {where[_storage(o)]}'s storage"
            for k, o in zip(_OUTPUTS, out) if _storage(o) in where]


def _modified(work, pristine) -> list[str]:
    """Names of the inputs whose bits differ from the originals."""
    return [n for n, a, b in zip(_INPUT_NAMES, work, pristine)
            if b is not None and not same_bits(a, b)]


def same_bits(a, b) -> bool:
    """Whether two tensors (or Nones) are the same bits: shape, dtype and every byte."""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def base_record(case: Case, s: Settings) -> dict:
    """The fields of a record known before anything runs."""
    rec = dict(asdict(case))
    rec.update(case_id=case_id(rec), status="ok", error="", device=s.device_name, seed=s.seed,
               started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               timer="cpu_wall" if strategies.interpreted() else "cuda_event",
               repeats=s.repeats,
               bytes_moved=model.bytes_moved(case.norm, case.rows, case.d, case.dtype,
                                             case.weight_dtype))
    rec["tolerance"], rec["tolerance_dw"] = output_tolerances(case.dtype, case.weight_dtype)
    if case.implementation in strategies.known():
        entry = strategies.get(case.implementation)
        rec.update(kind=entry.kind, deterministic_by_design=entry.deterministic_by_design)
    return rec


_OUTPUTS = ("dx", "dw", "db")


# What each output tensor must match, in the order checked: (how the error words it, the
# output's value, what it must be for (dx, dγ, dβ) given x and the weight)
_FORM = (("of shape", lambda t: tuple(t.shape),
          lambda x, w: (tuple(x.shape), tuple(w.shape), tuple(w.shape))),
         ("as", lambda t: t.dtype, lambda x, w: (x.dtype, w.dtype, w.dtype)),
         ("on", lambda t: t.device, lambda x, w: (x.device,) * 3))


def _malformed(out, x, w, has_bias: bool = True) -> str:
    """Why the outputs are not the contract's: the tuple (dx, dγ, dβ) — dβ a tensor for
    LayerNorm, None for RMSNorm — dx of x's shape and dtype, dγ, dβ of the weight's (an output
    in a narrower dtype would be judged, and credited bytes, as one it is not), every one on
    x's device (one on another would be judged there, and its copy never timed)."""
    if not isinstance(out, (tuple, list)):
        return f"returned {type(out).__name__}, not the tuple (dx, dγ, dβ)"
    if len(out) != 3:
        return f"returned {len(out)} outputs, not 3 (dx, dγ, dβ)"
    for k, o, need in zip(_OUTPUTS, out, (True, True, has_bias)):
        if need and not isinstance(o, torch.Tensor):
            return f"returned {SHOWN['err_' + k]} as {type(o).__name__}, not a tensor"
        if not need and o is not None:
            return f"returned {SHOWN['err_' + k]} for RMSNorm, which has none (expected None)"
    for words, got, want in _FORM:
        bad = [f"{SHOWN['err_' + k]} {words} {got(o)} (expected {t})"
               for k, o, t in zip(_OUTPUTS, out, want(x, w))
               if isinstance(o, torch.Tensor) and got(o) != t]
        if bad:
            return "returned " + ", ".join(bad)
    return ""


class _Distinct:
    """The distinct results of repeated calls, each output kept once per distinct value (an
    atomic sum's dγ differs from call to call, its dx does not: one copy of dx, not one a
    result — the memory check counts one).  Copies: an implementation that returns the same
    buffers every call would otherwise be compared with itself."""

    def __init__(self):
        self.kept: list[list] = []      # per output: its distinct values
        self.results: set[tuple] = set()    # a result: which kept value each output is

    def add(self, out) -> bool:
        """Whether out is a result not seen before."""
        key = []
        for k, o in enumerate(out):
            if k == len(self.kept):
                self.kept.append([])
            kept = self.kept[k]
            j = next((j for j, seen in enumerate(kept) if same_bits(o, seen)), None)
            if j is None:
                kept.append(o.clone() if isinstance(o, torch.Tensor) else o)
                j = len(kept) - 1
            key.append(j)
        new = tuple(key) not in self.results
        self.results.add(tuple(key))
        return new

    def verdict(self, rec: dict) -> None:
        """The record's distinct_results and deterministic, from the results seen so far."""
        rec["distinct_results"] = len(self.results)
        rec["deterministic"] = len(self.results) == 1


def _judge(rec: dict, out, ref) -> None:
    """Fold one result's errors against the fp64 reference into the record: the worst error
    of each output so far, and `correct` only while every output of every result judged is
    within its own tolerance (dx: `tolerance`, dγ/dβ: `tolerance_dw`)."""
    ok = rec.get("correct", True)
    for k, e in zip(_OUTPUTS, errors(out, ref)):
        if e is None:
            continue
        prev = rec.get(f"err_{k}")
        rec[f"err_{k}"] = e if prev is None else max(prev, e)
        ok = ok and e <= tolerance_of(rec, f"err_{k}")
    rec["correct"] = bool(ok)
    rec["max_rel_err"] = max(v for v in (rec.get(f"err_{k}") for k in _OUTPUTS) if v is not None)


def failed_record(case: Case, s: Settings, status: str, error: str, duration_s: float,
                  partial: dict | None = None) -> dict:
    """A record for a case that never produced one itself (timeout, crashed worker).
    partial: the record as its measuring worker had it when the case hung or crashed (the
    last `progress`): what was measured before is kept, as a failure in this process keeps it."""
    rec = dict(partial) if isinstance(partial, dict) else base_record(case, s)
    rec.update(status=status, error=error, duration_s=duration_s)
    return rec


def _so_far(rec: dict) -> None:
    """In an isolate or cluster worker: send the record measured so far to the parent
    (isolate.progress, which pickles it as it sends it: no copy is needed), so that a hang
    or a crash later in the case loses none of it."""
    isolate.progress(rec)


# The least value a contention model can give: every partial row and every dγ slot has a
# writer; a workspace is 0 bytes or more.  Notes (text) have no least value.
_MODEL_LEAST = {"groups_effective": 1, "writers_per_slot": 1, "workspace_bytes": 0}


def model_value(col: str, source: str, value):
    """value, as the record's column col holds it (None for a missing one, as the rest of a
    record in the making has it); ValueError naming the function that gave it and the value,
    for one the column cannot hold (a float, inf, text) or one no call can have (NaN, a
    workspace of -5 bytes, 0 writers).  The one check of a plugin's model values: the
    records' (here) and the report's what-if widget's (harness/report/widget.py)."""
    try:
        v = fit(col, value)
    except ValueError as e:
        raise ValueError(f"its {source}(): {e}") from None
    least = _MODEL_LEAST.get(col)
    if least is None:
        return None if is_missing(v) else v
    if value is None:               # no model (writers of a baseline that has none)
        return None
    if is_missing(v) or v < least:  # NaN is no count of writers or bytes either
        shown = value if is_missing(v) else v
        raise ValueError(f"its {source}(): column {col!r} cannot hold {shown!r}: it takes "
                         f"an int >= {least}")
    return v


def measure(case: Case, s: Settings) -> dict:
    """The record for one (case, implementation); never raises for a failure of the case."""
    t_start = time.perf_counter()
    entry = strategies.get(case.implementation)
    groups = case.groups_arg if case.groups_arg != "auto" else None
    rec = base_record(case, s)
    has_bias = case.norm == "layernorm"
    nbytes = rec["bytes_moved"]
    device = strategies.default_device()

    def done(status: str, error: str = ""):
        rec.update(status=status, error=error, duration_s=time.perf_counter() - t_start)
        return rec

    if not entry.available:
        return done("skipped", entry.reason)
    try:
        # a value its column cannot hold (writers as rows / groups, a float) is this case's
        # error here, not the store's when the record is kept (that would stop the sweep)
        geff = entry.effective_groups(case.rows, case.d, groups, device)
        rec["groups_effective"] = model_value("groups_effective", "effective_groups", geff)
        # the models get geff as the API gives it (None where GROUPS is unused), not as a record
        # holds it (pd.NA)
        rec["workspace_bytes"] = model_value("workspace_bytes", "workspace", entry.workspace_at(
            case.rows, case.d, geff, has_bias, case.weight_dtype))
        rec["writers_per_slot"] = model_value(
            "writers_per_slot", "writers", entry.writers_at(case.rows, geff))
    except BaseException as e:  # a plugin's model function may fail too
        reraise_if_interrupted(e)
        return done("error", _failure(e))

    if device.type in ("cuda", "cpu"):
        ws = rec["workspace_bytes"]
        ws = 0 if is_missing(ws) else ws
        short = _shortfall(case, s, ws, device)
        if short:
            return done("skipped", short)
    try:
        return _measure(case, s, entry, groups, rec, device, nbytes, done)
    except torch.cuda.OutOfMemoryError as e:
        _cache.clear()
        torch.cuda.empty_cache()
        return done("error", "out of memory: " + describe_exception(e))
    except BaseException as e:    # SystemExit, GeneratorExit ... from a plugin: its failure
        reraise_if_interrupted(e)
        return done("error", _failure(e))


def _failure(e: BaseException) -> str:
    """A case's error text for `e`: "its workspace rule raised ZeroDivisionError: …" where one
    of the entry's declared rules raised it (as a failing notes() is "its notes(): …"), else
    the exception alone."""
    rule = strategies.rule_raised(e)
    return f"its {rule} rule raised {describe_exception(e)}" if rule else describe_exception(e)


def _measure(case, s, entry, groups, rec, device, nbytes, done):
    on_gpu = device.type == "cuda"
    pristine, ref = _case_inputs(case, s, device)
    work = [t.clone() if t is not None else None for t in pristine]   # this implementation's
    x, dy, w, mean, rstd = work

    def call():
        return entry.backward(x, dy, w, mean, rstd, groups=groups)

    def inputs_changed(when: str):
        changed = _modified(work, pristine)
        return done("error", f"modified its inputs ({', '.join(changed)}) {when}") if changed else None

    # 1. correctness; the first call also compiles what it needs (its wall time: compile_s)
    t0 = time.perf_counter()
    try:
        first = call()
        if on_gpu:
            torch.cuda.synchronize()
    except NotImplementedError as e:     # the implementation does not take this combination
        rec["notes"] = describe_exception(e)
        return done("skipped", describe_exception(e))
    rec["compile_s"] = time.perf_counter() - t0
    notes = getattr(entry.fn, "notes", None)
    if notes is not None:
        try:
            said = notes(x, dy, w, mean, rstd)
        except BaseException as e:      # the record says whose failure it was
            reraise_if_interrupted(e)
            return done("error", f"its notes(): {describe_exception(e)}")
        rec["notes"] = model_value("notes", "notes", said)
    if wrong := _malformed(first, x, w, mean is not None):
        return done("error", wrong)
    _judge(rec, first, ref)
    _so_far(rec)
    nonfinite = [f"{k} of the first call" for k in _nonfinite(first)]
    if bad := inputs_changed("in its first call"):
        return bad

    # 2. determinism: bitwise, against every distinct result seen so far; each new result is
    #    judged against the reference too (the worst error is kept): a call that drifts from
    #    the first one's answer (a stale workspace, a lost update) is not correct
    distinct = _Distinct()
    distinct.add(first)
    reused = []      # why an output was not fresh: in an input's storage, or an earlier call's

    def check_reuse(out, where: str, earlier=()):
        """`earlier`: (whose, outputs) of the calls whose outputs were held while `out`'s call
        ran — the first call's, and the one just before it — so none of its fresh outputs can
        have been allocated in their storage."""
        if reused:
            return
        if held := _in_inputs(out, work):       # the input itself: the first thing to say
            reused.append(f"returns {', '.join(held)} ({where}): a caller that changes the "
                          "gradient changes its input")
            return
        for whose, outputs in earlier:
            if names := _reused(out, outputs):
                reused.append(f"returns {', '.join(names)} in {whose} output storage again "
                              f"({where}): a caller's earlier gradients are overwritten")
                return

    check_reuse(first, "its first call")

    # the previous repeat's outputs are held until the next call returns: a call that returns
    # the storage of the one before it (one kept set of buffers filled in place from the second
    # call on, as a CUDA-graph replay does) is seen, as one returning the first call's is
    prev = None
    for i in range(s.repeats - 1):
        out = call()
        if wrong := _malformed(out, x, w, mean is not None):
            return done("error", f"repeat {i + 2}: {wrong}")
        nonfinite += [f"{k} of repeat {i + 2}" for k in _nonfinite(out)]
        check_reuse(out, f"repeat {i + 2}", [("its first call's", first)]
                    + ([(f"repeat {i + 1}'s", prev)] if prev is not None else []))
        if distinct.add(out):
            _judge(rec, out, ref)
        prev = out
        del out
    del prev
    distinct.verdict(rec)
    _so_far(rec)
    if bad := inputs_changed("in its repeated calls"):
        return bad

    # 3. time. The last timed call's output is kept and, once timing is over, checked as a
    #    repeat's is: NaN/Inf, and compared bit for bit with the distinct results (new bits are
    #    judged against the reference) — a call that keeps going wrong once the repeats are
    #    over (a workspace that fills up, a counter) is seen there.  It is the only timed (or
    #    warm-up) call checked: one wrong only in earlier timed calls is not seen.
    #    Nothing runs between it and the comparison, so buffers it shares with later calls
    #    cannot have been overwritten; the distinct results are copies.  The samples are
    #    recorded first: whatever the check finds, what was measured is kept.  `last` holds
    #    the previous call's output while a call runs (as it always did: the one before is
    #    released first, where the assignment released it after) and keeps it once timing is
    #    over, so the last timed call is checked against its storage too — after timing, not
    #    within it.
    last = []

    def timed():
        del last[:-1]
        last.append(call())

    samples = timing.bench(timed, s.warmup_ms, s.rep_ms, on_gpu)
    rec.update(timing.summarize(samples))
    rec["time_samples_ms"] = json.dumps([round(t, 6) for t in samples])
    rec["gbps"] = model.gbps(nbytes, rec["time_ms"])
    rec["pct_peak"] = model.pct(rec["gbps"], s.peak_tbps * 1e3 if s.peak_tbps else None)
    rec["pct_copy"] = model.pct(rec["gbps"], s.copy_gbps)
    rec["last_call_compared"] = False     # what distinct_results counts: reports word it by this
    _so_far(rec)
    if last:
        if wrong := _malformed(last[-1], x, w, mean is not None):
            # not the contract's result: neither compared nor judged, so the repeats' verdict
            # is not one over the calls compared — left empty, as a malformed repeat leaves it
            rec.update(deterministic=None, distinct_results=None)
            return done("error", f"the last timed call: {wrong}")
        nonfinite += [f"{k} of the last timed call" for k in _nonfinite(last[-1])]
        check_reuse(last[-1], "the last timed call", [("its first call's", first)]
                    + [("the previous timed call's", o) for o in last[:-1]])
        if distinct.add(last[-1]):
            _judge(rec, last[-1], ref)
        rec["last_call_compared"] = True
    last.clear()
    distinct.verdict(rec)
    del distinct
    # 4. GPU time: what the call's kernels keep the GPU busy; the rest of time_ms is the host's
    rec.update(timing.gpu_time(call, time_ms=rec["time_ms"], rep_ms=s.rep_ms, on_gpu=on_gpu,
                               eager_out=first))
    del first
    if rec["gpu_time_ms"] is not None:
        rec["host_overhead_ms"] = rec["time_ms"] - rec["gpu_time_ms"]
    if bad := inputs_changed("while timed"):
        return bad
    if nonfinite:
        shown = ", ".join(nonfinite[:3]) + (f" and {len(nonfinite) - 3} more" if len(nonfinite) > 3 else "")
        return done("error", f"non-finite values (NaN/Inf) in {shown}")
    if reused:
        return done("error", reused[0])
    return done("ok")


def prepare_worker() -> None:
    """The `ready` of a worker that runs measure_payload (harness/isolate.py): the plugins
    load as the worker starts, under its start-up limit.  Loaded on first use, inside the
    first case's call, their import counted against that case's timeout_s: a plugin slower
    to import than it made the case a `timeout` record, and every later one too, each in a
    fresh worker that loaded it again — records --resume kept as done.  A plugin that cannot
    load here raises PluginError: the worker cannot get ready, and the run stops."""
    strategies.known()


def measure_payload(payload: tuple[dict, dict]) -> dict:
    """Entry point for an isolate worker: (case fields, settings fields) → record."""
    case, settings = payload
    return worker_record(measure(Case(**case), Settings(**settings)))


def worker_record(rec: dict) -> dict:
    """`rec` as a measuring worker returns it (isolate's and a cluster's): where the case
    failed and took the process's CUDA context with it (an illegal memory access is sticky:
    every later CUDA call of the process fails), the record says so and the worker retires
    (isolate.retire), so the next case runs in a fresh process instead of failing the same
    way — each such record kept by --resume as done."""
    lost = lost_context(rec, "its worker was replaced after it")
    if lost is not None:
        isolate.retire(lost)
    return rec


def lost_context(rec: dict, then: str) -> str | None:
    """Where `rec` is no ok record and this process's CUDA context no longer works: what a
    CUDA call raises now, the record's notes saying so and `then` (what happens next); None
    otherwise."""
    if rec.get("status") == "ok":
        return None
    lost = context_lost()
    if lost is not None:
        note = f"the CUDA context was lost ({lost[:200]}): {then}"
        rec["notes"] = note if is_missing(rec.get("notes")) else f"{rec['notes']}; {note}"
    return lost


def context_lost() -> str | None:
    """What a CUDA call raises in this process now, where its CUDA context no longer works;
    None where it works, or CUDA was never used here."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception as e:
        return " ".join(describe_exception(e).split())
    return None
