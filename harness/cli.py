"""The command line: run, list, report, compare.  Only parses and dispatches.

Exit codes: 0 success; 1 a regression (compare) or a sweep stopped by a fault it could not
record; 2 bad input (config, arguments, run directories); 130/143 interrupted by SIGINT/SIGTERM
after saving every measured record.
"""
from __future__ import annotations

import errno
import os
import signal
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
import typer.core
from rich.console import Console

from normbench.harness import schema

app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="normbench: benchmark the dγ/dβ reduction strategies of LayerNorm/RMSNorm "
                       "backward. With no command, runs configs/default.yaml on a GPU, or "
                       "configs/cpu.yaml under the Triton interpreter when there is none.")
class _Lossless:
    """sys.stdout or sys.stderr (looked up at each write; under a rich proxy, the stream it
    proxies) whose write failures — a reader that closed its pipe, a full disk, a closed
    stream — are swallowed: a line that cannot be printed never stops a sweep or changes an
    exit code (the records are on disk)."""

    def __init__(self, name: str):
        self.name = name

    def _f(self):
        f = getattr(sys, self.name)
        # a rich Live or Progress that redirects the stream puts a proxy there that prints to
        # its console, which may be one of ours: writing through it fed each line back into
        # this write forever.  The stream it stands for is written instead.
        for _ in range(8):
            inner = getattr(f, "rich_proxied_file", None)
            if inner is None:
                break
            f = inner
        return f

    def write(self, text: str) -> int:
        try:
            f = self._f()
            return f.write(text) if f is not None else len(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            f = self._f()
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass

    def isatty(self) -> bool:
        try:
            f = self._f()
            return bool(f is not None and f.isatty())
        except (OSError, ValueError):
            return False

    @property
    def encoding(self) -> str:
        return getattr(self._f(), "encoding", None) or "utf-8"


def _nonblocking_fd(stream) -> int | None:
    """The descriptor under `stream` where it is a real one set non-blocking, else None."""
    try:
        fd = stream.fileno()
        return None if os.get_blocking(fd) else fd
    except (AttributeError, OSError, ValueError):
        return None


def _emit(text: str, end: str = "\n", product: str = "") -> None:
    """print() to stdout that a closed pipe or a full disk cannot turn into a traceback or an
    exit code of its own (compare's exit code is its verdict).  A non-blocking stdout (a
    pipe its reader set so) is waited on, not cut at the pipe's 64 KiB.  `product`, a
    command's name (export; report, whose --markdown-table prints the table): the text is
    what the command makes, so a write that fails is one line on stderr and exit 2, as a
    failed --out is ("export: cannot write to stdout: No space left on device"); a reader
    that closed its pipe (`| head`) took what it wanted and stays quiet."""
    from normbench.harness.rundir import flush_std, write_all
    try:
        fd = _nonblocking_fd(sys.stdout)
        if fd is not None:
            flush_std()
            enc = getattr(sys.stdout, "encoding", None) or "utf-8"
            write_all(fd, (text + end).encode(enc, "backslashreplace"))
            return
        print(text, end=end)
        if sys.stdout is not None:    # flushed here, not in flush_std: its failure is ours
            sys.stdout.flush()
        flush_std()
    except (OSError, ValueError) as e:
        try:                      # what Python would flush at exit fails no more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        if product and not isinstance(e, BrokenPipeError):
            fail(f"{product}: cannot write to stdout: {getattr(e, 'strerror', None) or e}")


def _width() -> int | None:
    """The console width to give rich: None (it reads COLUMNS, else the terminal's) but where
    COLUMNS is 0 (a script's `COLUMNS=$(tput cols)` without a terminal, a container's 0 x 0
    pty), which rich took as a width of 0 and printed nothing: every line on stderr lost, a
    config error's too (exit 2, no word why).  Then the terminal's width, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) == 0:
        import shutil
        return shutil.get_terminal_size().columns      # COLUMNS <= 0 is passed over there
    return None


_stdout = _Lossless("stdout")
out = Console(file=_stdout, width=_width() if _stdout.isatty() else 160)
err = Console(file=_Lossless("stderr"), width=_width())
ROOT = Path(__file__).resolve().parent.parent


def fail(message: str, code: int = 2, command: str = ""):
    """One line on stderr, no traceback, and the exit code (a path or message holding a
    newline is folded onto the line).  `command`, a shell command from text.shell_join (one
    line already), ends the line as it is: folded, 'my  runs' would paste as 'my runs'."""
    from normbench.harness.text import one_line
    say(err, one_line(message) + (f" {command}" if command else ""))
    raise typer.Exit(code)


def say(console, text: str) -> None:
    """A line of plain text: paths and messages are never read as rich markup ("[red]" in a
    directory name is text) nor wrapped (a path stays copyable)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _strategies():
    from normbench import strategies  # imported lazily: it decides CPU/GPU and compiles nothing until used
    from normbench.harness.failures import plugin_failure
    from normbench.harness.interrupt import interruption
    try:
        strategies.known()            # loads the plugins now: a broken one is one line
    except strategies._registry.PluginError as e:
        fail(str(e))
    except BaseException as e:        # one raising SystemExit or another BaseException on import
        if interruption(e) is not None:
            raise
        fail(plugin_failure(e) or f"a plugin cannot be loaded: {e.__class__.__name__}: {e}")
    return strategies


def _version(value: bool):
    if value is True:       # typer 0.12 with click 8.2+ passed the string 'False' here
        from normbench import __version__
        _emit(f"normbench {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def default(ctx: typer.Context,
            version: bool = typer.Option(False, "--version", "-V", callback=_version,
                                         is_eager=True, help="print the version and exit")):
    if ctx.invoked_subcommand is not None:
        return
    from normbench.harness.overrides import shipped
    s = _strategies()
    config = "cpu" if s.interpreted() else "default"
    say(err, f"no command given: running the shipped config {config} (configs/{config}.yaml; "
             f"{'no GPU: Triton interpreter on CPU' if s.interpreted() else 'on the GPU'})")
    # its file, not its name: a file or folder `./cpu` here is not what the line says runs
    run(config=str(shipped()[config]), overrides=None, shape=None, out_dir=None, resume=False, dry_run=False,
        only=None, isolate=False, no_report=False, shard=None, gpus=None, scheduler=None,
        exclusive_below_us=None, strict=False, force_resume=False)


@app.command()
def run(config: str = typer.Argument(..., metavar="CONFIG", help="sweep config: a YAML file, "
                                     "the name of a shipped one (quick, default, cpu, peers, "
                                     "small, ...) or - for standard input; fields in "
                                     "harness/config.py"),
        overrides: Optional[List[str]] = typer.Argument(None, metavar="KEY=VALUE",
                                                         help="change the config: d=[5120] "
                                                         "dtype=fp16 timing.rep_ms=50 (VALUE "
                                                         "is YAML; validated like the file)"),
        shape: Optional[List[str]] = typer.Option(None, "--shape", metavar="ROWSxD",
                                                  help="run this shape instead of the "
                                                  "config's rows and d (repeatable), e.g. "
                                                  "--shape 16384x5120"),
        out_dir: Optional[str] = typer.Option(None, "--out", help="run directory: new, "
                                              "empty, or (with --resume) one this config "
                                              "started [default: runs/NAME-TIMESTAMP]"),
        resume: bool = typer.Option(False, "--resume", help="finish the run in --out: skip "
                                    "records it already holds; the implementations it planned "
                                    "are planned again, those unavailable here recorded as "
                                    "skipped; a complete run with none left is left as it is (a "
                                    "records.parquet short of records.csv rewritten from it)"),
        dry_run: bool = typer.Option(False, "--dry-run", help="print the plan and an estimated "
                                     "time; run nothing (cases of an implementation "
                                     "unavailable here are marked 'skipped here' and cost "
                                     "nothing in the estimate)"),
        only: Optional[List[str]] = typer.Option(None, "--only", metavar="NAMES",
                                                 help="comma-separated implementation names: "
                                                 "run only these (repeatable: the names add "
                                                 "up)"),
        isolate: bool = typer.Option(False, "--isolate", help="measure each case in a worker "
                                     "process killed after the config's timeout_s (a hung "
                                     "kernel becomes a 'timeout' record)"),
        no_report: bool = typer.Option(False, "--no-report", help="do not write the report at "
                                       "the end"),
        shard: Optional[str] = typer.Option(None, "--shard", metavar="I/N", help="run only part "
                                            "I (0 <= I < N) of N of the plan (balanced by "
                                            "estimated cost; "
                                            "the same I/N always the same cases); join the "
                                            "parts with merge"),
        gpus: Optional[str] = typer.Option(None, "--gpus", metavar="all|N", help="one Dask "
                                           "worker per GPU of this host (dask-cuda; the "
                                           "'cluster' extra); without a GPU, N stand-in "
                                           "workers under the interpreter"),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS",
                                                help="run on the Dask cluster of this "
                                                "scheduler (tcp://host:8786 or a scheduler "
                                                "file, waited for up to 30 s); workers need "
                                                "normbench installed"),
        exclusive_below_us: Optional[str] = typer.Option(
            None, "--exclusive-below-us", metavar="X", help="with --gpus/--scheduler: cases "
            "whose estimated or measured call time is below X µs, or whose measured call is "
            "host-bound, are measured with none of the run's other cases on their host"),
        strict: bool = typer.Option(False, "--strict", help="exit 1 when any record is not ok "
                                    "(error, skipped, timeout), is incorrect against the fp64 "
                                    "reference, or is not bitwise repeatable although its "
                                    "implementation is deterministic by design"),
        force_resume: bool = typer.Option(False, "--force-resume", help="--resume even a run of "
                                          "another config or device; both are recorded in "
                                          "meta.json")):
    """Run a sweep: every case and implementation, measured and stored as it goes.

    Every call is timed whole (argument checks, allocations, workspace and lock zeroing, every
    kernel including the reduce). On a machine without a GPU the kernels run under the Triton
    interpreter and times are CPU wall-clock times.
    """
    from normbench.harness.config import ConfigError
    from normbench.harness.overrides import load as load_sweep
    from normbench.harness.plan import estimate_seconds, expand

    s = _strategies()
    try:
        sweep = load_sweep(config, overrides or (), shape or (), known_implementations=s.known())
    except ConfigError as e:
        fail(str(e))
    from normbench.harness.env import told_problem
    problem = told_problem()
    if problem:
        fail(f"run: {problem}")
    resume = resume or force_resume
    if resume and out_dir is None:
        fail("run: --resume needs --out DIR (the run directory to finish)")
    if gpus is not None and scheduler is not None:
        fail("run: --gpus and --scheduler exclude each other (--gpus starts a cluster on this host)")
    if exclusive_below_us is not None:
        from normbench.harness.text import decimal
        x = decimal(exclusive_below_us)   # ASCII digits, as a config's: float() read '1_0'
        if x is None or not 0 <= x < float("inf"):
            fail(f"run: --exclusive-below-us: expected a number of µs >= 0, got "
                 f"{exclusive_below_us!r}")
        exclusive_below_us = x
    if exclusive_below_us is not None and gpus is None and scheduler is None:
        fail("run: --exclusive-below-us needs --gpus or --scheduler (a plain run measures one "
             "case at a time)")
    if out_dir is not None and not out_dir.strip():
        fail("run: --out: an empty path; give the run directory")
    out_dir = Path(out_dir) if out_dir is not None else None
    if out_dir is not None:
        # another run's plots/ (none yet: run --no-report): that run's report then wrote its
        # plots into this run, and this run's report its pages into that run's plots folder
        _refuse_a_runs_file(out_dir, f"run: --out {out_dir}", "give a new or empty directory")
    # a config naming no implementation runs those available here; a shard, a run on a
    # cluster (--scheduler: its workers measure, not this login node) or a resume of a merge
    # of shards (its plan is theirs) plans every one known, the unavailable recorded as
    # skipped where they are — so I/N is the same part anywhere, and a merge's missing cases
    # are all measured or recorded.  A resume plans what its run planned (meta.json's
    # plan_implementations), whatever the executor, those this machine lacks recorded as
    # skipped, never dropped; only a run that does not list them, resumed as a shard, on a
    # cluster or merged, plans every one known
    from normbench.harness.merge import is_merged
    from normbench.harness.run import resumed_implementations
    from normbench.harness.store import StoreError
    everywhere = (shard is not None or scheduler is not None
                  or (resume and out_dir is not None and is_merged(out_dir)))
    names = s.known() if sweep.implementations is not None or everywhere else s.names()
    from_here = sweep.implementations is None and not everywhere   # this machine's names()
    if resume and out_dir is not None and sweep.implementations is None:
        try:
            kept = resumed_implementations(out_dir, s.known(), s.names())
        except StoreError as e:
            fail(f"run: {e}")
        listed = kept is not None and kept[1] is None       # no note: meta.json lists them
        if kept is not None and (listed or from_here):
            (names, note), from_here = kept, False
            lost = [n for n in names if n not in s.known()]
            if lost and not only:
                fail(f"run: cannot resume {out_dir}: its plan includes implementation "
                     f"{lost[0]!r}, which is not registered here (load the plugin that "
                     "registers it, or --only the others)")
            names = [n for n in names if n in s.known()]
            if note:
                say(err, f"note: {note}")
    cases = expand(sweep, uses_groups=lambda n: s.get(n).uses_groups, available=names)
    only = ",".join(only) if only else None        # --only a --only b: both
    wanted = None
    if only is not None:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        if not wanted:
            fail(f"run: --only: no implementation named in {only!r}")
        unknown = [n for n in wanted if n not in s.known()]
        if unknown:
            fail(f"run: --only: unknown implementation {unknown[0]!r}; known: {', '.join(s.known())}")
        planned = list(dict.fromkeys(c.implementation for c in cases))
        absent = [n for n in wanted if n not in planned]
        if absent:
            e = s.get(absent[0])
            # not planned because this machine lacks it (the config names none, and nothing
            # above planned every known one): say why
            if not e.available and from_here:
                fail(f"run: --only: {absent[0]!r} is unavailable here: {e.reason}")
            fail(f"run: --only: {absent[0]!r} is not in this sweep; it runs: {', '.join(planned)}")
        cases = [c for c in cases if c.implementation in wanted]
    shard_meta = None
    if shard is not None:
        from normbench.harness import shard as shards
        try:
            index, count = shards.parse(shard)
        except shards.ShardError as e:
            fail(f"run: {e}")
        mine = shards.select(cases, sweep, index, count)
        if cases and not mine:       # valid, e.g. more shards than cases: not an error
            # its directory is written all the same (meta.json, no record), so that the
            # merge of every shard's directory (runs/x-{0..N-1}) takes it as a shard of none
            say(out, f"shard {index}/{count}: none of the plan's {len(cases)} case(s) falls "
                     "to it: it records none (merge takes its directory as a shard of 0)")
        shard_meta = shards.meta_entry(cases, mine, index, count)
        whole, cases = cases, mine
    executor = None
    if gpus is not None or scheduler is not None:
        from normbench.harness.distributed import ClusterError, make_executor
        try:
            executor = make_executor(gpus=gpus, scheduler=scheduler, sweep=sweep,
                                     exclusive_below_us=exclusive_below_us, dry_run=dry_run)
        except ClusterError as e:
            fail(f"run: {e}")
    if not cases and not (shard_meta and whole):
        fail("run: nothing to run")
    from normbench.harness.isolate import WorkerStartError
    from normbench.harness.run import (default_out_dir, execute, is_complete,
                                       preflight, repair_closed)
    from normbench.harness.store import StoreError, StoreWriteError
    try:
        fresh_dir = resume and out_dir is not None and not out_dir.exists()
    except OSError:                  # a name too long: preflight says so, one line
        fresh_dir = False
    if fresh_dir:
        say(err, f"run --resume: {out_dir} does not exist yet: a new run starts there")
    try:        # refused before anything runs, --dry-run included: it shows what run does
        held = set() if out_dir is None else preflight(
            sweep, out_dir, resume=resume, force_resume=force_resume, device=executor is None,
            shard=shard_meta)
    except StoreError as e:
        fail(f"run: {e}")
    left = [c for c in cases if c.key not in held]
    # a cluster's workers are the GPUs it is for, whatever this login node has; here (this
    # host, --gpus' workers included) an implementation unavailable is recorded skipped, no call
    skip_here = {} if scheduler is not None else {
        n: s.get(n).reason for n in dict.fromkeys(c.implementation for c in left)
        if not s.get(n).available}
    est = estimate_seconds(left, sweep, s.interpreted() and scheduler is None, skip_here)
    if executor is not None:
        est = executor.estimate(est)
    from normbench.harness.text import count as counted
    count = (f"{len(left)} of {len(cases)} records left" if len(left) < len(cases)
             else counted(len(cases), "record"))
    skipped = sum(c.implementation in skip_here for c in left)
    if skipped:
        count += (f" ({skipped} to be recorded skipped: {', '.join(skip_here)} "
                  f"{'is' if len(skip_here) == 1 else 'are'} unavailable here)")
    def finish(**changed) -> str:
        """The command that finishes this run (--resume): its arguments as given, but
        `changed` (read when called: out_dir and the options as they stand then)."""
        options = dict(only=only, isolate=isolate, shard=shard, gpus=gpus, scheduler=scheduler,
                       exclusive_below_us=exclusive_below_us, no_report=no_report,
                       strict=strict, force_resume=force_resume)
        return _again(config, overrides, shape, out_dir=out_dir, **{**options, **changed})

    if resume and out_dir is not None and not left and is_complete(out_dir):
        # nothing to measure: the directory is left as it is (no copy ceiling measured, no
        # resumes entry, ended_at and the report as they were) but for what a run stopped as
        # it closed left (repair_closed); --strict judges its records
        repaired = None
        if not dry_run:     # said complete only once the store opened it, where it must
            try:
                repaired = repair_closed(out_dir)
            except StoreWriteError as e:
                _write_failed(e, out_dir, finish())
            except StoreError as e:
                fail(f"run: {e}")
        say(out if dry_run else err, f"nothing left to measure: {out_dir} is complete "
                                     f"({counted(len(held), 'record')})")
        if repaired:
            say(err, repaired)
        if strict and not dry_run:
            from normbench.harness.store import load_records
            _strict_exit(load_records(out_dir))
        return
    if dry_run:
        _print_plan(left, count, est, sweep, skip_here)
        return
    if executor is not None:
        try:        # --scheduler: an address that does not answer, before out_dir is made
            executor.reach()
        except ClusterError as e:
            fail(f"run: {e}")
    try:
        # a directory this run makes (--out naming none yet, or runs/NAME-TIME) is removed
        # if the cluster or the isolate worker fails before a record is kept
        # judged on the path the kernel will use (realpath: `newdir/../x` is x, which may be
        # there already — read as text, the run took it for its own and removed it)
        real = Path(os.path.realpath(out_dir)) if out_dir is not None else None
        made = real is None or not os.path.lexists(real)
        top = None              # the first directory of that path this run makes
        if real is not None and made:
            top = real
            while top.parent != top and not os.path.lexists(top.parent):
                top = top.parent
        out_dir = out_dir or default_out_dir(sweep)
    except StoreError as e:
        fail(f"run: {e}")
    say(err, f"{sweep.name}: {count}, about {_fmt_s(est)}; writing {out_dir}"
             + ("  [CPU wall-clock times: Triton interpreter]" if s.interpreted() else ""))
    try:
        outcome = execute(sweep, cases, out_dir, resume=resume, isolate=isolate, console=err,
                          shard=shard_meta, executor=executor, force_resume=force_resume,
                          implementations=names if sweep.implementations is None else
                          list(sweep.implementations), only=wanted)
    except StoreWriteError as e:    # the machine's fault mid-run, not the input's
        _write_failed(e, out_dir, finish())
    except StoreError as e:
        fail(f"run: {e}")
    except WorkerStartError as e:
        from normbench.harness.run import discard_if_empty
        if made:            # nothing recorded: the directory this run made goes, as a cluster's
            discard_if_empty(real or out_dir, up_to=top)
        kept = _kept(out_dir)   # a fresh worker after a crash or a timeout, mid-sweep
        if kept:
            from normbench.harness.text import count as counted
            fail(f"run: the isolate worker could not start or get ready, so no more cases can "
                 f"run: {e}; {counted(kept, 'record')} kept in {out_dir}; once it can, finish "
                 "with:", 1, command=finish())
        fail(f"run: the isolate worker could not start or get ready, so no case can run: {e}", 1)
    except Exception as e:
        from normbench.harness.distributed import ClusterError
        from normbench.harness.run import ContextLost
        if isinstance(e, ContextLost):
            from normbench.harness.text import count as counted
            fail(f"run: {e}; {counted(_kept(out_dir), 'record')} kept in {out_dir}; "
                 "finish with --isolate, whose worker is replaced where a case loses it:", 1,
                 command=finish(isolate=True))
        if isinstance(e, ClusterError):
            if made:
                from normbench.harness.run import discard_if_empty
                discard_if_empty(real or out_dir, up_to=top)
            fail(f"run: {e}", 1)
        raise
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.store import load_meta, load_records
    try:        # a signal here came after a finished sweep (after a stop none raises again)
        df = load_records(out_dir)
        from normbench.harness.report.terminal import print_tables
        from normbench.harness.report.fmt import plain
        print_tables(plain(df), load_meta(out_dir), out)
    except Interrupted as e:
        _after_sweep(e.signum, out_dir, no_report)
    if outcome.interrupted and outcome.finished:      # as the run closed
        _after_sweep(outcome.interrupted, out_dir, no_report)
    if outcome.interrupted:
        fail(f"interrupted by {signal.Signals(outcome.interrupted).name}: "
             f"{counted(len(df), 'record')} kept in {out_dir}; finish with:",
             128 + outcome.interrupted, command=finish())
    if not no_report:
        paths = _report_after(out_dir)
        say(err, f"report: {paths['report.html']}")
    say(err, f"records: {out_dir / 'records.csv'}")
    if strict:
        _strict_exit(df)


