"""CUBIC: window a cubic function of the time since the last loss (models paper §IV-C2, Eq. (12))."""

from __future__ import annotations

import math

import numpy as np

from .base import Constraint
from .framework import COMMON_CONSTRAINTS, SEND_BACKLOG, FirstPrinciplesModel

NAME = "cubic"  # the variant as cc/registry.py spells it (the store's name)
ORDER = 20          # its place in the models' list (the models paper's order, §IV-C)
# the variant's parameters each model configuration (configurations.py) adds to the one it extends
SETTINGS = {
    # HyStart's delay test ending a single flow's slow start before the loss, with its probability (_hystart)
    "single-flow": {"hystart": True},
}

# net/ipv4/tcp_cubic.c (Linux 6.x): HYSTART_DELAY_MIN 4000U, HYSTART_DELAY_MAX 16000U µs, the bounds of
# HYSTART_DELAY_THRESH(delay_min >> 3) = clamp(delay_min/8, 4 ms, 16 ms)  [s]
HYSTART_DELAY_MIN = 4e-3
HYSTART_DELAY_MAX = 16e-3


class CUBIC(FirstPrinciplesModel):
    """Time-since-loss variant: w(t) = c(t − K)³ + W_s, K = ∛(b·W_s/c)  (Eq. (12)).

    c: cubic scaling [segments/s³] (Linux 0.4); t in seconds (the integrals N = (1/τ)∫w dt of §IV-C2
    require seconds, although the text says "in units of RTT"); b: fraction of the window removed at a
    loss (paper 0.2 = Linux 2.6; Linux ≥ 3.x uses 717/1024 ⇒ b ≈ 0.3, the default here).
    n parallel flows use w(n·t) (§IV-D rule 1), which is the same curve with c → c·n³.
    """

    _constraints = dict(COMMON_CONSTRAINTS,
                        c=Constraint(float, 0, math.inf, "neither", "segments/s^3"),
                        b=Constraint(float, 0, 1, "neither", "fraction of the window removed"),
                        hystart=Constraint(bool))

    def __init__(self, *, capacity_bps=10e9, buffer_bytes=None, wmax_bytes=None, wmax_hard_bytes=math.inf,
                 size_bytes=math.inf, mss_bytes=1448, initial_window=10, duration_s=None, queue_fill=False,
                 startup_rtts=0.0, receiver_report=False, send_backlog=SEND_BACKLOG, trajectory=False, ss_burst=0.0,
                 ss_train_window=0.0, ss_train_slope=0.0, ss_trains_by_rate=False,
                 ss_burst_by_rate=False, c=0.4, b=0.3, hystart=False):
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
        self.c = c
        self.b = b
        self.hystart = hystart

    def _prepare(self, r):
        n = r.n  # n·n·n, not n ** 3 (pow: ~30× slower), the same whole number below 2⁵³
        r["ce"] = self.c * r.M * (n * n * n)  # c in bits/s³ with w(nt) = c n³ (t − K/n)³ + W  (§IV-D rule 1)

    def _after_loss(self, W, r):
        return (1 - self.b) * W  # Eq. (12) at t = 0

    def _k(self, W, r):
        return np.cbrt(self.b * W / r.ce)  # T_m = K = ∛(bW/c)  [s]

    def _d(self, W, r):
        return np.cbrt((W - r.bdp) / r.ce)  # K − T_0 = −∛((Cτ − W)/c)  [s]

    def _phase1(self, Ws, r, Kd=None):
        K, d = (self._k(Ws, r), self._d(Ws, r)) if Kd is None else Kd
        T0 = K - d  # §IV-C2: T_0 = ∛((Cτ − W)/c) + ∛(bW/c)  [s]
        full = Ws * K * (1 - self.b / 4) / r.tau  # §IV-C2: N_m over [0, K] = (W/τ)·K·(1 − b/4)  [bits]
        return T0, full - d * (3 * Ws + r.bdp) / (4 * r.tau)  # N_0 = N_m − N_1  [bits]

    def _phase2(self, W, r, Kd=None):
        K, d = (self._k(W, r), self._d(W, r)) if Kd is None else Kd
        has1 = (1 - self.b) * W < r.bdp
        T = np.where(has1, d, K)
        # §IV-C2: N_1 = (1/τ)∫_{T_0}^{K} w dt = d·(Cτ + 3W)/(4τ) (printed with d = −∛((Cτ−W)/c));
        # without Phase I the whole epoch [0, K] is Phase II: (W/τ)·K·(1 − b/4).
        N = np.where(has1, d * (r.bdp + 3 * W) / (4 * r.tau), W * K * (1 - self.b / 4) / r.tau)
        return T, N

    def _epoch_parts(self, Ws, r):
        """(T_0, N_0, T_m) with one K = ∛(bW/c) and one d for both phases (cube roots cost ~17 ns a row)."""
        Kd = self._k(Ws, r), self._d(Ws, r)
        return (*self._phase1(Ws, r, Kd), self._phase2(Ws, r, Kd)[0])

    def _variant_loss_rate(self, segs, r, rate):
        """TCP-friendly region (RFC 8312 §4.2; Linux tcp_friendliness): the window is never below a Reno
        estimate growing α = 3b/(2 − b) segments per RTT and cut to (1 − b)W at a loss. Losing one
        segment in N with that estimate below Cτ: (1 − (1−b)²)·W²/(2αM) = N·M ⇒ W_f = M·sqrt(2αN/(1 − (1−b)²)),
        epoch T_f = b·W_f·τ/(αM), rate N·M/T_f (derived here as for Reno). The larger rate wins."""
        alpha, keep = 3 * self.b / (2 - self.b), 1 - self.b
        wf = r.M * np.sqrt(2 * alpha * segs / (1 - keep * keep))  # [bits]
        rate_f = np.minimum(segs * r.M * alpha * r.M / (self.b * wf * r.tau), r.C)  # N·M/T_f  [bit/s]
        return np.where(np.isfinite(rate), np.maximum(rate, rate_f), rate)

    def _wm_closed(self, r):
        # Correction: the paper prints W_m = Cτ − ⁴√(c(4βτ/3)³). Writing W = Cτ + c·d³, Eq. (8) reads
        # d(Cτ + 3W)/(4τ) − C·d = 3c·d⁴/(4τ) = β ⇒ d = (4βτ/(3c))^{1/4} ⇒ W_m = Cτ + ⁴√(c(4βτ/3)³) > Cτ.
        wm = r.bdp + (r.ce * (4 * r.beta * r.tau / 3) ** 3) ** 0.25  # [bits]
        return np.where((1 - self.b) * wm < r.bdp, wm, np.nan)  # no Phase I: solved numerically

    # -- trajectory (trajectory.py) ----------------------------------------------------------------
    def _hystart(self, P, r):
        """HyStart's delay test ending slow start before the loss (hystart; docs/models.md "Single flows"):
        (probability per row, the window W_h when it does)  [1], [bits].

        tcp_cubic.c hystart_update (HYSTART_DELAY): once HYSTART_MIN_SAMPLES = 8 RTT samples of a round are in, slow
        start ends (ssthresh = cwnd) when their minimum exceeds delay_min + clamp(delay_min/8, 4 ms, 16 ms); the
        round restarts (bictcp_hystart_reset) when snd_una passes end_seq = snd_nxt of the last restart, so the
        first samples of round k are of the segments sent first in round k − 1, and their queueing delay is
        the standing queue at round k − 1's start. ACK-clocked above Cτ the queue holds W − Cτ (queue_fill), so
        the test fires in the round after the first round-start window W_{k−1} > Cτ + C·η (η the threshold,
        delay_min = τ), at cwnd W_h = 2·W_{k−1} (tcp_slow_start doubles it in round k − 1). It comes before the
        loss when W_{k−1} is below L = min(P/2, W_o): the window of the round whose train overflows the buffer
        (slow start's trains, or the fluid overflow at W_o = Cτ + β; P is twice it: trajectory.py). Where a
        round starts relative to Cτ + C·η is set by the slow start's history (IW, the start-up lag), not by
        (τ, β): over a uniform phase u of log2 W_{k−1} in (0, 1], p = clamp(log2(L/(Cτ + C·η)), 0, 1), and
        given the exit W_{k−1} is log-uniform on (Cτ + C·η, (Cτ + C·η)·2^p): W_h at its midpoint,
        2·(Cτ + C·η)·2^{p/2}. HYSTART_ACK_TRAIN is not modelled: unpaced (threshold delay_min/2) it would end
        every slow start at cwnd ≈ Cτ, where none of the 42 traced CUBIC runs did (slow-start-drop.csv: peaks
        ≥ 1.32 × BDP); a gap of more than hystart_ack_delta_us = 2 ms between ACKs (the engine's late releases,
        docs/testbed.md) ends a train."""
        eta = np.clip(r.tau / 8.0, HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)  # clamp(delay_min/8, 4, 16 ms)  [s]
        start = r.bdp + r.C * eta  # the round-start window whose first samples exceed the threshold  [bits]
        low = np.minimum(0.5 * P, r.bdp + r.beta)  # the window of the round that overflows  [bits]
        with np.errstate(divide="ignore"):
            p = np.clip(np.log2(low / start), 0.0, 1.0)
        return p, 2.0 * start * np.exp2(0.5 * p)

    def _ss_branch(self, P, W1, small, r):
        if not self._has_ss_branch():
            return None
        # Both outcomes keep the link full from Cτ on (the same throughput) where the loss burst leaves W1 ≥ Cτ and
        # a cut at the overflow leaves (1 − b)·W_o ≥ Cτ: the HyStart exit is above 2Cτ and its cuts stop at or
        # above (1 − b)·min(W_h, W_o) (_first_epochs: every epoch from ≥ Cτ grows at C). No second trajectory there.
        full = (W1 >= r.bdp) & ((1 - self.b) * (r.bdp + r.beta) >= r.bdp)
        return np.where(full, 0.0, self._hystart(P, r)[0])

    # ss_burst_by_rate (trajectory.py burst_by_rate; docs/models.md "Slow start's burst at 5 Gbit/s"): (link rate
    # [bit/s], share, factor). Traced single flows at β ≤ 0.3 × BDP: at 5 Gbit/s 15 of 39 left W1 = 0.400·P on average
    # (0.34–0.43) instead of 0.7²·P = 0.49·P (the other 24: 0.492): a reduction by other than 717/1024 between the
    # two events (benchmarks/data/slow-start-events-5gbit.csv), factor 0.400/0.49; at 10 Gbit/s every traced single
    # flow left 0.7²·P ("How many events")
    BURST_BY_RATE = ((5e9, 15 / 39, 0.817), (10e9, 0.0, 1.0))

    def _has_ss_branch(self) -> bool:
        return self.hystart

    def _ss_exit(self, P, r):
        return self._hystart(P, r)[1] if self.hystart else None

    def _event_keep(self, j, r, alt=False):
        return 1 - self.b  # tcp_cubic.c cubictcp_recalc_ssthresh: ssthresh = cwnd·β/1024, β = 717 (b = 0.3)

    def _first_epochs(self, P, W1, k, r, alt=False):
        """Epoch 1 from the burst's window W1 = P(1−b)^k, epoch 2 from (1−b)·W_o. tcp_cubic.c
        cubictcp_recalc_ssthresh (fast convergence): last_max_cwnd = cwnd·(1024 + β)/2048 = cwnd·(2 − b)/2
        when cwnd < the last last_max_cwnd, else cwnd. At the first loss last_max = 0 ⇒ W_max = P; at the
        k-th cut cwnd = P(1−b)^{k−1} < the last ⇒ W_max = P(1−b)^{k−1}(2−b)/2. Epoch 1 ends at W_o: fast
        convergence again when W_o < that W_max, giving epoch 2 its plateau W_o(2−b)/2 (the traces' 1,505 =
        1,771·0.85 at 11.8 ms); its loss at W_o ≥ W_o(2−b)/2 leaves the framework's epochs (W_max = W_o).
        After a HyStart exit without a cut (k = 0): last_max_cwnd = 0 ≤ cwnd, so bictcp_update starts the epoch
        with K = 0 and origin cwnd (O1 = P = W1): the window grows as c·t³ + W_h from the exit."""
        b, Wo = self.b, r.bdp + r.beta
        O1 = np.where(k >= 2, W1 / (1 - b) * (2 - b) / 2, P)  # P(1−b)^{k−1}(2−b)/2, W1 = P(1−b)^k  [bits]
        O2 = np.where(Wo < O1, Wo * (2 - b) / 2, Wo)
        W2 = (1 - b) * Wo
        return [(W1, self._state(W1, O1, r)), (W2, self._state(W2, O2, r))]

    def _state(self, Ws, O, r):
        # bictcp_update: K = ∛((last_max_cwnd − cwnd)/c), origin last_max_cwnd; cwnd ≥ last_max: K = 0,
        # origin = cwnd  [s], [bits]
        return {"K": np.cbrt(np.maximum(O - Ws, 0.0) / r.ce), "O": np.maximum(O, Ws)}

    def _kc(self, Ws, st, r):
        return st["K"], st["O"]

    def _t_to(self, Ws, st, W, r, tI):
        K, O = self._kc(Ws, st, r)
        return K + np.cbrt((W - O) / r.ce)  # Eq. (12) inverted: c(t − K)³ + W_max = W  [s]

    def _t_bdp(self, Ws, st, r):
        out = np.zeros(Ws.shape)  # 0 where W_s ≥ Cτ; the cube root only on the rows below
        i = np.flatnonzero(Ws < r.bdp)
        out[i] = self._t_to(Ws[i], {k: v[i] for k, v in st.items()}, r.bdp[i], r.take(i), 0.0)
        return out

    def _grow(self, Ws, st, t, r):
        K, O = self._kc(Ws, st, r)
        d, k2 = t - K, K * K
        d2 = d * d
        w = r.ce * d2 * d + O  # Eq. (12)  [bits]
        return (O * t + r.ce * (d2 * d2 - k2 * k2) / 4) / r.tau, w  # (1/τ)∫_0^t w dt  [bits]

    def _wl_closed(self, target, r):
        # Eq. (12) is a function of time alone: with or without a queue the epoch that peaks at W lasts
        # K = ∛(bW/c) and carries N_ep = W·K·(1 − b/4)/τ (Phase I + Phase II = the whole [0, K], §IV-C2).
        # N_ep = N·M ⇒ W_L^{4/3} = N·M·τ/((1 − b/4)·(b/c)^{1/3})  (derived here).
        W = (target * r.tau / ((1 - self.b / 4) * np.cbrt(self.b / r.ce))) ** 0.75  # [bits]
        return W, self._k(W, r)


MODEL = CUBIC   # the class models/registry.py registers under NAME
