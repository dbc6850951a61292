"""n flows' Phase II for the per-RTT increases (H-TCP, Reno): flows_phase2 makes the aggregate grow n× as fast
above Cτ (each of n flows gets C/n ACKs/s at w_i = W/n and adds α per RTT), as the trajectory's first epochs
always did; without it, §IV-D as printed (Phase II unchanged with n), the paper's reproduction."""

from __future__ import annotations

import numpy as np
import pytest

from tcpprofile.models import HTCP, Reno
from tcpprofile.models.configurations import configuration

TAU = np.array([0.0118, 0.0456, 0.183])
BETA = 0.2 * 10e9 * TAU / 8          # 0.2 × BDP [bytes]


@pytest.mark.parametrize("flows", [False, True])
def test_reno_phase2_time_scales_with_n_only_with_flows_phase2(flows):
    """queue_fill: W_m = Cτ + β for every n, so Phase II from Cτ to W_m takes (W² − (Cτ)²)/(2·a·M·C·k) with
    k = n (flows_phase2) or 1 (§IV-D): T_m(n = 4) = T_m(1)/4, or = T_m(1). Phase I (rule 1) is n× faster
    either way."""
    m = Reno(queue_fill=True, flows_phase2=flows, buffer_bytes=1.0, wmax_bytes=np.inf)
    one, four = (m.components(TAU, n=n, buffer=BETA) for n in (1, 4))
    np.testing.assert_allclose(four["T_m"], one["T_m"] / (4 if flows else 1), rtol=1e-12)
    np.testing.assert_allclose(four["T_0"], one["T_0"] / 4, rtol=1e-12)
    W, w2 = 8 * (10e9 * TAU / 8 + BETA), 10e9 * TAU
    np.testing.assert_allclose(four["T_m"], (W * W - w2 * w2) / (2 * 1448 * 8 * 10e9 * (4 if flows else 1)), rtol=1e-12)


@pytest.mark.parametrize("n", [1, 4, 10])
def test_reno_closed_form_wm_solves_eq8_with_flows_phase2(n):
    """The closed-form W_m (Eq. (8), queue_fill off) with the aggregate's n·a: its Eq. (8) residual is 0."""
    m = Reno(flows_phase2=True, buffer_bytes=1.0, wmax_bytes=np.inf)
    wm = m.components(TAU, n=n, buffer=BETA)["W_m"] / 8
    res = m.epoch_residual(wm, TAU, n=n, buffer=BETA)
    np.testing.assert_allclose(res / (8 * BETA), 0.0, atol=1e-9)


@pytest.mark.parametrize("n", [1, 4])
def test_htcp_sustained_phase2_is_the_trajectorys_with_flows_phase2(n):
    """The sustained epoch's Phase II (framework, _phase2_times) and the trajectory's (_t_to) end at the same
    time for every n with flows_phase2 (the inconsistency it removes); without it, only for n = 1."""
    for flows in (True, False):
        m = HTCP(queue_fill=True, rtt_scaling=True, flows_phase2=flows, buffer_bytes=1.0, wmax_bytes=np.inf)
        r = m._rows(TAU, np.full(TAU.shape, float(n)), 8 * BETA)
        W = r.bdp + r.beta
        t2, tm = m._phase2_times(W, r)[:2]
        traj = m._t_to(r.b * W, {"s": r.s}, W, r, t2)
        if flows or n == 1:
            np.testing.assert_allclose(tm, traj, rtol=1e-10)
        else:
            assert np.all(tm - t2 > 1.5 * (traj - t2))   # Phase II n× slower (α grows meanwhile: < 4×)


def test_the_trajectory_configuration_sets_flows_phase2():
    params, per_variant = configuration("trajectory")
    assert per_variant["htcp"]["flows_phase2"] and per_variant["reno"]["flows_phase2"]
    assert not HTCP().flows_phase2 and not Reno().flows_phase2   # the default model: §IV-D as printed
