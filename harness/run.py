"""Run a sweep: plan → measure every (case, implementation) → store, with progress.

Each record is stored the moment it is measured, so an interrupted sweep keeps everything it
measured and `--resume` finishes it.  SIGINT and SIGTERM stop the sweep between records (or
kill the isolate worker mid-record) after flushing; one that lands once the sweep has ended
waits until the run is closed (records.parquet written, the lock released: Outcome.finished
says so).  With `isolate`, each record is measured
in a worker process with a per-case timeout: a hung kernel costs one `timeout` record.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from normbench import strategies
from normbench.harness import env, hostload, model, placement, schema, timing
from normbench.harness.config import Sweep
from normbench.harness.interrupt import (Interrupted, held, install, interruption,
                                         raise_if_stopping)
from normbench.harness.isolate import Worker, WorkerCrashed, WorkerStartError, WorkerTimeout
from normbench.harness.measure import Settings, failed_record, lost_context, measure
from normbench.harness.plan import Case
from normbench.harness.replan import (invocation_only, planned_implementations, rebuild,
                                      settings_differ)
from normbench.harness.store import (RunStore, StoreError, check_not_in_use, check_out_dir,
                                     is_run_dir, load_meta, load_records, records_a_run,
                                     stored_records, unrecorded_run)
from normbench.harness.text import count, one_line


@dataclass
class Outcome:
    out_dir: Path
    measured: int = 0
    skipped_done: int = 0
    interrupted: int | None = None        # the signal number, if the sweep was stopped
    # the sweep ran to its end (every case stored, meta.json completed): an `interrupted`
    # signal then came after it, and stopped only the closing (every file still written)
    finished: bool = False


def default_out_dir(sweep: Sweep, parent: Path = Path("runs")) -> Path:
    """runs/NAME-TIMESTAMP, created here (so two runs started in the same second get two
    directories: the second one is NAME-TIMESTAMP-2)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for i in range(1, 1000):
        path = parent / (f"{sweep.name}-{stamp}" + (f"-{i}" if i > 1 else ""))
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            if os.path.lexists(path):
                continue
            # a part on its way is in the way (`runs`, a link to a scratch folder gone): it was
            # 999 names tried and "cannot find a free directory name"; check_out_dir says what
            check_out_dir(path)
            raise StoreError(f"cannot create output directory {path}: a part of its path "
                             "exists and is not a directory") from None
        except OSError as e:
            raise StoreError(f"cannot create output directory {path}: {e.strerror or e}") from e
        return path
    raise StoreError(f"cannot find a free directory name for {parent / sweep.name}-{stamp}")


def resume_mismatch(meta: dict, sweep: Sweep, facts: dict | None = None,
                    device: bool = True, held: int = 0) -> list[str]:
    """Why a run with `meta` should not be resumed with `sweep` here (empty: it may): another
    config (its hash), another device, or GPU against interpreter timings.  `facts`: a
    cluster's (device_name, interpreted) when the cases run there; device=False: compare
    the configs only (the device is not known yet).  `held`: the records the run holds."""
    if not records_a_run(meta):
        if not held:                     # stopped before its meta was complete: nothing to keep
            return []
        return [f"its meta.json does not say which config and device its {held} record(s) "
                "were measured with"]
    why = []
    # raw_data_hash and text_hash: what earlier versions recorded for the same config
    if meta.get("config_hash") not in (sweep.config_hash, sweep.raw_data_hash,
                                       sweep.text_hash):
        why.append(f"it was started from another config (hash {meta.get('config_hash')}, "
                   f"this one {sweep.config_hash}{settings_differ(meta, sweep)})")
    here, interp = _here(facts)
    if device and (meta.get("device_name") != here or bool(meta.get("interpreted")) != interp):
        why.append(f"it was measured on {meta.get('device_name')}, this is {here}")
    return why


def _here(facts: dict | None) -> tuple[str, bool]:
    if facts and facts.get("device_name"):
        return facts["device_name"], bool(facts.get("interpreted"))
    return env.device_name(), strategies.interpreted()


