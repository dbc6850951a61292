"""Small-sample statistics for the findings: Student-t intervals (valid for any n ≥ 2 under normal
errors, honest about width at n = 3), the four-way verdict, the slope of a profile's log throughput
over log τ with a Welch interval (finding (i)'s trend test), intervals on τ_T differences with
censored τ_T (finding (ii)), and Fisher-z intervals for rank correlations. No interval is computed from
fewer than MIN_REPS observations per group: with 2 repetitions nothing is declared significant; such a
statistic is *undetermined* (more runs decide it) and carries the runs per group that would decide it if its
spread stayed (runs_to_decide). "Not testable" is for what no number of runs can show (censoring, traces too
short, a design that cannot vary the quantity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..choose.decide import t_interval

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
    needs: int | None = None   # without an interval (< MIN_REPS runs per group): runs per group that would decide

    @property
    def known(self) -> bool:
        """An interval was computed (its bounds may be infinite: a censored τ_T leaves one side open)."""
        return not (math.isnan(self.low) or math.isnan(self.high))


def unknown(estimate: float = math.nan, n: int = 0, needs: int | None = None) -> Interval:
    return Interval(float(estimate), math.nan, math.nan, n, needs=needs)


def runs_to_decide(n: int, estimate: float, halfwidth: float, bound: float) -> int | None:
    """Runs per group at which an interval of this half-width at n runs per group would leave `bound`, if
    the spread stayed: the half-width of a mean shrinks as 1/√n, so n* = n·(halfwidth/|estimate − bound|)²,
    at least MIN_REPS; None when the estimate sits on the bound or nothing is finite (no number decides)."""
    distance = abs(estimate - bound)
    if not (math.isfinite(distance) and math.isfinite(halfwidth)) or distance == 0:
        return None
    return max(MIN_REPS, math.ceil(n * (halfwidth / distance) ** 2))


def _needs(est: float, var: float, n_min: int, level: float, bound: float) -> int | None:
    """runs_to_decide from a provisional normal interval of variance `var` at n_min (≥ 2) runs per group."""
    if n_min < 2 or not math.isfinite(var):
        return None
    return runs_to_decide(n_min, est, float(stats.norm.ppf((1 + level) / 2)) * math.sqrt(var), bound)


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


def mean_difference(groups_a, groups_b, *, level: float = LEVEL, bound: float = 0.0) -> Interval:
    """Average over cells of mean(a_k) − mean(b_k), with a Welch t interval (cells independent, each
    group ≥ MIN_REPS observations; cells with fewer are left out). One cell = the classical Welch test.
    No such cell: no interval, and the runs that would decide against `bound` (from cells of ≥ 2)."""
    cells = [(np.asarray(a, float), np.asarray(b, float)) for a, b in zip(groups_a, groups_b)]
    n_all = sum(a.size + b.size for a, b in cells)
    point = [a.mean() - b.mean() for a, b in cells if a.size and b.size]
    full = [(a, b) for a, b in cells if a.size >= MIN_REPS and b.size >= MIN_REPS]
    if not full:
        two = [(a, b) for a, b in cells if a.size >= 2 and b.size >= 2]
        est = float(np.mean(point)) if point else math.nan
        if not two:
            return unknown(est, n_all)
        d, var, _ = _welch_parts(*zip(*two))
        needs = _needs(d / len(two), var / len(two) ** 2, min(min(a.size, b.size) for a, b in two), level, bound)
        return unknown(est, n_all, needs)
    cells = full
    diff, var, df = _welch_parts(*zip(*cells))
    k = len(cells)
    est, se = diff / k, math.sqrt(var) / k
    if se == 0:
        return Interval(est, est, est, n_all, level)
    return Interval(est, *t_interval(est, se, df, level), n_all, level)


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
    itself, counts against the claim), undetermined when it straddles or when a point estimate has no
    interval yet (fewer than MIN_REPS runs per group: more runs decide it); not testable when there is
    nothing to estimate (nothing to compare)."""
    if not iv.known:
        return UNDETERMINED if math.isfinite(iv.estimate) else NOT_TESTABLE
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


def linear_combination(weights, samples, *, level: float = LEVEL, bound: float = 0.0) -> Interval:
    """Σ w_k m_k of independent group means m_k (samples[k]) with the Welch interval
    Σ w_k m_k ± t·√(Σ w_k² s_k²/n_k), Welch–Satterthwaite df (Σ w_k² s_k²/n_k)² / Σ (w_k² s_k²/n_k)²/(n_k − 1).
    No interval when a group has fewer than MIN_REPS runs (then the runs that would decide against `bound`)."""
    w = np.asarray(weights, float)
    s = [np.asarray(v, float) for v in samples]
    n_all = int(sum(v.size for v in s))
    if any(v.size == 0 for v in s):
        return unknown(n=n_all)
    est = float(np.sum(w * [v.mean() for v in s]))
    parts = np.array([wk ** 2 * v.var(ddof=1) / v.size if v.size > 1 else math.nan for wk, v in zip(w, s)])
    if min(v.size for v in s) < MIN_REPS:
        return unknown(est, n_all, _needs(est, float(parts.sum()), min(v.size for v in s), level, bound))
    var = float(parts.sum())
    if var == 0:
        return Interval(est, est, est, n_all, level)
    df = var ** 2 / float(np.sum(parts ** 2 / np.array([v.size - 1 for v in s])))
    return Interval(est, *t_interval(est, math.sqrt(var), df, level), n_all, level)


def slope_weights(x) -> np.ndarray:
    """w_k = (x_k − x̄)/Σ(x_j − x̄)²: the least-squares slope through points (x_k, m_k) is Σ w_k m_k."""
    x = np.asarray(x, float)
    return (x - x.mean()) / np.sum((x - x.mean()) ** 2)


def chord_weights(x) -> np.ndarray:
    """Weights of the mean excess over the chord: (1/(K−1)) Σ_{interior k} [m_k − m_0 − λ_k (m_K − m_0)],
    λ_k = (x_k − x_0)/(x_K − x_0). HPDC'17 §1: a concave profile "is higher than the linear interpolation of
    the end points" (> 0), a convex one below it (< 0)."""
    x = np.asarray(x, float)
    lam = (x[1:-1] - x[0]) / (x[-1] - x[0])
    w = np.zeros(x.size)
    w[1:-1] = 1.0
    w[0] = -np.sum(1 - lam)
    w[-1] = -np.sum(lam)
    return w / (x.size - 2)


def loglog_slope(x, samples, *, level: float = LEVEL) -> Interval:
    """Least-squares slope b = Σ w_k m_k of the per-point means m_k (samples[k], e.g. ln Θ at τ_k) over x_k
    (e.g. ln τ_k), w = slope_weights(x), with linear_combination's Welch interval (the interval of a linear
    combination of independent means). It estimates the slope of the line through the true means (the trend
    over the whole grid); at least 3 points; no interval when a point has fewer than MIN_REPS samples."""
    x = np.asarray(x, float)
    if x.size < 3:
        return unknown(n=int(sum(np.size(v) for v in samples)))
    return linear_combination(slope_weights(x), samples, level=level)


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
