"""The window's trajectory of one transfer through a drop-tail buffer (docs/models.md, "What shallow buffers
exercise"): slow start past the overflow, the burst of losses that ends it, the first congestion-avoidance
epochs from the window they leave, then the framework's sustained epochs. Aggregate of the n flows (§IV-D),
windows and data in bits, times in seconds, with the ACK-clocked queue of `queue_fill`: the link is full
(rate C) while the window is at or above Cτ, and the buffer overflows at W_o = Cτ + β.

Pieces, each a (duration, data) pair per row, in order:

0. slow start to the BDP, w(t) = n·w0·2^{t/τ − d} (Eq. (2)–(3) with thresh = Cτ/n per flow);
1. at C: slow start past the BDP until the first drop is seen (the fluid, ACK-clocked overflow in
   `Trajectory.__init__`: the sending rate is twice the ACK rate, tcp_input.c tcp_slow_start `cwnd += acked`);
   the slow-start peak P = 2(Cτ + β) for β ≥ (1/ln 2 − 1)·Cτ ≈ 0.44 × BDP, and Cτ/ln 2 + x_d·Cτ + β below
   (the drop comes within the RTT in which the sending rate first exceeds C); with slow start's trains
   (ss_train_window, ss_train_slope) the first drop comes in the round whose window is W0·Cτ + s·β wherever
   that is earlier, and P = 2(W0·Cτ + s·β);
2. the burst of losses: two congestion events (SS_EVENTS), then more while the window is still at or
   above W_o (every such RTT overflows the queue again), each keeping the variant's factor for its j-th
   event: W_1 = P·Π keep_j;
3. the variant's first epochs (`_first_epochs`: CUBIC's fast convergence, H-TCP's β = 0.5 events), each
   from its start window by the variant's law: Phase I (rate w/τ) to Cτ, then at C up to W_o;
4. the sustained rate of the framework's epochs (N_a/T_a) for the rest.

Slow start can end in two ways (docs/models.md "Single flows"): the variant's `_ss_branch(P, W1, small, r)` gives the
probability of its other outcome per row (None: none), and a Trajectory built with alt=True follows it (`_ss_exit`:
a window at which slow start ended without a loss; `_event_keep` and `_first_epochs` with alt); the framework
predicts the expected throughput of the two. Where the variant has no such outcome of its own, `ss_burst_by_rate`
takes its `BURST_BY_RATE` instead: the burst's lower outcome (W1 × factor) with the share traced at the link rate.

A variant supplies `_event_keep(j, r, alt)` (factor kept at its j-th congestion event), `_burst_events(small, r)`
(events the burst has whatever the window, and whether a window left exactly at W_o is cut again; default
SS_EVENTS and yes), `_first_epochs(P, W1, k, r, alt)` → [(start window, state)], `_t_bdp(Ws, st, r)` (Phase I
length), `_t_to(Ws, st, W, r, tI)` (time to window W ≥ Cτ, given the Phase I length tI) and `_grow(Ws, st, t, r)`
→ (data, window) t seconds into Phase I.
"""

from __future__ import annotations

import functools
import math

import numpy as np