def preflight(sweep: Sweep, out_dir: Path, *, resume: bool, force_resume: bool = False,
              device: bool = True, shard: dict | None = None) -> set:
    """Refuse, before anything is measured, what execute() would refuse: a directory that is
    not ours, records the store cannot read (a records.csv cut short), a resume across
    configs or devices (unless forced), or as another shard.  StoreError, one line.
    device=False: the cases run elsewhere (a cluster), whose device execute() checks.
    shard: the shard entry of this run (shard.meta_entry), or None.  Returns the case keys
    the directory holds records of (held_keys, from the same one read of them)."""
    check_out_dir(out_dir)
    check_not_in_use(out_dir)
    # RunStore refuses all this too, after the status line
    frame = stored_records(out_dir) if Path(out_dir).is_dir() else None
    held = 0 if frame is None else len(frame)
    if not resume and Path(out_dir).is_dir():
        if held:
            raise StoreError(f"{out_dir} already holds {count(held, 'record')}; use --resume to finish "
                             "it or choose another --out")
        run = unrecorded_run(out_dir)   # a shard that got no case, a run stopped before one
        if run:
            raise StoreError(f"{out_dir} already holds {run}; use --resume to finish it or "
                             "choose another --out")
    meta = load_meta(out_dir) if resume and Path(out_dir).is_dir() else None
    if meta is not None:
        _check_shard(meta, shard, out_dir)
    if meta is not None and not force_resume:
        why = resume_mismatch(meta, sweep, device=device, held=held)
        if why:
            raise StoreError(f"cannot resume {out_dir}: {'; '.join(why)} "
                             "(--force-resume resumes anyway and records both in meta.json)")
    return set() if frame is None else set(frame["case_id"].dropna())


def discard_if_empty(out_dir, up_to=None) -> None:
    """Remove a run directory this command made (default_out_dir, or an --out that named none
    yet) when it holds no record —
    a cluster that could not start — and nothing but the run's own files; else leave it.
    up_to: the first directory of its path this command made (--out a/b/c where a did not
    exist: a), whose parents it made too are removed where they are empty."""
    from normbench.harness.rundir import _DATA_FILES, LOCK_FILE
    p = Path(out_dir)
    try:
        names = os.listdir(p)
        try:
            held = _held(p)
        except StoreError:      # none it can read, in a directory this command made
            held = 0
        if held or any(n not in (*_DATA_FILES, LOCK_FILE) for n in names):
            return
        for n in names:
            os.unlink(p / n)
        p.rmdir()
        top = Path(up_to).absolute() if up_to is not None else None
        p = p.absolute()
        while top is not None and p != top and top in p.parents:
            p = p.parent
            p.rmdir()           # OSError where it is not empty: something else is there
    except OSError:
        pass


def held_keys(out_dir) -> set:
    """The case keys a run directory holds records of (none where it holds none).
    StoreError where the store refuses its records (store.stored_records)."""
    return set(stored_records(out_dir)["case_id"].dropna())


def is_complete(out_dir) -> bool:
    """meta.json of `out_dir` says its run completed (merged: every case of the merged plan
    in); False where it says not, or cannot be read.  A --resume that has none of its cases
    left leaves such a run as it is (the CLI)."""
    try:
        return load_meta(out_dir).get("completed") is True
    except (OSError, ValueError, StoreError):
        return False


def repair_closed(out_dir) -> str | None:
    """What a run stopped as it closed may have left, repaired, for a --resume with nothing
    left to measure (which otherwise leaves the directory as it is): a records.parquet that
    lacks records of records.csv (short, missing or unreadable: a signal in the close
    before execute held it, or a kill -9 between a record and the parquet's next write) and
    the lock's note.  The store is opened and closed as a resume opens it (it rewrites the
    parquet from the CSV and drops a note no live run holds).  The line to print, or None
    where nothing was wrong.  StoreError: it cannot be (a parquet holding records the CSV
    lacks, the directory in use, a failed write)."""
    from normbench.harness.rundir import LOCK_INFO, RECORDS_CSV, RECORDS_PARQUET
    p = Path(out_dir)
    try:
        have = set(load_records(p, source="csv")["case_id"].dropna())
    except (OSError, ValueError, StoreError):
        return None                    # no CSV to go by: left as it is
    try:
        parquet = set(load_records(p, source="parquet")["case_id"].dropna())
        short = None if have <= parquet else f"it held {len(parquet & have)} of its {len(have)}"
    except StoreError as e:
        short = "it was missing" if not (p / RECORDS_PARQUET).exists() else \
            f"it could not be read: {e}"
    except (OSError, ValueError) as e:
        short = f"it could not be read: {e}"
    note = os.path.lexists(p / LOCK_INFO)
    if short is None and not note:
        return None
    with RunStore(p, resume=True):
        pass
    done = ([f"{RECORDS_PARQUET} rewritten from {RECORDS_CSV} ({short})"] if short else []) + \
        ([f"the lock's note {LOCK_INFO} a stopped run left removed"] if note else [])
    return f"run --resume: {p}: " + "; ".join(done)


