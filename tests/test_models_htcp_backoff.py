"""H-TCP's backoff in jiffies (bpf/htcp.bpf.c:169, tcp_htcp.c htcp_beta_update): b = RTT_min/RTT_max only
where RTT_min > msecs_to_jiffies(10) = 3 jiffies at HZ = 250, i.e. τ > 12 ms; else b = 0.5."""

import math

import numpy as np
import pytest

from tcpprofile.models import make_model
from tcpprofile.models.htcp import HZ, JIFFY_BETA_TAU

C = 10e9


def _b(model, tau, q):
    r = model._rows(np.asarray(tau, float), np.ones(np.size(tau)), q * C * np.asarray(tau, float))
    return r["b"]


def test_the_step_is_where_the_rtt_exceeds_three_jiffies():
    """tp_usecs_to_jiffies rounds up: ⌈τ·HZ⌉ > msecs_to_jiffies(10) = ⌈10 ms·HZ⌉ = 3 ⇔ τ > 3/HZ = 12 ms."""
    assert HZ == 250 and JIFFY_BETA_TAU == pytest.approx(0.012, abs=1e-15)
    assert math.ceil(0.010 * HZ) == 3


def test_backoff_is_half_up_to_12_ms_and_adaptive_above():
    m = make_model("htcp", capacity_bps=C, mss_bytes=8948)
    tau = np.array([0.0004, 0.0118, 0.012, 0.0121, 0.0456, 0.366])
    # β = 0.2 × BDP: RTT_max = 1.2 τ ⇒ RTT_min/RTT_max = 0.833, clipped to 0.8
    np.testing.assert_allclose(_b(m, tau, 0.2), [0.5, 0.5, 0.5, 0.8, 0.8, 0.8])
    # β = 0.5 × BDP: 1/1.5
    np.testing.assert_allclose(_b(m, tau, 0.5), [0.5, 0.5, 0.5, 2 / 3, 2 / 3, 2 / 3])
    # limit: β ≥ BDP gives 0.5 on both sides (no change there); fixed b is untouched
    np.testing.assert_allclose(_b(m, tau, 1.0), 0.5)
    fixed = make_model("htcp", capacity_bps=C, adaptive_backoff=False, b=0.7)
    np.testing.assert_allclose(_b(fixed, tau, 0.2), 0.7)


@pytest.mark.parametrize("queue_fill", [False, True])
def test_the_table_does_not_interpolate_across_the_step(queue_fill):
    """Near 12 ms the tabulated W_m takes the exact path: tabulated and exact agree to the table's 0.5 %."""
    tau = np.linspace(0.009, 0.016, 57)
    kw = dict(capacity_bps=C, mss_bytes=8948, buffer_bytes=None, wmax_bytes=1e12, queue_fill=queue_fill)
    tab, exact = make_model("htcp", **kw), make_model("htcp", tabulated=False, **kw)
    for n in (1, 4):
        beta = 0.2 * C * tau / 8
        p, e = tab.predict(tau, n=n, buffer=beta), exact.predict(tau, n=n, buffer=beta)
        np.testing.assert_allclose(p, e, rtol=5e-3)
        assert np.all(p[tau <= 0.012] != p[tau > 0.012][0])
