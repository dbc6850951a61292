"""Scalable TCP (STCP): per-ACK increase a, multiplicative decrease to b·W (models paper §IV-C1)."""

from __future__ import annotations

import math

import numpy as np

from .base import Constraint
from .framework import COMMON_CONSTRAINTS, SEND_BACKLOG, FirstPrinciplesModel

NAME = "scalable"  # the variant as cc/registry.py spells it (the store's name); its other spellings come from there
ORDER = 10          # its place in the models' list (the models paper's order, §IV-C)


class STCP(FirstPrinciplesModel):
    """ACK-based MIMD. a: window increase per ACK [segments per acked segment]; b: window kept after a
    loss (cwnd ← b·cwnd). Closed form in both regimes (with and without Phase I)."""

    _constraints = dict(COMMON_CONSTRAINTS,
                        a=Constraint(float, 0, 1, "right", "segments per ACK"),
                        b=Constraint(float, 0, 1, "neither", "fraction of the window kept"))

    def __init__(self, *, capacity_bps=10e9, buffer_bytes=None, wmax_bytes=None, wmax_hard_bytes=math.inf,
                 size_bytes=math.inf, mss_bytes=1448, initial_window=10, duration_s=None, queue_fill=False,
                 startup_rtts=0.0, receiver_report=False, send_backlog=SEND_BACKLOG, trajectory=False, ss_burst=0.0,
                 ss_train_window=0.0, ss_train_slope=0.0, ss_trains_by_rate=False,
                 ss_burst_by_rate=False, a=0.01, b=0.875):
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

    def _after_loss(self, W, r):
        return self.b * W

    def _phase1(self, Ws, r):
        an = self.a * r.n  # §IV-D rule 1: increase factor × n in Phase I
        T0 = r.tau / an * np.log(r.bdp / (self.b * Ws))  # Eq. (10): w(t) = bW_s·e^{a n t/τ} = Cτ  [s]
        N0 = (r.bdp - self.b * Ws) / an  # N_0 = (Cτ − bW_s)/(a n)  [bits]
        return T0, N0

    def _phase2(self, W, r):
        w2 = np.maximum(r.bdp, self.b * W)  # Phase II starts at Cτ (or at bW when Phase I is empty)
        Tm = (W - w2) / (r.C * self.a)  # Eq. (9): w_2(t) = w2 + C·a·t  ⇒  T_m = (W_m − Cτ)/(Ca)  [s]
        Nm = (W * W - w2 * w2) / (2 * r.C * self.a * r.tau)  # Eq. (7): N_m = (W_m² − (Cτ)²)/(2Caτ)  [bits]
        return Tm, Nm

    # -- trajectory (trajectory.py) ----------------------------------------------------------------
    def _event_keep(self, j, r, alt=False):
        return self.b  # scalable.bpf.c scalable_ssthresh: cwnd − cwnd/8 (b = 0.875)

    def _t_bdp(self, Ws, st, r):
        return np.where(Ws < r.bdp, r.tau / (self.a * r.n) * np.log(r.bdp / Ws), 0.0)  # Eq. (10)  [s]

    def _t_to(self, Ws, st, W, r, tI):
        w2 = np.maximum(r.bdp, Ws)
        return tI + (W - w2) / (r.C * self.a)  # Eq. (9): dW/dt = a·C above Cτ  [s]

    def _grow(self, Ws, st, t, r):
        w = Ws * np.exp(self.a * r.n * t / r.tau)  # Eq. (10): w(t) = W_s·e^{a n t/τ}  [bits]
        return (w - Ws) / (self.a * r.n), w  # (1/τ)∫w dt  [bits]

    def _wm_closed(self, r):
        a, b, C, bdp, beta = self.a, self.b, r.C, r.bdp, r.beta
        wm = bdp + np.sqrt(2 * C * a * r.tau * beta)  # §IV-C1: W_m = Cτ + sqrt(2Caτβ)  [bits]
        # No Phase I (bW_m ≥ Cτ): Phase II from bW: (1−b²)W²/(2Caτ) − (1−b)W/a = β, the positive root of
        # (1+b)W² − 2CτW − 2aCτβ/(1−b) = 0 (derived here; not in the paper).
        wm_no1 = (bdp + np.sqrt(bdp * bdp + 2 * (1 + b) * a * bdp * beta / (1 - b))) / (1 + b)
        return np.where(b * wm < bdp, wm, wm_no1)

    def _wl_closed(self, target, r):
        # Loss epoch carrying target = N·M bits (docs/models.md), derived here, three regimes of W_L:
        a, b, bdp = self.a, self.b, r.bdp
        low = self.a * r.n * target / (1 - b)  # Phase I only (W ≤ Cτ): (1 − b)W/(a n) = N·M  [bits]
        g = bdp / r.n  # Phase I to Cτ then II: (Cτ − bW)/(a n) + (W² − (Cτ)²)/(2Caτ) = N·M, the larger root
        mid = b * g + np.sqrt(np.maximum(b * b * g * g - 2 * g * bdp + bdp * bdp + 2 * r.C * a * r.tau * target, 0))
        high = np.sqrt(2 * r.C * a * r.tau * target / (1 - b * b))  # Phase II only (bW ≥ Cτ): (1−b²)W²/(2Caτ)
        W = np.where(low <= bdp, low, np.where(b * high >= bdp, high, mid))  # N_ep increasing: one regime fits
        return W, self._epoch(W, r)[0]


MODEL = STCP   # the class models/registry.py registers under NAME