LN2 = math.log(2.0)
MAX_CUTS = 64  # a burst cuts at most this often (STCP's 0.875: ln 2/ln(1/0.875) = 5.2 cuts from P = 2·W_o)
NEWTON = 12
NEWTON_XD = 8  # steps for the slow-start drop time x_d (quadratic convergence from the right)
# Congestion events at the end of slow start: an observed count, not a derived one. Two in every single-flow run
# at β ≤ 0.2 × BDP of both development stores (CUBIC 0.7², H-TCP 0.5², STCP 0.875² of the peak), but one for
# H-TCP at β = 0.5 and 1 × BDP and three for CUBIC at 0.5 × BDP (docs/models.md). A likely cause: the first
# recovery's retransmissions, sent while the overshoot's segments still fill the queue, are lost and repaired
# in a second episode (tcp_input.c tcp_enter_recovery recomputes ssthresh from the already reduced cwnd).
SS_EVENTS = 2
# Slow start's burst at the bottleneck, κ (ss_burst; docs/models.md "The slow-start peak at small buffers"): where
# the burst alone decides the first drop (β = 0.05 × BDP, before the sending rate reaches C), the peak is
# P = 2β/κ. Traced on the development stores (dev2, 45.6 and 183 ms, CUBIC and H-TCP, n = 1 and 4, 8 runs):
# P = 1.31-1.41 × BDP, κ = 0.071-0.076; the median is taken. A property of this testbed's sender and
# bottleneck (the trains the ACK clock makes), measured like C, not fitted to throughput.
SS_BURST = 0.074
# Slow start's trains (ss_train_window W0 × Cτ, ss_train_slope s; docs/models.md "Slow start's trains"): the
# cwnd traces of the development stores put the loss at P = 2(W0·Cτ + s·β) wherever that comes before the fluid
# overflow: P/2 = 0.534 + 2.346·β/Cτ by least squares over 51 loss-ended runs at β = 0.05–0.3 × BDP, τ = 11.8–366
# ms, n = 1 and 4, CUBIC, H-TCP and STCP (benchmarks/slow_start_drop.py --fit benchmarks/data/slow-start-drop.csv).
# Like SS_BURST a property of this testbed's sender and bottleneck, measured from traces, not fitted to throughput.
SS_TRAIN_WINDOW = 0.534
SS_TRAIN_SLOPE = 2.346
# The trains' law of single flows by link rate (ss_trains_by_rate; docs/models.md "Slow start's end at 5 Gbit/s"):
# (link rate [bit/s], W0, s) measured from cwnd traces at MTU 9000 — at 10 Gbit/s the fit above (51 runs, n = 1 and
# 4), at 5 Gbit/s P/2 = 0.665 + 1.437·β/Cτ (36 single-flow runs, benchmarks/data/slow-start-drop-5gbit.csv). Between
# measured rates W0 and s are interpolated linearly in log2 of the rate, beyond them the nearest measured law holds.
# Like SS_TRAIN_WINDOW a property of this testbed's sender and bottleneck, measured like C, not fitted to throughput;
# n > 1 keeps (ss_train_window, ss_train_slope): no aggregate was traced at 5 Gbit/s.
SS_TRAINS_BY_RATE = ((5e9, 0.665, 1.437), (10e9, SS_TRAIN_WINDOW, SS_TRAIN_SLOPE))
SS_TRAINS_PAYLOAD_SHARE = 8948 / 9038   # C / link rate at the traces' MTU 9000 (packet_overhead.py)


@functools.lru_cache(maxsize=None)
def _rate_nodes(table: tuple) -> tuple[np.ndarray, ...]:
    """A by-rate table ((link rate [bit/s], value, ...), ...) as interpolation nodes, once per table: log2 of the
    payload rate, then each value column."""
    return (np.log2([row[0] * SS_TRAINS_PAYLOAD_SHARE for row in table]),
            *(np.array(column, dtype=float) for column in list(zip(*table))[1:]))


# the same as interpolation nodes: log2 of the payload rate [bit/s], W0, s
_TRAINS_LOG_C, _TRAINS_W0, _TRAINS_SLOPE = _rate_nodes(SS_TRAINS_BY_RATE)
# Single flows' burst by link rate (ss_burst_by_rate; docs/models.md "Slow start's burst at 5 Gbit/s"): where a variant
# declares BURST_BY_RATE ((link rate [bit/s], share, factor), ...), that share of its single flows at β ≤
# SS_BURST_MAX_BUFFER × Cτ leave slow start's burst with W1 × factor (the lower outcome), the rest as the cuts give;
# interpolated like SS_TRAINS_BY_RATE. Read from cwnd traces (benchmarks/slow_start_events.py), a property of this
# testbed's sender and bottleneck measured like C, not fitted to throughput.
SS_BURST_MAX_BUFFER = 0.3