def resumed_implementations(out_dir, known: list[str],
                            available: list[str]) -> tuple[list[str], str | None] | None:
    """The implementations a resume of `out_dir` plans when its config names none, and a note
    to print (or None): those its meta.json's `plan_implementations` lists — the plan it
    started with, whatever this machine lacks (measure records an unavailable one `skipped`);
    for a run written before that was recorded, those its records hold and those available
    here (in `known`'s order; a held name unknown here last).  None where `out_dir` holds no
    run whose meta is complete (a new plan starts).  StoreError: meta.json cannot be read."""
    meta = load_meta(out_dir) if is_run_dir(out_dir) else {}    # else preflight refuses it
    if not records_a_run(meta):
        return None
    held = [] if meta.get("plan_implementations") is not None else \
        _held_column(out_dir, "implementation")
    names, listed = planned_implementations(meta, held, known, available)
    if listed:
        return names, None
    return names, (f"{Path(out_dir) / 'meta.json'} does not list its plan's implementations "
                   "(written before plan_implementations was recorded): resuming with those "
                   f"its records hold and those available here ({', '.join(names)})")


def _held_column(out_dir, column: str) -> list:
    try:
        return list(load_records(out_dir)[column].dropna().unique())
    except (OSError, ValueError, KeyError, StoreError):
        return []


def _held(out_dir) -> int:
    """The records a run directory holds (0 when it holds none).  StoreError where the store
    refuses them: told as it would tell it, not as a directory holding none."""
    return len(stored_records(out_dir))


def _settings(sweep: Sweep, meta: dict) -> Settings:
    return Settings(warmup_ms=sweep.timing.warmup_ms, rep_ms=sweep.timing.rep_ms,
                    repeats=sweep.determinism.repeats, seed=sweep.seed,
                    peak_tbps=meta.get("peak_tbps"), copy_gbps=meta.get("copy_ceiling_gbps"),
                    device_name=meta["device_name"])


def _new_meta(sweep: Sweep, console: Console, facts: dict | None = None,
              implementations: list[str] | None = None, only: list[str] | None = None) -> dict:
    """`facts`: what a distributed executor learnt from its workers (env.describe() of one
    of them, their GPUs and copy ceilings); else this machine's, its ceiling measured here.
    `implementations`: the plan's (plan_implementations, which a resume plans again); `only`:
    the --only that narrowed it (_narrowing)."""
    meta = dict(facts) if facts else env.describe()
    on_gpu = not meta["interpreted"]
    meta.update(
        config_name=sweep.name, config_path=sweep.source_path, config_text=sweep.config_text,
        config_hash=sweep.config_hash,
        **_ceilings(sweep, console, facts, meta["device_name"], on_gpu),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        gpu_timer=timing.GPU_TIMER if on_gpu else timing.NO_GPU_NOTE,
        ended_at=None, completed=False,
        argv=list(sys.argv),                              # this command's, not a worker's
        invocations=[env.invocation(**_narrowing(implementations, only))])
    if implementations is not None:
        meta["plan_implementations"] = list(implementations)
    return meta


def _narrowing(implementations: list[str] | None, only: list[str] | None) -> dict:
    """This command's `only` for its entry of meta's invocations: the --only that narrowed a
    plan it declares (`implementations` given: the CLI's), null for none — a stopped run's
    report rebuilds its plan from them (harness/replan.py).  {}: cases it was handed, from
    no plan it declares."""
    return {"only": list(only) if only else None} if implementations is not None else {}


def _ceilings(sweep: Sweep, console: Console, facts: dict | None, device_name: str,
              on_gpu: bool) -> dict:
    """The copy ceiling and datasheet peak the records about to be measured use: the
    ceiling measured here and now (a cluster's workers measured their own; `facts` holds
    their median), as at the start of every run and every resume — never one measured
    on another machine or at another time."""
    if not facts:
        console.print("measuring the device-to-device copy ceiling …")
    return {"copy_ceiling_gbps": facts.get("copy_ceiling_gbps") if facts else
            timing.copy_ceiling_gbps(strategies.default_device(), on_gpu),
            "peak_tbps": model.peak_tbps(device_name, sweep.peak_tbps) if on_gpu
            else sweep.peak_tbps}


def _resumed(store: RunStore, sweep: Sweep, meta: dict, force: bool, console: Console,
             facts: dict | None = None) -> dict:
    """Check a resume (StoreError unless compatible or forced) and record it in meta.json's
    `resumes` list; the meta the new records take their device facts from — the copy ceiling
    and peak measured now (_ceilings), also in the resume's entry: a resume runs on another
    machine, or the same one later, whose ceiling the start's is not."""
    why = resume_mismatch(meta, sweep, facts, held=len(store))
    if why and not force:
        raise StoreError(f"cannot resume {store.run_dir}: {'; '.join(why)} "
                         "(--force-resume resumes anyway and records both in meta.json)")
    here, interp = _here(facts)
    entry = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "forced": bool(why), "differs": why, "config_hash": sweep.config_hash,
             "config_path": sweep.source_path, "device_name": here,
             "hostname": socket.gethostname(), **_stack(facts)}
    if why:
        console.print(f"[yellow]note:[/] {escape(f'resuming {store.run_dir} although ' + '; '.join(why))}",
                      soft_wrap=True)
        entry["config_text"] = sweep.config_text
    measured = _ceilings(sweep, console, facts, here, not interp)
    entry.update(measured)
    used = dict(meta, device_name=here, **measured)   # new records: the device they ran on
    # not complete while this resume measures: a resume killed hard (no ended_at written)
    # left the run's earlier "completed: true", older than the records it added
    store.update_meta(resumes=list(meta.get("resumes") or []) + [entry], completed=False,
                      ended_at=None)
    return used