def _strict_exit(df) -> None:
    """run --strict: exit 1, one line, when any of the run's records fails (_strict_failures)."""
    if failing := _strict_failures(df):
        n = sum(failing.values())
        fail(f"run --strict: {n} of {len(df)} records fail "
             f"({', '.join(f'{k} {why}' for why, k in failing.items())})", 1)


def _strict_failures(df) -> dict:
    """{why: how many records}: not ok (by status), ok but incorrect against the fp64
    reference, ok and correct but not bitwise repeatable although deterministic by design."""
    from collections import Counter
    from normbench.harness.summary import NOT_REPEATABLE, is_false, not_repeatable
    why: Counter = Counter()
    for r in df.to_dict("records"):
        if r["status"] != "ok":
            why[str(r["status"])] += 1
        elif is_false(r.get("correct")):
            why["incorrect"] += 1
        elif not_repeatable(r):
            why[NOT_REPEATABLE] += 1
    return dict(why)


def _fmt_s(sec: float) -> str:
    """An estimate in the unit a reader plans by: s, min, h, then days (a plan of days
    read "6000.0 min")."""
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 2 * 3600:
        return f"{sec / 60:.1f} min"
    if sec < 48 * 3600:
        return f"{sec / 3600:.1f} h"
    return f"{sec / 86400:.1f} days"


