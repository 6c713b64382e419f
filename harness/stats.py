"""Pure statistics for `harness/compare.py`: no I/O, no pandas, testable alone.

A time difference between two runs counts only when it is larger than a threshold AND stands
outside run-to-run noise.  Noise is judged, in order of preference, by
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


ALPHA = 0.01
MIN_SAMPLES = 5

MANN_WHITNEY = "mann-whitney"
INTERVALS = "p20-p80"
THRESHOLD_ONLY = "threshold-only"
WITHIN_THRESHOLD = "within-threshold"

# Verdicts of a time comparison.
REGRESSION = "regression"      # slower beyond threshold, outside noise
IMPROVEMENT = "improvement"    # faster beyond threshold, outside noise
NOISE = "noise"                # beyond threshold, but inside run-to-run noise
UNCHANGED = "unchanged"        # within threshold
NOT_COMPARED = "n/a"           # a side has no usable time


def finite(x) -> bool:
    """True for a real, finite number (not None, NaN, pd.NA or inf)."""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


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
    verdict: str                 # REGRESSION | IMPROVEMENT | NOISE | UNCHANGED | NOT_COMPARED
    method: str                  # how noise was judged (MANN_WHITNEY, INTERVALS, ...)
    p_value: float | None = None  # Mann-Whitney one-sided p, when that test ran
    detail: str = ""


def judge(base_ms, cand_ms, threshold: float, *,
          base_samples: Sequence[float] = (), cand_samples: Sequence[float] = (),
          base_interval: tuple = (None, None), cand_interval: tuple = (None, None),
          alpha: float = ALPHA, min_samples: int = MIN_SAMPLES) -> Judgement:
    """Compare two median times.  Beyond the threshold (ratio > 1 + threshold: slower;
    ratio < 1 - threshold: faster) the difference must also pass the noise test of the module
    docstring to become a REGRESSION / IMPROVEMENT; otherwise it is NOISE."""
    if not (finite(base_ms) and finite(cand_ms)) or float(base_ms) <= 0:
        return Judgement(None, NOT_COMPARED, "-", None, "no time on one side")
    ratio = float(cand_ms) / float(base_ms)
    if 1 - threshold <= ratio <= 1 + threshold:
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


def parse_threshold(text) -> float:
    """The relative threshold as a fraction: "5%" -> 0.05, "0.05" -> 0.05, and a bare number
    of 1 or more is read as percent ("5" -> 0.05).  ValueError when negative or not finite."""
    percent = False
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip()
        percent = s.endswith("%")
        try:
            value = float(s[:-1] if percent else s)
        except ValueError:
            raise ValueError(f"threshold must look like 5% or 0.05, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"threshold must be a non-negative fraction (0.05) or percentage (5%), "
                         f"got {text!r}")
    if percent or value >= 1:          # "5" means 5 %, never a 500 % threshold
        value /= 100.0
    return value