class Trajectory:
    """Pieces of the trajectory for rows r (framework Rows, aggregate), the sustained rate `steady`
    [bit/s] after them and the slow-start lag [s]."""

    def __init__(self, model, r, steady, lag, w0, alt=False, peak=None):
        """alt: the other outcome of slow start's end (the variant's `_ss_branch`: CUBIC's HyStart exit, H-TCP's
        second event after a bandwidth sample); p_alt is its probability per row (None: the variant has none).
        peak: slow_start_peak(model, r) when the caller has it (the first outcome's, `peak`, on the same rows)."""
        C, bdp, beta, n = r.C, r.bdp, r.beta, r.n
        self.model, self.r, self.lag, self.steady = model, r, lag, steady
        Wo = bdp + beta  # drop-tail overflow window W_o = Cτ + β (queue_fill)  [bits]
        self.nw0 = n * w0
        top = np.maximum(bdp, self.nw0)
        self.T_ss = lag + r.tau * np.log2(top / self.nw0)  # Eq. (2): w0·2^{t/τ} = Cτ/n per flow  [s]
        self.N_ss = (top - self.nw0) / LN2  # Eq. (3) × n  [bits]
        if peak is None:
            peak = slow_start_peak(model, r)
        self.peak = peak
        P, over, small = peak
        P = np.maximum(P, top)
        events, strict = model._burst_events(small, r)
        # the other outcome is the burst's lower one (BURST_BY_RATE) where the variant has no branch of its own
        low = model.ss_burst_by_rate and model.BURST_BY_RATE is not None and not model._has_ss_branch()
        own = alt and not low   # the variant's own other outcome (_ss_branch); its hooks see alt=False otherwise
        if own:
            exit_ = model._ss_exit(P, r)
            if exit_ is not None:
                # slow start ended without a loss at W_h (CUBIC's HyStart): the link carries C from W = Cτ to W_h
                # (the window grows at the ACK rate above Cτ); a window above W_o then overflows the queue once
                # and is cut while it still does, a window at or below W_o is not cut  [bits], [s]
                P = np.maximum(exit_, top)
                over = np.maximum(P - bdp, 0.0) / C
                events, strict = (P > Wo).astype(float), True
        W, k = P.copy(), np.zeros(P.shape)
        for j in range(1, MAX_CUTS + 1):  # two congestion events, then more while the window overflows (W ≥ W_o)
            cut = ((W > Wo) if strict else (W >= Wo)) | (j <= events)
            if not cut.any():
                break
            W = np.where(cut, W * model._event_keep(j, r, own), W)
            k = k + cut
        if alt and low:
            W = W * burst_by_rate(model.BURST_BY_RATE, r)[1]   # the lower outcome's window  [bits]
        self.P, self.W1, self.cuts = P, W, k
        if alt:
            self.p_alt = None
        else:
            self.p_alt = burst_by_rate(model.BURST_BY_RATE, r)[0] if low else model._ss_branch(P, W, small, r)
        pieces = [("lin", over, C * over)]
        last = None
        for Ws, st in model._first_epochs(P, W, k, r, own):
            if last is not None and Ws is last[0] and st is last[1]:  # the same epoch again (H-TCP's switch cuts)
                pieces += pieces[-2:]
                continue
            tI = model._t_bdp(Ws, st, r)  # Phase I (rate w/τ) up to Cτ  [s]
            NI = model._grow(Ws, st, tI, r)[0]
            pieces.append(("grow", tI, NI, Ws, st))
            tII = np.maximum(model._t_to(Ws, st, Wo, r, tI) - tI, 0.0)  # then at C up to the overflow  [s]
            pieces.append(("lin", tII, C * tII))
            last = (Ws, st)
        self.pieces = pieces

    def time(self, F):
        """Time [s] to send F bits (from t = 0, the lag included)."""
        done = F <= self.N_ss
        t = np.full(F.shape, np.nan)  # set on every row that ends `done` (the logarithm only on those in slow start)
        i = np.flatnonzero(done)
        with np.errstate(all="ignore"):
            t[i] = _at(self.lag, i) + self.r.tau[i] * np.log2(1.0 + F[i] * LN2 / self.nw0[i])  # Eq. (3) inverted
        T0, N0 = self.T_ss.copy(), self.N_ss.copy()
        for p in self.pieces:
            dur, dat = p[1], p[2]
            here = ~done & (F <= N0 + dat)
            if here.any():
                rest = F - N0
                if p[0] == "lin":
                    with np.errstate(all="ignore"):
                        t = np.where(here, T0 + dur * rest / dat, t)
                else:
                    i = np.flatnonzero(here)
                    t[i] = T0[i] + self._invert(p, i, rest[i])
                done = done | here
            T0, N0 = T0 + dur, N0 + dat
        with np.errstate(all="ignore"):
            return np.where(done, t, T0 + (F - N0) / self.steady)

    def data(self, T):
        """Data [bits] sent in T seconds (from t = 0)."""
        r = self.r
        done = T <= self.T_ss
        D = np.full(T.shape, np.nan)  # set on every row that ends `done` (exp2 only on those within slow start)
        i = np.flatnonzero(done)
        grow = np.minimum(np.maximum(T[i] - _at(self.lag, i), 0.0) / r.tau[i], 1000.0)  # RTTs of doubling (capped)
        D[i] = self.nw0[i] * (np.exp2(grow) - 1.0) / LN2  # Eq. (3) within slow start
        T0, N0 = self.T_ss.copy(), self.N_ss.copy()
        for p in self.pieces:
            dur, dat = p[1], p[2]
            here = ~done & (T <= T0 + dur)
            if here.any():
                if p[0] == "lin":
                    with np.errstate(all="ignore"):
                        D = np.where(here, N0 + dat * (T - T0) / dur, D)
                else:
                    i = np.flatnonzero(here)
                    D[i] = N0[i] + self.model._grow(p[3][i], _take(p[4], i), T[i] - T0[i], r.take(i))[0]
                done = done | here
            T0, N0 = T0 + dur, N0 + dat
        return np.where(done, D, N0 + (T - T0) * self.steady)

    def _invert(self, p, i, target):
        """t ∈ [0, t_I] with D(t) = target on a Phase I piece: Newton from t_I (D convex: w grows), D' = w/τ."""
        _, tI, _, Ws, st = p
        rr, s, Wi = self.r.take(i), _take(st, i), Ws[i]
        t = tI[i].copy()
        for _ in range(NEWTON):
            D, w = self.model._grow(Wi, s, t, rr)
            step = (D - target) / (w / rr.tau)
            t = np.maximum(t - step, 0.0)
            if np.all(np.abs(step) <= 1e-13 * tI[i]):  # monotone from the right: the step bounds the error
                break
        return t


