"""The report's τ_T fits in a worker process (report.common.background_pool) give exactly what the report
computes in its own process: the same function and seed, so a figure does not depend on where it was fitted."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from tcpprofile.choose import select as sel
from tcpprofile.report import common, profiles

RTTS = [0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0]


def profile(k: int) -> sel.Profile:
    """A concave-then-convex profile at 10 Gbit/s (a logistic fall around 60 + 15k ms), 4 runs per RTT."""
    rng = np.random.default_rng(k)
    mid = 60.0 + 15.0 * k
    samples = [1e10 * (0.2 + 0.75 / (1 + np.exp((t - mid) / 25.0))) * (1 + 0.01 * rng.standard_normal(4))
               for t in RTTS]
    return sel.Profile(sel.Config("cubic", "builtin", k + 1, None), [t / 1e3 for t in RTTS], samples,
                       rate_bps=1e10)


def test_fits_in_a_worker_equal_the_ones_made_here():
    ps = [profile(k) for k in range(3)]
    here = profiles.SigmoidFits()
    away = profiles.SigmoidFits()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        away.start(ps, pool)
        got = [away.transition(p) for p in ps]
    for p, tr in zip(ps, got):
        mine = here.transition(p)
        assert tr.tau_T == mine.tau_T and tr.fit.kind == mine.fit.kind
        assert (tr.ci_low, tr.ci_high) == (mine.ci_low, mine.ci_high)
        np.testing.assert_array_equal(tr.boot_tau_T, mine.boot_tau_T)


def test_no_worker_on_one_core_or_a_small_store(monkeypatch):
    monkeypatch.setattr(common.os, "cpu_count", lambda: 1)
    assert common.background_pool(10_000) is None
    monkeypatch.setattr(common.os, "cpu_count", lambda: 2)
    assert common.background_pool(common.BACKGROUND_MIN_PROFILES - 1) is None
    pool = common.background_pool(common.BACKGROUND_MIN_PROFILES)
    try:
        assert pool is not None and pool._max_workers == 1
    finally:
        pool.shutdown()