PLAN_ROWS = 200      # a plan of more records lists its first ones (a table of 160000 rows
                     # took minutes to draw before its count was printed)


def _print_plan(cases, count: str, est, sweep, skip_here: dict[str, str]):
    """The plan as a table; a case of an implementation in `skip_here` ({name: why it is
    unavailable here}) is marked "skipped here", each such implementation's reason below."""
    say(out, f"plan: {sweep.name} — {count}, about {_fmt_s(est)}")
    if not cases:
        return
    from normbench.harness import tables
    cols = [(h, False) for h in ("norm", "rows", "d", "dtype", "weight", "implementation",
                                 "groups")] + ([("here", True)] if skip_here else [])
    rows = [[c.norm, str(c.rows), str(c.d), c.dtype, c.weight_dtype, c.implementation,
             str(c.groups)] + (["skipped here" if c.implementation in skip_here else ""]
                               if skip_here else [])
            for c in cases[:PLAN_ROWS]]
    tables.show(out, cols, rows)
    if len(cases) > PLAN_ROWS:
        from normbench.harness.text import count as counted
        say(out, f"… and {counted(len(cases) - PLAN_ROWS, 'more record')} (the first "
                 f"{PLAN_ROWS} shown)")
    for name, why in skip_here.items():
        say(out, f"skipped here: {name}: {why}")


