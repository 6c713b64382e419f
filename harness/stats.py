"""Pure statistics for `harness/compare.py`: no I/O, no pandas, testable alone.

Between-run noise (judge_case): a baseline may hold several runs of the same config.
  * Several baseline runs with a time for the case: their medians span an envelope [lo, hi]
    (the measured between-run spread).  The candidate regresses only when its median is above
    hi by more than the threshold (cand > hi * (1 + threshold)), improves only when below lo
    by as much (cand < lo / (1 + threshold): the same factor the other way, so a threshold of
    100 % or more still lets a case improve), and the two-sample test below must agree
    against the nearest run.
  * One baseline run: between-run noise is unknown, and a conservative rule stands in for it:
    - UNSTEADY: when either side's p20-p80 spans more than WIDE of its median, the samples
      show the host or the GPU was not steady: the threshold is widened by that span (the
      widest of the two sides, as a fraction of its median), so a change of the size of the
      unsteadiness is noise, while one far beyond it still regresses or improves -- unless
      the candidate's GPU time says otherwise (`GpuChange`, from the caller): a GPU time
      within the threshold of the baseline's makes the call-time change host time in a
      disturbed run, noise (the committed same-commit H200 runs hold peers whose call times
      came 1.4-3.2x apart so; where the baseline recorded no GPU time, a slowdown whose GPU
      time is within the threshold of the baseline's call time, which bounds its GPU time
      from above, is noise too); a GPU time that moved the other way beyond the threshold
      (call faster, GPU slower, or the reverse) is a FLAG: host and GPU disagree, neither a
      regression nor an improvement; one that moved the same way leaves the verdict, and
      makes a call-time change beyond the threshold asked for (a host-bound case's 3x) but
      inside the widened one the regression or improvement it is (the GPU time did not share the host's
      unsteadiness: a +50 % in both was "noise" under a threshold widened to 59 %);
    - HOST-BOUND (the caller decides: host time dominates the call) the threshold is
      multiplied by HOST_FACTOR, since host time moves between runs far more than GPU time
      (an unsteady host-bound case takes the larger of the two thresholds);
    - otherwise the threshold itself.

Within the runs compared (judge), a time difference counts only when it is larger than the
threshold AND stands outside the samples' noise.  Noise is judged, in order of preference, by
  1. a one-sided Mann-Whitney U test on the timed samples, when both sides have at least
     MIN_SAMPLES of them (rank-based: no normality assumption, robust to the long right tail
     that GPU timings have), rejecting at ALPHA;
  2. non-overlap of the recorded p20-p80 intervals (candidate p20 above baseline p80 for
     "slower", candidate p80 below baseline p20 for "faster"), when samples are too few;
  3. nothing: with neither samples nor intervals the threshold alone decides, and the
     method says so ("threshold-only").
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from normbench.harness.cells import is_finite


ALPHA = 0.01
MIN_SAMPLES = 5
WIDE = 0.10          # p20-p80 wider than this fraction of the median: unsteady
HOST_FACTOR = 3.0    # one baseline run, host-bound case: threshold x HOST_FACTOR

# Rules of judge_case (Judgement.rule).
ENVELOPE = "between-run envelope"
SINGLE = "one baseline run"
SINGLE_HOST = "one baseline run, host-bound"
SINGLE_UNSTEADY = "one baseline run, unsteady"

MANN_WHITNEY = "mann-whitney"
INTERVALS = "p20-p80"
THRESHOLD_ONLY = "threshold-only"
WITHIN_THRESHOLD = "within-threshold"

# Verdicts of a time comparison.
REGRESSION = "regression"      # slower beyond threshold, outside noise
IMPROVEMENT = "improvement"    # faster beyond threshold, outside noise
NOISE = "noise"                # beyond threshold, but inside run-to-run noise
FLAG = "flag"                  # beyond threshold, but the GPU time moved the other way
UNCHANGED = "unchanged"        # within threshold
NOT_COMPARED = "n/a"           # a side has no usable time


finite = is_finite      # a real, finite number (not None, NaN, pd.NA or inf): harness/cells.py


def is_time(v) -> bool:
    """A median time to judge: finite and > 0.  A 0 or negative one (a broken or hand-edited
    record) is no time, as a missing one is: as a candidate's it would be an improvement of
    ratio 0, as a baseline's a division by it (export leaves such a record out too)."""
    return finite(v) and float(v) > 0


