"""Throughput profiles over RTT τ: the paper's profile mean, box-plot statistics, bootstrap CI of the mean."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..choose.decide import MIN_INTERVAL_RUNS
from ..errors import ValidationError
from ..units import to_ms
from .confidence import bootstrap_ci


@dataclass(frozen=True)
class BoxStats:
    """Tukey box plot: quartiles (numpy 'linear' percentiles), whiskers at the most extreme data within
    1.5 IQR of the box, and the points beyond them."""
    median: float
    q1: float
    q3: float
    whisker_low: float
    whisker_high: float
    outliers: np.ndarray


def box_stats(values) -> BoxStats:
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValidationError("values", "box statistics need at least one value")
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    iqr = q3 - q1
    inside = x[(x >= q1 - 1.5 * iqr) & (x <= q3 + 1.5 * iqr)]
    outliers = x[(x < inside[0]) | (x > inside[-1])]
    return BoxStats(float(median), float(q1), float(q3), float(inside[0]), float(inside[-1]), outliers)


@dataclass(frozen=True)
class ProfileStats:
    """The per-τ statistics of one configuration's profile (the measured profile itself, a configuration's
    runs per τ, is choose.select.Profile); every array is indexed like `tau_s` (sorted, unique, in s).

    mean is the profile mean Θ̂_O(τ_k) = (1/n_k) Σ_i θ(τ_k, ·) over repeated runs (§5.2); ci_low/ci_high
    is its bootstrap interval at `level` (nan below 3 runs: rows() says "too few runs for an interval"); n_flagged counts runs on links that failed calibration.
    """
    key: dict
    tau_s: np.ndarray
    count: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    median: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    whisker_low: np.ndarray
    whisker_high: np.ndarray
    n_outliers: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_flagged: np.ndarray
    level: float
    samples: tuple = field(repr=False)  # per τ: the throughput values (for refits and bootstraps)

    @property
    def se(self) -> np.ndarray:
        """Standard error of the mean (nan where fewer than 2 runs)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 1, self.std / np.sqrt(self.count), np.nan)

    def at(self, tau_s) -> np.ndarray:
        """Profile mean linearly interpolated between measured τ [s] (§5.2); nan outside the measured range."""
        return np.interp(tau_s, self.tau_s, self.mean, left=np.nan, right=np.nan)

    def rows(self) -> list[dict]:
        """One row per τ, τ in ms as printed and exported (tau_ms, units.to_ms)."""
        names = ("count", "mean", "std", "median", "q1", "q3", "whisker_low", "whisker_high",
                 "n_outliers", "ci_low", "ci_high", "n_flagged")
        return [{**self.key, "tau_ms": to_ms(t), **{k: getattr(self, k)[i].item() for k in names},
                 "level": self.level, "ci_reason": None if np.isfinite(self.ci_low[i]) else
                 "too few runs for an interval" if self.count[i] < MIN_INTERVAL_RUNS else "no interval"}
                for i, t in enumerate(self.tau_s)]


def profile_stats(tau_s, throughput, *, flagged=None, key: dict | None = None, level: float = 0.95,
            n_boot: int = 2000, ci_method: str = "bca", seed=None) -> ProfileStats:
    """Statistics of per-run throughput values measured at RTTs `tau_s` [s] (one entry per run)."""
    tau = np.asarray(tau_s, dtype=float)
    y = np.asarray(throughput, dtype=float)
    if tau.shape != y.shape or tau.ndim != 1:
        raise ValidationError("throughput", "tau and throughput must be 1-D arrays of equal length")
    keep = np.isfinite(tau) & np.isfinite(y)
    flagged = np.zeros(tau.shape, bool) if flagged is None else np.asarray(flagged, bool)
    tau, y, flagged = tau[keep], y[keep], flagged[keep]
    if tau.size == 0:
        raise ValidationError("throughput", "no finite (tau, throughput) pairs")
    grid, inverse = np.unique(tau, return_inverse=True)
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("count", "mean", "std", "median", "q1", "q3", "whisker_low",
                                             "whisker_high", "n_outliers", "ci_low", "ci_high", "n_flagged")}
    samples = []
    for k in range(grid.size):
        v = y[inverse == k]
        b = box_stats(v)
        lo, hi = bootstrap_ci(v, np.mean, level=level, n_boot=n_boot, method=ci_method, seed=rng)
        for name, val in (("count", v.size), ("mean", v.mean()), ("std", v.std(ddof=1) if v.size > 1 else np.nan),
                          ("median", b.median), ("q1", b.q1), ("q3", b.q3), ("whisker_low", b.whisker_low),
                          ("whisker_high", b.whisker_high), ("n_outliers", b.outliers.size),
                          ("ci_low", lo), ("ci_high", hi), ("n_flagged", int(flagged[inverse == k].sum()))):
            cols[name].append(val)
        samples.append(v)
    arrays = {k: np.asarray(v, dtype=int if k in ("count", "n_outliers", "n_flagged") else float)
              for k, v in cols.items()}
    return ProfileStats(key=dict(key or {}), tau_s=grid, level=level, samples=tuple(samples), **arrays)
