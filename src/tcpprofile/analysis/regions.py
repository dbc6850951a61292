"""Noise-aware concave/convex classification of a profile from its discrete second differences.

At each interior τ_i the second divided difference on the (unequal) grid is
    D2_i = 2/(h_{i−1}+h_i) · [ (y_{i+1}−y_i)/h_i − (y_i−y_{i−1})/h_{i−1} ],   h_i = τ_{i+1} − τ_i  [s]
(d²f/dτ² ≤ 0 ⇔ concave, §3.2). With independent means of standard error s_j its standard error is
sqrt(Σ c_j² s_j²) over the three coefficients c_j. A point is 'concave' if D2 < −z·se, 'convex' if
D2 > z·se, else 'undetermined'; end points are always 'undetermined' (no second difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from .profiles import ProfileStats
from ..units import to_ms

LABELS = ("concave", "convex", "undetermined")
PER_MS2_PER_S2 = 1e-6   # d2 as printed and exported (docs/analysis.md: per ms²) = d2 [per s²] × (1e-3 s/ms)²


@dataclass(frozen=True)
class Regions:
    tau_s: np.ndarray
    d2: np.ndarray       # second divided difference [throughput units / s²]; nan at the ends
    d2_se: np.ndarray    # its standard error (0 when no noise estimate was given)
    label: np.ndarray    # object array of LABELS

    def rows(self) -> list[dict]:
        """One row per τ as printed and exported: tau_ms, d2 and d2_se per ms² (PER_MS2_PER_S2)."""
        return [{"tau_ms": to_ms(t), "d2": float(d) * PER_MS2_PER_S2, "d2_se": float(s) * PER_MS2_PER_S2,
                 "region": str(lab)} for t, d, s, lab in zip(self.tau_s, self.d2, self.d2_se, self.label)]


def classify_regions(tau_s, mean, se=None, *, z: float = 2.0) -> Regions:
    """Classify each τ [s] of a profile; se: standard errors of `mean` (None: no noise, sign only;
    nan entries make the points that use them 'undetermined')."""
    tau = np.asarray(tau_s, dtype=float)
    y = np.asarray(mean, dtype=float)
    s = np.zeros_like(y) if se is None else np.asarray(se, dtype=float)
    if tau.ndim != 1 or y.shape != tau.shape or s.shape != tau.shape:
        raise ValidationError("mean", "tau, mean and se must be 1-D arrays of equal length")
    if tau.size > 1 and np.any(np.diff(tau) <= 0):
        raise ValidationError("tau", "must be strictly increasing")
    d2 = np.full(tau.shape, np.nan)
    d2_se = np.full(tau.shape, np.nan)
    label = np.full(tau.shape, "undetermined", dtype=object)
    if tau.size >= 3:
        h0, h1 = np.diff(tau)[:-1], np.diff(tau)[1:]
        c_prev, c_mid, c_next = 2 / (h0 * (h0 + h1)), -2 / (h0 * h1), 2 / (h1 * (h0 + h1))
        d = c_prev * y[:-2] + c_mid * y[1:-1] + c_next * y[2:]
        e = np.sqrt((c_prev * s[:-2]) ** 2 + (c_mid * s[1:-1]) ** 2 + (c_next * s[2:]) ** 2)
        inner = label[1:-1]
        known = np.isfinite(e)
        inner[known & (d < -z * e)] = "concave"
        inner[known & (d > z * e)] = "convex"
        d2[1:-1], d2_se[1:-1] = d, e
    return Regions(tau, d2, d2_se, label)


def regions_of(profile: ProfileStats, *, z: float = 2.0) -> Regions:
    """classify_regions on a ProfileStats' mean with its standard errors."""
    return classify_regions(profile.tau_s, profile.mean, profile.se, z=z)
