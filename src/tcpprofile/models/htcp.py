"""H-TCP: ACK-based AIMD whose increase grows with the time since the last loss (models paper §IV-C3,
Eq. (1a)–(1b)); solved numerically (Newton inversion, Gauss–Legendre quadrature, bisection of Eq. (8))."""

from __future__ import annotations

import math

import numpy as np

from .base import Constraint
from ..errors import ValidationError
from .framework import COMMON_CONSTRAINTS, SEND_BACKLOG, FirstPrinciplesModel, Rows

NAME = "htcp"  # the variant as cc/registry.py spells it (the store's name)
ORDER = 30          # its place in the models' list (the models paper's order, §IV-C)
# the variant's parameters each model configuration (configurations.py) adds to the one it extends
SETTINGS = {
    # the RTT-scaled α (tcp_htcp.c htcp_alpha_update, use_rtt_scaling); n flows' Phase II growing n× (flows_phase2)
    "trajectory": {"rtt_scaling": True, "flows_phase2": True},
    # slow start's burst as traced across buffers: two events only where the first drop comes within the first
    # RTT of overload, else one (docs/models.md "H-TCP across buffers")
    "htcp-burst-regime": {"burst_by_regime": True},
    # the second slow-start event keeping RTT_min/RTT_max (docs/models.md "The slow-start peak at small buffers")
    "ss-burst-buffer": {"second_cut_rtt_ratio": True},
    # a single flow's second event keeping 0.5 after a bandwidth sample between the two events, with its
    # probability (tcp_htcp.c measure_achieved_throughput; docs/models.md "Single flows")
    "single-flow": {"second_event_sample": True},
    # the bandwidth switch after slow start: congestion avoidance's first events keep 0.5, not RTT_min/RTT_max
    # (tcp_htcp.c htcp_beta_update: maxB against the old_maxB that slow start's events left; docs/models.md
    # "H-TCP's bandwidth switch after slow start")
    "bandwidth-switch": {"switch_cuts": True},
}
# parameters a lossy link's model does not have, left out of a dataset with external loss: the RTT-scaled α
# (the loss epoch uses Eq. (1) as printed; rtt_scaling is refused there)
UNMODELLED_WITH_LOSS = ("rtt_scaling",)

_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
HZ = 250  # CONFIG_HZ of the testbed kernel: the H-TCP port keeps RTTs in jiffies (bpf/htcp.bpf.c, note 3)
JIFFY_BETA_TAU = 3 / HZ  # s: the largest τ whose RTT is msecs_to_jiffies(10) = 3 jiffies (b = 0.5 up to here;
#                          htcp_table.py has τ nodes on both sides of it)

_CARDANO_Q = 2 * 396.0 ** 1.5
# The time between slow start's two congestion events, in τ: traced 2.1–3.6 τ (the second a new recovery from cwnd =
# the first's ssthresh; cwnd traces of the development stores, docs/models.md "H-TCP across buffers"). Measured,
# like SS_BURST, not fitted to throughput; second_event_sample spreads it uniformly over that range.
SECOND_EVENT_GAP = (2.1, 3.6)


def _horner(coefs, u, out):
    """Σ_i coefs[i]·u^(d−i), d = len(coefs) − 1 (per-row coefficients), into out (no temporaries)."""
    np.multiply(coefs[0], u, out=out)
    for c in coefs[1:-1]:
        out += c
        out *= u
    out += coefs[-1]
    return out


