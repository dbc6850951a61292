"""τ_T for the verdicts: the dual-sigmoid fit's crossing of one half, not its grid candidate, with an interval
whose quantiles exist at the level asked (finding (ii)).

The estimator is the one every reader uses (analysis.sigmoid.fit_dual_sigmoid, HPDC'17 §2.3, Figs. 9-10:
f = g_{a1,τ1}·I(τ ≤ τ_T) + g_{a2,τ2}·I(τ ≥ τ_T), τ2 ≤ τ_T ≤ τ1), and its censoring (analysis.censoring: a
one-piece concave fit puts τ_T beyond the grid's end, a convex one before its start). Its τ_T is a grid RTT
or the midpoint of two (the split between the pieces), so two profiles whose profiles cross C/2 in the same
half-step read the same. Here the value is the *fitted crossing*: the τ between the split's neighbouring
grid RTTs where the two fitted pieces are equally far from one half, g1(τ) + g2(τ) = 1 (g1 ≥ 1/2 ≥ g2 there,
both decreasing, so the root is unique; clipped to the bracket when the pieces leave it), in s (text() prints ms).

Interval: per-τ means drawn from their Student-t posterior (stats.mean_draws: m + s/√n·t_{n−1}), each
draw refitted (grid stage for the split, then the same bounded least squares as the point fit on that split)
and its crossing taken; draws(level) of them, so that the (1 − level)/2 quantile is the TAIL_DRAWS-th order
statistic, never the sample's minimum (60 draws at 0.983 gave min and max, ~96.7 % coverage). A censored draw
is a bound: [τ_max, ∞) or (−∞, τ_min].
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from ..analysis import sigmoid
from ..analysis.censoring import ABOVE, BELOW, MEASURED
from ..units import to_ms
from . import stats

TAIL_DRAWS = 3       # draws beyond each end of the interval: its quantiles are order statistics inside the sample
_CHUNK = 50          # the grid stage's draws per call (bounds its memory, as sigmoid.transition_rtt does)
_MEMO_SIZE = 64      # crossings kept (a sequential look re-checks profiles whose runs did not change)


def draws_for(level: float) -> int:
    """Draws for an interval at `level`: TAIL_DRAWS / ((1 − level)/2), rounded up (120 at 0.95, 360 at 0.983)."""
    return int(math.ceil(TAIL_DRAWS / ((1 - level) / 2) - 1e-9))


def _crossing(u, uT, a1, t1, a2, t2) -> float:
    """The root of g1(u) + g2(u) = 1 between the grid points around the split uT (normalised units)."""
    lo = u[u < uT - 1e-12].max(initial=u[0])
    hi = u[u > uT + 1e-12].min(initial=u[-1])
    h = lambda x: expit(-a1 * (x - t1)) + expit(-a2 * (x - t2)) - 1.0   # noqa: E731  decreasing in x
    if h(lo) <= 0:
        return float(lo)
    if h(hi) >= 0:
        return float(hi)
    return float(brentq(h, lo, hi, xtol=1e-9))


def _pieces(u, y, cand, t0):
    """(a1, τ1, a2, τ2) of the bounded least-squares fit on one split (sigmoid's own refinement)."""
    uT, last, first = cand
    params = [math.nan] * 4
    for side, (sl, lo, hi) in enumerate(((slice(0, last + 1), uT, sigmoid._T0[-1]),
                                         (slice(first, None), sigmoid._T0[0], uT))):
        a0, t00, _ = sigmoid._grid_start(u[sl], y[sl], t0, lo, hi)
        (a, tt), _ = sigmoid._refine_side(u[sl], y[sl], a0, t00, lo, hi)
        params[2 * side: 2 * side + 2] = [a, tt]
    return params


@dataclass(frozen=True)
class Crossing:
    """τ_T of one profile [s]: the point (the fitted crossing, or the grid end a censored τ_T lies beyond),
    where it lies (analysis.censoring: measured, above, below) and draws as bounds (lo = hi when measured)."""
    point: float
    side: str
    lo: np.ndarray
    hi: np.ndarray
    tau_min: float
    tau_max: float

    def interval(self, level: float) -> stats.Interval:
        """τ_T's own interval: the (1 ∓ level)/2 quantiles of the draws' lower and upper bounds (∞ when as
        many draws as that are censored above)."""
        return stats.Interval(self.point, float(np.quantile(self.lo, (1 - level) / 2, method="lower")),
                              float(np.quantile(self.hi, (1 + level) / 2, method="higher")), self.lo.size, level)

    def text(self) -> str:
        """As printed, in ms (units.to_ms): '86.9', '> 366', '< 11.8'."""
        return {ABOVE: f"> {to_ms(self.tau_max):g}", BELOW: f"< {to_ms(self.tau_min):g}"}.get(
            self.side, f"{to_ms(self.point):.3g}")


_memo: "OrderedDict[bytes, tuple[Crossing, dict]]" = OrderedDict()


def crossing(taus, samples, capacity: float | None, *, level: float, rng: np.random.Generator,
             draws: int | None = None) -> Crossing:
    """τ_T of a profile (per-τ run throughputs [bit/s] at strictly increasing τ [s], ≥ 2 runs each) and
    draws_for(level) plausible values. Below MIN_REPS runs the draws are normal (the t posterior of 2 runs
    is Cauchy): a provisional spread for how many runs would decide, never a verdict's interval.

    A pure function of its inputs and rng's state: a call that repeats an earlier one (the same runs, the
    same generator state: `reproduce` checks after every look, mostly on unchanged profiles) returns the
    earlier result and leaves rng where the earlier call left it, so every later draw is as without it."""
    taus = np.asarray(taus, float)
    samples = [np.asarray(s, float) for s in samples]
    B = draws or draws_for(level)
    h = hashlib.sha256(repr(([s.size for s in samples], capacity, level, B, rng.bit_generator.state)).encode())
    for a in (taus, *samples):
        h.update(a.tobytes())
    key = h.digest()
    if key in _memo:
        _memo.move_to_end(key)
        result, after = _memo[key]
        rng.bit_generator.state = after
        return result
    result = _crossing_of(taus, samples, capacity, B, rng)
    result.lo.flags.writeable = result.hi.flags.writeable = False     # shared by every later hit
    _memo[key] = (result, rng.bit_generator.state)
    if len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)
    return result


