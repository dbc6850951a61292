"""First-principles framework of Vardoyan, Rao & Towsley, "Models of TCP in High-BDP Environments and
Their Experimental Validation" (§IV): slow start, congestion-avoidance epochs (Case 1, Case 2 with
Phase I / Phase II and subcases W_m ≤ W_max, W_m > W_max), parallel flows (§IV-D) and the sending rate S.

Units: windows, buffers and data in bits; times in seconds; rates in bits/s. Public arguments are SI
with sizes in bytes (tau in s, buffer/size/wmax in bytes); they are converted to bits once, here.

A variant (stcp.py, cubic.py, htcp.py, reno.py) supplies five vectorised pieces (arrays over rows):
``_prepare`` (per-row constants), ``_after_loss(W)`` (window right after a loss at peak W),
``_phase1(W_s)`` → (T_0, N_0) from the window after loss up to the BDP Cτ, ``_phase2(W)`` → (T_m, N_m)
from max(Cτ, after-loss window) up to the peak W, and ``_wm_closed`` (closed-form W_m or NaN where the
closed form does not apply; NaN rows are solved by bisection of Eq. (8)).

Deviations from the printed paper, all documented where they occur:
* Phase I can be empty: when the window after a loss is still ≥ Cτ (buffer larger than about the BDP),
  the paper's T_0 = … ln(Cτ/(bW)) would be negative. Phase II then starts at the after-loss window and
  W_m solves the same Eq. (8) with that start.
* The paper's S counts data sent into the bottleneck buffer and can exceed C (Phase I is modelled at
  rate w/τ although the queue of the previous epoch still drains at C). ``throughput`` is min(S, C);
  ``S`` is kept in the components.
* A transfer that ends within slow start (F ≤ N_s) has S = F / (τ·log2(1 + F·ln2/(n·w0))) (inverting
  Eq. (3)); the paper assumes F > N_s.

Added here (derivations in docs/models.md):
* Duration mode (iperf3 -t T): the time to send F is t(F) = T_s + (F − N_s)·T_a/N_a for F > N_s (the
  sending-rate formula S = F/(T_s + k·T_a) with k = (F − N_s)/N_a), linear in F, so the data sent in T is
  F(T) = N_s + (T − T_s)·N_a/T_a for T > T_s and n·w0·(2^{T/τ} − 1)/ln 2 (Eq. (3)) within slow start;
  throughput = min(F(T)/T, C). With receiver_report, the rate iperf3's receiver reports: F(T)/(T + τ + q̄)
  (its interval is one RTT plus the final queueing delay q̄ longer; docs/models.md "Fitting measured runs").
* Start-up lag (startup_rtts = d): slow start doubles from w0 only after d RTTs (the receiver opening its
  window), w(t) = w0·2^{t/τ − d}: T_s and the time of any transfer grow by dτ.
* External loss (1 in N packets, periodic; uniform with probability p by its mean N = 1/p): each of the
  n flows, on its share C/n and β/n, ends an epoch after N segments when that comes before the buffer
  overflows (or W_max): its peak W_L solves N_epoch(W_L) = N·M, with the epoch from the window after a
  loss to W_L built from the variant's own Phase I (to min(W_L, Cτ/n)) and Phase II pieces. Slow start
  ends at the first loss: N_s = N·M per flow ⇒ thresh ≤ w0 + N·M·ln 2 (Eq. (3)); from that window the
  peak decays by the after-loss factor per epoch of N segments down to W_L (the transient, transient.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ValidationError
from .base import Constraint, Model, positive_array
from .lsq import BUFFER_BOUNDS, WMAX_BOUNDS, fit_buffer_wmax
from .trajectory import SS_EVENTS, Trajectory
from .transient import Transient

LN2 = math.log(2.0)
BITS = 8.0
# iperf3 -n: unsent data in the sender's autotuned socket buffer when the client stops, in units of the
# drop-tail overflow window Cτ + β: the median of (F − bytes received)/(Cτ + β) over the development store
# benchmarks/data/physics-dev-0.2bdp (45 runs, 11.8–366 ms: 1.66–4.94; docs/models.md, "Fixed-size transfers")
SEND_BACKLOG = 2.92
# Rows evaluated at a time (components; at most, in equal blocks): a block's arrays (≤ 512 KiB of float64) stay in
# the CPU's cache and in the allocator's heap. Whole arrays of 200,000 rows (1.6 MB each) went back to the kernel
# when freed (glibc trims the heap) and were page-faulted in again on the next allocation: ~30,000 minor faults,
# up to half the time of a call in bench_models
BLOCK_ROWS = 65536


def _expected(p, other, first):
    """p·other + (1 − p)·first, exactly `other` where p = 1 and `first` where p = 0."""
    return np.where(p >= 1.0, other, np.where(p <= 0.0, first, p * other + (1.0 - p) * first))


class Rows(dict):
    """Per-row arrays of one evaluation (all the same length); attribute access and row selection."""

    __getattr__ = dict.__getitem__

    def take(self, rows: np.ndarray) -> "Rows":
        """The rows of a boolean mask or of an index array. A mask is turned into indices once: indexing each
        array by a random mask costs about 15× indexing it by the indices (a branch per element)."""
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return Rows({k: v[rows] for k, v in self.items()})


def bisect_increasing(g, lo: np.ndarray, hi: np.ndarray, iterations: int = 80) -> np.ndarray:
    """Root of an increasing vectorised function g on [lo, hi] per row (g(lo) ≤ 0 ≤ g(hi))."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        pos = g(mid) > 0
        hi = np.where(pos, mid, hi)
        lo = np.where(pos, lo, mid)
    return 0.5 * (lo + hi)


