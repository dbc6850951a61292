"""Confidence: bootstrap intervals (coverage, edge cases) and the §5.2 distribution-free bound."""

import math

import numpy as np
import pytest

from tcpprofile.analysis import bootstrap_ci, log_vc_bound, samples_needed, vc_bound
from tcpprofile.errors import ValidationError


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_ci_coverage_of_the_mean(method):
    rng = np.random.default_rng(7)
    hits = 0
    trials = 300
    for _ in range(trials):
        x = rng.exponential(2.0, size=40)  # skewed; true mean 2
        lo, hi = bootstrap_ci(x, level=0.9, n_boot=1000, method=method, seed=rng)
        hits += lo <= 2.0 <= hi
    assert 0.80 <= hits / trials <= 0.97


def test_bootstrap_ci_is_seedable_and_brackets_the_estimate():
    x = np.random.default_rng(1).normal(5, 1, 25)
    a = bootstrap_ci(x, seed=3)
    assert a == bootstrap_ci(x, seed=3)
    assert a[0] < x.mean() < a[1]
    lo, hi = bootstrap_ci(x, np.median, seed=3)
    assert lo <= np.median(x) <= hi


def test_bootstrap_ci_edge_cases():
    assert all(math.isnan(v) for v in bootstrap_ci([1.0]))
    assert bootstrap_ci([3.0, 3.0, 3.0]) == (3.0, 3.0)
    with pytest.raises(ValidationError, match="method"):
        bootstrap_ci([1.0, 2.0], method="normal")
    with pytest.raises(ValidationError, match="level"):
        bootstrap_ci([1.0, 2.0], level=1.5)


def test_bound_matches_the_formula_in_log_space():
    n, eps, C = 1000, 0.3, 1.0
    e = (1 + C / eps) * math.log2(4 * C / eps)
    expect = math.log(32) + e * math.log(n / eps**2) + math.log(n) - eps**2 * n / (2 * C) ** 2
    assert float(log_vc_bound(n, eps, C)) == pytest.approx(expect, rel=1e-12)
    # the printed exponent log2(4ε/C) is negative for ε < C/4
    e_printed = (1 + C / 0.1) * math.log2(0.4)
    assert e_printed < 0
    assert float(log_vc_bound(n, 0.1, C, reading="printed")) == pytest.approx(
        math.log(32) + e_printed * math.log(n / 0.01) + math.log(n) - 0.01 * n / 4, rel=1e-12)


def test_bound_does_not_overflow_and_decreases_for_large_n():
    n = np.geomspace(1e5, 1e9, 50)
    b = log_vc_bound(n, 0.1)
    assert np.all(np.isfinite(b))
    assert np.all(np.diff(b) < 0)
    assert float(vc_bound(1e9, 0.1)) < 1e-100
    assert float(vc_bound(10, 0.1)) == 1.0  # vacuous for few samples


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_samples_needed_is_the_first_n_past_which_the_bound_holds(eps, alpha):
    n = samples_needed(eps, 1.0, alpha)
    assert float(vc_bound(n, eps)) <= alpha
    assert float(vc_bound(n - 1, eps)) > alpha
    assert np.all(vc_bound(n + np.arange(0, 5000, 37), eps) <= alpha)


def test_samples_needed_grows_as_eps_shrinks_and_scales_with_C():
    ns = [samples_needed(e) for e in (0.5, 0.2, 0.1)]
    assert ns[0] < ns[1] < ns[2]
    # only ε/C matters up to the 1/ε² inside the power: same ratio, same order of magnitude
    assert samples_needed(0.2, 2.0) > samples_needed(0.1, 1.0) / 2


def test_bound_validates_inputs():
    with pytest.raises(ValidationError, match="eps"):
        vc_bound(10, -1.0)
    with pytest.raises(ValidationError, match="alpha"):
        samples_needed(0.1, 1.0, 1.0)
    with pytest.raises(ValidationError, match="reading"):
        vc_bound(10, 0.1, reading="literal")


def test_no_bootstrap_of_two_values():
    """A bootstrap of 2 values is their range (covers the mean about half the time): no interval below 3
    (decide.MIN_INTERVAL_RUNS). A bootstrap would return (9.0, 9.6) here."""
    assert all(math.isnan(v) for v in bootstrap_ci([9.0, 9.6], seed=0))
    lo, hi = bootstrap_ci([9.0, 9.6, 9.3], seed=0)
    assert 9.0 <= lo < hi <= 9.6
