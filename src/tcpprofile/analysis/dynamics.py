"""Throughput dynamics of one trace: ramp-up and sustainment (§3.1), Poincaré map and Lyapunov
exponents (§4), and the throughput–exponent relation across runs (Fig. 14).

Ramp-up detector: the sustained level is the median of the trace's second half; T_R is the start of
the first interval whose rate reaches `fraction` (default 0.9) of that level, i.e. ramp-up is the
whole intervals before it (T_R = 0 when the first interval already reaches it). Then
f_R = T_R/T_O, θ̄_R and θ̄_S are the duration-weighted means before and after T_R, and
Θ_O = θ̄_S − f_R(θ̄_S − θ̄_R) holds exactly (§3.1).
Dynamics statistics (Poincaré spread, exponents, surrogate test) use the sustainment phase t ≥ T_R,
where the trace is closest to stationary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from ..errors import ValidationError
from .lyapunov import default_min_tsep, local_lyapunov
from .poincare import neighbour_exponents, poincare_points, poincare_spread, poincare_spreads  # noqa: F401
from .surrogates import lyapunov_tests


@dataclass(frozen=True)
class RampUp:
    T_R: float        # ramp-up duration [s]
    T_O: float        # observation period [s]
    f_R: float        # T_R / T_O
    theta_R: float    # mean rate during ramp-up [bit/s] (nan when T_R = 0)
    theta_S: float    # mean rate during sustainment [bit/s]
    theta_O: float    # mean rate over T_O [bit/s]
    index: int        # first sustainment interval


def _padded(rows: list[np.ndarray], fill=np.nan) -> np.ndarray:
    out = np.full((len(rows), max((r.size for r in rows), default=0)), fill, dtype=float)
    for b, r in enumerate(rows):
        out[b, :r.size] = r
    return out


def _row_quantiles(V: np.ndarray, qs) -> np.ndarray:
    """numpy's default ('linear') percentiles of each row's finite values (nan where none): (B, len(qs))."""
    V = np.sort(V, axis=1)                               # nan last
    cnt = np.isfinite(V).sum(axis=1)
    out = np.full((V.shape[0], len(qs)), np.nan)
    has = cnt > 0
    r = np.flatnonzero(has)
    for c, q in enumerate(qs):
        h = (cnt[has] - 1) * q / 100.0
        lo = np.floor(h).astype(int)
        hi = np.minimum(lo + 1, cnt[has] - 1)
        out[has, c] = V[r, lo] + (h - lo) * (V[r, hi] - V[r, lo])
    return out


def ramp_ups(traces, *, fraction: float = 0.9) -> list[RampUp]:
    """ramp_up of many traces — each (bps, start_s, end_s), None times allowed — at once."""
    if not (0 < fraction <= 1):
        raise ValidationError("fraction", f"must be in (0, 1], got {fraction!r}")
    ys, dts = [], []
    for bps, start_s, end_s in traces:
        y = np.asarray(bps, dtype=float)
        if y.ndim != 1 or y.size < 2 or not np.all(np.isfinite(y)):
            raise ValidationError("bps", "need a 1-D trace of at least 2 finite rates")
        start = np.arange(y.size, dtype=float) if start_s is None else np.asarray(start_s, dtype=float)
        end = start + 1.0 if end_s is None else np.asarray(end_s, dtype=float)
        ys.append(y)
        dts.append(end - start)
    if not ys:
        return []
    n = np.array([y.size for y in ys])
    Y, D = _padded(ys), _padded(dts, 0.0)
    col = np.arange(Y.shape[1])[None, :]
    level = _row_quantiles(np.where(col >= (n // 2)[:, None], Y, np.nan), [50])[:, 0]  # median, 2nd half
    reached = (Y >= fraction * level[:, None]) & (col < n[:, None])
    i = np.where(reached.any(axis=1), reached.argmax(axis=1), n - 1)
    before = col < i[:, None]
    YD = np.where(col < n[:, None], Y * D, 0.0)
    T_O, T_R = D.sum(axis=1), np.where(before, D, 0.0).sum(axis=1)
    S_R, S_all = np.where(before, YD, 0.0).sum(axis=1), YD.sum(axis=1)
    out = []
    for b in range(len(ys)):
        theta_R = float(S_R[b] / T_R[b]) if T_R[b] > 0 else math.nan
        out.append(RampUp(float(T_R[b]), float(T_O[b]), float(T_R[b] / T_O[b]), theta_R,
                          float((S_all[b] - S_R[b]) / (T_O[b] - T_R[b])), float(S_all[b] / T_O[b]), int(i[b])))
    return out


def ramp_up(bps, start_s=None, end_s=None, *, fraction: float = 0.9) -> RampUp:
    """Split a trace into ramp-up and sustainment (see module docstring)."""
    return ramp_ups([(bps, start_s, end_s)], fraction=fraction)[0]


@dataclass(frozen=True)
class TraceDynamics:
    """Per-trace summary (rates in bit/s, times in s, exponents per second for 1 s intervals)."""
    n_points: int
    mean_bps: float
    ramp: RampUp
    poincare_spread: float
    local_mean: float      # mean of the paper's successive-difference L_i (telescopes, ≈ 0)
    local_median: float
    local_std: float
    local_iqr: float
    n_local: int           # finite L_i
    neighbour_mean: float  # mean of the nearest-neighbour secant L_i (1-D map exponent)
    lyapunov: float | None         # Rosenstein largest exponent; None iff lyapunov_status is "undetermined"
    lyapunov_status: str           # "estimated" | "periodic" | "undetermined" (lyapunov.STATUSES)
    surrogate_p: float | None      # p-value of the exponent against IAAFT surrogates; None: not tested
    alpha: float = 0.05

    @property
    def distinguishable(self) -> bool | None:
        """Exponent larger than its surrogates' at level alpha; None when not tested."""
        return None if self.surrogate_p is None else bool(self.surrogate_p <= self.alpha)

    def row(self) -> dict:
        r = self.ramp
        return {"n_points": self.n_points, "mean_bps": self.mean_bps, "T_R_s": r.T_R, "T_O_s": r.T_O,
                "f_R": r.f_R, "theta_R_bps": r.theta_R, "theta_S_bps": r.theta_S,
                "poincare_spread": self.poincare_spread, "local_lyap_mean": self.local_mean,
                "local_lyap_median": self.local_median, "local_lyap_std": self.local_std,
                "local_lyap_iqr": self.local_iqr, "n_local": self.n_local,
                "neighbour_lyap_mean": self.neighbour_mean, "lyapunov": self.lyapunov,
                "lyapunov_status": self.lyapunov_status, "surrogate_p": self.surrogate_p,
                "distinguishable": self.distinguishable}