def illinois_increasing(g, lo: np.ndarray, hi: np.ndarray, iterations: int = 100, rtol: float = 1e-13,
                        fhi: np.ndarray | None = None) -> np.ndarray:
    """Root of an increasing vectorised g on [lo, hi] per row (g(lo) ≤ 0 ≤ g(hi)) by the Illinois
    variant of regula falsi (superlinear; a bisection step whenever the secant leaves the bracket).
    g(x, idx) evaluates rows idx (indices into lo/hi) at x. A row stops when its bracket is below rtol
    relative to its root (or g is 0 there); only the rows still running are evaluated (row compaction).
    fhi: g(hi) when the caller has it."""
    idx = np.arange(lo.size)
    lo, hi = lo.copy(), hi.copy()
    flo, fhi = g(lo, idx), (g(hi, idx) if fhi is None else fhi.copy())
    side = np.zeros(lo.shape, dtype=np.int8)
    out = 0.5 * (lo + hi)
    for _ in range(iterations):
        with np.errstate(all="ignore"):
            sec = (lo * fhi - hi * flo) / (fhi - flo)
        x = np.where(np.isfinite(sec) & (sec > lo) & (sec < hi), sec, 0.5 * (lo + hi))
        fx = g(x, idx)
        pos = fx > 0
        hi, fhi = np.where(pos, x, hi), np.where(pos, fx, fhi)
        lo, flo = np.where(pos, lo, x), np.where(pos, flo, fx)
        flo = np.where(pos & (side == 1), 0.5 * flo, flo)  # same end kept twice: halve its value
        fhi = np.where(~pos & (side == -1), 0.5 * fhi, fhi)
        side = np.where(pos, 1, -1).astype(np.int8)
        tol = rtol * np.abs(x)
        run = ~((hi - lo <= tol) | (fx == 0))
        out[idx] = x
        if not run.any():
            break
        if not run.all():
            idx, lo, hi, flo, fhi, side = (a[run] for a in (idx, lo, hi, flo, fhi, side))
    return out


COMMON_CONSTRAINTS: dict[str, Constraint] = {
    "capacity_bps": Constraint(float, 0, math.inf, "neither", "bit/s"),
    "buffer_bytes": Constraint(float, 0, math.inf, "left", "bytes (bottleneck buffer β)", optional=True),
    "wmax_bytes": Constraint(float, 0, math.inf, "right", "bytes (per-flow window limit W_max)", optional=True),
    "wmax_hard_bytes": Constraint(float, 0, math.inf, "right", "bytes (aggregate limit W_maxH)"),
    "size_bytes": Constraint(float, 0, math.inf, "right", "bytes (transfer size F)"),
    "mss_bytes": Constraint(int, 1, 65535, "both", "bytes"),
    "initial_window": Constraint(int, 1, 1000, "both", "segments"),
    "duration_s": Constraint(float, 0, math.inf, "right", "s (transfer duration T; None: size mode)",
                             optional=True),
    "queue_fill": Constraint(bool),   # W_m = Cτ + β (ACK-clocked queue) instead of Eq. (8); docs/models.md
    # slow start reaches each window this many RTTs late (the receiver opening its window); docs/models.md
    "startup_rtts": Constraint(float, 0, 64, "both", "RTTs (slow start's start-up lag d)"),
    "receiver_report": Constraint(bool),  # the rate iperf3's receiver reports (both modes); docs/models.md
    # size mode with receiver_report: data left unsent in the sender's socket buffer when iperf3 -n stops
    "send_backlog": Constraint(float, 0, 64, "both", "× (Cτ + β) (unsent socket-buffer data at the end)"),
    # with queue_fill and no external loss: slow start's overshoot, the loss burst and the first epochs
    # from the window it leaves (trajectory.py; docs/models.md "What shallow buffers exercise")
    "trajectory": Constraint(bool),
    # trajectory: the share κ of the window that reaches the bottleneck as one round's burst above C in slow
    # start (ACK-clocked trains), so the queue overflows at β − κ·W (trajectory.py; docs/models.md)
    "ss_burst": Constraint(float, 0, 1, "left", "× the window (slow start's burst at the bottleneck)"),
    # trajectory: slow start's first drop in the round whose window is W0·Cτ + s·β, where that comes before the
    # fluid overflow (trajectory.py; docs/models.md "Slow start's trains"); W0 = 0: not used
    "ss_train_window": Constraint(float, 0, 4, "left", "× Cτ (the trains' window W0 at the first drop, β = 0)"),
    "ss_train_slope": Constraint(float, 0, 64, "left", "(the trains' window per unit of buffer)"),
    # with ss_train_window: single flows take the trains' law measured at their link rate (trajectory.py
    # SS_TRAINS_BY_RATE; docs/models.md "Slow start's end at 5 Gbit/s")
    "ss_trains_by_rate": Constraint(bool),
    # trajectory: single flows' slow-start burst with the outcomes traced at their link rate, where the variant
    # declares them (BURST_BY_RATE; trajectory.py burst_by_rate; docs/models.md "Slow start's burst at 5 Gbit/s")
    "ss_burst_by_rate": Constraint(bool),
}

