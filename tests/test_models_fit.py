"""Fitting β and W_max to profiles, the error E, bootstrap intervals and the store adapter."""

import duckdb
import numpy as np
import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.store.db import Store
from tcpprofile.models import (bootstrap_predict, fit_buffer_wmax, fit_profiles, make_model, mean_relative_error,
                               fit_table_from_store)

TAU = np.array([0.0118, 0.0226, 0.0456, 0.0916, 0.183, 0.366])  # the papers' RTTs [s]
N = np.arange(1, 6)[:, None]


def fit_paper(table, **kw):
    """fit_profiles with the model that generated these profiles: the paper's Eq. (8) overflow and the
    sender's rate (fit_profiles' defaults follow measured runs instead: queue overflow, iperf3's receiver)."""
    return fit_profiles(table, queue_fill=False, receiver_report=False, **kw)


def test_mean_relative_error_by_hand():
    # E = 100/|RTTs| Σ |M − P|/M: (10 % + 0 % + 50 %)/3 = 20 %
    assert mean_relative_error([10, 4, 2], [9, 4, 3]) == pytest.approx(20.0)


@pytest.mark.parametrize("variant", ["stcp", "cubic", "htcp", "reno"])
def test_fit_recovers_parameters_from_exact_profile(variant):
    true = make_model(variant, buffer_bytes=2e7, wmax_bytes=3e7, size_bytes=20e9)
    P = true.predict(TAU, n=N)
    fitted = make_model(variant, size_bytes=20e9).fit(TAU, P, n=N)
    assert fitted.buffer_bytes_ == pytest.approx(2e7, rel=1e-3)
    assert fitted.wmax_bytes_ == pytest.approx(3e7, rel=1e-3)
    assert np.max(np.abs(fitted.residuals_)) < 1e-4


@pytest.mark.parametrize("variant", ["stcp", "cubic", "reno"])
@pytest.mark.parametrize("beta,wmax", [(5e6, 5e7), (2e7, 3e7)])
def test_fit_recovers_parameters_from_noisy_profile(variant, beta, wmax):
    true = make_model(variant, buffer_bytes=beta, wmax_bytes=wmax, size_bytes=20e9)
    P = true.predict(TAU, n=N)
    M = P * (1 + 0.01 * np.random.default_rng(3).standard_normal(P.shape))
    fitted = make_model(variant, size_bytes=20e9).fit(TAU, M, n=N)
    assert fitted.wmax_bytes_ == pytest.approx(wmax, rel=0.02)
    assert fitted.buffer_bytes_ == pytest.approx(beta, rel=0.25)
    assert mean_relative_error(P, fitted.predict(TAU, n=N)) < 0.5  # % against the noise-free truth


def test_fit_bounds_validated():
    with pytest.raises(ValidationError) as err:
        fit_buffer_wmax(make_model("stcp"), TAU, np.full(TAU.shape, 1e9), buffer_bounds=(10, 1))
    assert err.value.field == "buffer_bounds"


def test_bootstrap_interval_covers_truth_at_unmeasured_rtt():
    """90 % residual-bootstrap intervals: coverage over 10 noisy data sets (fixed seeds) near nominal."""
    true = make_model("cubic", buffer_bytes=5e6, wmax_bytes=5e7, size_bytes=20e9)
    P = true.predict(TAU, n=N)
    tau_new = np.array([0.06, 0.25])
    truth = true.predict(tau_new, n=2)
    covered = np.zeros(2, int)
    for seed in range(10):
        M = P * (1 + 0.02 * np.random.default_rng(100 + seed).standard_normal(P.shape))
        pred, lo, hi = bootstrap_predict(make_model("cubic", size_bytes=20e9), TAU, M, tau_new, n=N, n_new=2,
                                         repeats=20, seed=seed)
        assert np.all(lo <= pred * (1 + 1e-9)) and np.all(pred <= hi * (1 + 1e-9))
        assert np.all(hi - lo < 0.1 * truth)  # informative, not the whole range
        covered += (lo <= truth) & (truth <= hi)
    assert np.all(covered >= 7)


def _table(rows):
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def test_fit_profiles_groups_datasets_and_reports_E_per_stream_count():
    rows = []
    for variant, beta, wmax in (("cubic", 5e6, 5e7), ("scalable", 2e7, 3e7)):
        m = make_model(variant, buffer_bytes=beta, wmax_bytes=wmax, size_bytes=20e9)
        for n in (1, 2, 4):
            for tau, th in zip(TAU, m.predict(TAU, n=n)):
                rows.append(dict(variant=variant, streams=n, rtt_s=tau, rate_bps=10e9, buffer_bytes=beta,
                                 transfer_bytes=20e9, throughput_bps=th))
    rows.append(dict(variant="bbr", streams=1, rtt_s=0.01, rate_bps=10e9, buffer_bytes=1e6,
                     transfer_bytes=20e9, throughput_bps=9e9))  # no model: skipped
    fits = fit_paper(rows)  # list of dicts works as well as a dict of arrays
    assert [f.key["variant"] for f in fits] == ["cubic", "scalable"]
    for f in fits:
        assert sorted(f.errors) == [1, 2, 4] and f.points == 18
        assert max(f.errors.values()) < 0.01
        d = f.as_dict()
        assert d["E_mean_percent"] < 0.01 and d["buffer_bytes_fit"] == f.model.buffer_bytes_
    assert fit_paper(_table(rows))[1].model.wmax_bytes_ == pytest.approx(3e7, rel=1e-3)


