"""Profiles (box statistics, profile mean, CI) and concave/convex region classification."""

import numpy as np
import pytest

from tcpprofile.analysis import box_stats, classify_regions, profile_stats, regions_of
from tcpprofile.errors import ValidationError

GRID_MS = np.array([0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0])
GRID = GRID_MS / 1e3     # τ [s], the analyses' unit


@pytest.mark.parametrize("seed", range(5))
def test_box_stats_match_numpy_percentiles_and_tukey_whiskers(seed):
    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(10, 1, 30), [20.0, -5.0]]
    b = box_stats(x)
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    assert (b.q1, b.median, b.q3) == (q1, med, q3)
    fence_lo, fence_hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    assert b.whisker_low == x[x >= fence_lo].min()
    assert b.whisker_high == x[x <= fence_hi].max()
    assert sorted(b.outliers) == sorted(x[(x < fence_lo) | (x > fence_hi)])
    assert {20.0, -5.0} <= set(b.outliers)


def test_profile_per_tau_statistics():
    rng = np.random.default_rng(0)
    tau = np.repeat(GRID, 10)
    y = 1e9 * (10 - GRID_MS.repeat(10) / 50) + rng.normal(0, 1e8, tau.size)
    flagged = np.zeros(tau.size, bool)
    flagged[:3] = True
    p = profile_stats(tau[::-1], y[::-1], flagged=flagged[::-1], key={"variant": "cubic"}, seed=1)
    assert np.array_equal(p.tau_s, GRID)
    for k, t in enumerate(GRID):
        v = y[tau == t]
        assert p.count[k] == 10
        assert p.mean[k] == pytest.approx(v.mean())  # §5.2 profile mean
        assert p.std[k] == pytest.approx(v.std(ddof=1))
        assert p.median[k] == pytest.approx(np.median(v))
        assert p.ci_low[k] < p.mean[k] < p.ci_high[k]
    assert p.n_flagged.tolist() == [3, 0, 0, 0, 0, 0, 0]
    assert p.se[0] == pytest.approx(p.std[0] / np.sqrt(10))
    # §5.2: linear interpolation between measured τ
    assert p.at(6.1e-3) == pytest.approx((p.mean[0] + p.mean[1]) / 2)
    assert np.isnan(p.at(0.5))
    rows = p.rows()     # printed and exported in ms, the store's digits (units.to_ms)
    assert len(rows) == 7 and rows[0]["variant"] == "cubic" and [r["tau_ms"] for r in rows] == GRID_MS.tolist()
    assert profile_stats(tau, y, seed=1).ci_low.tolist() == profile_stats(tau, y, seed=1).ci_low.tolist()


def test_profile_rejects_bad_input():
    with pytest.raises(ValidationError, match="throughput"):
        profile_stats([1.0, 2.0], [1.0])
    with pytest.raises(ValidationError, match="throughput"):
        profile_stats([np.nan], [1.0])


def test_classic_model_profile_is_convex_everywhere():
    """T(τ) = a + b/τ^c (§3.2) is convex on every grid, unequal spacing included."""
    for c in (1.0, 1.5, 2.0):
        r = classify_regions(GRID, 1e8 + 5e9 / GRID**c)
        assert list(r.label[1:-1]) == ["convex"] * 5
        assert r.label[0] == r.label[-1] == "undetermined"


def test_saturating_profile_is_concave_everywhere():
    r = classify_regions(GRID, 9.4e9 * (1 - GRID**2 / 0.4**2))
    assert list(r.label[1:-1]) == ["concave"] * 5


def test_second_difference_is_exact_for_quadratics_on_unequal_grids():
    r = classify_regions(GRID, 3.0 * GRID**2 - GRID + 7)
    assert np.allclose(r.d2[1:-1], 6.0)     # per s²
    rows = r.rows()     # printed and exported per ms² (docs/analysis.md), τ in ms
    assert [x["tau_ms"] for x in rows] == GRID_MS.tolist() and np.allclose([x["d2"] for x in rows[1:-1]], 6e-6)


def test_noise_makes_weak_curvature_undetermined_and_keeps_strong_curvature():
    rng = np.random.default_rng(4)
    tau = np.repeat(GRID, 10)
    strong = profile_stats(tau, 9e9 * (1 - tau**2 / 0.4**2) + rng.normal(0, 1e8, tau.size), seed=0)
    labels = regions_of(strong).label
    assert "convex" not in labels and list(labels[3:6]) == ["concave"] * 3
    flat = profile_stats(tau, 5e9 + rng.normal(0, 5e8, tau.size), seed=0)
    assert sum(lab != "undetermined" for lab in regions_of(flat).label) <= 1
    # one run per τ: no noise estimate, so nothing can be claimed
    single = profile_stats(GRID, 9e9 * (1 - GRID**2 / 0.4**2), seed=0)
    assert set(regions_of(single).label) == {"undetermined"}


def test_regions_need_increasing_tau():
    with pytest.raises(ValidationError, match="tau"):
        classify_regions([1.0, 1.0, 2.0], [1.0, 2.0, 3.0])
