"""H-TCP: ACK-based AIMD whose increase grows with the time since the last loss (models paper §IV-C3,
Eq. (1a)–(1b)); solved numerically (Newton inversion, Gauss–Legendre quadrature, bisection of Eq. (8))."""

from __future__ import annotations

import math

import numpy as np

from .base import Constraint
from .framework import COMMON_CONSTRAINTS, FirstPrinciplesModel

_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


class HTCP(FirstPrinciplesModel):
    """Increase α(t) = 2(1−b)·a(t) segments per RTT, a(t) = 1 for t ≤ Δ_L, else 1 + 10(t−Δ_L) +
    ((t−Δ_L)/2)² (Eq. (1)), t = seconds since the last loss. Backoff b = RTT_min/RTT_max ∈ [0.5, 0.8]:
    with adaptive_backoff, RTT_max = τ + β/C (full buffer), else b is fixed.

    Corrections to the printed §IV-C3: (i) the window after Δ_L is w_1(Δ_L) + (M/τ)∫α, the integral of
    the increase, not α(t)·t/τ; (ii) in Phase II the per-ACK increase is α·M/w (α per RTT, as in Phase I
    and Reno), so w·dw/dt = α(t)·M·C, not dw/dt = α(t)·C (which is α segments per ACK).

    tabulated: W_m from a per-instance table (htcp_table.py, built on first use, throughput within
    0.5 % of the exact path) instead of bisecting Eq. (8) for every row.
    """

    name = "htcp"
    _constraints = dict(COMMON_CONSTRAINTS,
                        delta_l=Constraint(float, 0, math.inf, "left", "s"),
                        b=Constraint(float, 0.5, 0.8, "both", "fraction of the window kept"),
                        adaptive_backoff=Constraint(bool),
                        tabulated=Constraint(bool))

    def __init__(self, *, capacity_bps=10e9, buffer_bytes=None, wmax_bytes=None, wmax_hard_bytes=math.inf,
                 size_bytes=math.inf, mss_bytes=1448, initial_window=10, duration_s=None, queue_fill=False, delta_l=1.0, b=0.5,
                 adaptive_backoff=True, tabulated=True):
        self.capacity_bps = capacity_bps
        self.buffer_bytes = buffer_bytes
        self.wmax_bytes = wmax_bytes
        self.wmax_hard_bytes = wmax_hard_bytes
        self.size_bytes = size_bytes
        self.mss_bytes = mss_bytes
        self.initial_window = initial_window
        self.duration_s = duration_s
        self.queue_fill = queue_fill
        self.delta_l = delta_l
        self.b = b
        self.adaptive_backoff = adaptive_backoff
        self.tabulated = tabulated

    def _prepare(self, r):
        if self.adaptive_backoff:
            b = np.clip(r.tau / (r.tau + r.beta / r.C), 0.5, 0.8)  # b = RTT_min/RTT_max ∈ [0.5, 0.8]
        else:
            b = np.full(r.tau.shape, float(self.b))
        r["b"] = b
        r["s"] = 2 * (1 - b)  # α(t) = 2(1 − b)·a(t)

    # A(t) = ∫_0^t α [segments·s/RTT], B(t) = ∫_0^t A; u = t − Δ_L.
    def _A(self, t, s):
        u = np.maximum(t - self.delta_l, 0.0)
        return s * (t + 5 * u * u + u ** 3 / 12)  # ∫ Eq. (1a)/(1b) dt, times 2(1 − b)

    def _B(self, t, s):
        u = np.maximum(t - self.delta_l, 0.0)
        return s * (t * t / 2 + 5 * u ** 3 / 3 + u ** 4 / 48)

    def _A_inv(self, y, s):
        """t ≥ 0 with A(t) = y (A increasing): linear below Δ_L, Newton on the cubic above."""
        z = y / s
        v = np.maximum(z - self.delta_l, 0.0)  # solve p(u) = u + 5u² + u³/12 = v, p convex increasing
        u = np.minimum.reduce([v, np.sqrt(v / 5), np.cbrt(12 * v)])  # p(u) ≥ v: Newton decreases monotonically
        for _ in range(60):
            step = (u + 5 * u * u + u ** 3 / 12 - v) / (1 + 10 * u + u * u / 4)
            u = u - step
            if not np.any(step > 1e-13 * (1 + u)):
                break
        return np.where(z <= self.delta_l, z, self.delta_l + u)

    def _after_loss(self, W, r):
        return r.b * W

    def _phase1(self, Ws, r):
        k = r.n * r.M / r.tau  # §IV-D rule 1: increase function × n; dw/dt = n·M·α(t)/τ  [bits/s per α]
        T0 = self._A_inv((r.bdp - r.b * Ws) / k, r.s)  # w_1/w_2(T_0) = bW_s + k·A(T_0) = Cτ  [s]
        N0 = (r.b * Ws * T0 + k * self._B(T0, r.s)) / r.tau  # N_0 = (1/τ)∫_0^{T_0} w dt  [bits]
        return T0, N0

    def _phase2_times(self, W, r):
        has1 = r.b * W < r.bdp
        t2 = np.where(has1, self._phase1(W, r)[0], 0.0)  # Phase II starts at T_0 (or at 0 without Phase I)
        w2 = np.maximum(r.bdp, r.b * W)
        kk = 2 * r.M * r.C  # w_3(t)² = w2² + 2·M·C·(A(t) − A(t2))  (Eq. (5) with ∂w/∂A = α·M/w)
        A2 = self._A(t2, r.s)
        tm = self._A_inv(A2 + (W * W - w2 * w2) / kk, r.s)  # Eq. (6): w_3(T_m) = W  [s]
        return t2, tm, w2, kk, A2

    def _phase2_T(self, W, r):
        t2, tm = self._phase2_times(W, r)[:2]
        return tm - t2

    def _phase2(self, W, r):
        t2, tm, w2, kk, A2 = self._phase2_times(W, r)
        # Eq. (7): N_m = (1/τ)∫_{T_0}^{T_m} w_3 dt, Gauss–Legendre on each side of Δ_L (α kinks there).
        mid = np.clip(self.delta_l, t2, tm)
        N = np.zeros_like(W)
        for lo, hi in ((t2, mid), (mid, tm)):
            half, centre = (hi - lo) / 2, (hi + lo) / 2
            t = centre[:, None] + half[:, None] * _GL_X[None, :]
            w = np.sqrt(np.maximum(w2[:, None] ** 2 + kk[:, None] * (self._A(t, r.s[:, None]) - A2[:, None]), 0.0))
            N += half * (w @ _GL_W)
        return tm - t2, N / r.tau

    def _wm_closed(self, r):
        nan = np.full(r.tau.shape, np.nan)
        if not self.tabulated:
            return nan
        from . import htcp_table

        params = tuple((k, getattr(self, k)) for k in htcp_table.KEY)
        y = htcp_table.table(type(self), params)
        same_c = r.C == float(self.capacity_bps)
        y = htcp_table.lookup(y, r.tau, r.beta / r.bdp, np.where(same_c, r.n, 0.0))
        return r.bdp * (1.0 + np.exp(y))  # [bits]; nan rows take the exact path
