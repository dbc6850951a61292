"""Decisions with honest confidence, shared by `select`, `tune` and adaptive campaigns (docs/select.md).

Small-sample intervals: a mean of n repetitions is a `Mean` (value, sampling variance s²/n, n − 1
degrees of freedom); its interval is Student's t, exact for normal repetitions at any n ≥ 2 (a
bootstrap of two values is their range and covers about half the time). Weighted sums (interpolation
between RTTs) and differences (best vs runner-up, candidate vs leader) keep the t form with the
Welch–Satterthwaite degrees of freedom. What an operator is shown needs MIN_INTERVAL_RUNS repetitions
(`select`: fewer give no interval but the runs that would decide), and a throughput interval is clipped
to the physically possible [0, C] (`physical`).

The indifference margin: configurations whose mean is within `margin` (relative, default 1 %) of the
best are a tie, and a tie goes to the simplest configuration (select.TIE_BREAK).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special   # Student t by its special functions: scipy.stats costs ~1 s to import

from ..errors import ValidationError

DEFAULT_MARGIN = 0.01
DEFAULT_CONFIDENCE = 0.95
# The project's standard: no interval shown from fewer than 3 runs. With 2, Student's t has 1 degree of
# freedom (t_{0.975, 1} = 12.71): two runs 0.1 Gbit/s apart give ±0.9 Gbit/s, beyond physics near C or 0.
MIN_INTERVAL_RUNS = 3


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student t quantile (cached: races and replays ask for the same few again and again)."""
    return float(special.stdtrit(df, q))     # the t quantile: what scipy.stats.t.ppf evaluates


def t_interval(value: float, se: float, df: float, confidence: float) -> tuple[float, float]:
    """The two-sided Student-t interval value ± t_{(1+confidence)/2, df}·se (in value's unit): what
    scipy.stats.t.interval(confidence, df, loc=value, scale=se) gives. Every t interval here and in
    reproduce/stats.py is this one."""
    half = t_quantile(0.5 + confidence / 2, df) * se
    return value - half, value + half


@dataclass(frozen=True)
class Mean:
    """An estimate with its sampling variance and degrees of freedom (df 0: no interval)."""
    value: float
    var: float
    df: float
    n: int

    @property
    def se(self) -> float:
        return math.sqrt(self.var) if self.var > 0 else 0.0

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float] | None:
        """Two-sided Student-t interval value ± t_{1−α/2, df}·se; None below two repetitions."""
        if not self.df >= 1 or not math.isfinite(self.var):
            return None
        return t_interval(self.value, self.se, self.df, confidence)

    def bound(self, confidence: float, side: str) -> float | None:
        """One-sided bound at `confidence`: value ± t_{confidence, df}·se ('upper' or 'lower')."""
        if not self.df >= 1 or not math.isfinite(self.var):
            return None
        step = t_quantile(confidence, self.df) * self.se
        return self.value + step if side == "upper" else self.value - step

    def half_width(self, confidence: float = DEFAULT_CONFIDENCE) -> float:
        """Half the interval's width (inf when there is none)."""
        ci = self.interval(confidence)
        return math.inf if ci is None else (ci[1] - ci[0]) / 2

    def p_above(self, threshold: float) -> float | None:
        """One-sided p-value of H0: true value ≤ threshold (t test); None without degrees of freedom."""
        if not self.df >= 1:
            return None
        if self.se == 0:
            return 0.0 if self.value > threshold else 1.0
        return float(special.stdtr(self.df, -(self.value - threshold) / self.se))   # t.sf(x) = stdtr(df, −x)


def physical(interval: tuple[float, float], ceiling: float | None) -> tuple[float, float, bool]:
    """A throughput interval [bit/s] clipped to what a link can carry, [0, C] (C None: [0, ∞)), and whether
    it was clipped. Throughput is never negative and never above the link's rate: a t interval reaching
    beyond either is a symmetric approximation, not a possible value."""
    lo, hi = interval
    top = math.inf if ceiling is None or not ceiling > 0 else float(ceiling)
    new_lo, new_hi = min(max(lo, 0.0), top), max(min(hi, top), 0.0)
    return new_lo, new_hi, (new_lo, new_hi) != (lo, hi)


def mean_of(values) -> Mean:
    """The sample mean of repetitions: var s²/n, df n − 1 (n = 1: var nan, df 0)."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n == 0:
        raise ValueError("no values")
    if n == 1:
        return Mean(float(x[0]), math.nan, 0.0, 1)
    return Mean(float(x.mean()), float(x.var(ddof=1)) / n, float(n - 1), n)


def satterthwaite(variances, dfs) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of independent variance estimates:
    ν = (Σ v_k)² / Σ (v_k² / ν_k)."""
    v = np.asarray(variances, float)
    d = np.asarray(dfs, float)
    if np.any(d < 1) or not np.all(np.isfinite(v)):
        return 0.0
    den = float(np.sum(v**2 / d))
    return float(np.sum(d)) if den == 0 else float(np.sum(v)) ** 2 / den


def weighted(means: list[Mean], weights) -> Mean:
    """Σ w_k·m_k of independent means: variance Σ w_k²·v_k, Satterthwaite df."""
    w = np.asarray(weights, float)
    vs = [wk**2 * m.var for wk, m in zip(w, means)]
    return Mean(float(sum(wk * m.value for wk, m in zip(w, means))), float(sum(vs)),
                satterthwaite(vs, [m.df for m in means]), min(m.n for m in means))


def difference(a: Mean, b: Mean) -> Mean:
    """a − b of independent estimates (Welch): variance v_a + v_b, Satterthwaite df."""
    return Mean(a.value - b.value, a.var + b.var, satterthwaite([a.var, b.var], [a.df, b.df]), min(a.n, b.n))


def paired(a, b) -> Mean:
    """Mean of paired differences a_i − b_i (blocked design): a one-sample t on the differences."""
    return mean_of(np.asarray(a, float) - np.asarray(b, float))


def parse_fraction(field: str, value, lo: float = 0.0, hi: float = 0.5) -> float:
    """'2%' or 0.02 -> 0.02, validated to lie in (lo, hi]."""
    if isinstance(value, str):
        text = value.strip()
        try:
            frac = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ValidationError(field, f"{value!r}: a percentage such as '2%' or a fraction such as 0.02") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        frac = float(value)
    else:
        raise ValidationError(field, f"{value!r}: a percentage such as '2%' or a fraction such as 0.02")
    if not (lo < frac <= hi) or not math.isfinite(frac):
        raise ValidationError(field, f"{value!r}: must be above {lo * 100:g}% and at most {hi * 100:g}%")
    return frac


def check_confidence(field: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and 0.5 <= value < 1):
        raise ValidationError(field, f"must be in [0.5, 1), got {value!r}")
    return float(value)


def ties(means: dict, margin: float) -> list:
    """Keys whose value is within `margin` (relative) of the largest: the indifference set."""
    best = max(means.values())
    return [k for k, v in means.items() if v >= best - margin * abs(best)]