COMPONENT_NAMES = ("T_s", "N_s", "thresh", "W_max", "W_m", "W_s", "T_0", "N_0", "T_m", "N_m", "T_beta",
                   "N_beta", "T_a", "N_a", "k", "case", "subcase", "phase1", "W_L", "loss_limited", "F", "S",
                   "throughput")


class FirstPrinciplesModel(Model):
    """Base class of the first-principles variants. Learned by ``fit``: ``buffer_bytes_``, ``wmax_bytes_``
    (and ``residuals_``); ``predict`` uses them when present, else the constructor's values."""

    # -- variant interface -------------------------------------------------------------------------
    def _prepare(self, r: Rows) -> None:
        """Add per-row variant constants to r (default: none)."""

    def _after_loss(self, W, r):  # pragma: no cover - abstract
        raise NotImplementedError

    def _phase1(self, Ws, r):  # pragma: no cover - abstract
        raise NotImplementedError

    def _phase2(self, W, r):  # pragma: no cover - abstract
        raise NotImplementedError

    def _wm_closed(self, r):
        return np.full(r.tau.shape, np.nan)

    def _burst_events(self, small, r):
        """Trajectory: (congestion events at the end of slow start whatever the window — a count or an array
        per row —, and whether a window left exactly at the overflow window W_o is kept uncut). small: rows
        whose first drop comes within the first RTT of overload (β < (1/ln 2 − 1)·Cτ). Default: SS_EVENTS
        everywhere, a window at W_o cut again (trajectory.py)."""
        return SS_EVENTS, False

    def _first_epochs(self, P, W1, k, r, alt=False):
        """Trajectory: the epochs before the sustained ones, [(start window, state)] (default: one, from
        the window the slow-start loss burst leaves); alt: in slow start's other outcome (_ss_branch)."""
        return [(W1, {})]

    def _ss_branch(self, P, W1, small, r):
        """Trajectory: the probability per row that slow start ends in the variant's other outcome (CUBIC's
        HyStart exit, H-TCP's second event after a bandwidth sample), given the loss peak P and the window W1 the
        first outcome's burst leaves; None: there is none (default). 0 where both outcomes predict the same. The
        prediction is then the expected throughput of the two (docs/models.md "Single flows")."""
        return None

    # ss_burst_by_rate: ((link rate [bit/s], share, factor), ...) — that share of single flows leave slow start's burst
    # with the window W1 × factor (trajectory.py burst_by_rate); None: the variant's burst as its cuts give
    BURST_BY_RATE = None

    def _has_ss_branch(self) -> bool:
        """Whether _ss_branch gives the variant's own other outcome (then ss_burst_by_rate does not apply): the one
        test of a variant's settings for it, which _ss_branch asks too."""
        return False

    def _ss_exit(self, P, r):
        """Trajectory, the other outcome: the window at which slow start ended without a loss, or None (it
        ends at the loss peak P as in the first outcome; default)."""
        return None

    def _phase2_T(self, W, r):
        """T_m alone (variants whose N_m costs more than T_m override this)."""
        return self._phase2(W, r)[0]

    def _epoch_parts(self, Ws, r):
        """(T_0, N_0, T_m) at W_s (variants that share work between the phases override this)."""
        T0, N0 = self._phase1(Ws, r)
        return T0, N0, self._phase2_T(Ws, r)

    # -- shared machinery --------------------------------------------------------------------------
    def _rows(self, tau, n, beta_bits, C=None) -> Rows:
        tau, n, beta = np.broadcast_arrays(np.asarray(tau, float), np.asarray(n, float), np.asarray(beta_bits, float))
        cap = float(self.capacity_bps) if C is None else C
        r = Rows(tau=tau.ravel().copy(), n=n.ravel().copy(), beta=beta.ravel().copy())
        r["C"] = np.broadcast_to(np.asarray(cap, float), r["tau"].shape).copy()
        r["bdp"] = r["C"] * r["tau"]  # Cτ [bits]
        r["M"] = np.full(r["tau"].shape, self.mss_bytes * BITS)  # one segment [bits]
        self._prepare(r)
        return r

    def _residual(self, W, r):
        """Eq. (8): N_m − C·T_m − β  [bits], with Phase II from max(Cτ, after-loss window) to W."""
        Tm, Nm = self._phase2(W, r)
        return Nm - r.C * Tm - r.beta

    def _solve_wm(self, r: Rows) -> np.ndarray:
        """W_m ≥ Cτ solving Eq. (8): the variant's closed form, else bisection. With queue_fill the
        buffer overflows when the window exceeds the pipe and the buffer: W_m = Cτ + β."""
        if self.queue_fill:
            return r.bdp + r.beta  # ACK-clocked: queue = W − Cτ, drop-tail loss at W = Cτ + β  [bits]
        with np.errstate(all="ignore"):
            wm = np.asarray(self._wm_closed(r), float).copy()
        todo = ~np.isfinite(wm)
        if todo.any():
            s = r.take(todo)
            lo = s.bdp.copy()
            hi = s.bdp + np.maximum(s.beta, s.M)
            with np.errstate(all="ignore"):
                for _ in range(200):  # grow the bracket until Eq. (8) changes sign
                    low = self._residual(hi, s) <= 0
                    if not low.any():
                        break
                    hi = np.where(low, s.bdp + 4.0 * (hi - s.bdp), hi)
                wm[todo] = illinois_increasing(lambda w, i: self._residual(w, s.take(i)), lo, hi)
        return wm

    def epoch_residual(self, w_bytes, tau, *, n=1, buffer=None) -> np.ndarray:
        """Eq. (8) residual N_m − C·T_m − β in bits at peak window w_bytes (0 at W_m)."""
        self._validate_params()
        beta = self._param_array("buffer", buffer, self._buffer_default()) * BITS
        w = np.asarray(w_bytes, float) * BITS
        shape = np.broadcast_shapes(w.shape, np.shape(tau), np.shape(n), beta.shape)
        r = self._rows(np.broadcast_to(tau, shape), np.broadcast_to(n, shape), np.broadcast_to(beta, shape))
        with np.errstate(all="ignore"):
            return self._residual(np.broadcast_to(w, shape).ravel(), r).reshape(shape)

    def _epoch(self, W, r):
        """(T, N) of one loss epoch with peak W [bits], from the window after a loss: Phase I up to
        min(W, Cτ) (the variant's Phase I with Cτ replaced by W when W < Cτ), then Phase II up to W."""
        low = W <= r.bdp
        T1, N1 = self._phase1(W, Rows(dict(r, bdp=np.minimum(W, r.bdp))))
        has1 = low | (self._after_loss(W, r) < r.bdp)
        Tm, Nm = self._phase2(np.maximum(W, r.bdp), r)
        T = np.where(has1, T1, 0.0) + np.where(low, 0.0, Tm)
        return T, np.where(has1, N1, 0.0) + np.where(low, 0.0, Nm)

    def _wl_closed(self, target, r):
        """Hook: (W_L, T_ep) [bits, s] solving N_ep(W_L) = target [bits] in closed form per row of the
        per-flow r, over all W (not capped at the loss-free peak). nan only where W_L > Cτ (the variant's
        Phase I alone cannot carry the target): those rows are solved numerically above Cτ."""
        nan = np.full(r.tau.shape, np.nan)
        return nan, nan.copy()

    exact_loss = False  # True on an instance: every loss epoch is solved numerically (the reference path)

    def _loss_limited(self, segs, r, w_clean):
        """Peak W_L [bits] of a flow losing one segment in `segs` (rows of per-flow `r`), and its
        sustained rate N·M/T_epoch [bit/s]; W_L = nan where the loss comes after w_clean (overflow first).
        N_ep is increasing, so the loss binds iff W_L < w_clean, i.e. N_ep(w_clean) > N·M. The variant's
        closed form where it has one, else Illinois regula falsi on N_ep(W) = N·M in ln W, between Cτ
        (where the closed form says W_L > Cτ) or 10⁻³ segment (exact_loss) and w_clean."""
        target = segs * r.M
        with np.errstate(all="ignore"):
            if self.exact_loss:
                W, T = np.full(r.tau.shape, np.nan), np.full(r.tau.shape, np.nan)
                floor = np.full(r.tau.shape, 1e-3) * r.M
            else:
                W, T = (np.array(v, float) for v in self._wl_closed(target, r))
                floor = r.bdp
            binds = W < w_clean
            todo = np.flatnonzero(~np.isfinite(W) & (floor < w_clean))  # else the root is above w_clean
            if todo.size:
                s = r.take(todo)
                excess = self._epoch(w_clean[todo], s)[1] - target[todo]
                sub = excess > 0
                todo, s, excess = todo[sub], s.take(sub), excess[sub]
                lo, hi = np.log(floor[todo]), np.log(w_clean[todo])
                f = lambda x, i: self._epoch(np.exp(x), s.take(i))[1] - target[todo[i]]  # noqa: E731
                W[todo] = np.exp(illinois_increasing(f, lo, hi, rtol=1e-12, fhi=excess))
                T[todo] = self._epoch(W[todo], s)[0]
                binds[todo] = True
        return np.where(binds, W, np.nan), np.where(binds, target / T, np.nan)

    def _variant_loss_rate(self, segs, r, rate):
        """Hook: a variant's own lower bound on the loss-limited rate (CUBIC's TCP-friendly region)."""
        return rate

    def _compute(self, tau, n, beta_bits, size_bits, wmax_bits, duration=None, loss=None) -> dict:
        """All quantities for broadcast inputs (validated, in bits/seconds); duration [s] selects the
        duration mode, loss is the probability that a segment is dropped (0: none)."""
        shapes = [np.shape(x) for x in (tau, n, beta_bits, size_bits, wmax_bits, duration, loss) if x is not None]
        shape = np.broadcast_shapes(*shapes)
        b = lambda x: np.broadcast_to(np.asarray(x, float), shape).ravel()  # noqa: E731
        r = self._rows(b(tau), b(n), b(beta_bits))
        F, wmax = b(size_bits), b(wmax_bits)
        p = b(0.0 if loss is None else loss)
        tau, n, C, bdp, M = r.tau, r.n, r.C, r.bdp, r.M
        Wagg = np.minimum(n * wmax, self.wmax_hard_bytes * BITS)  # §IV-D rule 2: W_max = min(n·W_max, W_maxH)

        # Slow start (§IV-A), per flow, with the §IV-D threshold.
        w0 = self.initial_window * M
        ssthresh = bdp / 2.0 + r.beta  # §IV-A: ssthresh = Cτ/2 + β  [bits]
        with np.errstate(divide="ignore"):
            segs = np.where(p > 0, 1.0 / p, np.inf)  # segments per flow between external losses, N = 1/p
        loss_ss = w0 + segs * M * LN2  # first loss after N segments: N_s = (thresh − w0)/ln 2 = N·M (Eq. (3))
        thresh = np.maximum(np.minimum.reduce([ssthresh, bdp / n, Wagg / n, loss_ss]), w0)  # §IV-D rule 3
        lag = float(self.startup_rtts) * tau  # start-up lag d·τ: w(t) = w0·2^{t/τ − d}, no data before  [s]
        Ts = lag + tau * np.log2(thresh / w0)  # Eq. (2), generalised to w(0) = w0: T_s = dτ + τ·log2(thresh/w0)  [s]
        Ns = n * (thresh - w0) / LN2  # Eq. (3) × n (§IV-D rule 3): N_s = n·(thresh − w0)/ln 2  [bits]

        nan = np.full(shape=tau.shape, fill_value=np.nan)
        out = {k: nan.copy() for k in ("W_m", "W_s", "T_0", "N_0", "T_m", "N_m", "T_beta", "N_beta")}
        Na, Ta = nan.copy(), nan.copy()
        case = np.where(Wagg > bdp, 2, 1)
        subcase = np.zeros(tau.shape, dtype=int)
        phase1 = np.zeros(tau.shape, dtype=bool)

        # Case 1 (§IV-B): W_max ≤ Cτ — window flat at W_max after slow start, rate W_max/τ.
        c1 = np.flatnonzero(case == 1)  # row indices (masks: see Rows.take)
        Na[c1] = F[c1] - Ns[c1]  # N_a = F − N_s  [bits]
        Ta[c1] = Na[c1] * tau[c1] / Wagg[c1]  # T_a = N_a·τ/W_max  [s]

        c2 = np.flatnonzero(case == 2)
        if c2.size:
            s = r if c2.size == tau.size else r.take(c2)
            Wmax2 = Wagg[c2]
            with np.errstate(all="ignore"):
                Wm = self._solve_wm(s)
                sub2 = Wm > Wmax2  # subcase 2: the peak is capped at W_max (Fig. 5b)
                Ws = np.where(sub2, Wmax2, Wm)  # Eq. (11): W_s = min(W_m, W_max)
                # Eq. (8) holds at W_m: N_m = C·T_m + β in subcase 1 (only T_m needed); at W_max otherwise.
                T0, N0, Tm = self._epoch_parts(Ws, s)
                has1 = self._after_loss(Ws, s) < s.bdp
                if self.queue_fill:
                    # Above Cτ the link is full and the queue holds W − Cτ: Phase II carries C·T_m; a window
                    # capped below Cτ + β never overflows (subcase 2: no loss, the epoch is all Phase II).
                    Tm = np.where(sub2, 1.0, Tm)  # any length: the rate is C
                    Nm, Tb, Nb = s.C * Tm, np.zeros_like(Tm), np.zeros_like(Tm)
                    has1 = has1 & ~sub2
                else:
                    i2 = np.flatnonzero(sub2)
                    if i2.size:
                        Tm2, Nm2 = self._phase2(Ws[i2], s.take(i2))
                        Tm[i2] = Tm2
                    Nm = np.where(sub2, 0.0, s.C * Tm + s.beta)
                    if i2.size:
                        Nm[i2] = Nm2
                    g = Nm - s.C * Tm - s.beta  # Eq. (8) at W_s: 0 in subcase 1, < 0 in subcase 2
                    Tb = np.where(sub2, -g / (Wmax2 / s.tau - s.C), 0.0)  # N_max + N_β − C(T_max+T_β) − β = 0 [s]
                    Nb = np.where(sub2, Wmax2 / s.tau * Tb, 0.0)  # N_β = (W_max/τ)·T_β  [bits]
                T0, N0 = np.where(has1, T0, 0.0), np.where(has1, N0, 0.0)
            out["W_m"][c2], out["W_s"][c2] = Wm, Ws
            out["T_0"][c2], out["N_0"][c2], out["T_m"][c2], out["N_m"][c2] = T0, N0, Tm, Nm
            out["T_beta"][c2], out["N_beta"][c2] = Tb, Nb
            subcase[c2] = np.where(sub2, 2, 1)
            phase1[c2] = has1
            Na[c2] = N0 + Nm + Nb  # N_a = N_0 + N_m (+ N_β)  [bits]
            Ta[c2] = T0 + Tm + Tb  # T_a = T_0 + T_m (+ T_β)  [s]

        with np.errstate(all="ignore"):
            sustained = np.where(case == 1, Wagg / tau, Na / Ta)  # F → ∞: W_max/τ (Case 1), N_a/T_a (Case 2)
        W_L, keep = np.full(tau.shape, np.nan), np.full(tau.shape, np.nan)
        lossy = np.isfinite(segs)
        if lossy.any():  # external loss: per flow on C/n and β/n (module docstring)
            li = np.flatnonzero(lossy)
            pick = (lambda a: a) if li.size == tau.size else (lambda a: a[li])  # noqa: E731
            nl, th = pick(n), pick(thresh)
            fl = self._rows(pick(tau), np.ones(nl.size), pick(r.beta) / nl, pick(C) / nl)
            keep[li] = self._after_loss(th, fl) / th  # after-loss factor (transient)
            w_clean = np.where(pick(case) == 2, pick(out["W_s"]), pick(Wagg)) / nl
            segs_l = pick(segs)
            wl, rate = self._loss_limited(segs_l, fl, w_clean)
            rate = self._variant_loss_rate(segs_l, fl, rate)
            W_L[li] = wl * nl
            clean = pick(sustained)
            sustained[li] = np.where(np.isfinite(rate), np.minimum(rate * nl, clean), clean)
        loss_limited = np.isfinite(W_L)
        with np.errstate(all="ignore"):  # a loss epoch carries N segments per flow in T_a = N_a/rate
            Na = np.where(loss_limited, n * segs * M, Na)
            Ta = np.where(loss_limited, Na / sustained, Ta)
            if duration is None:
                if self.receiver_report:
                    # iperf3 -n ends when the client has WRITTEN F bytes into its sockets (iperf_client_api.c,
                    # iperf_run_client: "Is the test done yet?" bytes_sent >= settings->bytes → TEST_END); the
                    # server then closes its sockets (iperf_server_api.c, iperf_handle_message_server, case
                    # TEST_END), so the data still unsent in the sender's socket buffer, U, is never counted.
                    # U = send_backlog·(Cτ + β): the autotuned buffer is sized by the largest cwnd, slow start's
                    # overshoot past the overflow window (tcp_output.c/tcp_input.c tcp_sndbuf_expand:
                    # sk_sndbuf = 2·per_mss·cwnd); docs/models.md "Fixed-size transfers"  [bits]
                    F = np.maximum(F - self.send_backlog * (bdp + r.beta), np.minimum(F, n * w0))
                # Sending rate S = (N_s + k·N_a)/(T_s + k·T_a), k = (F − N_s)/N_a  (§IV-B); k·T_a = (F − N_s)/(N_a/T_a).
                in_ss = F <= Ns
                k = np.where(in_ss, 0.0, (F - Ns) / Na)
                S = np.where(np.isinf(F), sustained, F / (Ts + (F - Ns) / sustained))
                # Transfer ends within slow start: invert Eq. (3) for the time that carries F.
                t_ss = lag + tau * np.log2(1.0 + F * LN2 / (n * w0))
                S = np.where(in_ss, F / t_ss, S)
            else:
                T = b(duration)
                in_ss = T <= Ts
                span = T  # the interval the rate is over: the sender's T, or iperf3's receiver's (below)
                if self.receiver_report:
                    # iperf3's receiver counts F over T + τ + q: its interval opens when it sends TEST_START
                    # (τ/2 before the sender starts) and closes when TEST_END arrives (τ/2 plus the queueing
                    # delay q after the sender stops; the FIFO puts every byte sent before T ahead of it).
                    q = np.where(in_ss, 0.0, self._mean_queue_delay(out["W_s"], W_L, loss_limited, case, r))
                    span = T + tau + q
                # Data sent in T: F(T) = N_s + (T − T_s)·N_a/T_a, or Eq. (3) within slow start  [bits]
                grow = np.maximum(T - lag, 0.0)  # time slow start has been growing  [s]
                F = Ns + (T - Ts) * sustained
                i = np.flatnonzero(in_ss)
                F[i] = n[i] * w0[i] * (np.exp2(grow[i] / tau[i]) - 1.0) / LN2  # (exp2 only there)
                k = np.where(in_ss, 0.0, (F - Ns) / Na)
                S = np.where(np.isinf(T), sustained, F / span)
            finite = np.isfinite(F) if duration is None else np.isfinite(T)
            tr = np.flatnonzero(loss_limited & ~in_ss & np.isfinite(sustained) & finite)
            if tr.size:  # the decay from the slow-start window to W_L (transient.py)
                nt = n[tr]
                tra = Transient(thresh[tr], keep[tr], W_L[tr] / nt, nt * segs[tr] * M[tr], nt, tau[tr], C[tr] / nt,
                                sustained[tr])
                if duration is None:
                    S[tr] = F[tr] / (Ts[tr] + tra.time(F[tr] - Ns[tr]))
                else:
                    F[tr] = Ns[tr] + tra.data(T[tr] - Ts[tr])
                    S[tr] = F[tr] / span[tr]
            tj = np.flatnonzero(~lossy & (case == 2) & (Wagg >= bdp + r.beta) & np.isfinite(F if duration is None else
                                                                                          b(duration))
                                ) if self.trajectory and self.queue_fill else np.zeros(0, dtype=np.intp)
            other = None  # slow start's other outcome: (rows, its probability, its rate or data there)
            if tj.size:  # slow start's overshoot, the loss burst, the first epochs (trajectory.py)
                rt = r if tj.size == tau.size else r.take(tj)
                lag_tj = lag[tj] if np.ndim(lag) else lag
                tra = Trajectory(self, rt, sustained[tj], lag_tj, w0[tj])
                if duration is None:
                    F_tj = F[tj]
                    S[tj] = F_tj / tra.time(F_tj)
                    in_ss[tj] = F_tj <= tra.N_ss
                else:
                    T_tj = T[tj]
                    in_tj = T_tj <= tra.T_ss
                    in_ss[tj] = in_tj
                    F_tj = F[tj] = tra.data(T_tj)
                    if self.receiver_report:
                        span[tj] = span_tj = np.where(in_tj, T_tj + tau[tj], span[tj])
                    else:
                        span_tj = span[tj]
                    S[tj] = F_tj / span_tj
                p_alt = tra.p_alt
                if p_alt is not None and np.any(p_alt > 0):  # the variant's _ss_branch (docs/models.md)
                    on = np.flatnonzero(p_alt > 0)   # indices: one scan of the mask for every array taken
                    rows = tj[on]
                    alt = Trajectory(self, rt.take(on), sustained[rows], lag_tj[on] if np.ndim(lag_tj) else lag_tj,
                                     w0[rows], alt=True, peak=tuple(v[on] for v in tra.peak))
                    other = (rows, p_alt[on], F[rows] / alt.time(F[rows]) if duration is None else alt.data(T[rows]))
            if duration is None and self.receiver_report:
                # The receiver counts the F − U bytes sent by the time t the last byte was written, over its
                # own interval t + τ + q̄ (as in the duration mode; TEST_END queues behind them): S = F/(F/S + τ + q̄)
                q = np.where(in_ss, 0.0, self._mean_queue_delay(out["W_s"], W_L, loss_limited, case, r))
                S = np.where(np.isinf(F), S, F / (F / S + tau + q))
            if other is not None:
                # the expected throughput over slow start's two outcomes: p·Θ(other) + (1 − p)·Θ(first), each as
                # the receiver reports it (the same interval correction as above, on the other outcome's rate)
                rows, p_o, value = other
                if duration is None:
                    S_o = (F[rows] / (F[rows] / value + tau[rows] + q[rows]) if self.receiver_report else value)
                else:
                    S_o = value / span[rows]
                    F[rows] = _expected(p_o, value, F[rows])
                S[rows] = _expected(p_o, S_o, S[rows])
        case = np.where(in_ss, 0, case)
        res = dict(out, T_s=Ts, N_s=Ns, thresh=thresh, W_max=Wagg, T_a=Ta, N_a=Na, k=k, case=case,
                   subcase=subcase, phase1=phase1, W_L=W_L, loss_limited=loss_limited, F=F, S=S,
                   throughput=np.minimum(S, C))
        return {name: res[name].reshape(shape) for name in COMPONENT_NAMES}

    def _mean_queue_delay(self, Ws, W_L, loss_limited, case, r):
        """Mean queueing delay q̄ [s] of the sustained regime: the window's epoch midpoint between the
        after-loss window and the peak (W_s, or W_L under external loss), less Cτ, over C; 0 for a window
        limit at or below Cτ (Case 1); at most β/C. A midpoint, not the epoch's time average
        (docs/models.md: a ≤ 1-RTT correction to the receiver's interval)."""
        peak = np.where(loss_limited, W_L, np.where(case == 2, Ws, 0.0))
        mid = (self._after_loss(peak, r) + peak) / 2.0
        return np.clip(mid - r.bdp, 0.0, r.beta) / r.C

    # -- public API --------------------------------------------------------------------------------
    def _buffer_default(self):
        return getattr(self, "buffer_bytes_", self.buffer_bytes)

    def _wmax_default(self):
        return getattr(self, "wmax_bytes_", self.wmax_bytes)

    @staticmethod
    def _param_array(name, value, default):
        if value is None:
            value = default
        if value is None:
            raise ValidationError(name, "not given here, in the constructor, or learned by fit()")
        allow_zero = name == "buffer"
        return positive_array(name, value, units="bytes", allow_zero=allow_zero, allow_inf=name != "buffer")

    def _duration_loss(self, duration, loss):
        if duration is None:
            duration = self.duration_s
        if duration is not None:
            duration = positive_array("duration", duration, units="s", allow_inf=True)
        if loss is not None:
            loss = positive_array("loss", loss, units="probability per segment", allow_zero=True)
            if np.any(loss >= 1):
                raise ValidationError("loss", f"must be < 1 (probability per segment); got {loss.max()!r}")
        return duration, loss

    def components(self, tau, *, n=1, buffer=None, size=None, wmax=None, duration=None, loss=None
                   ) -> dict[str, np.ndarray]:
        """Intermediate quantities as arrays of the broadcast shape of (tau, n, buffer, size, wmax,
        duration, loss).

        tau in s; buffer (β), size (F), wmax (per-flow W_max) in bytes (default: learned or constructor
        values); duration T in s (default: the constructor's duration_s; given, it replaces size: the
        throughput of a T-second transfer); loss: probability that a segment is dropped, periodic
        1 in N as 1/N (default none). Returned: T_s, T_0, T_m, T_beta, T_a [s]; N_s, N_0, N_m, N_beta,
        N_a, thresh, W_max (aggregate), W_m, W_s, W_L (loss-limited peak, nan: loss does not bind), F
        (data sent) [bits]; k (epochs); case (0: ends in slow start, 1, 2); subcase (1: W_m ≤ W_max,
        2: W_m > W_max, 0: n/a); phase1 (Phase I non-empty); loss_limited; S and throughput = min(S, C) [bit/s].
        """
        return self._evaluate(COMPONENT_NAMES, tau, n, buffer, size, wmax, duration, loss)

    def _evaluate(self, names, tau, n, buffer, size, wmax, duration, loss) -> dict:
        """components' validation and evaluation; names: the components wanted (at least)."""
        self._validate_params()
        tau = positive_array("tau", tau, units="s")
        n = positive_array("n", n, units="streams")
        if np.any(n != np.round(n)):
            raise ValidationError("n", "must be a whole number of streams ≥ 1")
        beta = self._param_array("buffer", buffer, self._buffer_default()) * BITS
        F = self._param_array("size", size, self.size_bytes) * BITS
        W = self._param_array("wmax", wmax, self._wmax_default()) * BITS
        duration, loss = self._duration_loss(duration, loss)
        return self._compute_blocks(names, tau, n, beta, F, W, duration, loss)

    def _compute_blocks(self, names, *args) -> dict:
        """_compute over blocks of BLOCK_ROWS rows of the broadcast arguments (None: not given), the components
        `names` concatenated (only those: fresh whole arrays cost page faults).
        Each row's arithmetic is the same in a block as in the whole (a row depends on the others only through
        the stop tests of the global Newton loops, as it did within one call)."""
        shape = np.broadcast_shapes(*(np.shape(a) for a in args if a is not None))
        size = math.prod(shape)
        if size <= BLOCK_ROWS:
            return self._compute(*args)
        step = -(-size // -(-size // BLOCK_ROWS))  # equal blocks of at most BLOCK_ROWS rows
        flat = [a if a is None or np.ndim(a) == 0 else np.broadcast_to(a, shape).ravel() for a in args]
        parts = [self._compute(*(a if a is None or np.ndim(a) == 0 else a[i:i + step] for a in flat))
                 for i in range(0, size, step)]
        return {k: np.concatenate([p[k] for p in parts]).reshape(shape) for k in names}

    def predict(self, tau, *, n=1, buffer=None, size=None, wmax=None, duration=None, loss=None) -> np.ndarray:
        """Predicted throughput min(S, C) in bits/s, broadcast over tau [s], n, buffer, size, wmax [bytes],
        duration [s] and loss [probability per segment] (see components)."""
        return self._evaluate(("throughput",), tau, n, buffer, size, wmax, duration, loss)["throughput"]

    def fit(self, tau, throughput, *, n=1, size=None, duration=None, loss=None, buffer_bounds=BUFFER_BOUNDS,
            wmax_bounds=WMAX_BOUNDS):
        """Least-squares fit of β (buffer_bytes_) and W_max (wmax_bytes_) to a measured profile.

        tau [s], throughput [bit/s], n, size [bytes], duration [s] and loss broadcast together; bounds in bytes.
        """
        self._validate_params()
        self.buffer_bytes_, self.wmax_bytes_, self.residuals_ = fit_buffer_wmax(
            self, tau, throughput, n=n, size=size, duration=duration, loss=loss, buffer_bounds=buffer_bounds,
            wmax_bounds=wmax_bounds)
        return self