def parse_samples(text) -> list[float]:
    """A time_samples_ms value (JSON list) -> its finite samples; [] when empty or invalid."""
    if text is None:
        return []
    if isinstance(text, (list, tuple)):
        values = text
    else:
        try:
            values = json.loads(str(text))
        except (TypeError, ValueError):
            return []
        if not isinstance(values, list):
            return []
    return [float(v) for v in values if finite(v)]


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of the positive finite values; None when there are none."""
    logs = [math.log(v) for v in values if finite(v) and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def mann_whitney_p(baseline: Sequence[float], candidate: Sequence[float], alternative: str) -> float:
    """One-sided Mann-Whitney U p-value.  alternative "greater": candidate tends to be larger
    (slower); "less": candidate tends to be smaller (faster).  NaN when undefined."""
    from scipy.stats import mannwhitneyu    # imported on use: 1 s at every CLI start otherwise
    try:
        p = mannwhitneyu(candidate, baseline, alternative=alternative).pvalue
    except ValueError:
        return math.nan
    return float(p)


def intervals_separate(base: tuple[float, float], cand: tuple[float, float]) -> str | None:
    """"slower" when cand p20 > base p80, "faster" when cand p80 < base p20, "overlap"
    otherwise; None when an interval is missing."""
    (b20, b80), (c20, c80) = base, cand
    if not all(finite(v) for v in (b20, b80, c20, c80)):
        return None
    if c20 > b80:
        return "slower"
    if c80 < b20:
        return "faster"
    return "overlap"


@dataclass(frozen=True)
class Judgement:
    ratio: float | None          # candidate / baseline median time
    verdict: str                 # REGRESSION | IMPROVEMENT | NOISE | FLAG | UNCHANGED |
    #                              NOT_COMPARED
    method: str                  # how noise was judged (MANN_WHITNEY, INTERVALS, ...)
    p_value: float | None = None  # Mann-Whitney one-sided p, when that test ran
    detail: str = ""
    rule: str = ""               # judge_case: how between-run noise was handled
    threshold: float | None = None  # judge_case: the threshold applied
    spread: float | None = None  # judge_case: between-run spread hi/lo - 1 (several runs)
    flag: str = ""               # judge_case, verdict FLAG: what disagrees (for the flags)


def beyond(ratio: float, threshold: float) -> bool:
    """Whether candidate / baseline differs by more than the threshold: slower than
    1 + threshold, or faster than 1 / (1 + threshold).  The bound is symmetric in log(ratio),
    so a case can improve at any threshold (1 - threshold would be 0 or less from 100 % on,
    where a 100x speedup would be "unchanged" while a 100x slowdown regresses)."""
    return ratio > 1 + threshold or ratio * (1 + threshold) < 1


def judge(base_ms, cand_ms, threshold: float, *,
          base_samples: Sequence[float] = (), cand_samples: Sequence[float] = (),
          base_interval: tuple = (None, None), cand_interval: tuple = (None, None),
          alpha: float = ALPHA, min_samples: int = MIN_SAMPLES) -> Judgement:
    """Compare two median times.  Beyond the threshold (ratio > 1 + threshold: slower;
    ratio < 1 / (1 + threshold): faster -- the same factor either way, see `beyond`) the
    difference must also pass the noise test of the module docstring to become a
    REGRESSION / IMPROVEMENT; otherwise it is NOISE."""
    if not (is_time(base_ms) and is_time(cand_ms)):
        return Judgement(None, NOT_COMPARED, "-", None, "no time on one side")
    ratio = float(cand_ms) / float(base_ms)
    if not beyond(ratio, threshold):
        return Judgement(ratio, UNCHANGED, WITHIN_THRESHOLD)
    slower = ratio > 1 + threshold
    good_verdict = REGRESSION if slower else IMPROVEMENT
    direction = "slower" if slower else "faster"
    if len(base_samples) >= min_samples and len(cand_samples) >= min_samples:
        p = mann_whitney_p(base_samples, cand_samples, "greater" if slower else "less")
        significant = finite(p) and p < alpha
        detail = (f"Mann-Whitney U one-sided p={p:.2g} {'<' if significant else '>='} {alpha:g} "
                  f"(n={len(base_samples)}/{len(cand_samples)})")
        return Judgement(ratio, good_verdict if significant else NOISE, MANN_WHITNEY,
                         p if finite(p) else None, detail)
    sep = intervals_separate(base_interval, cand_interval)
    if sep is not None:
        significant = sep == direction
        detail = (f"p20-p80 base [{base_interval[0]:.4g}, {base_interval[1]:.4g}] vs cand "
                  f"[{cand_interval[0]:.4g}, {cand_interval[1]:.4g}] ms: "
                  f"{'disjoint' if significant else 'overlapping'}")
        return Judgement(ratio, good_verdict if significant else NOISE, INTERVALS, None, detail)
    return Judgement(ratio, good_verdict, THRESHOLD_ONLY, None,
                     "no samples or p20-p80 recorded: threshold alone decides")


@dataclass(frozen=True)
class Side:
    """One run's measurement of one case."""
    median: float | None
    p20: float | None = None
    p80: float | None = None
    samples: tuple = ()

    @property
    def width(self) -> float | None:
        """(p80 - p20) / median, None when unknown."""
        if not all(finite(v) for v in (self.median, self.p20, self.p80)) or self.median <= 0:
            return None
        return (self.p80 - self.p20) / self.median


