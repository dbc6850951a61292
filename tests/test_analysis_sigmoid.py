"""The paper's constrained dual-sigmoid regression for the transition RTT τ_T."""

import numpy as np
import pytest

from tcpprofile.analysis import fit_dual_sigmoid, flipped_sigmoid, transition_rtt
from tcpprofile.errors import ValidationError

GRID = np.array([0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0])
CAP = 9.4e9


def test_flipped_sigmoid_shape():
    t = np.linspace(0, 100, 1001)
    g = flipped_sigmoid(t, 0.1, 50.0)
    assert g[500] == pytest.approx(0.5)
    d2 = np.diff(g, 2)
    assert np.all(d2[:480] < 0) and np.all(d2[520:] > 0)  # concave before τ0, convex after


def _dual_profile(tau_T, rng):
    a1, t1 = rng.uniform(0.01, 0.05), tau_T + rng.uniform(5, 60)
    a2, t2 = rng.uniform(0.005, 0.03), tau_T - rng.uniform(5, 60)
    return np.where(GRID <= tau_T, flipped_sigmoid(GRID, a1, t1), flipped_sigmoid(GRID, a2, t2))


@pytest.mark.parametrize("seed", range(8))
def test_recovers_known_transition_within_one_grid_step(seed):
    rng = np.random.default_rng(seed)
    tau_T = [30.0, 60.0, 120.0, 250.0][seed % 4]
    truth = _dual_profile(tau_T, rng)
    samples = [CAP * np.clip(v + rng.normal(0, 0.03, 10), 1e-3, None) for v in truth]
    tr = transition_rtt(samples, GRID, capacity=CAP, n_boot=100, seed=seed)
    k = np.searchsorted(GRID, tau_T)  # tau_T lies between GRID[k-1] and GRID[k]
    assert GRID[k - 2] <= tr.fit.tau_T <= GRID[min(k + 1, 6)]
    assert GRID[k - 1] <= tr.fit.tau_T <= GRID[k]  # in practice: in the right grid cell
    assert tr.fit.kind == "dual"
    assert tr.fit.tau2 <= tr.fit.tau_T <= tr.fit.tau1  # the paper's constraint
    assert tr.ci_low <= tr.fit.tau_T <= tr.ci_high
    assert tr.boot_tau_T.size == 100


def test_entirely_convex_profile():
    y = CAP * 0.45 * np.exp(-GRID / 60.0)
    fit = fit_dual_sigmoid(GRID, y, capacity=CAP)
    assert fit.kind == "convex"
    assert fit.tau_T == GRID[0] and fit.tau_T_grid == GRID[0]
    assert fit.tau2 <= GRID[0]
    assert np.isnan(fit.a1)


def test_classic_model_profile_has_no_concave_region_beyond_the_first_rtt():
    """a + b/τ^c drops faster than one sigmoid can follow; the fit then spends its concave piece on
    the first point alone, which is the paper's 'τ_T = 0.4 ms' (Fig. 10, default buffers)."""
    fit = fit_dual_sigmoid(GRID, CAP * (0.02 + 0.4 * (0.4 / GRID) ** 0.5), capacity=CAP)
    assert fit.tau_T_grid == GRID[0]
    assert fit.tau_T < GRID[1]


def test_entirely_concave_profile():
    y = CAP * (0.98 - 0.4 * (GRID / 366.0) ** 2)
    fit = fit_dual_sigmoid(GRID, y, capacity=CAP)
    assert fit.kind == "concave"
    assert fit.tau_T == GRID[-1] and fit.tau1 >= GRID[-1]
    assert np.max(np.abs(fit.predict(GRID) - y)) < 0.03 * CAP


def test_fit_predicts_the_generating_model_without_noise():
    truth = np.where(GRID <= 100, flipped_sigmoid(GRID, 0.03, 140.0), flipped_sigmoid(GRID, 0.02, 80.0))
    fit = fit_dual_sigmoid(GRID, CAP * truth, capacity=CAP)
    assert fit.sse < 1e-6
    assert GRID[4] <= fit.tau_T <= GRID[5]
    assert np.allclose(fit.predict(GRID), CAP * truth, atol=1e-3 * CAP)


def test_scaling_defaults_to_the_profile_maximum():
    y = CAP * np.where(GRID <= 100, flipped_sigmoid(GRID, 0.03, 140.0), flipped_sigmoid(GRID, 0.02, 80.0))
    assert fit_dual_sigmoid(GRID, y).capacity == y.max()


def test_bad_inputs():
    with pytest.raises(ValidationError, match="tau"):
        fit_dual_sigmoid([2.0, 1.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValidationError, match="samples"):
        transition_rtt([np.array([1.0]), np.array([])], [1.0, 2.0])


def test_a_fit_on_seconds_is_the_fit_on_ms_and_prints_it_in_ms():
    """The fit works on τ normalised over the grid, so τ in s (the analyses' unit) gives the ms fit scaled
    (τ_T, τ1, τ2, the interval × 1e-3; a × 1e3), and Transition.row() prints that ms fit: the columns of
    `analyze --what transition` do not change (old: row() printed the caller's unit, tau_T_ms = 0.06)."""
    y = _dual_profile(60.0, np.random.default_rng(2)) * CAP
    samples = [v * np.array([0.99, 1.0, 1.01]) for v in y]
    ms = transition_rtt(samples, GRID, capacity=CAP, n_boot=50, seed=1)
    s = transition_rtt(samples, GRID / 1e3, capacity=CAP, n_boot=50, seed=1)
    assert s.fit.kind == ms.fit.kind == "dual" and s.tau_T.text() == f"{ms.fit.tau_T:.3g} ms"
    assert 1e3 * s.fit.tau_T == pytest.approx(ms.fit.tau_T, rel=1e-9) and s.fit.a1 == pytest.approx(1e3 * ms.fit.a1)
    row = s.row()
    for col, want in (("tau_T_ms", ms.fit.tau_T), ("tau1_ms", ms.fit.tau1), ("tau2_ms", ms.fit.tau2),
                      ("a1_per_ms", ms.fit.a1), ("a2_per_ms", ms.fit.a2), ("tau_T_ci_low_ms", ms.ci_low),
                      ("tau_T_ci_high_ms", ms.ci_high)):
        assert row[col] == pytest.approx(want, rel=1e-6), col