@app.command()
def merge(out_dir: str = typer.Argument(..., metavar="out_dir", help="the run directory to "
                                        "write (new, or one a merge that did not finish "
                                        "wrote)"),
          shard_dirs: List[Path] = typer.Argument(..., help="the shard run directories"),
          allow_partial: bool = typer.Option(False, "--allow-partial", help="merge even when "
                                             "cases are missing (meta.json says which)"),
          no_report: bool = typer.Option(False, "--no-report", help="do not write the report")):
    """Join the shards of one plan (run --shard I/N) into one complete run directory.

    Refused (exit 2, one line) when they come from different configs, GPU models, package
    versions, plugins (or plugin versions) or commits, when one shard (I/N) is given twice,
    when a run still holds a shard, when two hold the same case, or when a case is missing.  A write
    that fails midway (a full disk) exits 1, a signal 130/143; until every record is in,
    meta.json says completed: false and merge.finished: false, and the same merge run again
    replaces what the stopped one wrote and finishes it.  meta.json's top level keeps what
    every shard agrees on (what they differ in is null there, named in merge.differs; each
    shard's own is in merged_from); environment variables set differently are named on
    stderr.
    """
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.launch import command
    from normbench.harness.merge import MergeError, merge as do_merge
    from normbench.harness.store import StoreError, StoreWriteError
    from normbench.harness.text import shell_join
    if not out_dir.strip():         # as a Path it is ".": the working directory
        fail("merge: out_dir: an empty path; give the run directory to write")
    out_dir = Path(out_dir)
    # a shard's plots/ (none yet: run --no-report): the shard's report then wrote its plots
    # into the merged run, and the merged run's report its pages into the shard's
    _refuse_a_runs_file(out_dir, f"merge: {out_dir}", "merge into a new or empty directory")
    # a merge that did not finish is finished by the same command: it replaces what the
    # stopped one wrote (merge.unfinished)
    again = shell_join([*command(), "merge", out_dir, *shard_dirs,
                        *(["--allow-partial"] if allow_partial else []),
                        *(["--no-report"] if no_report else [])])
    try:
        meta = do_merge(out_dir, shard_dirs, allow_partial=allow_partial)
    except StoreWriteError as e:     # the machine's fault (a full disk), not the input's
        fail(f"merge: {e} ({_not_finished(out_dir)}); with room to write, the same merge "
             "command run again finishes it:", 1, command=again)
    except (MergeError, StoreError) as e:
        fail(f"merge: {e}")
    except Interrupted as e:
        name = signal.Signals(e.signum).name
        if _merge_finished(out_dir):        # as its store closed
            fail(f"merge: interrupted by {name} after the merge finished: {out_dir} is "
                 "complete" + ("" if no_report else "; write the report with:"),
                 128 + e.signum, command="" if no_report else _report_command(out_dir))
        fail(f"merge: interrupted by {name} ({_not_finished(out_dir)}); the same merge command "
             "run again finishes it:", 128 + e.signum, command=again)
    info = meta["merge"]
    say(err, f"merged {info['shards']} shard(s) of {info['count']}: "
             f"{info['plan_size'] - info['missing']} of {info['plan_size']} cases into {out_dir}"
             + (f" (partial: {info['missing']} missing, listed in meta.json)" if info["partial"]
                else ""))
    if info.get("environment_differs"):
        say(err, "merge: note: the shards ran with environment variables set differently: "
                 f"{', '.join(info['environment_differs'])} (each shard's environment is in "
                 "meta.json's merged_from, the names in merge.environment_differs)")
    if not no_report:
        paths = _report_after(out_dir)
        say(err, f"report: {paths['report.html']}")