def _crossing_of(taus: np.ndarray, samples: list[np.ndarray], capacity: float | None, B: int,
                 rng: np.random.Generator) -> Crossing:
    if min(s.size for s in samples) >= stats.MIN_REPS:
        Y = stats.mean_draws(samples, B, rng)
    else:
        Y = np.array([s.mean() for s in samples]) + rng.standard_normal((B, len(samples))) * np.array(
            [s.std(ddof=1) / math.sqrt(s.size) for s in samples])
    tau, u, _, cap, span = sigmoid._scale(taus, [s.mean() for s in samples], capacity)
    Ys = np.clip(np.clip(Y, 1.0, None) / cap, sigmoid._CLIP, 1 - sigmoid._CLIP)
    cands = sigmoid._candidates(u)
    t0 = np.union1d(sigmoid._T0, [c[0] for c in cands])
    v, sides = np.empty(B), np.empty(B, dtype=object)
    for lo in range(0, B, _CHUNK):
        _, rs = sigmoid._fit_scaled(u, Ys[lo:lo + _CHUNK], refine=False)
        for b, (j, _, _) in enumerate(rs, start=lo):
            uT, last, first = cands[j]
            sides[b] = BELOW if last < 0 else ABOVE if first >= u.size else MEASURED
            v[b] = _crossing(u, uT, *_pieces(u, Ys[b], cands[j], t0)) if sides[b] == MEASURED else uT
    v = tau[0] + v * span
    lo_b = np.where(sides == ABOVE, tau[-1], np.where(sides == BELOW, -np.inf, v)).astype(float)
    hi_b = np.where(sides == ABOVE, np.inf, np.where(sides == BELOW, tau[0], v)).astype(float)
    fit = sigmoid.fit_dual_sigmoid(tau, [s.mean() for s in samples], capacity=capacity)
    side = {"concave": ABOVE, "convex": BELOW}.get(fit.kind, MEASURED)
    point = fit.tau_T
    if side == MEASURED:
        p = [(fit.a1 * span), (fit.tau1 - tau[0]) / span, (fit.a2 * span), (fit.tau2 - tau[0]) / span]
        point = tau[0] + _crossing(u, (fit.tau_T - tau[0]) / span, *p) * span
    return Crossing(float(point), side, lo_b, hi_b, float(tau[0]), float(tau[-1]))
