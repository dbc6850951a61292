"""Reno: ACK-based AIMD (+a segments per RTT, ×b at a loss), in the framework of the models paper §IV."""

from __future__ import annotations

import math

import numpy as np

from .base import Constraint
from .framework import COMMON_CONSTRAINTS, SEND_BACKLOG, FirstPrinciplesModel

NAME = "reno"  # the variant as cc/registry.py spells it (the store's name)
ORDER = 40          # its place in the models' list (the models paper's order, §IV-C)
# the variant's parameters each model configuration (configurations.py) adds to the one it extends
SETTINGS = {
    "trajectory": {"flows_phase2": True},      # n flows' Phase II growing n× (each adds a per RTT)
}


class Reno(FirstPrinciplesModel):
    """Phase I (no queue, RTT = τ): dw/dt = n·a·M/τ. Phase II (queue, RTT = w/C): each ACK adds a·M²/w
    bits at C/M ACKs per second, so dw/dt = a·M·C/w  (Eq. (4)–(5) with ∂w/∂A = a·M/w), for the aggregate of
    n flows as printed in §IV-D (Phase II unchanged with n). flows_phase2: n× that — each flow gets C/n
    ACKs/s at w_i = W/n, so dW/dt = n·a·M·C/W (docs/models.md)."""

    _constraints = dict(COMMON_CONSTRAINTS,
                        a=Constraint(float, 0, math.inf, "neither", "segments per RTT"),
                        b=Constraint(float, 0, 1, "neither", "fraction of the window kept"),
                        flows_phase2=Constraint(bool))

    def __init__(self, *, capacity_bps=10e9, buffer_bytes=None, wmax_bytes=None, wmax_hard_bytes=math.inf,
                 size_bytes=math.inf, mss_bytes=1448, initial_window=10, duration_s=None, queue_fill=False,
                 startup_rtts=0.0, receiver_report=False, send_backlog=SEND_BACKLOG, trajectory=False, ss_burst=0.0,
                 ss_train_window=0.0, ss_train_slope=0.0, ss_trains_by_rate=False,
                 ss_burst_by_rate=False, a=1.0, b=0.5,
                 flows_phase2=False):
        self.capacity_bps = capacity_bps
        self.buffer_bytes = buffer_bytes
        self.wmax_bytes = wmax_bytes
        self.wmax_hard_bytes = wmax_hard_bytes
        self.size_bytes = size_bytes
        self.mss_bytes = mss_bytes
        self.initial_window = initial_window
        self.duration_s = duration_s
        self.queue_fill = queue_fill
        self.startup_rtts = startup_rtts
        self.receiver_report = receiver_report
        self.send_backlog = send_backlog
        self.trajectory = trajectory
        self.ss_burst = ss_burst
        self.ss_train_window = ss_train_window
        self.ss_train_slope = ss_train_slope
        self.ss_trains_by_rate = ss_trains_by_rate
        self.ss_burst_by_rate = ss_burst_by_rate
        self.a = a
        self.b = b
        self.flows_phase2 = flows_phase2

    def _after_loss(self, W, r):
        return self.b * W

    def _phase1(self, Ws, r):
        slope = r.n * self.a * r.M / r.tau  # §IV-D rule 1: increase × n  [bits/s]
        T0 = (r.bdp - self.b * Ws) / slope  # w(T_0) = bW_s + slope·T_0 = Cτ  [s]
        N0 = (self.b * Ws * T0 + slope * T0 * T0 / 2) / r.tau  # N_0 = (1/τ)∫_0^{T_0} w dt  [bits]
        return T0, N0

    def _na(self, r):
        """The aggregate's Phase II increase in segments per RTT: a, or n·a with flows_phase2."""
        return self.a * r.n if self.flows_phase2 else self.a

    def _phase2(self, W, r):
        w2 = np.maximum(r.bdp, self.b * W)
        k = self._na(r) * r.M * r.C  # Eq. (5) for Reno: w·dw/dt = a·M·C ⇒ w² = w2² + 2aMC·t
        Tm = (W * W - w2 * w2) / (2 * k)  # Eq. (6)  [s]
        Nm = (W ** 3 - w2 ** 3) / (3 * k * r.tau)  # Eq. (7): (1/τ)∫w dt = (1/τ)∫w²/(aMC) dw  [bits]
        return Tm, Nm

    # -- trajectory (trajectory.py) ----------------------------------------------------------------
    def _event_keep(self, j, r, alt=False):
        return self.b

    def _t_bdp(self, Ws, st, r):
        return np.maximum(r.bdp - Ws, 0.0) * r.tau / (r.n * self.a * r.M)  # dw/dt = n·a·M/τ  [s]

    def _t_to(self, Ws, st, W, r, tI):
        w2 = np.maximum(r.bdp, Ws)  # above Cτ: each of n flows dw_i/dt = a·M·C/W ⇒ W² = w2² + 2naMC·t
        return tI + (W * W - w2 * w2) / (2 * r.n * self.a * r.M * r.C)  # [s]

    def _grow(self, Ws, st, t, r):
        slope = r.n * self.a * r.M / r.tau  # [bits/s]
        return (Ws * t + slope * t * t / 2) / r.tau, Ws + slope * t  # (1/τ)∫w dt, w  [bits]

    def _wm_closed(self, r):
        # Eq. (8) with w2 = Cτ and W = x·Cτ: (Cτ)²/(aM)·(x−1)²(2x+1)/6 = β, i.e. y²(2y+3) = q with
        # y = x − 1, q = 6βaM/(Cτ)². Its root y ≥ 0 is y = z − 1/2 with z = cos(arccos(2q−1)/3) for q ≤ 1
        # and z = cosh(arccosh(2q−1)/3) for q > 1 (trigonometric / hyperbolic Cardano).
        q = 6 * r.beta * self._na(r) * r.M / (r.bdp * r.bdp)
        u = 2 * q - 1
        z = np.where(q <= 1, np.cos(np.arccos(np.clip(u, -1, 1)) / 3), np.cosh(np.arccosh(np.maximum(u, 1)) / 3))
        wm = (z + 0.5) * r.bdp  # [bits]
        return np.where(self.b * wm < r.bdp, wm, np.nan)  # no Phase I: solved numerically

    def _wl_closed(self, target, r):
        # Loss epoch carrying target = N·M bits (docs/models.md); Phase I only: (1 − b²)W²/(2naM) = N·M
        # (Mathis et al. for a = 1, b = ½); Phase II only (bW ≥ Cτ): (1 − b³)W³/(3aMCτ) = N·M. Between
        # (a cubic in W) nan: solved numerically.
        a, b, bdp = self.a, self.b, r.bdp
        low = np.sqrt(2 * r.n * a * r.M * target / (1 - b * b))  # [bits]
        high = np.cbrt(3 * self._na(r) * r.M * r.C * r.tau * target / (1 - b ** 3))  # [bits]
        W = np.where(low <= bdp, low, np.where(b * high >= bdp, high, np.nan))
        return W, self._epoch(W, r)[0]


MODEL = Reno   # the class models/registry.py registers under NAME
