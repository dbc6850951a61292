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
from scipy.spatial import cKDTree
from scipy.stats import spearmanr

from ..errors import ValidationError
from .lyapunov import default_min_tsep, local_lyapunov
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


def ramp_up(bps, start_s=None, end_s=None, *, fraction: float = 0.9) -> RampUp:
    """Split a trace into ramp-up and sustainment (see module docstring)."""
    y = np.asarray(bps, dtype=float)
    if y.ndim != 1 or y.size < 2 or not np.all(np.isfinite(y)):
        raise ValidationError("bps", "need a 1-D trace of at least 2 finite rates")
    if not (0 < fraction <= 1):
        raise ValidationError("fraction", f"must be in (0, 1], got {fraction!r}")
    start = np.arange(y.size, dtype=float) if start_s is None else np.asarray(start_s, dtype=float)
    end = start + 1.0 if end_s is None else np.asarray(end_s, dtype=float)
    dt = end - start
    level = float(np.median(y[y.size // 2:]))
    reached = np.flatnonzero(y >= fraction * level)
    i = int(reached[0]) if reached.size else y.size - 1
    T_O = float(dt.sum())
    T_R = float(dt[:i].sum())
    theta_R = float(np.sum(y[:i] * dt[:i]) / T_R) if T_R > 0 else math.nan
    theta_S = float(np.sum(y[i:] * dt[i:]) / dt[i:].sum())
    return RampUp(T_R, T_O, T_R / T_O, theta_R, theta_S, float(np.sum(y * dt) / T_O), i)


def poincare_points(x) -> tuple[np.ndarray, np.ndarray]:
    """The Poincaré map's points (θ_i, θ_{i+1})."""
    x = np.asarray(x, dtype=float)
    return x[:-1], x[1:]


def poincare_spread(x, *, k: int = 8) -> float:
    """How far the map's points are from a 1-D curve: median over points of sqrt(λ2/λ1) of the local
    covariance of each point and its k nearest neighbours in the (θ_i, θ_{i+1}) plane. ≈ 0 on a curve,
    ≈ 0.6–0.7 for white noise (an isotropic cloud, k = 8); 0 when neighbourhoods collapse to points."""
    a, b = poincare_points(x)
    pts = np.column_stack([a, b])
    if pts.shape[0] < k + 1:
        return math.nan
    sd = pts.std()
    if sd == 0:
        return 0.0
    pts = pts / sd
    _, nb = cKDTree(pts).query(pts, k=k + 1)
    local = pts[nb] - pts[nb].mean(axis=1, keepdims=True)            # (P, k+1, 2)
    sxx, syy = (local[..., 0] ** 2).mean(1), (local[..., 1] ** 2).mean(1)
    sxy = (local[..., 0] * local[..., 1]).mean(1)
    half, root = (sxx + syy) / 2, np.sqrt(((sxx - syy) / 2) ** 2 + sxy**2)  # 2×2 eigenvalues
    big, small = half + root, np.clip(half - root, 0, None)
    ratio = np.sqrt(small / np.where(big > 0, big, 1.0))
    return float(np.median(ratio))


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


def _local(s: np.ndarray, tsep: int):
    L = local_lyapunov(s)
    if L.size:
        q1, q2, q3 = np.percentile(L, [25, 50, 75])
        stats = (float(L.mean()), float(q2), float(L.std()), float(q3 - q1))
    else:
        stats = (math.nan,) * 4
    nb = local_lyapunov(s, pairing="neighbour", min_tsep=tsep)
    return stats, int(L.size), float(nb.mean()) if nb.size else math.nan


def dynamics_many(traces, *, fraction: float = 0.9, emb_dim: int = 3, trajectory_len: int = 10,
                  n_surrogates: int = 0, alpha: float = 0.05, seed=None) -> list[TraceDynamics]:
    """trace_dynamics for many traces — each (bps, start_s, end_s) with None times allowed — with one
    batched Rosenstein (and IAAFT surrogate test when n_surrogates > 0) over all sustainment phases."""
    ramps, sus = [], []
    for bps, start, end in traces:
        y = np.asarray(bps, dtype=float)
        ramps.append(ramp_up(y, start, end, fraction=fraction))
        sus.append(y[ramps[-1].index:])
    tseps = [default_min_tsep(s) for s in sus]
    tests = lyapunov_tests(sus, n_surrogates=n_surrogates, alpha=alpha, seed=seed, emb_dim=emb_dim,
                           min_tsep=tseps, trajectory_len=trajectory_len)
    out = []
    for (bps, _, _), ramp, s, tsep, t in zip(traces, ramps, sus, tseps, tests):
        (mean, median, std, iqr), n_local, nb = _local(s, tsep)
        out.append(TraceDynamics(
            n_points=int(np.size(bps)), mean_bps=ramp.theta_O, ramp=ramp, poincare_spread=poincare_spread(s),
            local_mean=mean, local_median=median, local_std=std, local_iqr=iqr, n_local=n_local,
            neighbour_mean=nb, lyapunov=t.exponent, lyapunov_status=t.status, surrogate_p=t.p_value,
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
