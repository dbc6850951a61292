"""Single flows' slow-start burst by link rate (trajectory.py burst_by_rate, a variant's BURST_BY_RATE, model parameter
`ss_burst_by_rate`, configuration `burst-by-rate`; docs/models.md "Slow start's burst at 5 Gbit/s"): where a variant
declares the outcomes traced at a rate (CUBIC: a share of single flows leave W1 × factor), the prediction is the
expected throughput of the two outcomes; n > 1, deeper buffers, variants without a table and a variant's own other
outcome (CUBIC's HyStart) unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tcpprofile.models import make_model
from tcpprofile.models.configurations import configuration, model_parameters, variant_parameters
from tcpprofile.models.cubic import CUBIC
from tcpprofile.models.trajectory import SS_BURST_MAX_BUFFER, SS_TRAINS_PAYLOAD_SHARE, Trajectory, burst_by_rate

MSS = 8948         # bytes (MTU 9000)


def _model(rate_bps, on, variant="cubic", **extra):
    params, per_variant = configuration("burst-by-rate")
    params = {**model_parameters(params), "ss_burst_by_rate": on}
    return make_model(variant, capacity_bps=rate_bps * SS_TRAINS_PAYLOAD_SHARE, mss_bytes=MSS, queue_fill=True,
                      receiver_report=True, startup_rtts=1.2, send_backlog=0.0, **params,
                      **{**variant_parameters(variant, per_variant, lossy=False), **extra})


def _rows(model, tau, multiple, n):
    tau, multiple = np.broadcast_arrays(np.atleast_1d(np.asarray(tau, float)), np.asarray(multiple, float))
    C = model.capacity_bps
    r = model._rows(tau.copy(), np.full(tau.shape, float(n)), multiple * C * tau)
    model._prepare(r)
    return r


def _kw(rate, tau, multiple, n=1, size=3e9):
    return dict(n=n, buffer=multiple * rate * SS_TRAINS_PAYLOAD_SHARE * tau / 8, wmax=2**30, size=size)


def test_burst_by_rate_is_trains_by_rate_plus_the_flag():
    params, per_variant = configuration("burst-by-rate")
    base, base_variant = configuration("trains-by-rate")
    assert params == {**base, "ss_burst_by_rate": True} and per_variant == base_variant


def test_cubics_table_is_the_traced_share_and_factor():
    """5 Gbit/s: 15 of 39 traced single flows left 0.400·P against 0.49·P (benchmarks/data/slow-start-events-5gbit.csv);
    10 Gbit/s: none (every traced flow left 0.7²·P)."""
    (r5, p5, f5), (r10, p10, f10) = CUBIC.BURST_BY_RATE
    assert (r5, r10, p10, f10) == (5e9, 10e9, 0.0, 1.0)
    assert p5 == pytest.approx(15 / 39) and f5 == pytest.approx(0.400 / 0.49, abs=1e-3)


def test_cubics_table_is_what_the_committed_traces_give(monkeypatch):
    """benchmarks/slow_start_events.py --share on benchmarks/data/slow-start-events-5gbit.csv: CUBIC at 5 Gbit/s, 15 of 39
    loss-ended single flows below 0.96 × 0.7²·P, on average 0.817 × it — the table's 5 Gbit/s row, to its 3 digits."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import slow_start_events
    got = slow_start_events.share(str(root / "benchmarks" / "data" / "slow-start-events-5gbit.csv"))
    low, runs, factor = got["cubic", 5e9]
    (_, p5, f5), _ = CUBIC.BURST_BY_RATE
    assert (low, runs) == (15, 39) and low / runs == pytest.approx(p5) and factor == pytest.approx(f5, abs=5e-4)


