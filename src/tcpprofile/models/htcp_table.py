"""Tabulated solution of Eq. (8) for H-TCP (models paper §IV-C3), so that the H-TCP model evaluates
≥ 10⁶ configurations/s like the closed-form variants.

Eq. (8) for H-TCP has no closed form (α(t) grows with the time since the last loss, in absolute
seconds). For one model instance (C, M, Δ_L, b) its root W_m depends on τ, n and q = β/(Cτ) only, and
the backoff b = clip(1/(1 + q), 0.5, 0.8) has its kinks at q = 1 and q = 1/4 (and b = 0.5 for τ ≤ 12 ms,
htcp.py). The table holds y = ln((W_m − Cτ)/(Cτ)) on a grid of ln τ × ln q (grid lines on both kinks, τ
nodes on both sides of 12 ms) for n = 1…N_MAX, solved by
the exact path (bisection of Eq. (8)); lookups interpolate bilinearly in (ln τ, ln q). Rows outside
the grid (τ, q, n, or another C) take the exact path. Error against the exact path (20,000 random
configurations of benchmarks/bench_models.py; tests/test_models_htcp_table.py): throughput within
0.5 % (99 % of them within 0.1 %), W_m within 0.7 %. Building a table solves 75,000 configurations
exactly (1-4 s here) once per (C, M, Δ_L, b, adaptive backoff); it is cached for the process.
"""

from __future__ import annotations

import functools
import math

import numpy as np

# τ from 0.1 ms to 1 s, plus two nodes on either side of the adaptive backoff's step at τ = 12 ms
# (htcp.py, JIFFY_BETA_TAU: b = 0.5 up to it), so that no cell interpolates across the step
_LN_UNIFORM = np.linspace(math.log(1e-4), math.log(1.0), 93)
_H_TAU = _LN_UNIFORM[1] - _LN_UNIFORM[0]
_STEP_CELL = int((math.log(0.012) - _LN_UNIFORM[0]) // _H_TAU)   # the uniform cell that holds 12 ms
LN_TAU = np.sort(np.concatenate([_LN_UNIFORM, [math.log(0.012), math.log(0.012) + 1e-9]]))
H_Q = math.log(4.0) / 8                                            # q grid lines on 1/4 and 1
LN_Q = H_Q * np.arange(round(math.log(1e-4) / H_Q), round(math.log(100.0) / H_Q) + 1)
N_MAX = 10
KEY = ("capacity_bps", "mss_bytes", "delta_l", "b", "adaptive_backoff", "flows_phase2")  # what Eq. (8) depends on


@functools.lru_cache(maxsize=8)
def table(cls, params: tuple) -> np.ndarray:
    """y[n−1, i_τ, i_q] for an exact (untabulated) twin of the model with these parameters
    (those that Eq. (8) depends on: capacity_bps, mss_bytes, delta_l, b, adaptive_backoff)."""
    twin = cls(**dict(params), tabulated=False)
    T, Q, N = np.meshgrid(np.exp(LN_TAU), np.exp(LN_Q), np.arange(1, N_MAX + 1), indexing="ij")
    C = float(twin.capacity_bps)
    r = twin._rows(T.ravel(), N.ravel(), (Q * C * T).ravel())
    with np.errstate(all="ignore"):
        wm = twin._solve_wm(r)
    y = np.log(wm / r.bdp - 1.0).reshape(T.shape)
    return np.ascontiguousarray(np.moveaxis(y, 2, 0))


def lookup(y: np.ndarray, tau, q, n) -> np.ndarray:
    """Bilinear interpolation of the table at (ln τ, ln q) per whole n; nan outside the grid."""
    lt = np.log(tau)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (np.log(q) - LN_Q[0]) / H_Q
    ok = (lt >= LN_TAU[0]) & (lt <= LN_TAU[-1]) & (v >= 0) & (v <= LN_Q.size - 1) & (n >= 1) & (n <= N_MAX) \
        & (n == np.round(n))
    # the τ cell: uniform in ln τ but for the two nodes inserted in cell _STEP_CELL (no searchsorted: 10× slower)
    i = np.clip(np.floor((np.where(ok, lt, LN_TAU[0]) - LN_TAU[0]) / _H_TAU), 0, _LN_UNIFORM.size - 2).astype(int)
    i = np.where(i > _STEP_CELL, i + 2, np.where(i == _STEP_CELL, i + (lt >= LN_TAU[i + 1]) + (lt >= LN_TAU[i + 2]), i))
    j = np.clip(np.floor(np.where(ok, v, 0)).astype(int), 0, LN_Q.size - 2)
    k = np.where(ok, n, 1).astype(int) - 1
    fu = np.where(ok, (lt - LN_TAU[i]) / (LN_TAU[i + 1] - LN_TAU[i]), 0)
    fv = np.where(ok, v, 0) - j
    out = ((1 - fu) * (1 - fv) * y[k, i, j] + fu * (1 - fv) * y[k, i + 1, j]
           + (1 - fu) * fv * y[k, i, j + 1] + fu * fv * y[k, i + 1, j + 1])
    return np.where(ok, out, np.nan)