def slow_start_peak(model, r):
    """(P, over, small) per row of r: the aggregate window when slow start's first loss is seen [bits], the time
    the link carries C before it [s], and whether the drop comes before the link is full (within the first RTT of
    overload, or by the trains)."""
    C, bdp, beta = r.C, r.bdp, r.beta
    # Slow start's overflow, fluid and ACK-clocked (derived here; docs/models.md): each ACK releases two
    # segments (tcp_input.c tcp_slow_start: cwnd += acked), so the sending rate is twice the ACK rate and
    # first exceeds C at t0, W(t0) = Cτ/(2 ln 2). For one RTT the ACKs still return at the unqueued rate,
    # the sending rate is C·2^x (x = (t − t0)/τ) and the queue holds Cτ·((2^x − 1)/ln 2 − x); after it,
    # ACKs come at C and the queue grows at C. The first drop is when it holds β (at x_d), the loss is seen
    # τ + β/C later, and cwnd grew at the ACK rate meanwhile:
    #   β < q1·Cτ, q1 = 1/ln 2 − 1 (drop within the first RTT): P = Cτ/ln 2 + x_d·Cτ + β,
    #   β ≥ q1·Cτ:                                              P = 2(Cτ + β)   [bits]
    # With the round's burst (ss_burst = κ > 0; docs/models.md "The slow-start peak at small buffers"): the
    # window W(x) = Cτ·2^x/(2 ln 2) reaches the bottleneck in trains whose excess over C the queue must
    # also hold, κ·W, so the first drop is where fluid queue + κ·W = β (y = β/Cτ, h = 1/(2 ln 2)):
    #   (a) y < κh, before t0 (no standing queue): W_d = β/κ, x_d = log2(y/(κh)) < 0, P = 2·W_d;
    #   (b) below y < q1 + κ/ln 2: (2^x − 1)/ln 2 − x + κh·2^x = y, P = Cτ/ln 2 + x_d·Cτ + (β − κ·W_d);
    #   (c) above (the queue grows at C, W at C): x_d − 1 = (y − q1 − κ/ln 2)/(1 + κ),
    #       P = Cτ·(2/ln 2 − 2 + 2·x_d)   (κ = 0: 2(Cτ + β))
    # and the loss is seen τ plus the standing queue's β_eff/C after the drop.
    kappa = float(model.ss_burst)
    h = 0.5 / LN2
    y = beta / bdp
    q1 = 1.0 / LN2 - 1.0
    train = y < kappa * h                             # (a)
    small = y < q1 + kappa / LN2                      # (a) and (b): the drop within the first RTT of overload
    fluid = np.flatnonzero(small & ~train)            # (b) (row indices)
    ys = y[fluid]
    # ln 2·x²/2 + κh ≤ g(x) + y: Newton starts right of the root (x = 0 on the train rows, replaced below)
    xs = np.sqrt(np.maximum(np.minimum(ys, q1 + kappa / LN2) - kappa * h, 0.0) * 2.0 / LN2)
    x = np.zeros(y.shape)
    for _ in range(NEWTON_XD):  # g(x) = (2^x − 1)/ln 2 − x + κh·2^x − y, convex: Newton from the right
        e = np.exp2(xs)
        if kappa:
            step = ((e - 1.0) / LN2 - xs + kappa * h * e - ys) / np.maximum(e * (1.0 + 0.5 * kappa) - 1.0, 1e-300)
        else:  # the same step without the κ terms (+ 0·h·e, × (1 + 0.5·0)), in place
            e -= 1.0
            step = e / LN2
            step -= xs
            step -= ys
            step /= np.maximum(e, 1e-300, out=e)
        xs = xs - step
        if not np.any(step > 1e-14 * xs):
            break
    x[fluid] = xs
    x = np.where(small, x, 1.0 + (y - q1 - kappa / LN2) / (1.0 + kappa))
    y_eff = np.where(small, y, q1 + x - 1.0)         # the standing queue at the drop [× Cτ]
    P = np.where(small, 1.0 / LN2 + x, 2.0 / LN2 - 2.0 + 2.0 * x)
    if kappa:                                        # (κ = 0: no train rows, no burst to take off)
        y_eff[fluid] -= kappa * h * np.exp2(xs)
        x[train] = np.log2(np.maximum(y[train], 1e-300) / (kappa * h))
        y_eff[train] = 0.0
        P[train] = np.exp2(x[train]) / LN2
    P = bdp * np.where(small, P + y_eff, P)
    x_seen = 1.0 + x + y_eff  # (t − t0)/τ when the loss is seen (τ + β_eff/C after the drop)
    # the link carries C from W = Cτ (x = log2(2 ln 2) on the same clock) until the loss is seen  [s]
    over = np.maximum(x_seen - math.log2(2.0 * LN2), 0.0) * r.tau
    if model.ss_train_window:
        # Slow start's trains (ss_train_window W0, ss_train_slope s; docs/models.md "Slow start's trains"):
        # the first drop comes in the round whose window is W0·Cτ + s·β, and slow start doubles the window
        # in the round after it (tcp_slow_start: cwnd += acked), so the loss is seen at P = 2(W0·Cτ + s·β),
        # where that comes before the fluid overflow's peak above. Above Cτ the window grows at the ACK
        # rate C, so the link carries C for (P − Cτ)/C before the loss is seen  [bits], [s]
        w0, slope = model.ss_train_window, model.ss_train_slope
        if model.ss_trains_by_rate:
            w0, slope = _trains_by_rate(C, r.n, w0, slope)
        P_train = 2.0 * (w0 * bdp + slope * beta)
        trains = P_train < P
        P = np.where(trains, P_train, P)
        over = np.where(trains, np.maximum(P_train - bdp, 0.0) / C, over)
        small = small | trains                        # the drop before the link is full
    return P, over, small