def _stack(facts: dict | None) -> dict:
    """What a resume's records are measured with, for its entry in `resumes`: the commit, its
    dirty flag, every version meta.json's top level records and the plugins loaded
    (env.describe(); a cluster's: its workers') and the environment (meta's `environment`
    is the run's start's) — a run resumed at another commit, with another torch, another
    version of a plugin or NORMBENCH_FAST_LAUNCH=0 says so."""
    got = facts if facts else env.describe()
    versions = {k: v for k, v in got.items() if k.endswith("_version") and k != "format_version"}
    return {"git_commit": got.get("git_commit"), "git_dirty": got.get("git_dirty"), **versions,
            "package_versions": got.get("package_versions"), "plugins": got.get("plugins"),
            "environment": got.get("environment")}


def _ended(store: RunStore, completed: bool, wrote: str | None, measured: int,
           earlier: bool = True, foreign: bool = False) -> None:
    """meta.json as the sweep stops: when, and whether its plan is done (with a merge's
    missing cases as they are now, a resume's count of its records).  Nothing where this
    command wrote no meta (`wrote` None: it stopped before, meta.json is as it was).
    earlier: whether the run was complete before this command (a resume: its meta.json's
    `completed` as it found it; a new run: True), for a plan that cannot be rebuilt.
    foreign: this command resumed the run with another config (--force-resume): what it
    planned is not the run's plan (_plan_done)."""
    if wrote:
        done = store.done_keys()
        merge = _merge_now(store, completed, done)
        # a merged run is complete when the whole merged plan is in, not when this resume's
        # cases are (one of --only, or a plan that lacks some: a merge stays partial)
        whole = _merge_whole(merge.get("merge", store.meta.get("merge")), done)
        # nor is a run whose first invocation stopped early complete when a resume narrowed
        # by --only has measured its own cases: the plan is every invocation's
        whole = whole and (not completed or _plan_done(store.meta, done, earlier, foreign))
        store.update_meta(ended_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          completed=completed and whole, **merge,
                          **_counted(store, wrote, measured))


def _counted(store: RunStore, wrote: str | None, measured: int) -> dict:
    """A resume's entry in `resumes` with the records it measured: merge compares the stack
    of a resume that measured none with nothing (a resume killed hard writes no count;
    merge then compares its entry, as one that may have measured).  {}: not a resume."""
    resumes = store.meta.get("resumes")
    if wrote != "resumed" or not (isinstance(resumes, list) and resumes
                                  and isinstance(resumes[-1], dict)):
        return {}
    return {"resumes": resumes[:-1] + [{**resumes[-1], "measured": measured}]}


def _merge_now(store: RunStore, completed: bool = False, done: set | None = None) -> dict:
    """A resumed merge: its `merge` entry with the missing cases (merge --allow-partial)
    this run has measured since moved from missing_keys to measured_after_merge, and
    partial / missing recounted — else it said partial, the cases listed missing, after a
    resume had measured them; and a merge stopped part-way that a resume completed is
    finished.  {} where there is nothing to change.  done: the store's done_keys(), where
    the caller has them."""
    merge = store.meta.get("merge")
    if not isinstance(merge, dict):
        return {}
    new = dict(merge)
    done = store.done_keys() if done is None else done
    if isinstance(merge.get("missing_keys"), list):
        since = [k for k in merge["missing_keys"] if k in done]
        if since:
            left = [k for k in merge["missing_keys"] if k not in done]
            new.update(partial=bool(left), missing=len(left), missing_keys=left,
                       measured_after_merge=list(merge.get("measured_after_merge") or []) + since)
    if completed and merge.get("finished") is False and _merge_whole(new, done):
        new["finished"] = True
    return {"merge": new} if new != merge else {}


