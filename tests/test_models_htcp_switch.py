"""H-TCP's bandwidth switch after slow start (models/htcp.py `switch_cuts`, configuration `bandwidth-switch`;
docs/models.md "H-TCP's bandwidth switch after slow start"): a single flow's first two congestion-avoidance events
keep 0.5, each followed by an epoch from 0.5·W_o with α at β = 0.5; n flows unchanged; every other configuration
unchanged (tests/test_models_single_flow.py pins their digests)."""

from __future__ import annotations

import numpy as np
import pytest

from tcpprofile.models import make_model
from tcpprofile.models.configurations import configuration, model_parameters, variant_parameters
from tcpprofile.models.trajectory import SS_TRAIN_SLOPE, SS_TRAIN_WINDOW, Trajectory

C = 4.95e9         # bit/s
MSS = 8948         # bytes (MTU 9000)
TRAINS = dict(queue_fill=True, trajectory=True, ss_train_window=SS_TRAIN_WINDOW, ss_train_slope=SS_TRAIN_SLOPE,
              rtt_scaling=True, flows_phase2=True, burst_by_regime=True, second_cut_rtt_ratio=True)


def _model(**kw):
    return make_model("htcp", capacity_bps=C, mss_bytes=MSS, startup_rtts=1.2, **TRAINS, **kw)


def _trajectory(model, tau, multiple, n=1.0, alt=False):
    tau, multiple = np.broadcast_arrays(np.atleast_1d(np.asarray(tau, float)), np.asarray(multiple, float))
    tau = tau.copy()
    r = model._rows(tau, np.full(tau.shape, float(n)), multiple * C * tau)
    model._prepare(r)
    return Trajectory(model, r, np.full(tau.shape, C), 1.2 * tau, np.full(tau.shape, 10 * MSS * 8.0), alt=alt), r


def test_bandwidth_switch_is_ss_trains_plus_the_switch_cuts():
    params, per_variant = configuration("bandwidth-switch")
    base, base_variant = configuration("ss-trains")
    assert params == base
    assert per_variant["htcp"] == {**base_variant["htcp"], "switch_cuts": True}
    assert {k: v for k, v in per_variant.items() if k != "htcp"} == {k: v for k, v in base_variant.items()
                                                                      if k != "htcp"}


def test_the_switch_events_follow_htcp_beta_update():
    """Two events at 0.5 after slow start's events left maxB = 0 (the switch fires, then modeswitch = 0 keeps
    0.5 once more); one after a sample between slow start's events (that event fired the switch already)."""
    m = _model(switch_cuts=True)
    assert (m._switch_events(False), m._switch_events(True)) == (2, 1)


@pytest.mark.parametrize("tau,multiple", [(0.03, 0.15), (0.13, 0.15), (0.07, 0.45), (0.1, 0.25)])
def test_a_single_flows_first_epochs_are_two_half_cuts_from_the_overflow(tau, multiple):
    """The pieces after the first epoch: two epochs, each from 0.5·W_o (W_o = Cτ + β) with s = 1 (α = factor,
    β = 0.5), growing to W_o; each epoch's Phase I plus its time at C is the time for 0.5·W_o to grow to W_o
    by H-TCP's law, computed here from the model's own A(t) (the epoch ends where w = W_o)."""
    off, r = _trajectory(_model(), tau, multiple)
    on, _ = _trajectory(_model(switch_cuts=True), tau, multiple)
    assert len(on.pieces) == len(off.pieces) + 4
    assert [p[0] for p in on.pieces[len(off.pieces):]] == ["grow", "lin", "grow", "lin"]
    Wo = r.bdp + r.beta
    for grow in (on.pieces[-4], on.pieces[-2]):
        assert grow[3] == pytest.approx(0.5 * Wo, rel=1e-12) and np.all(grow[4]["s"] == 1.0)
    m = _model(switch_cuts=True)
    sc = m._sc(r)
    t_end = on.pieces[-4][1] + on.pieces[-3][1]          # Phase I then at C
    w_end_phase1 = 0.5 * Wo + r.n * r.M / r.tau * m._A(on.pieces[-4][1], np.ones(1), sc)
    assert w_end_phase1 == pytest.approx(r.bdp, rel=1e-9)   # Phase I ends at Cτ
    # above Cτ: W² = (Cτ)² + 2·n·M·C·(A(t) − A(t_I)) reaches W_o at the epoch's end
    A = m._A(t_end, np.ones(1), sc) - m._A(on.pieces[-4][1], np.ones(1), sc)
    assert np.sqrt(r.bdp ** 2 + 2 * r.n * r.M * r.C * A) == pytest.approx(Wo, rel=1e-9)


def test_n_flows_and_a_deep_buffer_are_unchanged_and_a_shallow_single_flow_is_slower():
    """n > 1: the added epochs are empty (events hit k of n flows: not modelled), predictions bit-identical. A
    single flow at 0.15 × BDP, 10 GB at 5 Gbit/s, 30–130 ms (b = 0.8, the switch's 0.5 twice): lower, by
    more than 5 %; at 2 × BDP (b = 0.5 already) within 1 %."""
    params, per_variant = configuration("ss-trains")
    base = dict(capacity_bps=C, mss_bytes=MSS, queue_fill=True, receiver_report=True, startup_rtts=1.2,
                send_backlog=0.0, **model_parameters(params), **variant_parameters("htcp", per_variant, lossy=False))
    off, on = make_model("htcp", **base), make_model("htcp", **base, switch_cuts=True)
    tau = np.array([0.03, 0.07, 0.13])
    for n in (3.0, 8.0):
        for k in (0.15, 0.45, 2.0):
            a = off.predict(tau, n=np.full(3, n), buffer=k * C * tau / 8, wmax=2 ** 30, size=1e10)
            b = on.predict(tau, n=np.full(3, n), buffer=k * C * tau / 8, wmax=2 ** 30, size=1e10)
            assert np.array_equal(a, b)
    shallow = [m.predict(tau, n=np.ones(3), buffer=0.15 * C * tau / 8, wmax=2 ** 30, size=1e10) for m in (off, on)]
    assert np.all(shallow[1] < 0.95 * shallow[0])
    deep = [m.predict(tau, n=np.ones(3), buffer=2.0 * C * tau / 8, wmax=2 ** 30, size=1e10) for m in (off, on)]
    assert np.all(np.abs(deep[1] / deep[0] - 1) < 0.01)
