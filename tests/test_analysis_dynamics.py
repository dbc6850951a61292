"""Dynamics: known Lyapunov exponents, Poincaré spread, surrogate test, ramp-up, Fig. 14 relation."""

import math
import warnings

import numpy as np
import pytest

from tcpprofile.analysis import (local_lyapunov, lyap_rosenstein, lyapunov_test, lyapunov_tests, min_length,
                                 poincare_points, poincare_spread, ramp_up, rosenstein, rosenstein_many,
                                 surrogate_test, throughput_vs_lyapunov, trace_dynamics)
from tcpprofile.analysis import lyapunov as lyapunov_mod
from tcpprofile.analysis.dynamics import _row_quantiles
from tcpprofile.analysis.poincare import neighbour_exponents
from tcpprofile.analysis.surrogates import iaaft, phase_randomise


def _iterate(f, n, x0, burn=100):
    x = np.empty(n + burn)
    x[0] = x0
    for i in range(1, x.size):
        x[i] = f(x[i - 1])
    return x[burn:]


def logistic(n=3000, x0=0.3):
    return _iterate(lambda v: 4.0 * v * (1 - v), n, x0)


def tent(mu, n=3000, x0=0.3):
    return _iterate(lambda v: mu * min(v, 1 - v), n, x0)


def henon_x(n=3000, a=1.4, b=0.3):
    x, y, out = 0.1, 0.0, np.empty(n + 100)
    for i in range(out.size):
        x, y = 1 - a * x * x + y, b * x
        out[i] = x
    return out[100:]


# -- known values -------------------------------------------------------------------------------
@pytest.mark.parametrize("x0", [0.3, 0.123, 0.77])
def test_logistic_map_exponent_is_ln2(x0):
    x = logistic(x0=x0)
    assert lyap_rosenstein(x, emb_dim=1, min_tsep=10, trajectory_len=20) == pytest.approx(math.log(2), abs=0.05)
    assert lyap_rosenstein(x, emb_dim=2, min_tsep=10, trajectory_len=20) == pytest.approx(math.log(2), abs=0.05)
    # the paper's L = ln|dM/dX| with dM/dX from a secant of the map between nearby states
    assert local_lyapunov(x, pairing="neighbour", min_tsep=10).mean() == pytest.approx(math.log(2), abs=0.05)


def test_paper_successive_difference_estimate_telescopes_to_zero():
    """L_i = ln|Δ_{i+1}/Δ_i|: its mean is (ln|Δ_last| − ln|Δ_first|)/count, not the exponent."""
    x = logistic()
    L = local_lyapunov(x)
    d = np.diff(x)
    assert L.size == x.size - 2
    assert L.mean() == pytest.approx((math.log(abs(d[-1])) - math.log(abs(d[0]))) / L.size, abs=1e-9)
    assert abs(L.mean()) < 0.01
    assert L.std() > 1.0  # a wide distribution (Fig. 13), centred far from ln 2 on average


def test_successive_estimate_drops_zero_differences():
    x = np.array([1.0, 2.0, 2.0, 4.0, 3.0, 5.0])
    L = local_lyapunov(x)  # ratios: 0/1 (drop), 2/0 (drop), -1/2, 2/-1
    assert np.allclose(L, [math.log(0.5), math.log(2.0)])


@pytest.mark.parametrize("mu", [1.5, 1.9])
def test_tent_map_exponent_is_ln_mu(mu):
    x = tent(mu)
    assert lyap_rosenstein(x, emb_dim=1, min_tsep=10, trajectory_len=20) == pytest.approx(math.log(mu), abs=0.05)
    assert local_lyapunov(x, pairing="neighbour", min_tsep=10).mean() == pytest.approx(math.log(mu), abs=0.05)


def test_henon_largest_exponent():
    x = henon_x()
    for m in (2, 3):
        assert lyap_rosenstein(x, emb_dim=m, min_tsep=10, trajectory_len=20) == pytest.approx(0.42, abs=0.03)


def test_divergence_curve_is_linear_in_the_fitted_region():
    d = rosenstein(logistic(), emb_dim=1, min_tsep=10, trajectory_len=20)
    lo, hi = d.fit_range
    assert hi - lo >= 5
    assert np.allclose(np.diff(d.y[lo:hi]), math.log(2), atol=0.05)
    assert d.y[-1] - d.y[-4] < 0.5  # saturated at the end