def _plan_done(meta: dict, done: set, earlier: bool = True, foreign: bool = False) -> bool:
    """Every case of the run's plan is in the directory, where this invocation was narrowed
    by --only or ran another config than meta.json's (`foreign`: a --force-resume, whose plan
    is its own config's, not the run's): the plan rebuilt from meta.json as the report
    counts it (replan.rebuild: the config, narrowed by the union of its invocations' --only
    -- a resume's --only adds to the plan, it does not replace it); a shard's, its own keys.
    True where this invocation ran all the run planned (no --only, the run's own config: the
    cases `execute` was given, a sweep built in Python passes a plan of its own) and for a
    merge (_merge_whole judges it).  Where the plan
    cannot be rebuilt (meta.json cannot say it, or it names an implementation neither
    registered here nor recorded: a plugin not loaded, whose cases --only left out), nothing
    shows the rest of it measured: `earlier`, whether the run was complete before this
    invocation (a new run's --only is all it planned)."""
    calls = meta.get("invocations")
    if not foreign and (not (isinstance(calls, list) and calls and isinstance(calls[-1], dict))
                        or invocation_only(calls[-1]) is None):
        return True              # this invocation was not narrowed: it measured all it planned
    shard = meta.get("shard")
    if isinstance(shard, dict):
        keys = shard.get("keys")
        return not isinstance(keys, list) or {str(k) for k in keys} <= done
    if isinstance(meta.get("merge"), dict):
        return True
    plan = rebuild(meta, done)
    return earlier if plan is None else set(plan.keys) <= done


def _merge_whole(merge, done: set) -> bool:
    """A merge's plan is all in the directory: no case of it listed missing, and as many
    records as it has cases (a merge stopped part-way lists none of those it did not write).
    True where the run is no merge."""
    if not isinstance(merge, dict):
        return True
    size = merge.get("plan_size")
    return not merge.get("missing_keys") and not (type(size) is int and len(done) < size)


