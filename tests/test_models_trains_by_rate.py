"""Single flows' slow-start trains by link rate (trajectory.py SS_TRAINS_BY_RATE, model parameter
`ss_trains_by_rate`, configuration `trains-by-rate`; docs/models.md "Slow start's end at 5 Gbit/s"): the trains' law
P = 2(W0·Cτ + s·β) with (W0, s) as traced at the single flow's link rate — 10 Gbit/s the code's fit, 5 Gbit/s
0.665 and 1.437 — interpolated in log2 of the rate between them, the nearest beyond; n > 1 unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tcpprofile.models import make_model
from tcpprofile.models.configurations import configuration, model_parameters, variant_parameters
from tcpprofile.models.trajectory import (SS_TRAIN_SLOPE, SS_TRAIN_WINDOW, SS_TRAINS_BY_RATE, SS_TRAINS_PAYLOAD_SHARE,
                                          slow_start_peak)

MSS = 8948         # bytes (MTU 9000)


def _model(rate_bps, on, variant="htcp"):
    params, per_variant = configuration("bandwidth-switch")
    return make_model(variant, capacity_bps=rate_bps * SS_TRAINS_PAYLOAD_SHARE, mss_bytes=MSS, queue_fill=True,
                      receiver_report=True, startup_rtts=1.2, send_backlog=0.0, ss_trains_by_rate=on,
                      **model_parameters(params), **variant_parameters(variant, per_variant, lossy=False))


def _peak(model, tau, multiple, n):
    tau, multiple = np.broadcast_arrays(np.atleast_1d(np.asarray(tau, float)), np.asarray(multiple, float))
    C = model.capacity_bps
    r = model._rows(tau.copy(), np.full(tau.shape, float(n)), multiple * C * tau)
    model._prepare(r)
    return slow_start_peak(model, r)[0] / r.bdp, r


def test_trains_by_rate_is_bandwidth_switch_plus_the_flag():
    params, per_variant = configuration("trains-by-rate")
    base, base_variant = configuration("bandwidth-switch")
    assert params == {**base, "ss_trains_by_rate": True} and per_variant == base_variant
    assert SS_TRAINS_BY_RATE[-1] == (10e9, SS_TRAIN_WINDOW, SS_TRAIN_SLOPE)


@pytest.mark.parametrize("variant", ["cubic", "htcp", "scalable"])
def test_the_peak_follows_the_law_of_the_rate(variant):
    """Where the trains decide (β 0.1–0.3 × BDP): a single flow's peak/BDP is 2(W0 + s·y) with the 5 Gbit/s law at
    5 Gbit/s and below (1 Gbit/s: the nearest measured), the 10 Gbit/s law at 10 Gbit/s and above, their mean at the
    geometric mean of the two rates; n = 4 keeps the 10 Gbit/s law at every rate; the flag off is the old peak."""
    y = np.array([0.1, 0.2, 0.3])
    tau = np.array([0.015, 0.06, 0.24])
    w5, s5 = SS_TRAINS_BY_RATE[0][1:]
    for rate, (w0, s) in ((1e9, (w5, s5)), (5e9, (w5, s5)), (10e9, (SS_TRAIN_WINDOW, SS_TRAIN_SLOPE)),
                          (20e9, (SS_TRAIN_WINDOW, SS_TRAIN_SLOPE)),
                          (math.sqrt(50e18), ((w5 + SS_TRAIN_WINDOW) / 2, (s5 + SS_TRAIN_SLOPE) / 2))):
        P, _ = _peak(_model(rate, True, variant), tau, y, 1)
        assert P == pytest.approx(2 * (w0 + s * y), rel=1e-9), rate
        P4, _ = _peak(_model(rate, True, variant), tau, y, 4)
        old4, _ = _peak(_model(rate, False, variant), tau, y, 4)
        assert np.array_equal(P4, old4)
        old1, _ = _peak(_model(rate, False, variant), tau, y, 1)
        assert old1 == pytest.approx(2 * (SS_TRAIN_WINDOW + SS_TRAIN_SLOPE * y), rel=1e-9)


def test_predictions_at_10gbit_are_unchanged_and_at_5gbit_lower_at_03_bdp():
    """At 10 Gbit/s (MTU 9000) a single flow's prediction is bandwidth-switch's bit for bit; at 5 Gbit/s, 0.3 × BDP,
    a 2 GB single H-TCP flow is predicted slower (the peak 12 % lower leaves a smaller window after its cuts)."""
    tau = np.array([0.02, 0.08, 0.2])
    for rate in (10e9,):
        on, off = _model(rate, True), _model(rate, False)
        beta = 0.3 * rate * SS_TRAINS_PAYLOAD_SHARE * tau / 8
        kw = dict(n=1, buffer=beta, wmax=2**30, size=2e9)
        assert np.array_equal(on.predict(tau, **kw), off.predict(tau, **kw))
    on, off = _model(5e9, True), _model(5e9, False)
    beta = 0.3 * 5e9 * SS_TRAINS_PAYLOAD_SHARE * tau / 8
    kw = dict(n=1, buffer=beta, wmax=2**30, size=2e9)
    assert np.all(on.predict(tau, **kw) < off.predict(tau, **kw))