def test_rosenstein_agrees_with_nolds_on_the_same_settings():
    nolds = pytest.importorskip("nolds")
    rng = np.random.default_rng(2)
    for x in (henon_x(600), logistic(600), rng.normal(size=300).cumsum()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = nolds.lyap_r(x, emb_dim=4, lag=1, min_tsep=5, trajectory_len=12, fit="poly")
        ours = lyap_rosenstein(x, emb_dim=4, lag=1, min_tsep=5, trajectory_len=12, fit_range=(0, 12))
        assert ours == pytest.approx(ref, rel=1e-6, abs=1e-9)


def test_periodic_trace_has_no_positive_exponent_and_a_curve_map():
    t = np.arange(2000)
    x = np.sin(0.7 * t) + 0.5 * np.sin(1.3 * t + 0.4)  # quasi-periodic, fills a closed curve
    assert lyap_rosenstein(x, emb_dim=3, min_tsep=10, trajectory_len=20) == pytest.approx(0.0, abs=0.02)
    assert poincare_spread(np.sin(0.7 * t)) < 0.05
    assert poincare_spread(np.random.default_rng(0).normal(size=2000)) > 0.4
    assert poincare_spread(logistic()) < 0.05  # chaotic but one-dimensional map
    a, b = poincare_points(x)
    assert np.array_equal(a[1:], b[:-1])


# -- surrogates ----------------------------------------------------------------------------------
def test_iaaft_keeps_values_and_approximates_the_spectrum():
    rng = np.random.default_rng(3)
    x = np.zeros(512)
    for i in range(1, x.size):
        x[i] = 0.9 * x[i - 1] + rng.standard_exponential()
    s = iaaft(x, 5, np.random.default_rng(4))
    assert np.allclose(np.sort(s, axis=1), np.sort(x))
    amp = np.abs(np.fft.rfft(x))
    err = np.abs(np.abs(np.fft.rfft(s, axis=1)) - amp).sum(axis=1) / amp.sum()
    assert np.all(err < 0.1)
    p = phase_randomise(x, 3, np.random.default_rng(5))
    assert np.allclose(np.abs(np.fft.rfft(p - p.mean(axis=1, keepdims=True), axis=1))[:, 1:], amp[1:], rtol=1e-6)


SIZE_SERIES = 200     # series under the null for a test's size: a 20 % test passes size_at_most with p = 5e-5


def size_at_most(rejections: int, n: int, alpha: float = 0.05) -> bool:
    """A rejection count of n series under the null consistent with size alpha: the share is at most
    alpha + 3 standard errors (9.6 % at n = 200; 10 series, ≤ 1 rejected, passed a 20 % test 38 % of the time)."""
    return rejections / n <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / n)


def test_size_at_most_tells_a_5_percent_test_from_a_20_percent_one():
    from scipy import stats
    assert size_at_most(19, SIZE_SERIES) and not size_at_most(20, SIZE_SERIES)
    # the chance that a test of size 20 % passes, and that one of size 5 % fails
    assert stats.binom.cdf(19, SIZE_SERIES, 0.20) < 1e-4 and stats.binom.sf(19, SIZE_SERIES, 0.05) < 0.003


def test_white_noise_is_indistinguishable_and_chaos_is_distinguishable():
    # 64 points a series keep the 200 × 39 surrogates' prediction errors to a few seconds
    rejected_noise = sum(surrogate_test(np.random.default_rng(s).normal(size=64), seed=s).distinguishable
                         for s in range(SIZE_SERIES))
    assert size_at_most(rejected_noise, SIZE_SERIES)  # the test's size is 5% (measured: 8 of 200)
    for s in range(5):
        x = logistic(200, x0=np.random.default_rng(s).uniform(0.1, 0.9))
        t = surrogate_test(x, seed=s)
        assert t.distinguishable and t.p_value == pytest.approx(1 / 40)


# -- ramp-up and the trace summary -----------------------------------------------------------------
def test_ramp_up_splits_and_satisfies_the_model_identity():
    y = np.r_[1e8, 4e8, 1.6e9, 6.4e9, np.full(96, 9e9)]
    r = ramp_up(y)
    assert (r.T_R, r.T_O, r.f_R) == (4.0, 100.0, 0.04)
    assert r.theta_R == pytest.approx(np.mean(y[:4]))
    assert r.theta_S == pytest.approx(9e9)
    # §3.1: Θ_O = θ̄_S − f_R (θ̄_S − θ̄_R)
    assert r.theta_O == pytest.approx(r.theta_S - r.f_R * (r.theta_S - r.theta_R))
    assert ramp_up(np.full(10, 5.0)).T_R == 0.0