def _merge_finished(out_dir: Path) -> bool | None:
    """OUT_DIR's meta.json's merge.finished: whether the merge that stopped writing it had
    finished; None where it says neither (no merge written yet) or cannot be read."""
    from normbench.harness.store import StoreError, load_meta
    try:
        finished = (load_meta(out_dir).get("merge") or {}).get("finished")
    except (StoreError, OSError, ValueError, AttributeError):
        return None
    return finished if isinstance(finished, bool) else None


def _not_finished(out_dir: Path) -> str:
    """A stopped merge's state, for its line: what meta.json says where it says so."""
    return ("meta.json says the merge did not finish" if _merge_finished(out_dir) is False
            else "the merge did not finish")


@app.command("list")
def list_():
    """Implementations and their properties, and why any is unavailable."""
    from normbench.harness import tables
    s = _strategies()
    cols = [("name", False), ("kind", False), ("deterministic by design", False),
            ("uses GROUPS", False), ("available", True), ("about", True)]
    rows = [[e.name, e.kind, "yes" if e.deterministic_by_design else "no",
             "yes" if e.uses_groups else "no", "yes" if e.available else f"no: {e.reason}",
             e.doc] for e in s.entries()]       # text: a doc's "[d]" is no rich markup
    tables.show(out, cols, rows, "implementations" + (" (Triton interpreter on CPU)"
                                                       if s.interpreted() else ""))


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory"),
           baseline: Optional[str] = typer.Option(None, "--baseline", help="implementation "
                                                  "the speedup plot compares against (one of the "
                                                  "run's) [default: torch where the run has it]"),
           markdown_table: bool = typer.Option(False, "--markdown-table", help="print the "
                                               "README's results table from this run (and "
                                               "write RUN_DIR/report-table.md)")):
    """Write RUN_DIR/report.html (self-contained), report.md and plots/ from a run (and
    report-table.md where it was written before: kept current)."""
    from normbench.harness.store import StoreError, check_run_dir, load_meta, load_records
    if markdown_table and baseline is not None:
        fail("report: --baseline chooses the reference of report.html's speedup plot, and "
             "--markdown-table writes no plot: give one or the other")
    try:
        check_run_dir(run_dir)
        load_records(run_dir)   # a report of records that cannot be read would only say so
        load_meta(run_dir)
    except StoreError as e:
        fail(f"report: {e}")
    from normbench.harness.interrupt import Interrupted
    try:
        written = _write_report(run_dir, baseline, table=markdown_table)
    except Interrupted as e:     # each file is whole, old or new, and every plot they link there
        again = (["--markdown-table"] if markdown_table else []) + \
            (["--baseline", baseline] if baseline is not None else [])
        _report_interrupted(e.signum, f"the records in {run_dir} are untouched",
                            _report_command(run_dir, *again))
    if markdown_table:
        _emit(written, end="", product="report")
        return
    for k, v in written.items():
        say(out, f"{k}: {v}")