def execute(sweep: Sweep, cases: list[Case], out_dir: Path, *, resume: bool = False,
            isolate: bool = False, console: Console | None = None, shard: dict | None = None,
            executor=None, force_resume: bool = False,
            implementations: list[str] | None = None, only: list[str] | None = None) -> Outcome:
    """Measure `cases` into `out_dir`.  StoreError propagates (the CLI turns it into exit 2):
    among others for a resume of another config or on another device, unless force_resume.

    shard: harness.shard.meta_entry of a --shard run (recorded in meta.json, checked on resume).
    executor: a harness.distributed executor (start(console) -> facts, records(todo, settings,
    timeout_s) -> an iterator of records, close()); None measures here, one case at a time.
    implementations: the implementations of the plan `cases` come from (before --only and
    --shard), recorded in a new run's meta.json as plan_implementations.
    only: the names --only kept of it (None: all), recorded with `implementations` in this
    command's entry of meta.json's invocations (_narrowing).

    SIGINT/SIGTERM stop the sweep between two records (Outcome.interrupted) when it runs on
    the main thread; run from another thread it installs no handler (interrupt.install)
    and a signal is the main thread's.  The store is closed, its lock released, whatever
    stops it."""
    console = console or Console(stderr=True)
    outcome = Outcome(out_dir=Path(out_dir))
    propagating = None
    store = RunStore(out_dir, resume=resume)
    # what this command wrote into meta.json: None until it has written (a cluster that
    # could not start, a Ctrl-C before: meta is left as it was), then "fresh" or "resumed"
    wrote = None
    worker = None
    # a record measured here and not yet stored — (case, record, its hostload.track, where
    # it ran) — saved at a stop, as the executor's unsaved() are (nothing measured is lost)
    unkept = None
    previous: dict = {}             # the handlers install() replaced, restored as it ends
    try:
        install(previous)           # in the try: nothing it raises leaves the store locked
        meta = store.meta if resume else {}
        _check_shard(meta, shard, out_dir)
        facts = executor.start(console) if executor is not None else None
        fresh = not meta.get("device_name")
        # a resume's plan that cannot be rebuilt is done only where it was before (_plan_done)
        earlier = fresh or meta.get("completed") is True
        # a resume (forced) of another config: all it planned is not the run's plan
        foreign = not fresh and bool(resume_mismatch(meta, sweep, device=False,
                                                     held=len(store)))
        if fresh:                            # new, or stopped before its meta was complete
            meta = _new_meta(sweep, console, facts, implementations, only)
            if shard:
                meta["shard"] = shard
            store.write_meta(meta)
            wrote = "fresh"
        else:
            meta = _resumed(store, sweep, meta, force_resume, console, facts)
            wrote = "resumed"
            if facts:                        # resumed on a cluster: add its GPUs
                store.update_meta(gpus=_joined_gpus(meta.get("gpus") or [],
                                                    facts.get("gpus", [])))
        if not fresh:                        # a resume: its command line joins the history
            store.update_meta(invocations=env.invocations(meta, **_narrowing(implementations,
                                                                             only)))
        settings = _settings(sweep, meta)
        done = store.done_keys()
        todo = [c for c in cases if c.key not in done]
        outcome.skipped_done = len(cases) - len(todo)
        if outcome.skipped_done:
            # of this plan; a directory may hold more (records of cases --only leaves out)
            more = f" ({len(done)} in all)" if len(done) > outcome.skipped_done else ""
            console.print(f"resuming: {count(outcome.skipped_done, 'record')} already in {out_dir}{more}",
                          markup=False, highlight=False, soft_wrap=True)
        if isolate:
            worker = Worker("normbench.harness.measure:measure_payload",
                            env={"TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "0"),
                                 "NORMBENCH_QUIET": "1"},
                            ready="normbench.harness.measure:prepare_worker")
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
        # auto_refresh off: rich would otherwise redraw from a thread 10 times a second,
        # taking the GIL from the measuring thread.  In a terminal that stalled a loop of
        # host-bound calls for 1–4 ms about ten times a second (11 calls over 1 ms in 60000,
        # against 1–2 without; not seen with output to a file, as on the device)
        # a log (CI), or a terminal that cannot redraw (TERM=dumb): one line per finished case
        lines = not _redraws(console)
        # redirect_* off: rich's default swaps sys.stdout/sys.stderr for proxies that print to
        # `console` — whose file, the CLI's, writes to sys.stderr: every line fed itself back
        # forever, and a run in a terminal stalled at 0/N, Ctrl-C and SIGTERM unheard
        with Progress(*columns, console=console, transient=False, auto_refresh=False,
                      disable=lines, redirect_stdout=False, redirect_stderr=False) as progress:
            task = progress.add_task("sweep", total=len(todo))

            def keep(rec: dict, label: str) -> None:
                store.append(rec)
                outcome.measured += 1
                if lines:
                    console.print(_done_line(rec, label, outcome.measured, len(todo)),
                                  markup=False, highlight=False, soft_wrap=True)
                elif rec["status"] != "ok":
                    text = escape(f"{label}: {rec['error']}")
                    progress.console.print(f"[red]{escape(str(rec['status']))}[/] {text}",
                                           soft_wrap=True)
                progress.advance(task)
                progress.refresh()

            # each record is kept under held(): a signal waits until it is stored and shown.
            # One landing before held() began finds it unstored: the executor holds the
            # record it handed over until asked for the next (unsaved()), and `unkept` the
            # one measured here — both saved as the run closes (_save_unsaved).  One whose
            # Interrupted was swallowed where it landed stops the sweep once the record is
            # kept (raise_if_stopping)
            raise_if_stopping()     # one swallowed before (an import's): nothing measured
            if executor is not None:
                for case, rec in executor.records(todo, settings, sweep.timeout_s):
                    with held():
                        keep(rec, _label(case))
                        if new := executor.joined():   # a worker that joined after the start
                            _add_gpus(store, new)
                        progress.update(task, description=_label(case), refresh=True)
                    raise_if_stopping()
            else:
                where = placement.local_gpu_fields()
                for case in todo:
                    progress.update(task, description=_label(case), refresh=True)
                    load = hostload.track()
                    with load:
                        try:
                            rec = _measure_one(case, settings, worker, sweep.timeout_s)
                        except BaseException as e:   # a stop that brought the record with it
                            if getattr(e, "record", None) is not None:
                                unkept = (case, e.record, load, where)
                            raise
                        unkept = (case, rec, load, where)
                    # in this process, a case that lost its CUDA context fails every later
                    # one: the run stops (an isolate worker is replaced instead)
                    lost = None if worker else lost_context(rec, "the run stopped after it")
                    with held():
                        keep(_annotated(unkept), _label(case))
                        unkept = None
                    if lost is not None:
                        raise ContextLost(f"the CUDA context of this process was lost measuring "
                                          f"{_label(case)} ({lost[:200]}), so every later "
                                          "case would fail in it")
                    raise_if_stopping()
        # records.parquet written before meta.json says complete: one that cannot be (a full
        # disk) leaves the run stopped (completed false), which --resume finishes
        store.flush()
        _ended(store, True, wrote, outcome.measured, earlier, foreign)
        outcome.finished = True
    except BaseException as e:       # Interrupted, KeyboardInterrupt, or one wrapping them
        i = interruption(e)
        if i is None:                # a fault (the cluster lost, a write failed): re-raised
            propagating = e
            try:                     # meta says when it stopped, if it still can be written
                _ended(store, False, wrote, outcome.measured)
            except StoreError:
                pass
            raise
        outcome.interrupted = getattr(i, "signum", signal.SIGINT)
        _ended(store, False, wrote, outcome.measured)
    finally:
        # closed under held(): a signal once the sweep has ended (or while a fault is being
        # reported) raised inside the isolate worker's or the cluster's close, and
        # records.parquet was left short of records.csv for good, the lock's note behind.
        # Held, it is raised when all is closed and is the run's stop (after a finished
        # sweep: outcome.finished), unless it would replace a fault being reported.  After a
        # stop mid-sweep no signal raises again (interrupt.raise_interrupted).  The try is
        # here, not in a function: a signal can land as a function is entered
        closed: list = []           # _close's StoreError or None, once it has run
        try:
            with held():
                closed.append(_close(worker, executor, store, outcome, wrote, unkept))
        except Interrupted as e:    # at held's end, or the instant before it began
            if propagating is None and outcome.interrupted is None:
                outcome.interrupted = e.signum
            if not closed:          # no signal raises from now on: one has
                closed.append(_close(worker, executor, store, outcome, wrote, unkept))
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        if closed and closed[0] is not None and propagating is None:
            raise closed[0]         # else the first failure (records.csv) is the one told
    return outcome


