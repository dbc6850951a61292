"""τ_T for the verdicts (reproduce.transition): the dual-sigmoid fit's crossing, censoring kept, and an
interval that holds its stated coverage. Tiers as for the dynamics: (1) exact values from the model itself;
(2) censored profiles give bounds, never values; (3) coverage over seeds on profiles with a known τ_T."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tcpprofile.analysis.censoring import ABOVE, BELOW, MEASURED
from tcpprofile.analysis.sigmoid import flipped_sigmoid
from tcpprofile.reproduce import stats
from tcpprofile.reproduce.transition import TAIL_DRAWS, crossing, draws_for

TAUS_MS = np.array([0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0])     # HPDC'17 §2's RTTs [ms]: the profiles' formulas
TAUS = TAUS_MS / 1e3                                                # [s]: what crossing takes and returns
C = 10e9


def _exact(y):
    """Three runs per τ a hair apart (the t posterior needs a spread): the profile's values themselves."""
    return [v * np.array([1 - 1e-7, 1.0, 1 + 1e-7]) for v in y]


# -- tier 1: exact values from the model ----------------------------------------------------------
@pytest.mark.parametrize("tau1, tau2, split", [(100.0, 60.0, 45.6), (150.0, 100.0, 91.6), (40.0, 30.0, 22.6)])
def test_the_crossing_of_equal_slopes_is_the_midpoint_of_the_pieces(tau1, tau2, split):
    """g_{a,τ1} on the concave side, g_{a,τ2} on the convex: g1 + g2 = 1 at (τ1 + τ2)/2 exactly (the logistic's
    symmetry), which the fit recovers to < 0.1 ms; the grid estimator read the split's midpoint (68.6, 137.3,
    34.1 ms: fails on the old τ_T)."""
    a = 0.05 if tau1 < 120 else 0.03
    y = np.where(TAUS_MS <= split, flipped_sigmoid(TAUS_MS, a, tau1), flipped_sigmoid(TAUS_MS, a, tau2)) * C
    c = crossing(TAUS, _exact(y), C, level=0.8, rng=np.random.default_rng(0))
    assert c.side == MEASURED and 1e3 * c.point == pytest.approx((tau1 + tau2) / 2, abs=0.1)     # [s]
    iv = c.interval(0.8)
    assert iv.low <= c.point <= iv.high and iv.high - iv.low < 0.1e-3


def test_draws_put_the_quantiles_inside_the_sample():
    """At 0.983 (0.05 over three looks) 60 draws made the quantiles the minimum and maximum (59/61 = 96.7 %
    coverage at most); draws_for leaves TAIL_DRAWS draws beyond each end of the interval."""
    for level in (0.8, 0.95, 1 - 0.05 / 3):
        B = draws_for(level)
        assert B * (1 - level) / 2 >= TAIL_DRAWS - 1e-9 and (B - 1) * (1 - level) / 2 < TAIL_DRAWS
    assert draws_for(1 - 0.05 / 3) == 360


# -- tier 2: censoring ----------------------------------------------------------------------------
@pytest.mark.parametrize("reach, side", [(5000.0, ABOVE), (0.05, BELOW)])
def test_a_censored_tau_T_is_a_bound_with_one_open_side(reach, side):
    y = C * 0.94 / (1 + (TAUS_MS / reach) ** 2.2)
    c = crossing(TAUS, [v * (1 + 0.01 * np.random.default_rng(1).standard_normal(3)) for v in y], C, level=0.95,
                 rng=np.random.default_rng(2))
    iv = c.interval(0.95)
    assert c.side == side
    if side == ABOVE:
        assert c.text() == "> 366" and iv.low >= 0.366 and iv.high == math.inf      # printed in ms, kept in s
    else:
        assert c.text() == "< 0.4" and iv.low == -math.inf and iv.high <= 0.4e-3


