"""The fast loss path (closed-form W_L, the transient as a geometric series, Illinois on unconverged rows)
against the exact path (exact_loss = True: every loss epoch solved numerically; the transient epoch by
epoch): the error docs/models.md and benchmarks/bench_models.py state."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tcpprofile.models import make_model
from tcpprofile.models.framework import illinois_increasing
from tcpprofile.models.transient import EPOCHS, Transient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_models import configs  # noqa: E402

VARIANTS = ["stcp", "reno", "cubic", "htcp"]
M_BYTES = 8948
MODES = [dict(size=math.inf, loss=1 / 500), dict(duration=8.0, loss=1 / 500), dict(size=2e10, loss=1e-4),
         dict(duration=15.0, loss=1e-4), dict(duration=3.0, loss=1e-2), dict(size=math.inf, loss=1e-5)]


def _pair(variant):
    fast = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=M_BYTES)
    exact = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=M_BYTES)
    exact.exact_loss = True  # same W_m (H-TCP: both tabulated), every loss epoch solved numerically
    return fast, exact


@pytest.mark.parametrize("variant", VARIANTS)
def test_fast_loss_path_matches_the_exact_path(variant):
    """3,000 random configurations × 6 loss modes (1/500, 10⁻⁴, 10⁻², 10⁻⁵; size and duration):
    throughput and W_L within 10⁻⁹ of the exact path (measured: ≤ 3·10⁻¹¹), the same rows loss-limited."""
    fast, exact = _pair(variant)
    tau, n, beta, wmax, _ = configs(3000, seed=5)
    for kw in MODES:
        a = fast.components(tau, n=n, buffer=beta, wmax=wmax, **kw)
        b = exact.components(tau, n=n, buffer=beta, wmax=wmax, **kw)
        np.testing.assert_array_equal(a["loss_limited"], b["loss_limited"])
        assert 0.05 < a["loss_limited"].mean(), kw  # the loss binds on a share of the rows (7-100 %)
        np.testing.assert_allclose(a["throughput"], b["throughput"], rtol=1e-9)
        lim = a["loss_limited"]
        np.testing.assert_allclose(a["W_L"][lim], b["W_L"][lim], rtol=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_closed_form_w_l_solves_the_epoch_equation(variant):
    """Where the variant's closed form gives W_L, its epoch carries exactly N·M (N_ep(W_L) = N·M) and
    T_ep is the epoch's duration, in every regime (below Cτ, Phase I + II, Phase II only); where it
    gives nan, W_L > Cτ (the hook's contract: the numeric solve starts at Cτ)."""
    m = make_model(variant, buffer_bytes=1e6, wmax_bytes=math.inf, mss_bytes=M_BYTES)
    tau = np.geomspace(1e-4, 0.5, 40)[:, None]
    segs = np.geomspace(10, 1e7, 30)[None, :]
    tau, segs = (np.broadcast_to(x, (40, 30)).ravel() for x in (tau, segs))
    r = m._rows(tau, np.ones(tau.size), np.full(tau.size, 4e6 * 8))
    target = segs * r.M
    with np.errstate(all="raise"):
        W, T = m._wl_closed(target, r)
    ok = np.isfinite(W)
    T_ep, N_ep = m._epoch(W[ok], r.take(ok))
    np.testing.assert_allclose(N_ep, target[ok], rtol=1e-10)
    np.testing.assert_allclose(T[ok], T_ep, rtol=1e-10)
    assert (W[ok] < r.bdp[ok]).any() and (variant == "htcp" or (W[ok] > r.bdp[ok]).any())  # H-TCP: below Cτ
    assert np.all(m._epoch(r.bdp[~ok], r.take(~ok))[1] < target[~ok])
    if variant in ("stcp", "cubic"):
        assert ok.all()


def _transient_epochs(W0, keep, W_L, seg, n, tau, C, steady):
    """Reference: the epochs one by one (W_k = W0·keep^k, rate n·min(W_k/τ, C) while W_k > W_L and the rate
    beats the steady one), the data-vs-time knots by cumulative sums."""
    W = W0[:, None] * keep[:, None] ** np.arange(1, EPOCHS + 1)
    rate = n[:, None] * np.minimum(W / tau[:, None], C[:, None])
    active = (W > W_L[:, None]) & (rate > steady[:, None])
    zero = np.zeros((W0.size, 1))
    Tk = np.concatenate([zero, np.cumsum(np.where(active, seg[:, None] / rate, 0.0), axis=1)], axis=1)
    Dk = np.concatenate([zero, np.cumsum(np.where(active, seg[:, None], 0.0), axis=1)], axis=1)
    R = np.concatenate([np.where(active, rate, steady[:, None]), steady[:, None]], axis=1)
    return Tk, Dk, R


def _along(kx, ky, slope, x):
    rows = np.arange(x.size)
    j = np.sum(kx <= x[:, None], axis=1) - 1
    return ky[rows, j] + (x - kx[rows, j]) * slope[rows, j]


def test_transient_closed_form_matches_the_epochs():
    rng = np.random.default_rng(11)
    k = 5000
    tau = np.exp(rng.uniform(math.log(1e-3), math.log(0.4), k))
    n = rng.integers(1, 11, k).astype(float)
    C = 10e9 / n
    keep = rng.choice([0.5, 0.7, 0.8, 0.875], k)
    W0 = np.exp(rng.uniform(math.log(1e6), math.log(1e10), k))
    W_L = W0 * np.exp(-rng.uniform(0, 12, k))
    seg = n * rng.choice([500, 1e4], k) * M_BYTES * 8
    steady = np.minimum(n * W_L / tau * rng.uniform(0.3, 1.2, k), n * C)
    tr = Transient(W0, keep, W_L, seg, n, tau, C, steady)
    Tk, Dk, R = _transient_epochs(W0, keep, W_L, seg, n, tau, C, steady)
    assert (tr.K == EPOCHS).any() and (tr.K == 0).any() and ((tr.K > 0) & (tr.K < EPOCHS)).any()
    assert (tr.kc > 0).any()  # some epochs at the capacity cap
    D = Dk[:, -1] * rng.uniform(0, 1.5, k) + rng.uniform(0, 1, k) * seg
    np.testing.assert_allclose(tr.time(D), _along(Dk, Tk, 1.0 / R, D), rtol=1e-12)
    t = Tk[:, -1] * rng.uniform(0, 1.5, k) + rng.uniform(0, 1e-3, k)
    np.testing.assert_allclose(tr.data(t), _along(Tk, Dk, R, t), rtol=1e-12)
    np.testing.assert_allclose(tr.data(tr.time(D)), D, rtol=1e-12)  # the two directions invert each other


def test_illinois_stops_each_row_on_its_own():
    """Row compaction: a row whose bracket is already tight is not evaluated again while the others run;
    every root is within rtol, including a root at the bracket's end (g(lo) = 0)."""
    roots = np.array([1.0, 2.0, 3.0, 5.0])
    evals = np.zeros(4, int)

    def g(x, idx):
        np.add.at(evals, idx, 1)
        return (x - roots[idx]) * (1 + (x - roots[idx]) ** 2)  # increasing, flat-ish near the root

    lo = np.array([0.0, 2.0, 2.999999999999999, -100.0])
    hi = np.array([10.0, 4.0, 3.000000000000001, 5.0])
    x = illinois_increasing(g, lo, hi, rtol=1e-13)
    np.testing.assert_allclose(x, roots, rtol=1e-12)
    assert evals[2] <= 3 < evals[3]  # the tight row stopped at once, the wide one kept going