def _trains_by_rate(C, n, w0, slope):
    """(W0, s) per row: single flows' law at their payload rate C [bit/s] from SS_TRAINS_BY_RATE (linear in log2 of
    the rate between measured rates, the nearest beyond them); rows with n > 1 keep (w0, slope)."""
    at = np.log2(np.maximum(C, 1.0))
    single = n == 1
    return (np.where(single, np.interp(at, _TRAINS_LOG_C, _TRAINS_W0), w0),
            np.where(single, np.interp(at, _TRAINS_LOG_C, _TRAINS_SLOPE), slope))


def burst_by_rate(table, r):
    """(share, factor) per row from a variant's BURST_BY_RATE at the row's payload rate C (linear in log2 of the rate
    between measured rates, the nearest beyond): the lower outcome's probability and the factor on the window W1 the
    burst leaves, on single flows at β ≤ SS_BURST_MAX_BUFFER × Cτ (where it was traced); elsewhere (0, 1)."""
    at = np.log2(np.maximum(r.C, 1.0))
    log_c, share, factor = _rate_nodes(table)
    on = (r.n == 1) & (r.beta <= SS_BURST_MAX_BUFFER * r.bdp)
    return np.where(on, np.interp(at, log_c, share), 0.0), np.where(on, np.interp(at, log_c, factor), 1.0)


def _at(a, i):
    """Rows i of a per-row array, or the scalar itself."""
    return a[i] if np.ndim(a) else a


def _take(st: dict, i) -> dict:
    return {k: v[i] for k, v in st.items()}