def test_ramp_up_uses_interval_durations():
    y = np.array([1.0, 10.0, 10.0, 10.0])
    r = ramp_up(y, start_s=[0, 0.5, 1.5, 2.5], end_s=[0.5, 1.5, 2.5, 3.5])
    assert (r.T_R, r.T_O) == (0.5, 3.5)
    assert r.theta_O == pytest.approx((0.5 * 1 + 3 * 10) / 3.5)


def test_trace_dynamics_of_a_ramp_then_noise():
    rng = np.random.default_rng(0)
    y = np.r_[np.geomspace(1e8, 9e9, 8), 9e9 + rng.normal(0, 3e8, 92)]
    d = trace_dynamics(y, n_surrogates=19, seed=1)
    assert d.ramp.T_R == 7.0
    assert d.poincare_spread > 0.3
    assert d.surrogate_p > 0.05
    assert d.n_local == 100 - 7 - 2  # successive ratios on the sustained 93 points
    assert trace_dynamics(y).surrogate_p is None and trace_dynamics(y).distinguishable is None
    assert d.lyapunov_status == "estimated" and abs(d.lyapunov) < 0.05


def test_throughput_vs_lyapunov_rank_correlation():
    rel = throughput_vs_lyapunov([9, 8, 7, 6, 5], [0.1, 0.2, 0.25, 0.4, 0.9])
    assert rel.spearman_rho == pytest.approx(-1.0)
    assert rel.n == 5
    assert math.isnan(throughput_vs_lyapunov([1, 2], [3, 4]).spearman_rho)


# -- noise versus chaos ---------------------------------------------------------------------------------
# Tiers: (1) analytical values of chaotic maps within 10 %; (2) exact orbits: an explicit result, never
# NaN; (3) statistics over seeds: noise near zero and not rejected by the surrogate test.

def logistic_r(r, n, x0=0.3, burn=1000):
    return _iterate(lambda v: r * v * (1 - v), n, x0, burn)


def ar1(n, phi, rng):
    x, e = np.zeros(n), rng.normal(size=n)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("x, emb_dim, expected", [
    (logistic(), 2, math.log(2)),                 # r = 4: λ = ln 2 exactly
    (logistic_r(3.9, 3000), 2, 0.496),            # r = 3.9: ⟨ln|3.9(1 − 2x)|⟩ over 2·10⁶ iterates = 0.496
    (henon_x(), 2, 0.419),                        # Hénon a = 1.4, b = 0.3
    (henon_x(), 3, 0.419),
])
def test_chaotic_maps_keep_their_exponent_with_the_default_fit(x, emb_dim, expected):
    d = rosenstein(x, emb_dim=emb_dim, trajectory_len=20)
    assert d.status == "estimated" and d.grows
    assert d.exponent == pytest.approx(expected, rel=0.10)
    assert d.fit_range[0] == emb_dim  # the first emb_dim steps share coordinates with the chosen pair


def test_exact_period_4_orbit_is_periodic_not_nan():
    x = logistic_r(3.5, 400)
    assert np.allclose(x[4:], x[:-4], atol=1e-12)   # the orbit really has period 4
    for emb_dim, L in ((2, 10), (3, 20)):
        d = rosenstein(x, emb_dim=emb_dim, trajectory_len=L)
        assert d.status == "periodic"
        assert d.exponent is not None and math.isfinite(d.exponent) and d.exponent <= 0
    t = lyapunov_test(x, emb_dim=2, seed=0)
    assert t.status == "periodic" and t.p_value is None and not t.distinguishable
    assert rosenstein(np.full(100, 7.0)).status == "periodic"   # a constant is a fixed point


def test_period_4_plus_small_noise_is_near_zero_and_not_significant():
    """The issue's case: lyap_rosenstein(..., emb_dim=2, trajectory_len=10) gave ≈ 2.5 per step."""
    orbit = logistic_r(3.5, 400)
    significant = 0
    for s in range(10):
        x = orbit + np.random.default_rng(s).normal(0, 0.01, orbit.size)
        t = lyapunov_test(x, emb_dim=2, trajectory_len=10, seed=s)
        assert t.status == "estimated" and abs(t.exponent) < 0.05
        significant += t.distinguishable
    assert significant <= 1


@pytest.mark.parametrize("make", [lambda rng: rng.normal(size=300), lambda rng: ar1(300, 0.8, rng)],
                         ids=["white", "ar1"])