def _two(base: Side, cand: Side, threshold: float, alpha: float) -> Judgement:
    return judge(base.median, cand.median, threshold, base_samples=base.samples,
                 cand_samples=cand.samples, base_interval=(base.p20, base.p80),
                 cand_interval=(cand.p20, cand.p80), alpha=alpha)


@dataclass(frozen=True)
class GpuChange:
    """The candidate's GPU time against the baseline's, for the unsteady one-run rule."""
    ratio: float                 # candidate / baseline GPU time
    bound: bool = False          # against the baseline's call time (it recorded no GPU time),
    # which bounds its GPU time from above only: it can show a slowdown, never a speed-up


def _moved(ratio: float) -> str:
    """"50% faster", "122% slower": a ratio as a change, said plainly."""
    return f"{abs(ratio - 1):.0%} {'slower' if ratio > 1 else 'faster'}"


def _by_gpu(verdict: str, call_ratio: float, gpu: GpuChange | None,
            threshold: float) -> tuple[str, str]:
    """An unsteady one-run REGRESSION or IMPROVEMENT of the call time, told by the GPU time
    (module docstring): (verdict, what to add to the detail; "" when the verdict stands)."""
    if gpu is None or verdict not in (REGRESSION, IMPROVEMENT):
        return verdict, ""
    slower = verdict == REGRESSION
    if gpu.bound:
        if slower and gpu.ratio <= 1 + threshold:
            return NOISE, ("the candidate's GPU time is within the threshold of the baseline's "
                           "call time (it recorded no GPU time; its call time bounds it): host "
                           "time in an unsteady run, not gated")
        return verdict, ""
    if not beyond(gpu.ratio, threshold):
        return NOISE, ("the candidate's GPU time is within the threshold of the baseline's: "
                       "host time in an unsteady run, "
                       + ("not gated" if slower else "not an improvement"))
    if (gpu.ratio > 1) != slower:
        return FLAG, (f"call time {_moved(call_ratio)} but GPU time {_moved(gpu.ratio)}: host "
                      "and GPU disagree, neither a regression nor an improvement")
    return verdict, ""


def _gpu_confirms(verdict: str, gpu: GpuChange | None, threshold: float) -> bool:
    """The GPU time moved as the call-time `verdict` (REGRESSION or IMPROVEMENT) says, beyond
    the threshold: a bound one (the baseline's call time) can confirm a slowdown only."""
    if gpu is None or verdict not in (REGRESSION, IMPROVEMENT):
        return False
    slower = verdict == REGRESSION
    if gpu.bound:
        return slower and beyond(gpu.ratio, threshold) and gpu.ratio > 1
    return beyond(gpu.ratio, threshold) and (gpu.ratio > 1) == slower


