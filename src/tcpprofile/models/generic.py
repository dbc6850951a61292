"""Generic ramp-up/sustainment model of Rao et al., "TCP Throughput Profiles Using Measurements over
Dedicated Connections" (HPDC'17, §3): Θ_O(τ) = θ̄_S − f_R·(θ̄_S − θ̄_R), f_R = T_R/T_O.

Units, derived (the paper writes T_R = τ·log C and "2C" for the ramp data, with C a window count):
a window doubling every RTT from w0 segments reaches the rate C when it holds the BDP, W* = C·τ/(M·w0)
initial windows (M = segment size in bits); that takes log2 W* round trips, so T_R = τ·log2 W* seconds,
and carries Σ_{i≤log2 W*} w0·2^i ≈ 2·W*·w0 segments = 2·C·τ bits, so θ̄_R = 2Cτ/T_R.

Ramp-up shapes (§3.4): T_R = κ·τ_1·(τ/τ_1)^p·log2 W* with τ_1 = 1 s; p = 1 is exponential (slow start),
p > 1 faster, p < 1 slower than exponential. Correction: the paper prints the slower case as
T_R = τ^{−ε}·log C but differentiates it as τ^{1−ε}·log C (dΘ/dτ ∝ (1−ε)τ^{−ε}); τ^{1−ε} (p = 1 − ε) is
the consistent form, and what is implemented. Unlike the paper, log2 W* keeps its τ dependence, so even
p = 1 gives d²T_R/dτ² = κ/(τ·ln 2) > 0: with θ̄_S constant the profile is strictly concave.

Sustainment: θ̄_S(τ) = s0 + s1·τ (bits/s), ramp data D_R = ρ·C·τ (ρ = 2 for doubling).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ValidationError
from .base import Constraint, Model, positive_array

LN2 = math.log(2.0)
TAU_1 = 1.0  # reference RTT [s] that keeps τ^p dimensionally honest


def ramp_sustain(trace, dt: float = 1.0, threshold: float = 0.9) -> tuple[float, float, float, float]:
    """(T_R [s], θ̄_R [bit/s], θ̄_S [bit/s], T_O [s]) of one throughput trace sampled every dt seconds.

    θ̄_S is first estimated as the median of the second half; the ramp-up is the samples before the first
    one ≥ threshold·θ̄_S, so T_R has the trace's resolution dt (dt/2 when the first sample is already
    there). θ̄_R and θ̄_S are then the means of the samples before and from that sample on.
    """
    x = positive_array("trace", trace, units="bit/s", allow_zero=True).ravel()
    if x.size < 2:
        raise ValidationError("trace", "needs at least 2 samples")
    peak = np.median(x[x.size // 2:])
    i = int(np.argmax(x >= threshold * peak))  # first sample at the sustained level
    n_r = min(max(i, 1), x.size - 1)
    return max(i, 0.5) * dt, float(x[:n_r].mean()), float(x[n_r:].mean()), x.size * dt


class GenericModel(Model):
    """Θ_O(τ) = θ̄_S − f_R(θ̄_S − θ̄_R) (HPDC'17 §3.1). Learned by fit: ramp_scale_, ramp_exponent_,
    ramp_data_, sustained_bps_, sustained_slope_, duration_s_."""

    _constraints = {
        "capacity_bps": Constraint(float, 0, math.inf, "neither", "bit/s"),
        "mss_bytes": Constraint(int, 1, 65535, "both", "bytes"),
        "initial_window": Constraint(int, 1, 1000, "both", "segments"),
        "duration_s": Constraint(float, 0, math.inf, "neither", "s (observation period T_O)", optional=True),
        "ramp_scale": Constraint(float, 0, math.inf, "neither", "κ (s^(1-p) relative to τ_1 = 1 s)"),
        "ramp_exponent": Constraint(float, 0, math.inf, "neither", "p (1: exponential ramp-up)"),
        "ramp_data": Constraint(float, 0, math.inf, "neither", "ρ (ramp data in units of C·τ)"),
        "sustained_bps": Constraint(float, 0, math.inf, "neither", "bit/s (θ̄_S at τ → 0)", optional=True),
        "sustained_slope": Constraint(float, -math.inf, math.inf, "neither", "bit/s per s (dθ̄_S/dτ)"),
    }

    def __init__(self, *, capacity_bps=10e9, mss_bytes=1448, initial_window=10, duration_s=None,
                 ramp_scale=1.0, ramp_exponent=1.0, ramp_data=2.0, sustained_bps=None, sustained_slope=0.0):
        self.capacity_bps = capacity_bps
        self.mss_bytes = mss_bytes
        self.initial_window = initial_window
        self.duration_s = duration_s
        self.ramp_scale = ramp_scale
        self.ramp_exponent = ramp_exponent
        self.ramp_data = ramp_data
        self.sustained_bps = sustained_bps
        self.sustained_slope = sustained_slope

    # -- parameters in use (learned ones win) --------------------------------------------------------
    def _p(self, name):
        value = getattr(self, name + "_", getattr(self, name))
        if value is None and name == "sustained_bps":
            return float(self.capacity_bps)
        if value is None:
            raise ValidationError(name, "not given in the constructor and not learned by fit()")
        return float(value)

    def _bdp_windows(self, tau):
        return self.capacity_bps * tau / (self.mss_bytes * 8.0 * self.initial_window)  # W* [initial windows]

    def components(self, tau) -> dict[str, np.ndarray]:
        """T_R [s], D_R [bits], theta_R, theta_S, throughput [bit/s], f_R, and the derivatives
        dT_R, d2T_R [s/s, 1/s] and dtheta, d2theta [bit/s per s, per s²] of Θ_O."""
        self._validate_params()
        tau = positive_array("tau", tau, units="s")
        W = self._bdp_windows(tau)
        if np.any(W <= 1):
            raise ValidationError("tau", "the BDP must exceed the initial window (C·τ > M·w0)")
        kappa, p, rho = self._p("ramp_scale"), self._p("ramp_exponent"), self._p("ramp_data")
        s0, s1, T_O = self._p("sustained_bps"), self._p("sustained_slope"), self._p("duration_s")
        C = float(self.capacity_bps)
        L = np.log2(W)
        x = tau / TAU_1
        T_R = kappa * TAU_1 * x ** p * L  # §3.4: T_R = τ·log C, generalised to κ·τ_1·(τ/τ_1)^p·log2 W*  [s]
        dT = kappa * x ** (p - 1) * (p * L + 1 / LN2)  # dT_R/dτ
        d2T = kappa / TAU_1 * x ** (p - 2) * ((p - 1) * p * L + (2 * p - 1) / LN2)  # d²T_R/dτ²  [1/s]
        D_R = rho * C * tau  # data sent during ramp-up ≈ 2Cτ  [bits]
        th_S = s0 + s1 * tau  # θ̄_S(τ)  [bit/s]
        th_R = D_R / T_R  # θ̄_R = D_R/T_R  [bit/s]
        f_R = T_R / T_O  # f_R = T_R/T_O
        theta = th_S - f_R * (th_S - th_R)  # §3.1: Θ_O = θ̄_S − f_R(θ̄_S − θ̄_R) = θ̄_S − (T_R·θ̄_S − D_R)/T_O
        dtheta = s1 - (dT * th_S + T_R * s1 - rho * C) / T_O  # §3.5: dΘ_O/dτ
        d2theta = -(d2T * th_S + 2 * dT * s1) / T_O  # d²Θ_O/dτ² (θ̄_S linear, D_R linear in τ)
        return {"T_R": T_R, "D_R": D_R, "theta_R": th_R, "theta_S": th_S, "f_R": f_R, "throughput": theta,
                "dT_R": dT, "d2T_R": d2T, "dtheta": dtheta, "d2theta": d2theta}

    def predict(self, tau) -> np.ndarray:
        """Θ_O(τ) in bit/s."""
        return self.components(tau)["throughput"]

    def derivative(self, tau) -> np.ndarray:
        """dΘ_O/dτ in bit/s per s."""
        return self.components(tau)["dtheta"]

    def concave(self, tau) -> np.ndarray:
        """Concavity condition d²Θ_O/dτ² ≤ 0, i.e. T_R''·θ̄_S + 2·T_R'·θ̄_S' ≥ 0 (boolean per τ)."""
        return self.components(tau)["d2theta"] <= 0

    def fit(self, tau, traces, *, dt: float = 1.0, threshold: float = 0.9):
        """Estimate (T_R, θ̄_R, θ̄_S, T_O) from each run's throughput trace (bit/s every dt s) and fit
        κ and p (log-linear least squares of T_R/log2 W* on τ; p kept when only one RTT), ρ (least
        squares through the origin of D_R on Cτ), s0 and s1 (linear least squares of θ̄_S on τ), T_O (mean)."""
        self._validate_params()
        tau = positive_array("tau", tau, units="s").ravel()
        if len(traces) != tau.size:
            raise ValidationError("traces", f"need one trace per tau value ({tau.size}), got {len(traces)}")
        est = np.array([ramp_sustain(t, dt, threshold) for t in traces])
        T_R, th_R, th_S, T_O = est.T
        L = np.log2(self._bdp_windows(tau))
        if np.any(L <= 0):
            raise ValidationError("tau", "the BDP must exceed the initial window (C·τ > M·w0)")
        y = np.log(T_R / (TAU_1 * L))
        if np.unique(tau).size >= 2:
            self.ramp_exponent_, log_k = np.polyfit(np.log(tau / TAU_1), y, 1)
        else:
            self.ramp_exponent_ = float(self.ramp_exponent)
            log_k = float(np.mean(y - self.ramp_exponent_ * np.log(tau / TAU_1)))
        self.ramp_scale_ = float(np.exp(log_k))
        ct = self.capacity_bps * tau
        self.ramp_data_ = float(np.sum(th_R * T_R * ct) / np.sum(ct * ct))
        if np.unique(tau).size >= 2:
            self.sustained_slope_, self.sustained_bps_ = (float(v) for v in np.polyfit(tau, th_S, 1))
        else:
            self.sustained_slope_, self.sustained_bps_ = 0.0, float(np.mean(th_S))
        self.duration_s_ = float(np.mean(T_O)) if self.duration_s is None else float(self.duration_s)
        self.run_estimates_ = {"T_R": T_R, "theta_R": th_R, "theta_S": th_S, "T_O": T_O}
        return self


def transfer_throughput(model: GenericModel, tau, size_bytes) -> np.ndarray:
    """Θ [bit/s] of a transfer of F bytes (iperf3 -n) under a fitted generic model: a ramp-up carrying
    D_R bits in T_R, then θ̄_S until F is sent, so T_O = T_R + (8F − D_R)/θ̄_S and Θ = 8F/T_O (§3.1's
    Θ_O = θ̄_S − f_R(θ̄_S − θ̄_R) with T_O solved from F instead of given; a transfer that ends within the
    ramp takes T_R·8F/D_R). The fitted duration_s_ is not used."""
    c = model.components(tau)
    bits = 8.0 * np.asarray(size_bytes, float)
    T_O = np.where(bits > c["D_R"], c["T_R"] + (bits - c["D_R"]) / c["theta_S"], c["T_R"] * bits / c["D_R"])
    return bits / T_O