# -- tier 3: coverage over seeds --------------------------------------------------------------------
def test_the_interval_covers_the_known_tau_T_at_least_at_its_level():
    """30 profiles Θ = 0.94 C/(1 + (τ/60)^2.2) with 3 % run-to-run noise and 3 runs per τ; τ_T known: the
    estimator on the noise-free profile (55.8 ms; where Θ = C/2: 56.6 ms). At level 0.8 the interval covers it
    in ≥ 18 of 30 (at a true coverage of 0.8, P(X ≤ 17) = 0.3 %); measured at 0.85-0.92 over 60 seeds."""
    level, rng = 0.8, np.random.default_rng(3)
    y = C * 0.94 / (1 + (TAUS_MS / 60.0) ** 2.2)
    truth = crossing(TAUS, _exact(y), C, level=level, rng=rng, draws=5).point
    assert truth == pytest.approx(55.8e-3, abs=0.1e-3)
    hits = 0
    for _ in range(30):
        c = crossing(TAUS, [v * (1 + 0.03 * rng.standard_normal(3)) for v in y], C, level=level, rng=rng)
        iv = c.interval(level)
        hits += iv.low <= truth <= iv.high
    assert hits >= 18, hits


def test_two_runs_give_a_provisional_spread_never_an_interval():
    """Below 3 runs per τ the draws are normal (the t posterior of 2 runs is Cauchy) and serve only
    runs_to_decide: the shift's verdict is undetermined, with the runs per τ that would decide."""
    from tcpprofile.reproduce.findings import _shift
    rng = np.random.default_rng(4)
    more = crossing(TAUS, [v * (1 + 0.02 * rng.standard_normal(2)) for v in C * 0.94 / (1 + (TAUS_MS / 120) ** 2.2)],
                    C, level=0.95, rng=rng)
    fewer = crossing(TAUS, [v * (1 + 0.02 * rng.standard_normal(2)) for v in C * 0.94 / (1 + (TAUS_MS / 50) ** 2.2)],
                     C, level=0.95, rng=rng)
    v, iv = _shift(more, fewer, 0.95, reps=2)
    assert v == stats.UNDETERMINED and not iv.known and iv.estimate > 0 and iv.needs >= stats.MIN_REPS


def _noisy(reach: float, seed: int) -> list[np.ndarray]:
    y = C * 0.94 / (1 + (TAUS_MS / reach) ** 2.2)
    return [v * (1 + 0.02 * np.random.default_rng(seed + i).standard_normal(3)) for i, v in enumerate(y)]


def test_a_repeated_crossing_is_the_first_ones_and_leaves_the_generator_where_it_did(monkeypatch):
    """`reproduce` checks after every look, mostly on profiles whose runs did not change: a call that repeats
    an earlier one (same runs, same generator state) gives that call's result and generator state, so the
    draws after it are those of a fresh computation; another state or other runs are computed anew."""
    import tcpprofile.reproduce.transition as T
    a, b = _noisy(60.0, 10), _noisy(120.0, 20)

    def sequence():
        rng = np.random.default_rng(5)
        first = crossing(TAUS, a, C, level=0.9, rng=rng)
        second = crossing(TAUS, b, C, level=0.9, rng=rng)
        return first, second, rng.random()

    monkeypatch.setattr(T, "_memo", T.OrderedDict())
    fresh = sequence()
    computed = []
    monkeypatch.setattr(T, "_crossing_of", lambda *args, f=T._crossing_of: computed.append(1) or f(*args))
    again = sequence()
    assert computed == []                                  # both from the memo
    for x, y in zip(fresh[:2], again[:2]):
        assert (x.point, x.side) == (y.point, y.side)
        np.testing.assert_array_equal(x.lo, y.lo)
        np.testing.assert_array_equal(x.hi, y.hi)
    assert fresh[2] == again[2]                            # the generator moved on exactly as the first time
    crossing(TAUS, a, C, level=0.9, rng=np.random.default_rng(6))       # another state: computed
    crossing(TAUS, b[:-1] + [b[-1] * 1.001], C, level=0.9, rng=np.random.default_rng(5))   # other runs: computed
    assert computed == [1, 1]