def test_noise_is_near_zero_and_not_rejected_by_the_surrogate_test(make):
    # 19 surrogates as the report and reproduce use (p ≥ 1/20); measured: white 13, AR(1) 16 of 200 rejected
    tests = lyapunov_tests([make(np.random.default_rng(s)) for s in range(SIZE_SERIES)], n_surrogates=19, seed=7)
    assert all(t.status == "estimated" and abs(t.exponent) < 0.1 for t in tests)
    assert size_at_most(sum(t.distinguishable for t in tests), SIZE_SERIES)     # a 5 % test


@pytest.mark.parametrize("make", [
    lambda t, rng: np.sin(2 * np.pi * t / 7.3) + rng.normal(0, 0.1, t.size),            # sine, 10 % noise
    lambda t, rng: 1 - 0.15 * ((t / 8.0) % 1.0) + rng.normal(0, 0.02, t.size),          # AIMD-like sawtooth
    lambda t, rng: 9.4e9 * (1 + rng.normal(0, 0.01, t.size)),                           # near capacity + noise
], ids=["sine", "sawtooth", "constant"])
def test_periodic_or_constant_signal_plus_noise_has_an_exponent_near_zero(make):
    """The issue's "nearly constant plus noise" 1 s traces and periodic ones with noise, 100 points as
    a trace's sustainment phase, with the report's settings: near zero on every seed."""
    t = np.arange(100, dtype=float)
    tests = lyapunov_tests([make(t, np.random.default_rng(s)) for s in range(10)], n_surrogates=19, seed=3)
    assert all(x.status == "estimated" and abs(x.exponent) < 0.1 for x in tests)
    assert np.median([x.exponent for x in tests]) == pytest.approx(0.0, abs=0.03)


def test_chaos_beats_its_surrogates():
    for s in range(3):
        x = logistic_r(3.9, 200, x0=np.random.default_rng(s).uniform(0.2, 0.8))
        t = lyapunov_test(x, seed=s)
        assert t.distinguishable and t.p_value == pytest.approx(1 / 20)
        assert t.exponent == pytest.approx(0.496, rel=0.15)


def test_short_trace_is_undetermined_and_the_type_never_changes():
    x = logistic_r(3.9, 200)
    need = min_length(3, 1, 5, 10)
    assert need == (3 - 1) * 1 + 1 + (10 - 1) + (2 * 5 + 1)   # one vector, a trajectory, the window
    short, enough = rosenstein(x[:need - 1], min_tsep=5, trajectory_len=10), rosenstein(x[:need], min_tsep=5,
                                                                                         trajectory_len=10)
    assert type(short) is type(enough)
    assert short.status == "undetermined" and short.exponent is None
    assert enough.status == "estimated" and isinstance(enough.exponent, float)
    assert lyapunov_test(x[:need - 1], min_tsep=5).p_value is None
    d = trace_dynamics(np.full(6, 1e9) + np.arange(6))
    assert d.lyapunov is None and d.lyapunov_status == "undetermined"


def test_batched_rosenstein_equals_one_at_a_time(monkeypatch):
    rng = np.random.default_rng(4)
    xs = [rng.normal(size=n).cumsum() for n in (40, 75, 120)] + [logistic_r(3.9, 900), henon_x(150)]
    tseps = [2, 5, 3, 4, 6]
    many = rosenstein_many(xs, min_tsep=tseps, emb_dim=3, trajectory_len=10)
    for x, w, d in zip(xs, tseps, many):
        one = rosenstein(x, min_tsep=w, emb_dim=3, trajectory_len=10)
        assert (one.status, one.fit_range) == (d.status, d.fit_range)
        assert one.exponent == pytest.approx(d.exponent, abs=1e-12)
    monkeypatch.setattr(lyapunov_mod, "_KDTREE_MIN", 10)      # every trace through the KD-tree path
    tree = rosenstein_many(xs, min_tsep=tseps, emb_dim=3, trajectory_len=10)
    for a, b in zip(many, tree):
        assert a.exponent == pytest.approx(b.exponent, abs=1e-9)


def test_batched_map_statistics_equal_the_per_trace_definitions():
    rng = np.random.default_rng(8)
    xs = [rng.normal(size=n) for n in (12, 50, 97)]
    nb = neighbour_exponents(xs, [1, 3, 5])
    for x, w, got in zip(xs, (1, 3, 5), nb):
        assert got == pytest.approx(local_lyapunov(x, pairing="neighbour", min_tsep=w).mean(), abs=1e-12)
    V = np.where(rng.random((4, 9)) < 0.3, np.nan, rng.normal(size=(4, 9)))
    got = _row_quantiles(V, [25, 50, 75])
    for row, g in zip(V, got):
        assert np.allclose(g, np.percentile(row[np.isfinite(row)], [25, 50, 75]))