def _local_stats(sus: list[np.ndarray]) -> np.ndarray:
    """The paper's successive-difference L_i of each trace: rows (mean, median, std, IQR, count)."""
    X = _padded(sus)
    dx = np.diff(X, axis=1)
    num, den = dx[:, 1:], dx[:, :-1]
    ok = np.isfinite(num) & np.isfinite(den) & (num != 0) & (den != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.where(ok, np.log(np.abs(np.where(ok, num, 1.0) / np.where(ok, den, 1.0))), np.nan)
        cnt = ok.sum(axis=1)
        mean = np.where(ok, L, 0.0).sum(axis=1) / cnt
        std = np.sqrt(np.where(ok, (L - mean[:, None]) ** 2, 0.0).sum(axis=1) / cnt)
    q = _row_quantiles(L, [25, 50, 75]) if L.shape[1] else np.full((len(sus), 3), np.nan)
    return np.column_stack([mean, q[:, 1], std, q[:, 2] - q[:, 0], cnt])


def dynamics_many(traces, *, fraction: float = 0.9, emb_dim: int = 3, trajectory_len: int = 10,
                  n_surrogates: int = 0, alpha: float = 0.05, seed=None) -> list[TraceDynamics]:
    """trace_dynamics for many traces — each (bps, start_s, end_s) with None times allowed — with one
    batched Rosenstein (and IAAFT surrogate test when n_surrogates > 0) over all sustainment phases."""
    traces = list(traces)
    ramps = ramp_ups(traces, fraction=fraction)
    sus = [np.asarray(bps, dtype=float)[r.index:] for (bps, _, _), r in zip(traces, ramps)]
    tseps = [default_min_tsep(s) for s in sus]
    tests = lyapunov_tests(sus, n_surrogates=n_surrogates, alpha=alpha, seed=seed, emb_dim=emb_dim,
                           min_tsep=tseps, trajectory_len=trajectory_len)
    spreads, nbs = poincare_spreads(sus), neighbour_exponents(sus, tseps)
    local = _local_stats(sus) if sus else np.empty((0, 5))
    out = []
    for (bps, _, _), ramp, spread, nb, t, (mean, median, std, iqr, n_local) in zip(
            traces, ramps, spreads, nbs, tests, local):
        out.append(TraceDynamics(
            n_points=int(np.size(bps)), mean_bps=ramp.theta_O, ramp=ramp, poincare_spread=float(spread),
            local_mean=float(mean), local_median=float(median), local_std=float(std), local_iqr=float(iqr),
            n_local=int(n_local),
            neighbour_mean=float(nb), lyapunov=t.exponent, lyapunov_status=t.status, surrogate_p=t.p_value,
            alpha=alpha))
    return out


def trace_dynamics(bps, start_s=None, end_s=None, *, fraction: float = 0.9, emb_dim: int = 3,
                   trajectory_len: int = 10, n_surrogates: int = 0, alpha: float = 0.05,
                   seed=None) -> TraceDynamics:
    """All per-trace statistics of the sustainment phase. Rosenstein: lag 1, Theiler window = the mean
    period (at most a quarter of the phase), fitted beyond the noise floor (lyapunov.rosenstein);
    with n_surrogates > 0 its p-value against IAAFT surrogates (surrogates.lyapunov_test). Statistics
    that need more points than available are nan; the exponent is then None, status "undetermined"."""
    return dynamics_many([(bps, start_s, end_s)], fraction=fraction, emb_dim=emb_dim,
                         trajectory_len=trajectory_len, n_surrogates=n_surrogates, alpha=alpha, seed=seed)[0]


@dataclass(frozen=True)
class Relation:
    """Mean throughput vs Lyapunov exponent over one configuration's runs (Fig. 14)."""
    n: int
    spearman_rho: float
    p_value: float
    mean_throughput_bps: float
    mean_lyapunov: float


def throughput_vs_lyapunov(throughput, exponent) -> Relation:
    """Spearman rank correlation between per-run mean throughput and exponent (non-finite pairs
    dropped; rho nan with fewer than 3 pairs)."""
    t = np.asarray(throughput, dtype=float)
    e = np.array([np.nan if v is None else v for v in exponent], dtype=float)  # None: undetermined
    ok = np.isfinite(t) & np.isfinite(e)
    t, e = t[ok], e[ok]
    rho, p = (math.nan, math.nan)
    if t.size >= 3 and np.ptp(t) > 0 and np.ptp(e) > 0:
        res = spearmanr(t, e)
        rho, p = float(res.statistic), float(res.pvalue)
    return Relation(int(t.size), rho, p, float(t.mean()) if t.size else math.nan,
                    float(e.mean()) if e.size else math.nan)
