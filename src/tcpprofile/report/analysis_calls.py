"""The report's calls into tcpprofile.analysis, one function each.

Placeholders until tcpprofile.analysis lands on main; each says which analysis function replaces it.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares


def box_stats(samples: np.ndarray) -> dict:
    """Median, quartiles and 1.5·IQR whiskers (placeholder for analysis.profiles)."""
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    iqr = q3 - q1
    inside = samples[(samples >= q1 - 1.5 * iqr) & (samples <= q3 + 1.5 * iqr)]
    return {"med": med, "q1": q1, "q3": q3, "whislo": inside.min(), "whishi": inside.max(),
            "fliers": samples[(samples < inside.min()) | (samples > inside.max())], "mean": samples.mean()}


def _flipped_sigmoid(tau, a, t0):
    """g_{a,τ0}(τ) = 1 − 1/(1 + e^{−a(τ−τ0)})  (HPDC'17 §2.3)."""
    return 1.0 - 1.0 / (1.0 + np.exp(-a * (tau - t0)))


def dual_sigmoid(rtts_ms: np.ndarray, scaled: np.ndarray) -> dict | None:
    """Concave/convex sigmoid pair and transition RTT τ_T minimising the SSE of §2.3.

    `scaled` is the profile mean scaled into (0, 1). Candidates τ_T are the measured RTTs; the concave
    part is fitted on τ ≤ τ_T with τ1 ≥ τ_T, the convex part on τ ≥ τ_T with τ2 ≤ τ_T. Returns None with
    fewer than 3 RTTs. Placeholder for analysis.regions (dual-sigmoid τ_T with bootstrap interval).
    """
    tau, y = np.asarray(rtts_ms, float), np.asarray(scaled, float)
    if len(tau) < 3:
        return None
    span = tau[-1] - tau[0]
    best = None
    for tt in tau:
        parts, sse = {}, 0.0
        for side, mask, lo, hi in (("concave", tau <= tt, tt, tt + 10 * span),
                                   ("convex", tau >= tt, tau[0] - 10 * span, tt)):
            if mask.sum() < 2:
                continue
            x, v = tau[mask], y[mask]
            start = [4.0 / span, min(max(np.interp(0.5, v[::-1], x[::-1]), lo), hi)]
            fit = least_squares(lambda p: _flipped_sigmoid(x, *p) - v, start,   # SSE of §2.3
                                bounds=([1e-4, lo], [100.0, hi]))
            parts[side] = (float(fit.x[0]), float(fit.x[1]))
            sse += float(np.sum(fit.fun ** 2))
        if parts and (best is None or sse < best["sse"]):
            best = {"tau_t": float(tt), "sse": sse, **parts}
    return best


def sigmoid_curve(a: float, t0: float, tau: np.ndarray) -> np.ndarray:
    return _flipped_sigmoid(tau, a, t0)


def local_lyapunov(trace: np.ndarray) -> np.ndarray:
    """Local exponents ln|dM/dX| of the Poincaré map X_{i+1} = M(X_i), by finite differences
    (HPDC'17 §4.1); steps with a vanishing denominator are dropped. Placeholder for analysis.dynamics."""
    x = np.asarray(trace, float)
    if len(x) < 3:
        return np.empty(0)
    num, den = np.diff(x)[1:], np.diff(x)[:-1]
    ok = (np.abs(den) > 1e-9 * max(np.abs(x).max(), 1.0)) & (num != 0)
    return np.log(np.abs(num[ok] / den[ok]))     # ℒ_M = ln|dM/dX|
