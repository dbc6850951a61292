"""Size mode (iperf3 -n) as iperf3's receiver reports it (receiver_report, send_backlog): analytical
values, limits and a regression pin (docs/models.md, "Fixed-size transfers")."""

import math

import numpy as np
import pytest

from tcpprofile.models import make_model

C = 10e9
VARIANTS = ["stcp", "cubic", "htcp", "reno"]
TAU = np.array([0.0118, 0.0456, 0.0916, 0.183, 0.366])
M_BYTES = 8948  # MTU 9000


def _pair(variant, **kw):
    base = dict(capacity_bps=C, buffer_bytes=None, wmax_bytes=math.inf, mss_bytes=M_BYTES, queue_fill=True) | kw
    return make_model(variant, **base), make_model(variant, receiver_report=True, **base)


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_backlog_adds_one_rtt_and_the_queue_to_the_time_to_send(variant):
    """send_backlog = 0: the receiver counts all F over t(F) + τ + q̄, t(F) = F/S the sender's time; with
    a window limit below Cτ (Case 1) there is no queue: exactly t + τ."""
    for wmax, beta in ((math.inf, 0.2), (1e6, 0.2)):  # 1 MB per flow: Case 1 from 11.8 ms on
        sender, receiver = _pair(variant, wmax_bytes=wmax, send_backlog=0.0)
        buf = beta * C * TAU / 8
        for F in (2e9, 1e10):
            t = F * 8 / sender.predict(TAU, n=4, size=F, buffer=buf)
            span = F * 8 / receiver.predict(TAU, n=4, size=F, buffer=buf)
            assert np.all(span >= t + TAU - 1e-9) and np.all(span <= t + TAU + buf * 8 / C + 1e-9)
            if wmax == 1e6:
                np.testing.assert_allclose(span, t + TAU, rtol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_unsent_backlog_is_not_counted(variant):
    """U = send_backlog·(Cτ + β) stays in the sender's socket buffer: the receiver reports F − U over
    t(F − U) + τ + q̄, i.e. the backlog-free report of a transfer of F − U bytes."""
    buf = 0.2 * C * TAU / 8
    U = 2.5 * (C * TAU / 8 + buf)  # [bytes]
    _, with_u = _pair(variant, send_backlog=2.5)
    _, without = _pair(variant, send_backlog=0.0)
    np.testing.assert_allclose(with_u.predict(TAU, n=1, size=1e10, buffer=buf),
                               without.predict(TAU, n=1, size=1e10 - U, buffer=buf), rtol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_limits(variant):
    sender, receiver = _pair(variant)
    buf = 0.2 * C * TAU / 8
    # F → ∞: the sustained rate, the same for both
    np.testing.assert_allclose(receiver.predict(TAU, size=math.inf, buffer=buf),
                               sender.predict(TAU, size=math.inf, buffer=buf), rtol=1e-12)
    big = receiver.predict(TAU, size=1e14, buffer=buf) / sender.predict(TAU, size=1e14, buffer=buf)
    assert np.all(big < 1) and np.all(big > 1 - 1e-3)
    # duration mode does not use the backlog
    _, other = _pair(variant, send_backlog=0.0)
    np.testing.assert_array_equal(receiver.predict(TAU, duration=8.0, buffer=buf),
                                  other.predict(TAU, duration=8.0, buffer=buf))
    # a transfer smaller than the backlog keeps its first window: a positive rate
    assert np.all(receiver.predict(TAU, size=1e6, buffer=buf) > 0)


def test_regression_pin_cubic_10gb_183ms():
    """CUBIC, n = 1, 10 GB, β = 0.2 × BDP at 183 ms, d = 1.2: what the dev store's run measured is 7.53 Gbit/s."""
    m = make_model("cubic", capacity_bps=9.9e9, mss_bytes=M_BYTES, wmax_bytes=1.07e9, queue_fill=True,
                   startup_rtts=1.2, receiver_report=True, send_backlog=2.7)
    P = float(m.predict(0.183, size=1e10, buffer=0.2 * 9.9e9 * 0.183 / 8))
    assert P == pytest.approx(PIN_CUBIC_183, rel=1e-9)


PIN_CUBIC_183 = 7577680411.984772  # bit/s (the sender's rate, receiver_report=False: 7.85e9)
