"""Held-out error without leaks (issue 20, part 5): a held-out prediction reads no measurement of the
held-out τ, and on noisy profiles held-out E is above in-sample E."""

import numpy as np
import pytest

from tcpprofile.models import fit_profiles, make_model

TAU_MS = np.array([11.8, 45.6, 91.6, 183.0, 366.0])
MSS = 8948


def _table(seed=0, noise=0.0):
    """Three datasets on one table: H-TCP -t 8 s with start-up lags measured per row; CUBIC -t 8 s with
    none measured (it takes the lag pooled over the table); STCP with no configured size or duration
    (its size is measured: throughput × duration, column size_bytes)."""
    rng = np.random.default_rng(seed)
    rows = []
    spec = (("htcp", 8.0, None, 3e7, 1.0), ("cubic", 8.0, None, 2e7, np.nan), ("scalable", None, 5e9, 1e7, 1.2))
    for variant, dur, size, beta, lag in spec:
        truth = make_model(variant, buffer_bytes=beta, mss_bytes=MSS, wmax_bytes=5e8, queue_fill=True,
                           receiver_report=dur is not None, startup_rtts=1.0 if np.isnan(lag) else lag)
        for n in (1, 4):
            for t in TAU_MS:
                kw = {"duration": dur} if dur is not None else {"size": size}
                th = float(truth.predict(t / 1e3, n=n, **kw)) * (1 + noise * rng.standard_normal())
                rows.append(dict(variant=variant, streams=n, rtt_s=t / 1e3, rate_bps=10e9, buffer_bytes=beta,
                                 transfer_bytes=None, duration_target_s=dur, mtu=9000,
                                 # measured: throughput × duration (F ± rounding), or Θ·T/8 for -t runs
                                 size_bytes=size * (1 + 1e-3 * rng.standard_normal()) if size else th,
                                 throughput_bps=th, startup_rtts=lag + 0.05 * rng.standard_normal(),
                                 std_bps=0.01 * th, runs=2))
    return {k: np.array([r[k] for r in rows], dtype=object if k in ("variant", "transfer_bytes",
                                                                    "duration_target_s") else float)
            for k in rows[0]}


def _heldout(table):
    out = np.full(len(table["variant"]), np.nan)
    for f in fit_profiles(table):
        out[f.rows] = f.heldout_bps
    return out


@pytest.mark.parametrize("held", [0, 1, 3, 4])
def test_heldout_prediction_reads_no_measurement_of_the_heldout_rtt(held):
    """Change every measurement in the rows at the held-out τ (throughput, lag, measured size, spread,
    count), an end one (the model then extrapolates) or one inside: the held-out predictions there stay the
    same to 1e-9; elsewhere they move (those folds fit on the changed rows)."""
    base = _table()
    at = base["rtt_s"] == TAU_MS[held] / 1e3
    changed = {k: v.copy() for k, v in base.items()}
    changed["throughput_bps"][at] *= 0.6
    changed["startup_rtts"][at] = 9.0               # H-TCP and STCP rows; CUBIC's stay unmeasured
    changed["startup_rtts"][at & (base["variant"] == "cubic")] = np.nan
    changed["size_bytes"][at] *= 3.0
    changed["std_bps"][at] *= 10
    changed["runs"][at] = 7
    before, after = _heldout(base), _heldout(changed)
    np.testing.assert_allclose(after[at], before[at], rtol=1e-9)
    assert np.max(np.abs(after[~at] / before[~at] - 1)) > 1e-3


def test_the_pooled_lag_is_an_input_of_the_folds():
    """The pooled lag is a real input of a dataset without its own: a larger lag elsewhere on the table
    lowers the CUBIC dataset's held-out predictions."""
    base = _table()
    later = {k: v.copy() for k, v in base.items()}
    later["startup_rtts"][base["variant"] == "htcp"] += 3.0
    cubic = base["variant"] == "cubic"
    assert np.all(_heldout(later)[cubic] <= _heldout(base)[cubic] * (1 + 1e-9))
    assert np.any(_heldout(later)[cubic] < _heldout(base)[cubic] * 0.999)


def test_noisy_profiles_heldout_error_above_in_sample():
    """Generated with 1–3 % noise (six seeds), refitted: mean held-out E exceeds mean in-sample E by more
    than 10 % of it (a fold that also fitted on the held-out τ would give equal E)."""
    ins, held = [], []
    for seed, noise in zip(range(6), (0.01, 0.02, 0.03, 0.01, 0.02, 0.03)):
        for f in fit_profiles(_table(seed=seed + 10, noise=noise)):
            ins += list(f.errors.values())
            held += list(f.heldout.values())
    assert np.all(np.isfinite(held))
    assert np.mean(held) > 1.1 * np.mean(ins)


def test_array_leave_one_rtt_out_reads_nothing_of_the_heldout_rtt_and_is_above_in_sample():
    """The array form (fit.leave_one_rtt_out): the held-out τ's throughput and lag changed (the smallest, a
    middle one, the largest), its prediction stays the same to 1e-9; over six noisy (1–3 %) profiles
    held-out E exceeds in-sample E by > 10 %."""
    from tcpprofile.models.fit import leave_one_rtt_out

    tau = np.repeat(TAU_MS / 1e3, 2)
    n = np.tile([1.0, 4.0], TAU_MS.size)
    truth = make_model("cubic", buffer_bytes=2e7, wmax_bytes=5e8, mss_bytes=MSS, queue_fill=True)
    P = truth.predict(tau, n=n, size=5e9)
    ins, held = [], []
    for seed, noise in enumerate((0.01, 0.02, 0.03, 0.01, 0.02, 0.03)):
        M = P * (1 + noise * np.random.default_rng(seed).standard_normal(P.size))
        lag = np.random.default_rng(seed).uniform(0.5, 1.5, P.size)
        model = make_model("cubic", mss_bytes=MSS, queue_fill=True).fit(tau, M, n=n, size=5e9)
        H = leave_one_rtt_out(model, tau, M, n, startup=lag, size=np.full(P.size, 5e9))
        ins.append(np.mean(np.abs(model.predict(tau, n=n, size=5e9) / M - 1)))
        held.append(np.mean(np.abs(H / M - 1)))
        at = tau == TAU_MS[(0, 2, 4)[seed % 3]] / 1e3
        assert at.sum() == 2
        M2, lag2 = M.copy(), lag.copy()
        M2[at] *= 0.5
        lag2[at] = 9.0
        H2 = leave_one_rtt_out(model, tau, M2, n, startup=lag2, size=np.full(P.size, 5e9))
        np.testing.assert_allclose(H2[at], H[at], rtol=1e-9)
        assert np.max(np.abs(H2[~at] / H[~at] - 1)) > 1e-3
    assert np.mean(held) > 1.1 * np.mean(ins)