def test_the_share_and_factor_by_rate_single_flows_and_shallow_buffers_only():
    """The table's values at its measured rates, the nearest beyond them, the means at the geometric mean of the two
    rates (linear in log2); (0, 1) for n > 1 and above SS_BURST_MAX_BUFFER × Cτ."""
    (r5, p5, f5), (r10, p10, f10) = CUBIC.BURST_BY_RATE
    for rate, want in ((1e9, (p5, f5)), (r5, (p5, f5)), (r10, (p10, f10)), (40e9, (p10, f10)),
                       (math.sqrt(r5 * r10), ((p5 + p10) / 2, (f5 + f10) / 2))):
        got = burst_by_rate(CUBIC.BURST_BY_RATE, _rows(_model(rate, True), [0.02, 0.1], [0.1, SS_BURST_MAX_BUFFER], 1))
        assert got[0] == pytest.approx([want[0]] * 2, abs=1e-12) and got[1] == pytest.approx([want[1]] * 2, abs=1e-12)
    m = _model(5e9, True)
    for r in (_rows(m, [0.02, 0.1], [0.1, 0.2], 2), _rows(m, [0.02, 0.1], [SS_BURST_MAX_BUFFER + 0.01, 1.0], 1)):
        share, factor = burst_by_rate(CUBIC.BURST_BY_RATE, r)
        assert np.all(share == 0.0) and np.all(factor == 1.0)


def test_the_lower_outcome_leaves_the_factor_of_the_first_outcomes_window():
    """At 0.1–0.3 × BDP the first outcome's burst cuts twice (W1 = P·0.7²); the lower outcome from the same peak and
    cuts leaves W1 × factor; its probability is the share of the rate."""
    m = _model(5e9, True)
    r = _rows(m, [0.015, 0.05, 0.1], [0.1, 0.2, 0.3], 1)
    steady = np.full(r.tau.shape, float(m.capacity_bps))
    w0 = np.full(r.tau.shape, 10.0 * MSS * 8)
    first = Trajectory(m, r, steady, 0.0, w0)
    low = Trajectory(m, r, steady, 0.0, w0, alt=True, peak=first.peak)
    (_, share, factor), _ = CUBIC.BURST_BY_RATE
    assert np.array_equal(first.P, low.P) and np.all(first.cuts == 2) and np.array_equal(first.cuts, low.cuts)
    assert first.W1 == pytest.approx(first.P * 0.7 ** 2, rel=1e-12)
    assert low.W1 == pytest.approx(first.W1 * factor, rel=1e-12)
    assert first.p_alt == pytest.approx(np.full(3, share), abs=1e-12) and low.p_alt is None


def test_the_prediction_is_the_expected_throughput_of_the_two_outcomes(monkeypatch):
    """Θ = (1 − p)·Θ(first) + p·Θ(lower), each as the receiver reports it: share 0 gives the first outcome, 1 the
    lower one (slower), and a share p sits p of the way."""
    tau = np.array([0.02, 0.06, 0.15])
    kw = _kw(5e9, tau, 0.15)
    got = {}
    for p in (0.0, 1.0, 0.25):
        monkeypatch.setattr(CUBIC, "BURST_BY_RATE", ((5e9, p, 0.817), (10e9, 0.0, 1.0)))
        got[p] = _model(5e9, True).predict(tau, **kw)
    assert np.all(got[1.0] < got[0.0])
    assert got[0.25] == pytest.approx(0.75 * got[0.0] + 0.25 * got[1.0], rel=1e-12)
    assert np.array_equal(_model(5e9, False).predict(tau, **kw), got[0.0])


def test_nothing_changes_where_the_table_does_not_apply():
    """Bit for bit without the flag: n = 4, β = 1 × BDP, 10 Gbit/s (share 0), H-TCP and STCP (no table), and CUBIC
    with HyStart (single-flow's own other outcome)."""
    tau = np.array([0.02, 0.08, 0.2])
    for rate, n, multiple, variant, extra in ((5e9, 4, 0.15, "cubic", {}), (5e9, 1, 1.0, "cubic", {}),
                                              (10e9, 1, 0.15, "cubic", {}), (5e9, 1, 0.15, "htcp", {}),
                                              (5e9, 1, 0.15, "scalable", {}), (5e9, 1, 0.15, "cubic", {"hystart": True})):
        kw = _kw(rate, tau, multiple, n)
        on, off = _model(rate, True, variant, **extra), _model(rate, False, variant, **extra)
        assert np.array_equal(on.predict(tau, **kw), off.predict(tau, **kw)), (rate, n, multiple, variant, extra)