def _again(config, overrides, shape, *, out_dir, **options) -> str:
    """The command that finishes an interrupted run: the same config, overrides, shapes and
    options (the plan and the shard must match), --resume, on one line that gives back every
    argument exactly when pasted into a shell (text.shell_join: bash's $'…' for a word with a
    tab or a newline), started as this process was (launch.command: `python run_bench.py`,
    `python -m normbench`, `normbench` or a normbench script's path).  A config read from
    standard input must be piped in again: the command ends `< CONFIG.yaml`, and a shell
    comment after it says so (the line still pastes as a command)."""
    from normbench.harness.launch import command
    from normbench.harness.text import shell_join
    words = [*command(), "run", config, *(overrides or ())]
    for x in shape or ():
        words += ["--shape", x]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not None and value is not False:     # 0 is a value (0.0 == False)
            words += [flag, str(value)]
    words += ["--out", str(out_dir), "--resume"]
    if config == "-":       # stdin is spent (or a terminal): run as printed, it would refuse
        return (shell_join(words) + " < CONFIG.yaml  # the config came on standard input: "
                "pipe the same one in again")
    return shell_join(words)


def _kept(out_dir) -> int:
    """How many records the run directory holds: 0 where there is none, or none can be read
    (a failure being reported must not raise another)."""
    from normbench.harness.run import held_keys
    from normbench.harness.store import StoreError
    try:
        return len(held_keys(out_dir)) if os.path.isdir(out_dir) else 0
    except (StoreError, OSError):
        return 0


def _write_failed(e: Exception, out_dir: Path, again: str):
    """A file of the run that could not be written (a full disk, a directory gone read-only):
    one line, exit 1, saying what records.csv keeps (each record is fsynced as it is stored;
    one whose append failed is cut back off) and the --resume that goes on once it can be
    written — rewriting records.parquet from records.csv, and marking the run complete."""
    from normbench.harness.run import is_complete
    from normbench.harness.store import RECORDS_CSV
    from normbench.harness.text import count as counted
    kept = _kept(out_dir)
    if not kept:
        fail(f"run: {e}", 1)
    state = "" if is_complete(out_dir) else " (the run is not marked complete)"
    fail(f"run: {e}; {counted(kept, 'record')} kept in {Path(out_dir) / RECORDS_CSV}{state}; "
         "once the directory can be written again, finish with:", 1, command=again)


def _after_sweep(signum: int, out_dir: Path, no_report: bool):
    """Exit 128 + signum for a signal that came once every record of the run was stored (as
    it closed, or as its tables were printed): nothing to resume, the report (unless
    --no-report) still to write."""
    from normbench.harness.run import held_keys
    from normbench.harness.text import count
    line = (f"interrupted by {signal.Signals(signum).name} after the sweep finished: "
            f"{count(len(held_keys(out_dir)), 'record')} complete in {out_dir}")
    if no_report:
        fail(line, 128 + signum)
    fail(line + "; write the report with:", 128 + signum, command=_report_command(out_dir))


def _report_after(out_dir: Path) -> dict:
    """The report of a run or merge whose records are all written: a signal while it is made
    costs the report only, and the message says how to make it."""
    from normbench.harness.interrupt import Interrupted
    try:
        return _write_report(out_dir, None)
    except Interrupted as e:
        _report_interrupted(e.signum, f"the records in {out_dir} are complete",
                            _report_command(out_dir))


def _report_interrupted(signum: int, records: str, command: str):
    """Exit 128 + signum for a signal while a report was written (by `run`, `merge` or
    `report`), one line: what became of the records, and the command that writes it."""
    fail(f"interrupted by {signal.Signals(signum).name} while writing the report: {records}; "
         "write it with:", 128 + signum, command=command)


def _report_command(out_dir: Path, *options: str) -> str:
    """The command that writes OUT_DIR's report (with OPTIONS), as this process was launched."""
    from normbench.harness.launch import command
    from normbench.harness.text import shell_join
    return shell_join([*command(), "report", out_dir, *options])


_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)   # the user's to fix: exit 2


