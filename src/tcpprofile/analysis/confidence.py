"""Confidence: the bootstrap interval the reports use, and the distribution-free bound of §5.2.

The §5.2 bound (HPDC'17, printed form):

    P{ I(Θ̂_O) − I(f*) > ε } < 32 (n/ε²)^{(1 + C/ε) log2(4ε/C)} · n · e^{−ε² n / (2C)²}

How we read it. The power term is the L∞ ε-cover of the unimodal class (Anthony & Bartlett, p. 175), whose
exponent is (fat-shattering dimension ≈ 1 + C/ε) × log2(a quantity that grows as ε/C shrinks). As printed,
log2(4ε/C) is negative for ε < C/4, which would make the "covering number" smaller than 1 and shrink as n
grows — impossible for a covering number (≥ 1, non-decreasing in n). We therefore read the argument as
inverted, log2(4C/ε), so the exponent is positive for ε < 4C (reading="covering", the default), and keep
the literal form available (reading="printed") for comparison. ε and C share units: with throughput
scaled by the link capacity, C = 1 and ε is a fraction of it. Everything is evaluated in log space.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr, ndtri

from ..choose.decide import MIN_INTERVAL_RUNS
from ..errors import ValidationError

READINGS = ("covering", "printed")
CI_METHODS = ("percentile", "bca")


def _check_positive(field: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValidationError(field, f"must be a positive finite number, got {value!r}")
    return float(value)


def _exponent(eps: float, C: float, reading: str) -> float:
    if reading not in READINGS:
        raise ValidationError("reading", f"one of {', '.join(READINGS)}, got {reading!r}")
    ratio = 4 * C / eps if reading == "covering" else 4 * eps / C
    return (1 + C / eps) * math.log2(ratio)


def log_vc_bound(n, eps: float, C: float = 1.0, *, reading: str = "covering"):
    """Natural log of the §5.2 bound (not capped at 0); n may be an array."""
    eps, C = _check_positive("eps", eps), _check_positive("C", C)
    n = np.asarray(n, dtype=float)
    if np.any(n < 1):
        raise ValidationError("n", "number of measurements must be >= 1")
    e = _exponent(eps, C, reading)
    # §5.2: ln 32 + e·ln(n/ε²) + ln n − ε² n / (2C)²   [ε, C in the same units]
    return math.log(32.0) + e * np.log(n / eps**2) + np.log(n) - eps**2 * n / (2 * C) ** 2


def vc_bound(n, eps: float, C: float = 1.0, *, reading: str = "covering"):
    """Upper bound on P{I(Θ̂) − I(f*) > ε} after n measurements, capped at 1."""
    return np.minimum(1.0, np.exp(np.minimum(log_vc_bound(n, eps, C, reading=reading), 0.0)))


def samples_needed(eps: float, C: float = 1.0, alpha: float = 0.05, *, reading: str = "covering") -> int:
    """Smallest n such that vc_bound(m) <= alpha for every m >= n.

    ln bound = a + (e + 1) ln n − b n is concave in n, so past its maximum it decreases; we search
    (doubling, then bisection) from the maximum.
    """
    if not (0 < alpha < 1):
        raise ValidationError("alpha", f"must be in (0, 1), got {alpha!r}")
    eps, C = _check_positive("eps", eps), _check_positive("C", C)
    target = math.log(alpha)
    b = eps**2 / (2 * C) ** 2
    peak = max(1.0, (_exponent(eps, C, reading) + 1) / b)
    lo = math.ceil(peak)  # the bound is non-increasing from here on

    def ok(m: int) -> bool:
        return float(log_vc_bound(m, eps, C, reading=reading)) <= target

    if ok(lo):
        # below the peak the bound increases with n: if it is small at the peak, it is small everywhere
        return 1 if ok(max(1, math.floor(peak))) else lo
    hi = lo * 2
    while not ok(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # invariant: not ok(lo), ok(hi)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def bootstrap_ci(values, stat: Callable = np.mean, *, level: float = 0.95, n_boot: int = 2000,
                 method: str = "bca", seed=None) -> tuple[float, float]:
    """Bootstrap confidence interval of stat(values).

    stat must be a numpy-style reduction accepting axis= (np.mean, np.median, ...). method "percentile"
    takes the (1±level)/2 quantiles of the resampled statistic; "bca" (default) corrects them for bias
    and skewness (Efron 1987: bias z0 from the resamples, acceleration from the jackknife). seed: int or
    numpy Generator. Fewer than decide.MIN_INTERVAL_RUNS (3) values give (nan, nan): a bootstrap of 2 is
    their range, which covers the mean about half the time (docs/select.md); constant values give (v, v).
    """
    if method not in CI_METHODS:
        raise ValidationError("method", f"one of {', '.join(CI_METHODS)}, got {method!r}")
    if not (0 < level < 1):
        raise ValidationError("level", f"must be in (0, 1), got {level!r}")
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < MIN_INTERVAL_RUNS:
        return (math.nan, math.nan)
    theta = float(stat(x, axis=-1))
    if np.ptp(x) == 0:
        return (theta, theta)
    rng = np.random.default_rng(seed)
    boot = stat(x[rng.integers(0, n, size=(n_boot, n))], axis=-1)
    q = np.array([(1 - level) / 2, (1 + level) / 2])
    if method == "bca":
        prop = np.mean(boot < theta) + 0.5 * np.mean(boot == theta)
        z0 = ndtri(np.clip(prop, 1 / n_boot, 1 - 1 / n_boot))
        jack = stat(np.broadcast_to(x, (n, n))[~np.eye(n, dtype=bool)].reshape(n, n - 1), axis=-1)
        d = jack.mean() - jack
        denom = 6 * np.sum(d**2) ** 1.5
        acc = np.sum(d**3) / denom if denom > 0 else 0.0
        z = ndtri(q)
        q = ndtr(z0 + (z0 + z) / (1 - acc * (z0 + z)))
    lo, hi = np.quantile(boot, q)
    return (float(lo), float(hi))