class ContextLost(RuntimeError):
    """A case measured in the run's own process (no --isolate) lost its CUDA context: every
    later case would fail there.  Its record is kept; the run stops, to be finished with
    --isolate, whose worker is replaced where a case loses it."""


def _close(worker, executor, store: RunStore, outcome: Outcome, wrote: str | None,
           unkept: tuple | None) -> StoreError | None:
    """Stop the isolate worker, save the record measured here and not stored (`unkept`: case,
    record, its hostload.track, where) and those the executor still held, stop the executor,
    then close the store (records.parquet written, the lock and its note released); the
    StoreError closing the store raised, if any.  Every step may run twice (execute's
    finally)."""
    try:
        if worker is not None:
            worker.close()
        items = []
        if unkept is not None:
            items.append((unkept[0], _annotated(unkept)))
        if executor is not None:
            try:
                items += list(getattr(executor, "unsaved", list)())
            except Exception:           # a cluster that cannot be asked: nothing to add
                pass
        _save_unsaved(items, store, outcome, wrote)
        if executor is not None:
            executor.close()
    finally:
        try:
            store.close()
            error = None
        except StoreError as e:
            error = e
    return error


def _annotated(unkept: tuple) -> dict:
    """The record of `unkept` (case, record, its hostload.track, where it ran) as it is
    stored: a copy with where it ran and the host's load while it was measured — another
    process's: this run measures one case at a time."""
    _case, rec, load, where = unkept
    return hostload.annotate(dict(rec), where, load.count, apart=True)


def _add_gpus(store: RunStore, new: list) -> None:
    """meta.json with the GPUs of workers that joined mid-run (their records say which GPU
    measured them; meta lists every one)."""
    meta = store.meta
    known = meta.get("gpus") or []
    # new by Dask address; a GPU the meta already lists (a resumed run's worker rejoining
    # under another address) is not listed again — stand-ins, which share one identity and
    # no UUID, are each a worker of their own
    seen = {_gpu_id(g) for g in known if g.get("gpu_uuid")}
    gpus = known + [g for g in new if not (g.get("gpu_uuid") and _gpu_id(g) in seen)]
    models = list(dict.fromkeys(g.get("device_name") for g in gpus))
    store.update_meta(gpus=gpus, workers=len(gpus),
                      hostname=", ".join(dict.fromkeys(str(g.get("hostname")) for g in gpus)),
                      device_name=models[0] if len(models) == 1 else
                      "mixed: " + ", ".join(map(str, models)))


def _gpu_id(g: dict) -> tuple:
    return (g.get("hostname"), g.get("gpu_uuid"), g.get("gpu_index"))


def _joined_gpus(known: list, new: list) -> list:
    """meta.gpus after a resume on a cluster: the GPUs it had, and those of the new workers
    that are not among them (by host, UUID and index — a copy ceiling measured again is the
    same GPU; stand-ins, which share one identity, counted as many as there are)."""
    left = Counter(_gpu_id(g) for g in known)
    out = list(known)
    for g in new:
        if left[_gpu_id(g)]:
            left[_gpu_id(g)] -= 1
        else:
            out.append(g)
    return out


def _save_unsaved(items, store: RunStore, outcome, wrote: str | None) -> None:
    """The measurements not stored when the sweep stopped — (case, record) the executor still
    held, the record measured here as a signal landed — stored, so nothing measured is lost;
    one whose case the store holds already (kept just before the signal) is skipped.  A
    record the store refuses is left and the others stored; a store that fails here leaves
    the error that stopped the sweep to be reported."""
    saved = 0
    try:
        done = store.done_keys()
    except Exception:
        return
    for case, rec in items:
        if case.key in done:
            continue
        try:
            store.append(rec)
        except Exception:
            continue
        done.add(case.key)
        outcome.measured += 1
        saved += 1
    if saved:                               # stored after _ended: its meta counts them
        try:
            store.update_meta(**_merge_now(store), **_counted(store, wrote, outcome.measured))
        except Exception:
            pass