class HTCP(FirstPrinciplesModel):
    """Increase α(t) = 2(1−b)·a(t) segments per RTT, a(t) = 1 for t ≤ Δ_L, else 1 + 10(t−Δ_L) +
    ((t−Δ_L)/2)² (Eq. (1)), t = seconds since the last loss. Backoff b = RTT_min/RTT_max ∈ [0.5, 0.8]:
    with adaptive_backoff, RTT_max = τ + β/C (full buffer), else b is fixed.

    burst_by_regime, second_cut_rtt_ratio (trajectory only; docs/models.md "H-TCP across buffers"): slow start's
    burst has two congestion events only where the first drop comes within the first RTT of overload
    (β < (1/ln 2 − 1)·Cτ), else one, and a window left exactly at W_o is not cut again (traced: a second event in
    every single flow at β ≤ 0.2 × BDP, in no flow at 0.5 and 1 × BDP; the count below the boundary is observed,
    not derived); the second event keeps RTT_min/RTT_max, not 0.5 (htcp_beta_update with no bandwidth sample
    before it: htcp_pkts_acked cannot complete one in slow start from IW10).

    flows_phase2: n flows' aggregate grows n× as fast in Phase II as one flow's (each adds α per RTT: its
    C/n ACKs/s at w_i = W/n add α·M²/w_i each), as in Phase I (§IV-D rule 1); False: §IV-D as printed, Phase II
    unchanged with n ("ACKs continue to arrive at a constant rate"), the paper's reproduction (docs/models.md).

    Corrections to the printed §IV-C3: (i) the window after Δ_L is w_1(Δ_L) + (M/τ)∫α, the integral of
    the increase, not α(t)·t/τ; (ii) in Phase II the per-ACK increase is α·M/w (α per RTT, as in Phase I
    and Reno), so w·dw/dt = α(t)·M·C, not dw/dt = α(t)·C (which is α segments per ACK).

    switch_cuts (trajectory only; docs/models.md "H-TCP's bandwidth switch after slow start"): a single flow's
    first two congestion-avoidance events keep 0.5, not RTT_min/RTT_max (htcp_beta_update's bandwidth switch,
    `_switch_events`); its epochs grow with α at β = 0.5.

    tabulated: W_m from a per-instance table (htcp_table.py, built on first use, throughput within
    0.5 % of the exact path) instead of bisecting Eq. (8) for every row.
    """

    _constraints = dict(COMMON_CONSTRAINTS,
                        delta_l=Constraint(float, 0, math.inf, "left", "s"),
                        b=Constraint(float, 0.5, 0.8, "both", "fraction of the window kept"),
                        adaptive_backoff=Constraint(bool),
                        tabulated=Constraint(bool),
                        rtt_scaling=Constraint(bool),
                        flows_phase2=Constraint(bool),
                        burst_by_regime=Constraint(bool),
                        second_cut_rtt_ratio=Constraint(bool),
                        second_event_sample=Constraint(bool),
                        switch_cuts=Constraint(bool))

    def __init__(self, *, capacity_bps=10e9, buffer_bytes=None, wmax_bytes=None, wmax_hard_bytes=math.inf,
                 size_bytes=math.inf, mss_bytes=1448, initial_window=10, duration_s=None, queue_fill=False,
                 startup_rtts=0.0, receiver_report=False, send_backlog=SEND_BACKLOG, trajectory=False, ss_burst=0.0,
                 ss_train_window=0.0, ss_train_slope=0.0, ss_trains_by_rate=False,
                 ss_burst_by_rate=False, delta_l=1.0, b=0.5,
                 adaptive_backoff=True, tabulated=True, rtt_scaling=False, flows_phase2=False,
                 burst_by_regime=False, second_cut_rtt_ratio=False, second_event_sample=False, switch_cuts=False):
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
        self.delta_l = delta_l
        self.b = b
        self.adaptive_backoff = adaptive_backoff
        self.tabulated = tabulated
        self.rtt_scaling = rtt_scaling
        self.flows_phase2 = flows_phase2
        self.burst_by_regime = burst_by_regime
        self.second_cut_rtt_ratio = second_cut_rtt_ratio
        self.second_event_sample = second_event_sample
        self.switch_cuts = switch_cuts

    def _prepare(self, r):
        if self.adaptive_backoff:
            b = np.clip(r.tau / (r.tau + r.beta / r.C), 0.5, 0.8)  # b = RTT_min/RTT_max ∈ [0.5, 0.8]
            # ... only where RTT_min > 10 ms in jiffies (bpf/htcp.bpf.c:169, tcp_htcp.c htcp_beta_update:
            # minRTT > msecs_to_jiffies(10)); RTTs are whole jiffies rounded up (tp_usecs_to_jiffies), so at
            # HZ = 250 every τ ≤ 12 ms has minRTT = 3 = msecs_to_jiffies(10) jiffies and keeps b = BETA_MIN = 0.5
            b = np.where(r.tau > JIFFY_BETA_TAU, b, 0.5)  # ⌈τ·HZ⌉ > 3 ⇔ τ > 3/HZ  [s]
        else:
            b = np.full(r.tau.shape, float(self.b))
        r["b"] = b
        r["s"] = 2 * (1 - b)  # α(t) = 2(1 − b)·a(t)
        if self.rtt_scaling:
            if not self.queue_fill:
                raise ValidationError("rtt_scaling", "modelled with queue_fill=True only (Eq. (8) path: not yet)")
            # htcp.bpf.c htcp_alpha_update: scale = (HZ << 3)/(10·minRTT), clamped to [4, 80]; factor·8/scale.
            # minRTT = ⌈τ·HZ⌉ jiffies (tp_usecs_to_jiffies rounds up)  [dimensionless]
            scale = np.clip(np.floor(8 * HZ / (10 * np.ceil(r.tau * HZ - 1e-9))), 4, 80)
            rho = 8.0 / scale
            u = np.maximum(-20.0 + np.sqrt(400.0 + 4.0 * (1.0 / rho - 1.0)), 0.0)  # 1 + 10u + u²/4 = 1/ρ  [s]
            ts = np.where(rho >= 1, 0.0, self.delta_l + u)  # t*  [s]
            r["rho"], r["ts"], r["Ats"], r["Bts"] = rho, ts, self._Ah(ts, 1.0), self._Bh(ts, 1.0)

    # A(t) = ∫_0^t α [segments·s/RTT], B(t) = ∫_0^t A; u = t − Δ_L.
    def _Ah(self, t, s):
        u = np.maximum(t - self.delta_l, 0.0)
        return s * (t + u * u * (5 + u / 12))  # ∫ Eq. (1a)/(1b) dt = t + 5u² + u³/12, times 2(1 − b)

    def _Bh(self, t, s):
        u = np.maximum(t - self.delta_l, 0.0)
        return s * (t * t / 2 + u * u * u * (5 / 3 + u / 48))  # t²/2 + 5u³/3 + u⁴/48

    def _Ah_inv(self, y, s):
        """t ≥ 0 with A(t) = y (A increasing): linear below Δ_L; above, p(u) = u + 5u² + u³/12 = v, i.e.
        u³ + 60u² + 12u − 12v = 0, by Cardano: u = x − 20 with x³ − 1188x + 15760 − 12v = 0, whose largest
        root is x = 2√396·cos(arccos(t)/3), t = (12v − 15760)/(2·396^{3/2}) (cosh/arccosh for t > 1);
        two Newton steps remove the cancellation in x − 20 when u is small."""
        z = np.asarray(y / s, float)
        late = z > self.delta_l  # only these need the cubic (arccos and cos cost ~30 ns a row each)
        if not late.any():
            return z
        v = z[late] - self.delta_l
        t = (12 * v - 15760.0) / _CARDANO_Q
        trig = t <= 1
        if trig.all():  # t ≤ 1 ⇔ v ≤ 2627: the usual case, without the masks
            c = np.cos(np.arccos(t) / 3)
        else:
            c = np.empty_like(t)
            i, j = np.flatnonzero(trig), np.flatnonzero(~trig)  # indices: cheaper than a mask, per array
            c[i] = np.cos(np.arccos(t[i]) / 3)
            c[j] = np.cosh(np.arccosh(t[j]) / 3)
        u = np.clip(2 * math.sqrt(396.0) * c - 20, 0.0, v)  # p(u) ≥ u ⇒ u ≤ v
        for _ in range(2):
            uu = u * u
            u = u - (u + 5 * uu + uu * u / 12 - v) / (1 + 10 * u + uu / 4)
        out = z.copy()
        out[late] = self.delta_l + u
        return out

    # With RTT scaling (htcp.bpf.c htcp_alpha_update, use_rtt_scaling): α = 2(1 − β)·max(ρ·a(t), 1),
    # ρ = 8/scale, scale = ⌊8·HZ/(10·minRTT)⌋ clamped to [4, 80] (minRTT in whole jiffies): ρ ≈ clamp(τ/100 ms,
    # 0.1, 2). For ρ < 1, α = 2(1 − β) until ρ·a(t*) = 1, t* = Δ_L + u*, 1 + 10u* + u*²/4 = 1/ρ; for ρ ≥ 1, t* = 0.
    # Then A = s·(min(t, t*) + ρ(Â(t) − Â(t*))), B = s·(m²/2 + t*·d + ρ(B̂(t) − B̂(t*) − Â(t*)·d)), m = min(t, t*),
    # d = max(t − t*, 0) (derived here). rho None: Eq. (1) as printed.
    def _sc(self, r):
        """The per-row RTT-scaling constants (ρ, t*, Â(t*), B̂(t*)) of rows r, or None (Eq. (1) as printed)."""
        return (r["rho"], r["ts"], r["Ats"], r["Bts"]) if "rho" in r else None

    def _A(self, t, s, sc=None):
        if sc is None:
            return self._Ah(t, s)
        rho, ts, Ats, _ = sc
        return s * (np.minimum(t, ts) + rho * (self._Ah(np.maximum(t, ts), 1.0) - Ats))

    def _B(self, t, s, sc=None):
        if sc is None:
            return self._Bh(t, s)
        rho, ts, Ats, Bts = sc
        m, d = np.minimum(t, ts), np.maximum(t - ts, 0.0)
        return s * (m * m / 2 + ts * d + rho * (self._Bh(ts + d, 1.0) - Bts - Ats * d))

    def _A_inv(self, y, s, sc=None):
        if sc is None:
            return self._Ah_inv(y, s)
        rho, ts, Ats, _ = sc
        z = y / s
        out = np.array(np.broadcast_to(z, np.broadcast_shapes(z.shape, np.shape(ts))))
        i = np.flatnonzero(~(out <= ts))  # A^{-1} beyond t* only where it is taken (the cubic costs ~0.1 µs a row)
        if i.size:
            at = lambda a: np.broadcast_to(a, out.shape).ravel()[i]  # noqa: E731
            out.ravel()[i] = self._Ah_inv(at(Ats) + np.maximum(at(z) - at(ts), 0.0) / at(rho), 1.0)
        return out

    def _after_loss(self, W, r):
        return r.b * W

    def _t0(self, Ws, r):
        """T_0 and A(T_0) of Phase I: w_1/w_2(T_0) = bW_s + (nM/τ)·A(T_0) = Cτ  [s] (§IV-D rule 1: n·α)."""
        y = (r.bdp - r.b * Ws) * r.tau / (r.n * r.M)
        return self._A_inv(y, r.s, self._sc(r)), y

    def _phase1(self, Ws, r):
        k = r.n * r.M / r.tau  # §IV-D rule 1: increase function × n; dw/dt = n·M·α(t)/τ  [bits/s per α]
        T0 = self._t0(Ws, r)[0]
        N0 = (r.b * Ws * T0 + k * self._B(T0, r.s, self._sc(r))) / r.tau  # N_0 = (1/τ)∫_0^{T_0} w dt  [bits]
        return T0, N0

    def _phase2_times(self, W, r):
        has1 = r.b * W < r.bdp
        T0, A0 = self._t0(W, r)
        t2 = np.where(has1, T0, 0.0)  # Phase II starts at T_0 (or at 0 without Phase I)
        A2 = np.where(has1, A0, 0.0)  # A(t2)
        w2 = np.maximum(r.bdp, r.b * W)
        # w_3(t)² = w2² + 2·M·C·(A(t) − A(t2))  (Eq. (5) with ∂w/∂A = α·M/w; §IV-D: Phase II unchanged with n);
        # flows_phase2: × n — each of n flows gets C/n ACKs/s at w_i = W/n and adds α·M per RTT (docs/models.md)
        kk = 2 * r.M * r.C * (r.n if self.flows_phase2 else 1.0)
        tm = self._A_inv(A2 + (W * W - w2 * w2) / kk, r.s, self._sc(r))  # Eq. (6): w_3(T_m) = W  [s]
        return t2, tm, w2, kk, A2

    def _epoch_parts(self, Ws, r):
        t2, tm = self._phase2_times(Ws, r)[:2]  # one T_0 for Phase I and Phase II
        k = r.n * r.M / r.tau
        N0 = (r.b * Ws * t2 + k * self._B(t2, r.s, self._sc(r))) / r.tau  # as _phase1 (unused where Phase I is empty)
        return t2, N0, tm - t2

    def _phase2_T(self, W, r):
        t2, tm = self._phase2_times(W, r)[:2]
        return tm - t2

    def _phase2(self, W, r):
        t2, tm, w2, kk, A2 = self._phase2_times(W, r)
        return tm - t2, self._n2(t2, tm, w2, kk, A2, r)

    def _n2(self, t2, tm, w2, kk, A2, r):
        """Eq. (7): N_m = (1/τ)∫_{T_0}^{T_m} w_3 dt  [bits]. Before Δ_L, A(t) = s·t and w_3² is linear in t:
        ∫w dt = ∫w·(2w/(kk·s)) dw = 2(w_Δ³ − w2³)/(3·kk·s) exactly; after Δ_L (α grows), Gauss–Legendre.
        With w_Δ² − w2² = kk·s·(t_Δ − t2), w_Δ³ − w2³ = (w_Δ² − w2²)(w_Δ² + w_Δ·w2 + w2²)/(w_Δ + w2) (no
        cancellation)."""
        mid = np.clip(self.delta_l, t2, tm)
        w_mid = np.sqrt(w2 * w2 + kk * r.s * (mid - t2))
        N = 2 * (mid - t2) * (w_mid * w_mid + w_mid * w2 + w2 * w2) / (3 * (w_mid + w2))
        late = np.flatnonzero(tm > mid)
        if late.size:
            lo, hi, s_ = mid[late], tm[late], r.s[late]
            half, centre = (hi - lo) / 2, (hi + lo) / 2
            t = centre[:, None] + half[:, None] * _GL_X[None, :]
            w = np.sqrt(np.maximum((w2[late] ** 2 - kk[late] * A2[late])[:, None]
                                   + kk[late, None] * self._A(t, s_[:, None]), 0.0))
            N[late] += half * (w @ _GL_W)
        return N / r.tau

    def _epoch(self, W, r):
        """As the framework's, with one T_0 for both phases (Phase I to min(W, Cτ), then Phase II)."""
        low = W <= r.bdp
        rr = Rows(r, bdp=np.minimum(W, r.bdp))
        t2, tm, w2, kk, A2 = self._phase2_times(W, rr)  # at W ≤ Cτ: Phase I to W, Phase II empty
        has1 = low | (r.b * W < r.bdp)
        k = r.n * r.M / r.tau
        N1 = (r.b * W * t2 + k * self._B(t2, r.s)) / r.tau
        N2 = np.where(low, 0.0, self._n2(t2, tm, w2, kk, A2, rr))
        return np.where(low, t2, tm), np.where(has1, N1, 0.0) + N2

    def _wl_closed(self, target, r):
        """Loss epoch below Cτ (Phase I only, derived here): w(T) = bW + (nM/τ)A(T) = W and
        N_ep = (bWT + (nM/τ)B(T))/τ = N·M give, with A = 2(1−b)Â, B = 2(1−b)B̂ (α without its factor),
        h(T) = 2b·Â(T)·T + 2(1−b)·B̂(T) = G := N·M·τ²/(nM)  [s²], then W = 2nM·Â(T)/τ and T_ep = T.
        T ≤ Δ_L: Â = T, B̂ = T²/2 ⇒ T = sqrt(G/(1+b)) (Reno with a = 2(1−b)). T > Δ_L: h is a quartic in
        u = T − Δ_L with positive coefficients (convex, increasing), solved by Newton from an upper bound
        (monotone). Rows whose W exceeds Cτ (Phase II, α in absolute time) are nan: solved numerically."""
        if self._sc(r) is not None:
            raise ValidationError("rtt_scaling", "not modelled with external loss (loss epochs use Eq. (1) as printed)")
        d, b = self.delta_l, r.b
        G = target * r.tau ** 2 / (r.n * r.M)  # [s²]
        T = np.sqrt(G / (1 + b))
        late = np.flatnonzero(T > d)
        A = T.copy()  # Â(T) = T + 5u² + u³/12, u = T − Δ_L ≥ 0 (u = 0 but on the late rows)
        if late.size:
            T[late] = d + self._wl_quartic(b[late], G[late], T[late] - d)
            u = np.maximum(T[late] - d, 0.0)
            A[late] = T[late] + u * u * (5 + u / 12)
        W = 2 * r.n * r.M * A / r.tau  # W = (nM/τ)·A(T)/(1 − b)  [bits]
        ok = W <= r.bdp
        return np.where(ok, W, np.nan), np.where(ok, T, np.nan)

    def _wl_quartic(self, b, G, u):
        """u ≥ 0 with h(u) = G, h = Σ c_k u^k (Horner): Â·T = Δ² + 2Δu + (5Δ+1)u² + (Δ/12+5)u³ + u⁴/12 and
        B̂ = Δ²/2 + Δu + u²/2 + 5u³/3 + u⁴/48 give c_0 = (1+b)Δ², c_1 = 2(1+b)Δ, c_2 = 1 + b + 10bΔ,
        c_3 = 2b(5 + Δ/12) + 10(1−b)/3, c_4 = b/6 + (1−b)/24. Newton from u ≥ the root (h convex: monotone),
        to a step below 10⁻¹⁴·T; rows still running are compacted once they are under half."""
        d = self.delta_l
        c0g, c1, c2 = (1 + b) * d * d - G, 2 * (1 + b) * d, 1 + b + 10 * b * d  # c_0 − G, c_1, c_2
        c3, c4 = 2 * b * (5 + d / 12) + 10 * (1 - b) / 3, b / 6 + (1 - b) / 24
        # h(u) ≥ each of its terms: c_0 + c_1u + c_2'u² ≥ (1+b)(Δ+u)² (u = T − Δ on entry), c_4u⁴, c_3u³
        u = np.minimum.reduce([u, np.sqrt(np.sqrt(G / c4)), np.cbrt(G / c3)])
        coef = (c0g, c1, c2, c3, c4, 2 * c2, 3 * c3, 4 * c4)
        h, dh = np.empty_like(u), np.empty_like(u)
        run = None  # all rows
        for _ in range(60):
            uu, k0, k1, k2, k3, k4, e2, e3, e4 = (u, *coef) if run is None else (a[run] for a in (u, *coef))
            h, dh = h[:uu.size], dh[:uu.size]
            _horner((k4, k3, k2, k1, k0), uu, h)  # h(u) − G
            _horner((e4, e3, e2, k1), uu, dh)  # h'(u)
            step = np.divide(h, dh, out=h)
            more = step > 1e-14 * (d + uu)
            if run is None:
                u -= step
            else:
                u[run] = uu - step
            n_more = np.count_nonzero(more)
            if not n_more:
                break
            if 2 * n_more < more.size:
                run = np.flatnonzero(more) if run is None else run[more]
        return u

    # -- trajectory (trajectory.py) ----------------------------------------------------------------
    def _event_keep(self, j, r, alt=False):
        """htcp.bpf.c htcp_beta_update (:157–179): the first congestion event fails the bandwidth switch
        (old_maxB = 0) ⇒ β = BETA_MIN, modeswitch = 0; the second sets β = BETA_MIN whether the switch
        fires (modeswitch = 0) or not (modeswitch was 0); from the third on, RTT_min/RTT_max (adaptive b).

        second_cut_rtt_ratio: no bandwidth sample before the second event. htcp_pkts_acked (:110–153) samples
        once packetcount ≥ cwnd − α (:136); in slow start from IW10 cwnd = IW + the segments ACKed (tcp_slow_start:
        cwnd += acked) while packetcount counts the same ACKed segments, so packetcount = cwnd − 10 < cwnd − α
        (α = 1 segment at β = 0.5), and in Recovery packetcount is reset (:128–132): maxB = old_maxB = 0 at
        both events. Event 1: between(0, 0, 0) holds, modeswitch = 0 ⇒ β = BETA_MIN, modeswitch = 1 (:177–179);
        event 2: the switch holds again and modeswitch = 1 ⇒ β = minRTT/maxRTT ∈ [0.5, 0.8] (:169–176).
        Traced: 0.8 in 31 of the 43 flows with a second event at τ > 12 ms, β ≤ 0.2 × BDP (a sample in the Open
        RTT between the first recovery's end and the second event gives 0.5: the rest)."""
        if j == 1:
            return 0.5
        if j == 2 and (alt or not self.second_cut_rtt_ratio):  # alt: a bandwidth sample came between (below)
            return 0.5
        return r.b

    def _has_ss_branch(self) -> bool:
        return self.second_event_sample and self.second_cut_rtt_ratio

    def _ss_branch(self, P, W1, small, r):
        """second_event_sample (with second_cut_rtt_ratio): the probability that a bandwidth sample falls between
        slow start's two congestion events, so that the second keeps 0.5 (htcp_beta_update: maxB > 0 after a
        sample, the switch test then fails with old_maxB = 0 ⇒ β = BETA_MIN) instead of RTT_min/RTT_max.

        tcp_htcp.c measure_achieved_throughput (htcp.bpf.c :110–153): outside Open/Disorder packetcount = 0 and
        lasttime = now; in them packetcount adds the segments ACKed, and a sample is taken once packetcount ≥
        cwnd − α and now − lasttime ≥ minRTT: a full window of ACKs in the congestion-avoidance state since the
        last recovery. After event 1 cwnd = ssthresh = P/2 (PRR) and ACKs return at min(C, (P/2)/τ), so that
        takes T_s = max(τ, P/(2C)). The first recovery ends when snd_una passes high_seq = snd_nxt at its
        start: the flight P, delivered at most at C and no sooner than one RTT at the full queue, R = max(P/C,
        τ + β/C). A sample falls between iff the gap G between the events exceeds R + T_s; G is the traced
        SECOND_EVENT_GAP, uniform: p = clamp((G_max·τ − R − T_s)/((G_max − G_min)·τ), 0, 1). Zero where the burst
        has one event or b = 0.5 (τ ≤ 12 ms: both outcomes the same)."""
        if not self._has_ss_branch():
            return None
        events = self._burst_events(small, r)[0]
        gmin, gmax = SECOND_EVENT_GAP
        R = np.maximum(P / r.C, r.tau + r.beta / r.C)  # the first recovery: the flight P at ≤ C  [s]
        Ts = np.maximum(r.tau, 0.5 * P / r.C)  # a window (P/2) of ACKs in Open, at least minRTT  [s]
        p = np.clip((gmax * r.tau - R - Ts) / ((gmax - gmin) * r.tau), 0.0, 1.0)
        return np.where((np.asarray(events) >= 2) & (r.b > 0.5), p, 0.0)

    def _burst_events(self, small, r):
        """burst_by_regime: two events where the first drop comes within the first RTT of overload (small), one
        elsewhere, and a window left exactly at W_o (P = 2·W_o, one 0.5 cut) is not cut again: the queue is
        then full and PRR sends one segment per segment delivered (tcp_input.c tcp_cwnd_reduction, delta ≥ 0),
        so it does not overflow until the window grows. Traced (docs/models.md): a second event 2.1–3.6 τ after
        the first in every single flow at β ≤ 0.2 × BDP, in no flow (n = 1, 4) at 0.5 and 1 × BDP."""
        if self.burst_by_regime:
            return np.where(small, 2, 1), True
        return super()._burst_events(small, r)

    def _first_epochs(self, P, W1, k, r, alt=False):
        # α = 2·factor·(1 − β) with the β of the last cut (htcp_alpha_update): s = 1 after a 0.5 cut
        half = (k <= 1) | ((k == 2) & (alt or not self.second_cut_rtt_ratio))
        epochs = [(W1, {"s": np.where(half, 1.0, r.s)})]
        if self.switch_cuts:
            # each from 0.5·W_o, α with β = 0.5 (s = 1), up to the next overflow at W_o; a single flow's only: n
            # flows' events hit k of n flows, which the aggregate's cuts do not model — there the epoch starts at
            # W_o and is empty  [bits]
            Wo = r.bdp + r.beta
            start = np.where(r.n == 1, 0.5 * Wo, Wo)
            epochs += [(start, {"s": np.ones(r.tau.shape)})] * self._switch_events(alt)
        return epochs

    def _switch_events(self, alt):
        """switch_cuts: how many of congestion avoidance's first events keep β = 0.5 (htcp.bpf.c
        htcp_beta_update :157–179, tcp_htcp.c the same) before RTT_min/RTT_max takes over.

        maxB is the largest smoothed bandwidth sample since 3 RTTs after the last event (measure_achieved_throughput
        :134–150: htcp_ccount ≤ 3 resets minB = maxB = Bi), and each event compares it with old_maxB, the maxB of
        the event before: outside 4/5–6/5 of it, β = BETA_MIN and modeswitch = 0; inside, β = RTT_min/RTT_max only
        if modeswitch is 1, else β = BETA_MIN and modeswitch = 1. Slow start takes no sample (_event_keep), so its
        events leave maxB = 0 and modeswitch = 1 — unless a sample fell between its two events (alt: that event
        fired the switch, modeswitch = 0, old_maxB the sample at ~P/2 per RTT, within 1/5 of C). The first epoch
        of congestion avoidance reaches C (W_o ≥ Cτ), so its event sees maxB ≈ C: against old_maxB = 0 the switch
        fires (0.5, modeswitch = 0), and the next event, maxB ≈ C again, keeps 0.5 and sets modeswitch = 1 — two
        events at 0.5; in alt the first holds the switch with modeswitch = 0 — one. From then on RTT_min/RTT_max
        (the sustained epochs). Traced (5 Gbit/s store, n = 1, 0.15 × BDP, 30 ms): W_o → 0.52, 0.55, then 0.80."""
        return 1 if alt else 2

    def _t_bdp(self, Ws, st, r):
        y = np.maximum(r.bdp - Ws, 0.0) * r.tau / (r.n * r.M)  # w = W_s + (nM/τ)·A(t) = Cτ  [s]
        return self._A_inv(y, st["s"], self._sc(r))

    def _t_to(self, Ws, st, W, r, tI):
        w2 = np.maximum(r.bdp, Ws)  # above Cτ each of n flows gains α·M per RTT = W/C: W² = w2² + 2nMC(A − A(t2))
        sc = self._sc(r)
        return self._A_inv(self._A(tI, st["s"], sc) + (W * W - w2 * w2) / (2 * r.n * r.M * r.C), st["s"], sc)  # [s]

    def _grow(self, Ws, st, t, r):
        k = r.n * r.M / r.tau
        sc = self._sc(r)
        return (Ws * t + k * self._B(t, st["s"], sc)) / r.tau, Ws + k * self._A(t, st["s"], sc)  # ∫w dt/τ, w [bits]

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


MODEL = HTCP   # the class models/registry.py registers under NAME