def test_fit_profiles_names_missing_columns():
    with pytest.raises(ValidationError) as err:
        fit_paper({"variant": ["cubic"], "streams": [1]})
    assert err.value.field == "profiles"


def _store_with_runs(con):
    con.execute("""CREATE TABLE runs (variant VARCHAR, streams INTEGER, socket_buffer_bytes BIGINT,
        transfer_bytes BIGINT, duration_s DOUBLE, rtt_ms DOUBLE, rate_bps DOUBLE, buffer_bytes BIGINT,
        throughput_bps DOUBLE, status VARCHAR, repetition INTEGER)""")
    m = make_model("stcp", buffer_bytes=5e6, wmax_bytes=5e7, size_bytes=20e9)
    rows = []
    for n in (1, 3):
        for tau, th in zip(TAU, m.predict(TAU, n=n)):
            for rep, f in enumerate((0.99, 1.01)):  # two repetitions around the model value
                rows.append(("scalable", n, 2**30, 20_000_000_000, 20e9 * 8 / th, tau * 1e3, 10e9, 5_000_000,
                             th * f, "ok", rep))
            rows.append(("scalable", n, 2**30, 20_000_000_000, 1.0, tau * 1e3, 10e9, 5_000_000, 1.0, "failed", 2))
    rows.append(("cubic", 1, 2**30, None, 10.0, 50.0, 10e9, 5_000_000, 4e9, "ok", 0))  # time-limited run
    con.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    return m


def test_fit_table_from_store_on_in_memory_duckdb():
    con = duckdb.connect(":memory:")
    m = _store_with_runs(con)
    prof = fit_table_from_store(con)
    stcp = prof["variant"] == "scalable"
    assert stcp.sum() == 12 and set(prof["runs"][stcp]) == {2}  # failed runs excluded, reps averaged
    expected = m.predict(prof["rtt_s"][stcp], n=prof["streams"][stcp])
    np.testing.assert_allclose(prof["throughput_bps"][stcp], expected, rtol=1e-9)
    cubic = ~stcp
    assert prof["transfer_bytes"][cubic][0] is None
    assert prof["size_bytes"][cubic][0] == pytest.approx(4e9 * 10 / 8)  # throughput × duration
    fits = fit_paper(prof)
    scal = [f for f in fits if f.key["variant"] == "scalable"][0]
    assert scal.model.wmax_bytes_ == pytest.approx(5e7, rel=0.01)
    assert max(scal.errors.values()) < 0.1


def test_profiles_from_the_store_schema_joins_links(tmp_path):
    m = make_model("cubic", buffer_bytes=5e6, wmax_bytes=5e7, size_bytes=20e9)
    with Store.open(str(tmp_path / "s.duckdb")) as store:
        store.insert_campaign({"campaign_id": "c1", "name": "models-test", "mode": "emulated"})
        for i, tau in enumerate(TAU):
            store.insert_link({"link_id": f"l{i}", "campaign_id": "c1", "kind": "emulated", "rate_bps": 10e9,
                               "rtt_ms": tau * 1e3, "buffer_bytes": 5_000_000})
            for n in (1, 2):
                th = float(m.predict(tau, n=n))
                store.put_run({"run_id": f"r{i}-{n}", "campaign_id": "c1", "link_id": f"l{i}", "variant": "cubic",
                               "streams": n, "transfer_bytes": 20_000_000_000, "status": "ok",
                               "throughput_bps": th, "duration_s": 1.6e11 / th, "repetition": 0})
        prof = fit_table_from_store(store.con)
    assert len(prof["variant"]) == 12 and set(prof["rate_bps"]) == {10e9}
    np.testing.assert_allclose(prof["throughput_bps"], m.predict(prof["rtt_s"], n=prof["streams"]),
                               rtol=1e-12)
    (fit,) = fit_paper(prof)
    assert fit.model.wmax_bytes_ == pytest.approx(5e7, rel=1e-3) and max(fit.errors.values()) < 0.01


@pytest.mark.parametrize("share,expected_backlog", [(1.0, 0.0), (0.0, None), (0.5, 0.5)])
def test_runs_timed_by_their_delivery_leave_nothing_unsent(share, expected_backlog):
    """Size-mode runs timed by the receiver's reading of F (iperf.parse, runs.size_delivered_s) are fitted with
    nothing left in the sender's buffers (send_backlog 0); runs before that keep SEND_BACKLOG; a mix, by share.
    Truth: CUBIC with the receiver's interval and no backlog; with share 1 the fit recovers it exactly."""
    from tcpprofile.models.framework import SEND_BACKLOG
    true = make_model("cubic", buffer_bytes=2e7, wmax_bytes=3e9, size_bytes=10e9, queue_fill=True,
                      receiver_report=True, send_backlog=0.0)
    rows = [dict(variant="cubic", streams=1, rtt_s=tau, rate_bps=10e9, buffer_bytes=2e7, transfer_bytes=10e9,
                 throughput_bps=th, delivered_share=share) for tau, th in zip(TAU, true.predict(TAU, n=1))]
    fit = fit_profiles(rows, heldout=False)[0]
    backlog = SEND_BACKLOG if expected_backlog is None else expected_backlog * SEND_BACKLOG
    assert fit.model.send_backlog == pytest.approx(backlog)
    if share == 1.0:
        assert fit.errors[1] < 0.5                                       # % : the truth's own mode