def _check_shard(meta: dict, shard: dict | None, out_dir: Path) -> None:
    """A shard directory is resumed as the same shard, and only as a shard."""
    old = meta.get("shard") if meta.get("device_name") else None
    if old and not old.get("spec"):     # load_meta checked the types; a spec is needed here
        raise StoreError(f"{Path(out_dir) / 'meta.json'}: shard.spec: missing")
    if shard is None and old:
        raise StoreError(f"{out_dir} holds shard {old.get('spec')}: resume it with --shard "
                         f"{old.get('spec')}")
    if shard is not None and meta.get("device_name") and not old:
        raise StoreError(f"{out_dir} holds a run that is not a shard; resume it without --shard")
    if shard is not None and old and (old.get("spec"), old.get("plan_digest")) != \
            (shard["spec"], shard["plan_digest"]):
        raise StoreError(f"{out_dir} holds shard {old.get('spec')} of plan "
                         f"{old.get('plan_digest')}, not {shard['spec']} of {shard['plan_digest']}")


def _label(case: Case) -> str:
    return schema.case_label(asdict(case))


def _redraws(console: Console) -> bool:
    """Whether `console` can draw a live progress bar: its stream is a terminal (its own
    isatty(): rich's is_terminal is also True for a log whenever FORCE_COLOR — "0" included —
    or TTY_COMPATIBLE=1 is set, and a log then filled with cursor frames and no `[i/N]`
    line), rich takes it for one, and TERM is not dumb."""
    try:
        tty = bool(console.file.isatty())
    except (AttributeError, OSError, ValueError):   # no stream, a closed one, an odd one
        tty = False
    return tty and console.is_terminal and not console.is_dumb_terminal


def _done_line(rec: dict, label: str, i: int, n: int) -> str:
    """`[3/12] ok disjoint_block G=2 layernorm 6x16 fp32/fp32: 0.0123 ms (1.4 s)`; a wrong
    result says so: `[3/12] ok, incorrect (dγ 0.0065 > 0.0001) torch ...`."""
    what = (f"{rec['time_ms']:.4g} ms" if rec["status"] == "ok" and rec.get("time_ms")
            else " ".join(str(rec.get("error") or "").split())[:300])
    took = f" ({rec['duration_s']:.1f} s)" if rec.get("duration_s") is not None else ""
    status = str(rec["status"])
    if status == "ok" and rec.get("correct") is False:    # timed, but not a result to use
        status += ", " + _incorrect(rec)
    return f"[{i}/{n}] {status} {label}: {what}{took}"


def _incorrect(rec: dict) -> str:
    """`incorrect (dγ 0.0065 > 0.0001)`: the outputs the record holds past their tolerance."""
    over = []
    for err, shown in schema.SHOWN.items():
        e, t = rec.get(err), schema.tolerance_of(rec, err)
        if not (schema.is_missing(e) or schema.is_missing(t)) and e > t:
            over.append(f"{shown} {schema.column_format(err, e)} > "
                        f"{schema.column_format(schema.ERRORS[err], t)}")
    return "incorrect" + (f" ({', '.join(over)})" if over else "")


def _measure_one(case: Case, settings: Settings, worker: Worker | None, timeout_s: float) -> dict:
    """The record of `case`, measured here or by the isolate worker.  A signal that lands
    once the worker has sent it (isolate's `reply`) raises with it as `record`, which the
    sweep saves as the run closes."""
    if worker is None:
        return measure(case, settings)
    t0 = time.perf_counter()
    try:
        return _worker_record(case, settings, t0, lambda: worker.call(
            (asdict(case), asdict(settings)), timeout_s=timeout_s))
    except BaseException as e:
        if getattr(e, "reply", None) is not None:
            e.record = _worker_record(case, settings, t0, e.reply)
        raise


def _worker_record(case: Case, settings: Settings, t0: float, call) -> dict:
    """call()'s record, the isolate worker's; a failure of the call recorded as one."""
    try:
        return call()
    except WorkerStartError:
        raise
    except WorkerTimeout as e:
        return failed_record(case, settings, "timeout", str(e), time.perf_counter() - t0,
                             getattr(e, "partial", None))
    except WorkerCrashed as e:
        return failed_record(case, settings, "error", f"worker crashed: {e}",
                             time.perf_counter() - t0, getattr(e, "partial", None))
    except RuntimeError as e:   # measure() itself raised: a bug, but a record all the same
        return failed_record(case, settings, "error", one_line(e)[:500],
                             time.perf_counter() - t0)