def judge_case(bases: Sequence[Side], cand: Side, threshold: float, *,
               host_bound: bool = False, gpu: GpuChange | None = None,
               alpha: float = ALPHA) -> Judgement:
    """The time verdict of one case against one or several baseline runs (module docstring).
    `gpu`: the candidate's GPU time against the baseline's, where both are known (the caller's
    host-time test of the unsteady one-run rule)."""
    bases = [b for b in bases if is_time(b.median)]
    if not bases or not is_time(cand.median):
        return Judgement(None, NOT_COMPARED, "-", None, "no time on one side")
    c = float(cand.median)
    if len(bases) >= 2:
        lo = min(bases, key=lambda b: b.median)
        hi = max(bases, key=lambda b: b.median)
        center = geomean(b.median for b in bases)
        spread = hi.median / lo.median - 1
        env = (f"{len(bases)} baseline runs span [{lo.median:.4g}, {hi.median:.4g}] ms "
               f"(spread {spread:.1%})")
        extra = dict(rule=ENVELOPE, threshold=threshold, spread=spread)
        if lo.median / (1 + threshold) <= c <= hi.median * (1 + threshold):
            return Judgement(c / center, UNCHANGED, WITHIN_THRESHOLD, None,
                             f"inside the envelope +- threshold: {env}", **extra)
        edge = hi if c > hi.median else lo
        j = _two(edge, cand, threshold, alpha)
        return Judgement(c / center, j.verdict, j.method, j.p_value,
                         f"{env}; against the nearest run: {j.detail}", **extra)
    (base,) = bases
    thr, rule = (threshold * HOST_FACTOR, SINGLE_HOST) if host_bound else (threshold, SINGLE)
    own = thr            # the case's threshold before any widening: 3x where host-bound
    # unsteady on either side (a candidate run disturbed on its host is judged as a disturbed
    # baseline is: same-commit reruns must compare clean); the regression it would hide
    # shows in GPU time, which `gpu` tells where measured
    widths = [w for w in (base.width, cand.width) if w is not None]
    if widths and max(widths) > WIDE:
        thr, rule = max(thr, threshold + max(widths)), SINGLE_UNSTEADY
    j = _two(base, cand, thr, alpha)
    verdict, detail, flag = j.verdict, j.detail, ""
    if rule == SINGLE_UNSTEADY:
        detail = (f"p20-p80 spans {max(widths):.0%} of the median (> {WIDE:.0%}): unsteady, "
                  f"threshold widened to {thr:.1%}" + (f"; {detail}" if detail else ""))
        verdict, told = _by_gpu(verdict, j.ratio, gpu, threshold)
        if verdict == UNCHANGED:
            # gated at the case's own threshold (a host-bound one's 3x): unsteadiness widens
            # a gate, it never makes it tighter than a steady run's
            asked = _two(base, cand, own, alpha)
            if _gpu_confirms(asked.verdict, gpu, threshold):
                j, verdict = asked, asked.verdict
                told = (f"call time {_moved(j.ratio)} and GPU time {_moved(gpu.ratio)}, both "
                        f"beyond the {threshold:.1%} threshold: the change is not the "
                        "unsteadiness, gated at the threshold asked for" if own == threshold
                        else f"call time {_moved(j.ratio)}, beyond the host-bound case's "
                        f"{own:.1%} threshold, and GPU time {_moved(gpu.ratio)}, beyond the "
                        f"{threshold:.1%} one: the change is not the unsteadiness, gated at "
                        "the case's threshold")
        detail += f"; {told}" if told else ""
        flag = told if verdict == FLAG else ""
    if verdict == UNCHANGED and thr > threshold and j.ratio is not None \
            and beyond(j.ratio, threshold):
        # beyond the threshold asked for, inside the widened one: noise, and shown as such
        verdict = NOISE
        change = (f"{j.ratio - 1:+.1%}" if j.ratio > 1 else     # faster by the factor
                  f"{1 / j.ratio:.4g}x faster")                   # beyond() judged
        detail = "; ".join(filter(None, (detail, f"{change} is beyond the "
                                          f"{threshold:.1%} threshold but inside the widened "
                                          f"{thr:.1%}: noise")))
    return Judgement(j.ratio, verdict, j.method, j.p_value, detail, rule=rule, threshold=thr,
                     flag=flag)


def parse_threshold(text) -> float:
    """The relative threshold as a fraction: "5%" -> 0.05, "0.05" -> 0.05, and a bare number
    of 1 or more is read as percent ("5" -> 0.05).  ValueError when negative or not finite."""
    percent = False
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        from normbench.harness.text import decimal
        s = str(text).strip()
        percent = s.endswith("%")
        value = decimal(s[:-1] if percent else s)      # ASCII digits: float() read '５%'
        if value is None:
            raise ValueError(f"threshold must look like 5% or 0.05, got {text!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"threshold must be a non-negative fraction (0.05) or percentage (5%), "
                         f"got {text!r}")
    if percent or value >= 1:          # "5" means 5 %, never a 500 % threshold
        value /= 100.0
    return value