def _write_report(run_dir: Path, baseline: Optional[str], table: bool = False):
    """write_report (table: write_table, whose text it returns), with any failure as one
    line: exit 2 for the input's (a corrupted store, a file in the way, a directory it may not
    write: read-only, its permissions), 1 for the machine's (a full disk, an I/O error:
    another OSError).  A table that could not be written to report-table.md is printed first
    (it is made), then the line."""
    from normbench.harness.interrupt import reraise_if_interrupted
    from normbench.harness.report import ReportError, write_report, write_table
    from normbench.harness.store import StoreError
    from normbench.harness.text import describe_exception
    try:
        return write_table(run_dir) if table else write_report(run_dir, baseline=baseline)
    except (StoreError, ReportError) as e:
        fail(f"report: {e}")
    except Exception as e:
        reraise_if_interrupted(e)
        if isinstance(e, OSError) and e.errno in _NOT_WRITABLE:
            # the directory it could not write in, not the temporary file's random name
            where = Path(e.filename).parent if e.filename else run_dir
            if table:
                _emit(_table_text(run_dir), end="", product="report")
            fail(f"report: {where} is not writable ({e.strerror or e})"
                 + (": the table is printed, report-table.md not written" if table else ""))
        fail(f"report: cannot write the report of {run_dir}: {describe_exception(e)}",
             1 if isinstance(e, OSError) else 2)


def _table_text(run_dir: Path) -> str:
    """The text write_table writes to report-table.md, not written."""
    from normbench.harness import store
    from normbench.harness.report.build import _table_text as text
    return text(store.load_records(run_dir), store.load_meta(run_dir) or {},
                live=store.in_use(run_dir))


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"


# the metrics are harness.schema's declarations: a column declared with metric= is one here
Metric = Enum("Metric", {m: m for m in schema.metrics()}, type=str)
_METRICS_HELP = " or ".join(f"{m} ({c.name})" for m, c in schema.metrics().items())


def _compare_help() -> str:
    from normbench.harness.compare import method_text
    return ("Compare a candidate run (the last directory) against one or several baseline runs "
            "(or a directory of run directories), case by case. Exit 0: no regression; 1: "
            "regression(s); 2: runs that cannot be compared. " + method_text())


class _CompareCommand(typer.core.TyperCommand):
    """compare's usage errors (an unknown option, a bad --format) also go to stdout, in the
    chosen --format where it can be read (else table): CI keeps stdout as the job summary."""

    def parse_args(self, ctx, args):
        given = list(args)           # click consumes `args`
        try:
            return super().parse_args(ctx, args)
        except Exception as e:       # click's UsageError; Typer ≥ 0.24 vendors its own click
            if not any(k.__name__ == "UsageError" for k in type(e).__mro__):
                raise
            from normbench.harness.compare import FORMATS, render_error
            fmt = next((a.split("=", 1)[1] for a in given if a.startswith("--format=")), None)
            if fmt is None and "--format" in given[:-1]:
                fmt = given[given.index("--format") + 1]
            text = render_error(f"bad argument: {e.format_message()}",
                                fmt if fmt in FORMATS else "table")
            _emit(text, end="" if text.endswith("\n") else "\n")
            raise


@app.command(help="(see below)", cls=_CompareCommand)
def compare(dirs: List[Path] = typer.Argument(None, help="BASE_DIR... NEW_DIR: baseline run "
                                              "directories (or directories of runs), then the "
                                              "candidate"),
            threshold: str = typer.Option("5%", "--threshold", help="slowdown that counts, "
                                          "e.g. 5% or 0.05 (a bare number of 1 or more is "
                                          "percent: 5 = 5%)"),
            fmt: Format = typer.Option("table", "--format", help="output format"),
            metric: Metric = typer.Option("call", "--metric", help=_METRICS_HELP + "; call "
                                          "includes host time, gpu is the kernels' alone"),
            only: Optional[List[str]] = typer.Option(
                None, "--only", metavar="NAMES", help="gate only these implementations "
                "(comma-separated; kind:strategy or kind:baseline for a kind; repeatable: the "
                "names add up); the rest is reported"),
            exclude: Optional[List[str]] = typer.Option(
                None, "--exclude", metavar="NAMES", help="do not gate these (same names as "
                "--only; repeatable: the names add up)"),
            common: bool = typer.Option(False, "--common", help="compare the cases both runs hold "
                                        "(two different configs, or a partial candidate); "
                                        "without it a baseline case the candidate lacks is a "
                                        "regression"),
            mixed_baselines: bool = typer.Option(
                False, "--mixed-baselines", help="accept baseline runs of different commits "
                "(refused without it: their envelope would count the change between them as "
                "noise); the summary then says the envelope includes that change")):
    from normbench.harness.compare import (FORMATS, CompareError, compare as do_compare,
                                           exit_code, parse_threshold, render, render_error)
    fmt, metric = Format(fmt).value, Metric(metric).value      # the choices, listed in -h
    if fmt not in FORMATS:
        fail(f"compare: --format must be table, markdown or json, got {fmt!r}")

    def refuse(msg: str):            # exit 2, explained on stdout (job summary) and stderr
        from normbench.harness.text import one_line
        msg = one_line(msg)
        _emit(render_error(msg, fmt), end="" if fmt != "json" else "\n")
        fail(f"compare: {msg}")

    # --only a --only b: both, as run's --only (a list kept only the last one: a CI gate
    # silently narrower than written)
    only, exclude = (",".join(x) if x else None for x in (only, exclude))
    if len(dirs or ()) < 2:
        refuse("give at least one baseline directory and the candidate directory")
    try:
        thr = parse_threshold(threshold)
    except ValueError as e:
        refuse(f"--threshold: {e}")
    try:
        result = do_compare([str(d) for d in dirs[:-1]], str(dirs[-1]), threshold=thr,
                            metric=metric, only=only, exclude=exclude, common=common,
                            mixed_baselines=mixed_baselines)
    except CompareError as e:
        refuse(f"cannot compare: {e}")
    # the table as wide as the terminal (160 into a pipe or a file), its borders ASCII where
    # stdout's encoding cannot show rich's
    text = render(result, fmt, width=out.width, encoding=out.encoding)
    _emit(text, end="" if text.endswith("\n") else "\n")
    raise typer.Exit(exit_code(result))


