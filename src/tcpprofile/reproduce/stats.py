"""Small-sample statistics for the findings: Student-t intervals (valid for any n ≥ 2 under normal
errors, honest about width at n = 3), the four-way verdict, the slope of a profile's log throughput
over log τ with a Welch interval (finding (i)'s trend test), intervals on τ_T differences with
censored τ_T (finding (ii)), and Fisher-z intervals for rank correlations. No interval is computed from
fewer than MIN_REPS observations per group: with 2 repetitions nothing is declared significant, and a
statistic without an interval is "not testable here" (the design gives it too few repetitions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_REPS = 3
LEVEL = 0.95
REPRODUCED, NOT_REPRODUCED, UNDETERMINED = "reproduced", "not reproduced", "undetermined"
NOT_TESTABLE = "not testable"   # the design or the instrument cannot show it (censored τ_T, short traces, …)
VERDICTS = (REPRODUCED, NOT_REPRODUCED, UNDETERMINED, NOT_TESTABLE)


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
        """An interval was computed (its bounds may be infinite: a censored τ_T leaves one side open)."""
        return not (math.isnan(self.low) or math.isnan(self.high))


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
    """Verdict for a claim 'statistic > above' (or '< below'): reproduced when the whole interval is on
    the claimed side, not reproduced when the whole interval is on the other side (a tie, the bound
    itself, counts against the claim), undetermined when it straddles; not testable without an
    interval (fewer than MIN_REPS runs per group, or nothing to compare)."""
    if not iv.known:
        return NOT_TESTABLE
    if above is not None:
        return REPRODUCED if iv.low > above else NOT_REPRODUCED if iv.high <= above else UNDETERMINED
    return REPRODUCED if iv.high < below else NOT_REPRODUCED if iv.low >= below else UNDETERMINED


def combine(verdicts) -> str:
    """A claim made of parts: not reproduced when any part is not; else undetermined when any part
    straddles (more runs could settle it); else not testable when any part cannot be shown by this
    design; reproduced only when every part is. No part at all: not testable."""
    v = list(verdicts)
    for outcome in (NOT_REPRODUCED, UNDETERMINED, NOT_TESTABLE):
        if outcome in v:
            return outcome
    return REPRODUCED if v else NOT_TESTABLE


def combine_testable(verdicts) -> str:
    """Instances of one claim (profiles of (i), comparisons along one axis of (ii)): those the design
    cannot show are left out, the rest combined; not testable only when none can be shown."""
    v = [x for x in verdicts if x != NOT_TESTABLE]
    return combine(v) if v else NOT_TESTABLE


def loglog_slope(x, samples, *, level: float = LEVEL) -> Interval:
    """Least-squares slope b = Σ w_k m_k of the per-point means m_k (samples[k], e.g. ln Θ at τ_k) over x_k
    (e.g. ln τ_k), w_k = (x_k − x̄)/Σ(x_j − x̄)², with the Welch interval b ± t·√(Σ w_k² s_k²/n_k),
    Welch–Satterthwaite df Σ(w_k² s_k²/n_k)² / ... (the interval of a linear combination of independent
    means). It estimates the slope of the line through the true means (the trend over the whole grid);
    no interval when a point has fewer than MIN_REPS samples."""
    x = np.asarray(x, float)
    s = [np.asarray(v, float) for v in samples]
    n_all = int(sum(v.size for v in s))
    if x.size < 3 or any(v.size == 0 for v in s):
        return unknown(n=n_all)
    w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    est = float(np.sum(w * [v.mean() for v in s]))
    if min(v.size for v in s) < MIN_REPS:
        return unknown(est, n_all)
    parts = np.array([wk ** 2 * v.var(ddof=1) / v.size for wk, v in zip(w, s)])
    var = float(parts.sum())
    if var == 0:
        return Interval(est, est, est, n_all, level)
    df = var ** 2 / float(np.sum(parts ** 2 / np.array([v.size - 1 for v in s])))
    q = stats.t.ppf((1 + level) / 2, df)
    return Interval(est, est - q * math.sqrt(var), est + q * math.sqrt(var), n_all, level)


def censored_difference(a_lo, a_hi, b_lo, b_hi, estimate: float, *, level: float = LEVEL) -> Interval:
    """Interval on a − b from paired plausible draws given as bounds: a draw measured inside the grid has
    lo = hi; one censored at the grid's end (τ_T > τ_max) has lo = τ_max, hi = +inf (τ_T < τ_min: lo = −inf,
    hi = τ_min). Low = the (1 − level)/2 quantile of a_lo − b_hi, high = the (1 + level)/2 quantile of
    a_hi − b_lo: bounds that stay valid whatever the censored values are. Both censored on the same side
    in a draw give (−inf, +inf) for it, so such a comparison never decides."""
    with np.errstate(invalid="ignore"):
        lo = np.asarray(a_lo, float) - np.asarray(b_hi, float)
        hi = np.asarray(a_hi, float) - np.asarray(b_lo, float)
    lo, hi = np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)
    return Interval(float(estimate), float(np.quantile(lo, (1 - level) / 2, method="lower")),
                    float(np.quantile(hi, (1 + level) / 2, method="higher")), int(lo.size), level)
