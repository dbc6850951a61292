"""Small-sample statistics for the findings: Student-t intervals (valid for any n ≥ 2 under normal
errors, honest about width at n = 3), the three-way verdict, and Fisher-z intervals for rank
correlations. No interval is computed from fewer than MIN_REPS observations per group: with 2
repetitions nothing is declared significant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_REPS = 3
LEVEL = 0.95
REPRODUCED, NOT_REPRODUCED, UNDETERMINED = "reproduced", "not reproduced", "undetermined"


@dataclass(frozen=True)
class Interval:
    """An estimate with a two-sided interval at `level` (low/high nan when it could not be computed)."""
    estimate: float
    low: float
    high: float
    n: int                  # observations behind it
    level: float = LEVEL

    @property
    def known(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


def unknown(estimate: float = math.nan, n: int = 0) -> Interval:
    return Interval(float(estimate), math.nan, math.nan, n)


def _welch_parts(groups_a, groups_b):
    """Σ of cell differences of means and of their variances, with Welch–Satterthwaite df."""
    diff, var, num, den = 0.0, 0.0, 0.0, 0.0
    for a, b in zip(groups_a, groups_b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
        diff += a.mean() - b.mean()
        var += va + vb
        num += va + vb
        den += va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)
    return diff, var, (num ** 2 / den if den > 0 else math.inf)


def mean_difference(groups_a, groups_b, *, level: float = LEVEL) -> Interval:
    """Average over cells of mean(a_k) − mean(b_k), with a Welch t interval (cells independent, each
    group ≥ MIN_REPS observations; cells with fewer are left out). One cell = the classical Welch test."""
    cells = [(np.asarray(a, float), np.asarray(b, float)) for a, b in zip(groups_a, groups_b)]
    n_all = sum(a.size + b.size for a, b in cells)
    point = [a.mean() - b.mean() for a, b in cells if a.size and b.size]
    cells = [(a, b) for a, b in cells if a.size >= MIN_REPS and b.size >= MIN_REPS]
    if not cells:
        return unknown(np.mean(point) if point else math.nan, n_all)
    diff, var, df = _welch_parts(*zip(*cells))
    k = len(cells)
    est, se = diff / k, math.sqrt(var) / k
    if se == 0:
        return Interval(est, est, est, n_all, level)
    q = stats.t.ppf((1 + level) / 2, df)
    return Interval(est, est - q * se, est + q * se, n_all, level)


def t_quantile(n_min: int, level: float = LEVEL) -> float:
    """Two-sided Student-t quantile for the smallest group size (conservative df = n_min − 1)."""
    return float(stats.t.ppf((1 + level) / 2, max(n_min - 1, 1)))


def mean_draws(samples, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws × len(samples)) plausible values of each group's mean: m + s/√n · t_{n−1} (the posterior
    of a normal mean under the reference prior), so that intervals widen properly at n = 3."""
    out = np.empty((draws, len(samples)))
    for k, s in enumerate(samples):
        s = np.asarray(s, float)
        out[:, k] = s.mean() + s.std(ddof=1) / math.sqrt(s.size) * rng.standard_t(s.size - 1, draws)
    return out


def fisher_combined(rhos, sizes, *, level: float = LEVEL) -> Interval:
    """Rank correlations of independent strata combined on Fisher's z scale (weights n − 3; the
    Spearman variance 1.06/(n − 3) of Fieller et al. 1957); strata with n < 4 are left out."""
    r = np.asarray(rhos, float)
    n = np.asarray(sizes, float)
    ok = np.isfinite(r) & (n >= 4)
    if not ok.any():
        return unknown(n=int(n.sum()))
    r, n = np.clip(r[ok], -0.999999, 0.999999), n[ok]
    w = n - 3
    z = float(np.sum(w * np.arctanh(r)) / w.sum())
    se = math.sqrt(1.06 / w.sum())
    q = stats.norm.ppf((1 + level) / 2)
    return Interval(math.tanh(z), math.tanh(z - q * se), math.tanh(z + q * se), int(n.sum()), level)


def verdict(iv: Interval, *, above: float | None = None, below: float | None = None) -> str:
    """Three-way verdict for a claim 'statistic > above' (or '< below'): reproduced when the whole
    interval is on the claimed side, not reproduced when the whole interval is on the other side
    (ties count against the claim), undetermined otherwise or without an interval."""
    if not iv.known:
        return UNDETERMINED
    if above is not None:
        return REPRODUCED if iv.low > above else NOT_REPRODUCED if iv.high <= above else UNDETERMINED
    return REPRODUCED if iv.high < below else NOT_REPRODUCED if iv.low >= below else UNDETERMINED


def combine(verdicts) -> str:
    """A claim made of parts: reproduced when every part is, not reproduced when any part is not."""
    v = list(verdicts)
    if not v:
        return UNDETERMINED
    if NOT_REPRODUCED in v:
        return NOT_REPRODUCED
    return REPRODUCED if all(x == REPRODUCED for x in v) else UNDETERMINED