@app.command()
def export(run_dir: Path = typer.Argument(..., help="a run directory"),
           fmt: str = typer.Option(..., "--format", help="github-action-benchmark "
                                   "(customSmallerIsBetter) or bencher (BMF)"),
           metric: str = typer.Option("call", "--metric", help=_METRICS_HELP),
           out: Optional[str] = typer.Option(None, "--out", metavar="FILE", help="write here "
                                             "instead of stdout (- is stdout; ./- a file)")):
    """A run's records as JSON for a benchmark tracker: github-action-benchmark's
    customSmallerIsBetter array (us, median, ± half the p20-p80) or Bencher's BMF (latency ns
    with p20/p80 bounds, throughput calls/s, bandwidth GB/s). Records that are not ok,
    incorrect (correct false), without a time or with one past float's range in ns or calls/s
    are left out (compare gates those; the JSON is strict, bounds only where ordered); stderr
    counts them by reason. A case recorded twice is exported once, from its last record
    (stderr says so). stderr also says what report says: a run stopped early, one shard,
    a run still measuring, records timed under the Triton interpreter or host-bound and
    measured next to other cases (these two also in an entry's extra). --metric gpu is a
    series of its own: names end " [gpu]", Bencher measures are gpu-latency, gpu-throughput
    and gpu-bandwidth."""
    from normbench.harness.export import ExportError, export as do_export
    try:
        text, skipped = do_export(run_dir, fmt, metric)
    except ExportError as e:
        fail(f"export: {e}")
    if out is None or out == "-":         # the string: Path('./-') would be '-' too
        _emit(text, product="export")
    else:
        from normbench.harness.store import write_file_atomic
        out_file = Path(out)
        try:
            if out_file.is_dir():           # '' is Path('.'): a directory too
                fail(f"export: --out {out!r}: give a file path, not a directory")
            _refuse_a_runs_file(out_file, f"export: --out {out}", "write the export elsewhere")
            write_file_atomic(out_file, text + "\n")
        except OSError as e:
            fail(f"export: --out {out}: cannot write it: {e.strerror or e}")
    from normbench.harness.text import one_line
    for line in skipped.notes + ((skipped.note(),) if skipped else ()):
        say(err, one_line(f"export: {line}"))


def _refuse_a_runs_file(path: Path, named: str, instead: str) -> None:
    """fail(), one line, where `path` (what `named` gives: "run: --out X") is one of a run
    directory's own files (_own_file_of_a_run); `instead` says what to give."""
    if (run := _own_file_of_a_run(path)) is not None:
        fail(f"{named}: one of the files of the run directory {run} (records, meta.json, lock, "
             f"report, plots), which report, compare and --resume read or write; {instead}")


def _own_file_of_a_run(path: Path) -> Optional[Path]:
    """The run directory whose own file (records, meta.json, lock, report, plots/ or a file
    in it) `path` names, else None.  The path as written to: its folders resolved, not its last part (a
    symlink there is replaced, not its target)."""
    from normbench.harness import store
    from normbench.harness.report.fmt import PLOTS_DIR, REPORT_HTML, REPORT_MD, REPORT_TABLE
    own = {store.RECORDS_CSV, store.RECORDS_PARQUET, store.META_JSON, store.LOCK_FILE,
           store.LOCK_INFO, REPORT_HTML, REPORT_MD, REPORT_TABLE, PLOTS_DIR}
    try:
        folder = path.parent.resolve()
    except (OSError, RuntimeError):
        return None                  # writing it fails with its own message
    if path.name in own and store.is_run_dir(folder):
        return folder
    if folder.name == PLOTS_DIR and store.is_run_dir(folder.parent):
        return folder.parent
    return None


def _is_click(e: BaseException, name: str) -> bool:
    """e is click's exception `name` (by name: Typer ≥ 0.24 vendors its own click)."""
    return any(k.__name__ == name for k in type(e).__mro__)


def main():
    from normbench.harness.interrupt import (Interrupted, exit_quietly, install,
                                             quiet_after_exit_hooks, reraise_if_interrupted)
    install()      # from the first moment: Ctrl-C or SIGTERM never leaves a traceback
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:                  # started with that descriptor closed (`>&-`): /dev/null
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:               # in its place, by number (open takes the lowest free
                os.dup2(null, fd)        # one: with stdin closed too, stdout's would be 0),
                os.close(null)           # so that nothing later opens a file there
            if getattr(sys, name) is None:   # its lines go nowhere, no traceback
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
    for stream in (sys.stdout, sys.stderr):   # µ, ×, γ on a stream of another encoding
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    quiet_after_exit_hooks()   # ... nor, after the exit hooks, kills the finished process
    try:
        try:
            compare.__doc__ = _compare_help()
            for cmd in app.registered_commands:
                if cmd.callback is compare:
                    cmd.help = compare.__doc__
            # not standalone: click would print a usage error as four lines to the raw
            # stderr, and a closed stderr made that exit 1 (compare's "regression")
            code = app(standalone_mode=False)
            sys.exit(code if isinstance(code, int) else 0)    # typer.Exit's code, or 0
        except Exception as e:   # a signal that surfaced wrapped (reraise_if_interrupted)
            reraise_if_interrupted(e)
            if _is_click(e, "UsageError"):      # an unknown option, a bad value, a missing argument
                ctx = getattr(e, "ctx", None)
                name = ctx.info_name if ctx is not None else "normbench"
                hint = f"; see {ctx.command_path} -h" if ctx is not None else ""
                from normbench.harness.text import one_line
                say(err, one_line(f"{name}: {e.format_message().rstrip('.')}{hint}"))
                sys.exit(2)
            if _is_click(e, "Abort"):           # click's own Ctrl-C at a prompt (none today)
                sys.exit(1)
            registry = sys.modules.get("normbench.strategies._registry")
            if registry is not None and isinstance(e, registry.PluginError):
                err.print(str(e), markup=False, highlight=False, soft_wrap=True)
                sys.exit(2)
            raise
    except Interrupted as e:   # before or after a sweep (a sweep handles its own)
        say(err, f"interrupted by {signal.Signals(e.signum).name}; nothing was being measured")
        sys.exit(128 + e.signum)
    finally:
        exit_quietly()     # and to the very end: a signal in an exit hook is no traceback

