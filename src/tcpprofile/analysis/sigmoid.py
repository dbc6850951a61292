"""The paper's constrained dual-sigmoid regression for the transition RTT τ_T (§2.3, Fig. 9–10).

Flipped sigmoid g_{a,τ0}(τ) = 1 − 1/(1+e^{−a(τ−τ0)}): concave for τ < τ0, convex for τ > τ0. The model
    f(τ) = g_{a1,τ1}(τ)·I(τ ≤ τ_T) + g_{a2,τ2}(τ)·I(τ ≥ τ_T),   τ2 ≤ τ_T ≤ τ1
is fitted by least squares to the profile mean scaled into (0, 1): Θ̃ = Θ̂ / capacity, clipped to
[1e-6, 1 − 1e-6], capacity = the link's goodput ceiling or rate when known, else the profile's maximum.
Because g has fixed asymptotes 1 and 0, the constraint also puts the concave piece above 0.5 and the
convex piece below 0.5 — the fit places τ_T near where the scaled profile crosses one half.

Search: τ_T candidates are every measured τ (the point then belongs to both pieces), every midpoint
between neighbours, and the two one-piece cases (all convex: τ_T = min τ; all concave: τ_T = max τ).
For each candidate and side a dense (a, τ0) grid gives the global region, then bounded least squares
(scipy least_squares, several starts) refines the best candidates.

Units: τ in seconds in and out (fit parameters a1, a2 per s). Inside, the fit works on τ normalised to [0, 1]
over the measured grid, u = (τ − τ_min)/(τ_max − τ_min) (_scale): its grids, starts and bounds are in u and
a·span, so its conditioning does not depend on the unit τ comes in; _to_fit maps the result back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.special import expit

from ..errors import ValidationError
from .censoring import tau_t_of
from ..units import to_ms

_A = np.geomspace(0.3, 300.0, 40)           # steepness a·span (τ normalised to [0, 1])
_T0 = np.linspace(-1.5, 2.5, 121)           # τ0 in normalised units
_CLIP = 1e-6
_GRID_DTYPE = np.float32                    # grid stage only (the point estimate is refined in float64)
_REFINE = 3                                  # candidates refined by least squares
_START_FACTORS = (1.0,)                       # least-squares starts: a from the grid × these
S_PER_MS = 1e-3                              # a steepness a [1/s] as printed per ms: a × 1e-3 s/ms


def flipped_sigmoid(tau, a, tau0):
    """g_{a,τ0}(τ) = 1 − 1/(1 + e^{−a(τ−τ0)})  (§2.3)."""
    return expit(-a * (np.asarray(tau, dtype=float) - tau0))


@dataclass(frozen=True)
class DualSigmoidFit:
    """Result with τ in s (tau_T, tau_T_grid, tau1, tau2); a1/a2 in 1/s. kind: 'dual' | 'convex' | 'concave'
    (one-piece fits leave the other piece's parameters nan). sse is on the scaled profile."""
    tau_T: float
    tau_T_grid: float     # last measured τ on the concave side (min τ when all convex), as in Fig. 10
    kind: str
    a1: float
    tau1: float
    a2: float
    tau2: float
    sse: float
    capacity: float

    def predict(self, tau) -> np.ndarray:
        """Fitted throughput (in the profile's units) at tau."""
        tau = np.asarray(tau, dtype=float)
        concave = tau <= self.tau_T if self.kind == "dual" else np.full(tau.shape, self.kind == "concave")
        g = np.where(concave, flipped_sigmoid(tau, self.a1, self.tau1), flipped_sigmoid(tau, self.a2, self.tau2))
        return self.capacity * g


def _candidates(u: np.ndarray):
    """(u_T, last concave index or -1, first convex index or K) for every allowed split."""
    K = u.size
    out = [(u[0], -1, 0), (u[-1], K - 1, K)]
    out += [(u[k], k, k) for k in range(1, K - 1)]
    out += [((u[k] + u[k + 1]) / 2, k, k + 1) for k in range(K - 1)]
    return out


def _grid_sse(u: np.ndarray, Y: np.ndarray, cands):
    """Grid-stage SSE per candidate for scaled profiles Y (B, K) -> (B, n_cand), and the τ0 grid.

    Minimising over a first, then taking running minima along τ0, gives the best grid point with
    τ0 ≥ τ_T (concave side) or τ0 ≤ τ_T (convex side) for every candidate at once.
    """
    t0 = np.union1d(_T0, [c[0] for c in cands])
    G = expit(-_A[None, :, None] * (u[:, None, None] - t0[None, None, :])).astype(_GRID_DTYPE)  # (K, a, t0)
    R = (Y.T.astype(_GRID_DTYPE)[:, :, None, None] - G[:, None]) ** 2         # (K, B, a, t0)
    left, right = np.empty((2, u.size, Y.shape[0], t0.size), dtype=_GRID_DTYPE)  # (K, B, t0)
    acc_l, acc_r = np.zeros(R.shape[1:], dtype=_GRID_DTYPE), np.zeros(R.shape[1:], dtype=_GRID_DTYPE)
    for k in range(u.size):  # running sums Σ_{i≤k} and Σ_{i≥k}, minimised over a
        acc_l += R[k]
        acc_r += R[u.size - 1 - k]
        acc_l.min(axis=1, out=left[k])
        acc_r.min(axis=1, out=right[u.size - 1 - k])
    left = np.minimum.accumulate(left[..., ::-1], axis=-1)[..., ::-1]          # min over τ0' ≥ τ0
    right = np.minimum.accumulate(right, axis=-1)                              # min over τ0' ≤ τ0
    sse = np.zeros((Y.shape[0], len(cands)))
    for j, (uT, last, first) in enumerate(cands):
        it = np.searchsorted(t0, uT)  # uT is on the grid
        if last >= 0:
            sse[:, j] += left[last, :, it]
        if first < u.size:
            sse[:, j] += right[first, :, it]
    return sse, t0


def _grid_start(u, y, t0, lo, hi):
    """Best grid (a, τ0) for one piece with lo ≤ τ0 ≤ hi."""
    ok = (t0 >= lo - 1e-12) & (t0 <= hi + 1e-12)
    g = expit(-_A[:, None, None] * (u[None, None, :] - t0[None, ok, None]))
    cost = np.sum((y - g) ** 2, axis=-1)
    ia, it = np.unravel_index(np.argmin(cost), cost.shape)
    return _A[ia], t0[ok][it], float(cost[ia, it])


def _refine_side(u, y, a0, t00, lo_t0, hi_t0):
    """Bounded least squares (analytic Jacobian) for one piece from its grid start (and a from the grid
    scaled by the other _START_FACTORS); τ0 is fixed when its bounds coincide."""
    pinned = lo_t0 == hi_t0

    def resid(p):
        return y - expit(-p[0] * (u - (lo_t0 if pinned else p[1])))

    def jac(p):
        t = lo_t0 if pinned else p[1]
        g = expit(-p[0] * (u - t))
        dg = g * (1 - g)
        return np.column_stack([(u - t) * dg] if pinned else [(u - t) * dg, -p[0] * dg])

    lb, ub = np.array([_A[0], lo_t0]), np.array([_A[-1], hi_t0])
    if pinned:
        lb, ub = lb[:1], ub[:1]
    best = None
    for a_start in (a0 * f for f in _START_FACTORS):   # starts × (1, 3, 1/3) changed no fit, took 3× the time
        x0 = np.clip(np.array([a_start] if pinned else [a_start, t00], float), lb, ub)
        res = least_squares(resid, x0, jac=jac, bounds=(lb, ub))
        x = np.array([res.x[0], lo_t0]) if pinned else res.x
        if best is None or 2 * res.cost < best[1]:
            best = (x, 2 * res.cost)
    return best


def _fit_scaled(u: np.ndarray, Y: np.ndarray, refine: bool):
    """Best (candidate index, [a1, τ1, a2, τ2], sse) per row of Y (B, K), in normalised units.
    Without refine only the candidate and its grid SSE are returned (parameters nan)."""
    cands = _candidates(u)
    sse, t0 = _grid_sse(u, Y, cands)
    if not refine:
        j = np.argmin(sse, axis=1)
        return cands, [(int(k), [np.nan] * 4, float(sse[b, k])) for b, k in enumerate(j)]
    results = []
    for b in range(Y.shape[0]):
        best = None
        for j in np.argsort(sse[b], kind="stable")[:_REFINE]:
            uT, last, first = cands[j]
            params, total = [np.nan] * 4, 0.0
            for side, (sl, lo, hi) in enumerate(((slice(0, last + 1), uT, _T0[-1]),
                                                 (slice(first, None), _T0[0], uT))):
                if (side == 0 and last < 0) or (side == 1 and first >= u.size):
                    continue
                a0, t00, _ = _grid_start(u[sl], Y[b, sl], t0, lo, hi)
                (a, tt), cost = _refine_side(u[sl], Y[b, sl], a0, t00, lo, hi)
                params[2 * side: 2 * side + 2] = [a, tt]
                total += cost
            if best is None or total < best[2] - 1e-15:
                best = (int(j), params, total)
        results.append(best)
    return cands, results


def _scale(tau, y, capacity):
    tau = np.asarray(tau, dtype=float)
    y = np.asarray(y, dtype=float)
    if tau.ndim != 1 or y.shape[-1] != tau.size or tau.size < 2:
        raise ValidationError("tau", "need at least 2 measured τ, matching the profile's length")
    if np.any(np.diff(tau) <= 0):
        raise ValidationError("tau", "must be strictly increasing")
    if not np.all(np.isfinite(y)):
        raise ValidationError("throughput", "profile values must be finite")
    cap = float(np.max(y)) if capacity is None or not np.isfinite(capacity) else float(capacity)
    if cap <= 0:
        raise ValidationError("capacity", f"must be positive, got {cap!r}")
    span = tau[-1] - tau[0]
    return tau, (tau - tau[0]) / span, np.clip(y / cap, _CLIP, 1 - _CLIP), cap, span


def _to_fit(tau, cands, result, cap, span) -> DualSigmoidFit:
    j, (a1, t1, a2, t2), sse = result
    uT, left, right = cands[j]
    kind = "convex" if left < 0 else "concave" if right >= tau.size else "dual"
    return DualSigmoidFit(
        tau_T=float(tau[0] + uT * span), tau_T_grid=float(tau[max(left, 0)]), kind=kind,
        a1=a1 / span, tau1=tau[0] + t1 * span, a2=a2 / span, tau2=tau[0] + t2 * span,
        sse=float(sse), capacity=cap)


def fit_dual_sigmoid(tau_s, mean, *, capacity: float | None = None) -> DualSigmoidFit:
    """Fit the dual-sigmoid model to a profile mean measured at strictly increasing `tau_s` [s]."""
    tau, u, y, cap, span = _scale(tau_s, mean, capacity)
    cands, (res,) = _fit_scaled(u, y[None, :], refine=True)
    return _to_fit(tau, cands, res, cap, span)


@dataclass(frozen=True)
class Transition:
    """τ_T with a bootstrap interval (runs resampled within each τ, profile mean refitted); τ in s
    (ci_low, ci_high, boot_tau_T, tau_min, tau_max), row() prints ms."""
    key: dict
    fit: DualSigmoidFit
    ci_low: float
    ci_high: float
    level: float
    boot_tau_T: np.ndarray
    tau_min: float = float("nan")     # the measured RTTs' range [s]: where a censored τ_T lies beyond
    tau_max: float = float("nan")

    @property
    def tau_T(self):
        """The τ_T every reader prints and draws (analysis.censoring.TauT: measured, or censored at a grid end)."""
        return tau_t_of(self.fit, [self.tau_min, self.tau_max])

    def row(self) -> dict:
        """One τ_T (tau_t.TauT) as printed and exported, τ in ms (units.to_ms), a per ms: tau_T_ms null
        when censored, tau_T_censored says beyond which end (tau_T_bound_ms); its interval null when censored
        or from too few runs (ci_reason)."""
        f, t = self.fit, self.tau_T
        has_ci = not t.censored and math.isfinite(self.ci_low) and math.isfinite(self.ci_high)
        reason = (None if has_ci else "censored: a bound, not a value" if t.censored
                  else "too few runs for an interval (fewer than 3 at an RTT)")
        return {**self.key, "tau_T": t.text(), "tau_T_ms": None if t.censored else to_ms(t.value_s),
                "tau_T_censored": None if not t.censored else t.side,
                "tau_T_bound_ms": to_ms(t.bound_s) if t.censored else None, "kind": f.kind,
                "tau_T_ci_low_ms": to_ms(self.ci_low) if has_ci else None,
                "tau_T_ci_high_ms": to_ms(self.ci_high) if has_ci else None, "ci_reason": reason, "level": self.level,
                "a1_per_ms": float(f.a1) * S_PER_MS, "tau1_ms": to_ms(f.tau1), "a2_per_ms": float(f.a2) * S_PER_MS,
                "tau2_ms": to_ms(f.tau2),
                "sse_scaled": f.sse, "capacity_bps": f.capacity, "n_boot": int(self.boot_tau_T.size)}


def transition_rtt(samples, tau_s, *, capacity: float | None = None, key: dict | None = None,
                   n_boot: int = 200, level: float = 0.95, seed=None) -> Transition:
    """τ_T of a profile given the per-τ samples (sequence of arrays, one per strictly increasing τ [s]).

    The point estimate refines the grid fit by least squares; bootstrap replicates use the grid stage
    only (same objective and candidates, cheaper); the interval is the percentile interval of the
    replicates' τ_T.
    """
    samples = [np.asarray(s, dtype=float) for s in samples]
    if any(s.size == 0 for s in samples):
        raise ValidationError("samples", "every τ needs at least one measurement")
    mean = np.array([s.mean() for s in samples])
    tau, u, y, cap, span = _scale(tau_s, mean, capacity)
    cands, (res,) = _fit_scaled(u, y[None, :], refine=True)
    fit = _to_fit(tau, cands, res, cap, span)
    boot = np.empty(0)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        Y = np.stack([s[rng.integers(0, s.size, size=(n_boot, s.size))].mean(axis=1) for s in samples], axis=1)
        Y = np.clip(Y / cap, _CLIP, 1 - _CLIP)
        boot = np.empty(n_boot)
        for lo in range(0, n_boot, 50):  # chunks bound the grid's memory
            _, rs = _fit_scaled(u, Y[lo:lo + 50], refine=False)
            boot[lo:lo + 50] = [tau[0] + cands[r[0]][0] * span for r in rs]
    q = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2]) if boot.size else (np.nan, np.nan)
    return Transition(key=dict(key or {}), fit=fit, ci_low=float(q[0]), ci_high=float(q[1]),
                      level=level, boot_tau_T=boot, tau_min=float(tau[0]), tau_max=float(tau[-1]))
