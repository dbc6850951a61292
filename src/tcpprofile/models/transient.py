"""The transient after slow start under external loss (docs/models.md), in closed form.

Slow start ends at the first loss with per-flow window W0 ≫ W_L. Epoch k = 1, 2, … then runs at window
W_k = W0·keep^k (keep: the variant's after-loss factor; growth within these short epochs neglected),
carries N segments per flow (seg bits for the n flows) at rate R_k = n·min(W_k/τ, C) and lasts seg/R_k.
The decay stops before the first epoch with W_k ≤ W_L or R_k ≤ the steady rate (CUBIC's friendly
region), after at most EPOCHS epochs; the steady rate follows. The data-vs-time curve is piecewise
linear with knots after each epoch: D_j = j·seg and T_j = Σ_{k≤j} seg/R_k, a geometric series
(R_k = n·C for the first k_c epochs, where W_k ≥ Cτ, then ∝ keep^k), so no epoch is enumerated.
"""

from __future__ import annotations

import numpy as np

EPOCHS = 48  # after-loss factor ≤ 0.8: 0.8^48 < 2·10⁻⁵ of the slow-start window


class Transient:
    """Per row: W0 [bits] (per flow), keep (after-loss factor), W_L [bits] (per flow), seg [bits]
    (N segments × n flows), n, tau [s], C [bit/s] (per flow), steady [bit/s] (aggregate)."""

    def __init__(self, W0, keep, W_L, seg, n, tau, C, steady):
        self.seg, self.steady = seg, steady
        with np.errstate(all="ignore"):
            q_log = -np.log(keep)  # ln q, q = 1/keep > 1
            # active ⇔ W_k > W_L and n·min(W_k/τ, C) > steady ⇔ W_k > max(W_L, τ·steady/n) (when n·C > steady):
            # W0·q^{−k} > lim ⇔ k < ln(W0/lim)/ln q, so K = ⌈ln(W0/lim)/ln q⌉ − 1 epochs (at most EPOCHS)
            lim = np.maximum(W_L, tau * steady / n)
            K = np.clip(np.ceil(np.log(W0 / lim) / q_log) - 1, 0, EPOCHS)
            self.K = np.where(np.isfinite(K) & (n * C > steady), K, 0)
            # k_c = max(⌊ln(W0/(Cτ))/ln q⌋, 0) epochs at the cap n·C: 0 where W0 ≤ Cτ, i.e. everywhere but where
            # the initial window exceeds the per-flow BDP (thresh ≤ Cτ/n, §IV-D rule 3): logarithms only where W0 > Cτ
            ratio = W0 / (C * tau)
            above = ~(ratio <= 1)  # (nan rows too)
            q_log_a = np.broadcast_to(q_log, ratio.shape)[above]
            q = np.exp(q_log)
            self.kc = np.zeros(ratio.shape)
            self.kc[above] = np.maximum(np.floor(np.log(ratio[above]) / q_log_a), 0)
            self._q_kc = np.array(np.broadcast_to(q, ratio.shape))  # q^{k_c+1}: q where k_c = 0
            self._q_kc[above] = np.exp((self.kc[above] + 1) * q_log_a)
            self._q_log = q_log  # ln q
            self._t_cap = seg / (n * C)  # one epoch at n·C  [s]
            self._t_geo = seg * tau / ((n * W0) * (q - 1))  # seg·τ/(n·W0·(q − 1))  [s]
            self._r0, self._r_cap = n * W0 / tau, n * C  # R_k = min(n·W0·q^{−k}/τ, n·C)  [bit/s]

    def _rate(self, k):
        return np.minimum(self._r0 * np.exp(-k * self._q_log), self._r_cap)  # R_k = n·min(W_k/τ, C)  [bit/s]

    def _knot_time(self, j):
        """T_j = Σ_{k≤j} seg/R_k [s]: k_c epochs at n·C, then seg·τ/(n·W0)·Σ_{k_c<k≤j} q^k, q = 1/keep:
        the geometric sum (q^{j+1} − q^{k_c+1})/(q − 1)."""
        with np.errstate(all="ignore"):
            geo = np.where(j > self.kc, np.exp((j + 1) * self._q_log) - self._q_kc, 0.0)
        return np.minimum(j, self.kc) * self._t_cap + geo * self._t_geo

    def _slope(self, j):
        """Rate after knot j: R_{j+1} while epochs are active, then the steady rate."""
        return np.where(j < self.K, self._rate(j + 1), self.steady)

    def time(self, data):
        """Time [s] to send `data` [bits] from the end of slow start."""
        with np.errstate(all="ignore"):
            j = np.minimum(np.floor(data / self.seg), self.K)
        return self._knot_time(j) + (data - j * self.seg) / self._slope(j)

    def data(self, t):
        """Data [bits] sent in t [s] from the end of slow start: past the last knot T_K (most rows), at the
        steady rate; before it, from the last knot j with T_j ≤ t at rate R_{j+1}."""
        j, tj = self.K, self._knot_time(self.K)
        slope = self.steady
        early = np.flatnonzero(t < tj)
        if early.size:
            sub = self._take(early)
            j_e, tj_e = sub._knot_before(t[early])
            j, tj, slope = j.copy(), tj.copy(), np.array(np.broadcast_to(slope, j.shape))
            j[early], tj[early], slope[early] = j_e, tj_e, sub._slope(j_e)
        return j * self.seg + (t - tj) * slope

    def _take(self, rows):
        """The transient of these rows only."""
        sub = object.__new__(Transient)
        sub.__dict__ = {k: v[rows] if np.ndim(v) else v for k, v in self.__dict__.items()}
        return sub

    def _knot_before(self, t):
        """The last knot j ≤ K with T_j ≤ t (T_j increasing; 0 if none) and T_j, by inverting _knot_time:
        j = ⌊t/t_cap⌋ while j ≤ k_c, else q^{j+1} ≤ q^{k_c+1} + (t − k_c·t_cap)/t_geo; rounding can leave j
        a knot off, so it is then stepped to the exact knot."""
        with np.errstate(all="ignore"):
            past = (t - self.kc * self._t_cap) / self._t_geo  # beyond the k_c capped epochs, in units of t_geo
            geo = np.floor(np.log(self._q_kc + past) / self._q_log) - 1
            j = np.where(past > 0, geo, np.floor(t / self._t_cap))
        j = np.clip(np.where(np.isfinite(j), j, 0.0), 0, self.K)
        tj = self._knot_time(j)
        while (down := (j > 0) & (tj > t)).any():
            j = np.where(down, j - 1, j)
            tj = self._knot_time(j)
        while (up := (j < self.K) & ((t_next := self._knot_time(j + 1)) <= t)).any():
            j, tj = np.where(up, j + 1, j), np.where(up, t_next, tj)
        return j, tj
