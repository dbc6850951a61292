"""First-principles models: hand-derived closed forms, the defining equation at the solution, cases."""

import math

import numpy as np
import pytest

from tcpprofile.models import CUBIC, HTCP, MODELS, STCP, Reno, make_model

C = 10e9  # bit/s
M = 1448 * 8  # bits per segment
VARIANTS = ["stcp", "cubic", "htcp", "reno"]


def test_stcp_closed_forms_by_hand():
    # τ = 0.1 s, β = 1 MB = 8e6 bits, a = 0.01, b = 0.875:
    # W_m = Cτ + sqrt(2·C·a·τ·β) = 1e9 + sqrt(1.6e14) bits.
    m = STCP(capacity_bps=C, buffer_bytes=1e6, wmax_bytes=math.inf)
    c = m.components(0.1)
    wm = 1e9 + math.sqrt(1.6e14)
    assert c["W_m"] == pytest.approx(wm, rel=1e-12)
    assert c["T_m"] == pytest.approx((wm - 1e9) / (C * 0.01), rel=1e-12)  # (W_m − Cτ)/(Ca)
    assert c["N_m"] == pytest.approx((wm ** 2 - 1e18) / (2 * C * 0.01 * 0.1), rel=1e-12)
    assert c["T_0"] == pytest.approx(0.1 / 0.01 * math.log(1e9 / (0.875 * wm)), rel=1e-12)
    assert c["N_0"] == pytest.approx((1e9 - 0.875 * wm) / 0.01, rel=1e-12)
    assert c["case"] == 2 and c["subcase"] == 1 and c["phase1"]
    assert c["S"] == pytest.approx(c["N_a"] / c["T_a"], rel=1e-12)  # F = ∞


def test_stcp_t_beta_matches_paper_formula():
    # Subcase 2: T_β = βτ/(W_max − Cτ) − (W_max − Cτ)/(2Ca)  (§IV-C1).
    tau, beta_bits, wmax_bits = 0.1, 8e6, 1.005e9
    c = STCP(capacity_bps=C, buffer_bytes=beta_bits / 8, wmax_bytes=wmax_bits / 8).components(tau)
    assert c["subcase"] == 2
    d = wmax_bits - C * tau
    assert c["T_beta"] == pytest.approx(beta_bits * tau / d - d / (2 * C * 0.01), rel=1e-9)
    assert c["W_s"] == pytest.approx(wmax_bits)


def test_cubic_wm_corrected_root_by_hand():
    # Corrected: W_m = Cτ + ⁴√(c(4βτ/3)³) with c in bits/s³ (0.4 segments/s³); the printed "Cτ − …" is < Cτ.
    tau, beta = 0.05, 2e6
    m = CUBIC(capacity_bps=C, buffer_bytes=beta, wmax_bytes=math.inf)
    c = m.components(tau)
    ce = 0.4 * M
    wm = C * tau + (ce * (4 * beta * 8 * tau / 3) ** 3) ** 0.25
    assert c["W_m"] == pytest.approx(wm, rel=1e-12)
    assert m.epoch_residual(wm / 8, tau) == pytest.approx(0, abs=1e-6 * beta * 8)
    # W_m is the one root in the domain W ≥ Cτ the paper requires (the printed "Cτ − …" lies below it):
    # at W = Cτ the epoch has not yet filled the buffer (residual −β), past W_m it has overfilled it
    assert m.epoch_residual(C * tau / 8, tau) == pytest.approx(-beta * 8, rel=1e-12)
    assert m.epoch_residual(0.9999 * wm / 8, tau) < 0 < m.epoch_residual(1.0001 * wm / 8, tau)
    K = (0.3 * wm / ce) ** (1 / 3)
    d = ((wm - C * tau) / ce) ** (1 / 3)
    assert c["T_0"] == pytest.approx(K - d, rel=1e-12)  # T_0 = ∛((Cτ−W)/c) + ∛(bW/c)
    assert c["T_m"] == pytest.approx(d, rel=1e-12)
    assert c["N_m"] == pytest.approx(d * (C * tau + 3 * wm) / (4 * tau), rel=1e-12)


def test_cubic_parallel_flows_are_one_flow_with_c_times_n_cubed():
    tau = np.array([0.01, 0.05, 0.2])
    a = CUBIC(buffer_bytes=5e6, wmax_bytes=math.inf).components(tau, n=3)
    b = CUBIC(buffer_bytes=5e6, wmax_bytes=math.inf, c=0.4 * 27).components(tau, n=1)
    for key in ("W_m", "T_0", "N_0", "T_m", "N_m"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12)


def test_reno_closed_form_matches_bisection():
    m = Reno(buffer_bytes=3e6, wmax_bytes=math.inf)
    tau = np.geomspace(0.01, 0.4, 7)
    r = m._rows(tau, np.ones_like(tau), np.full_like(tau, 3e6 * 8))
    closed = m._wm_closed(r)
    assert np.all(np.isfinite(closed))
    closed_free = closed.copy()
    m._wm_closed = lambda r: np.full(r.tau.shape, np.nan)  # force the numeric path
    np.testing.assert_allclose(m._solve_wm(r), closed_free, rtol=1e-12)


def test_htcp_alpha_integral_and_inverse():
    m = HTCP()
    s = np.array([1.0])
    t = np.array([0.3, 1.0, 2.5, 7.0])
    # A(t) = t for t ≤ 1, 1 + u + 5u² + u³/12 (u = t − 1) after, for 2(1 − b) = 1.
    u = np.maximum(t - 1, 0)
    np.testing.assert_allclose(m._A(t, s), t + 5 * u ** 2 + u ** 3 / 12)
    np.testing.assert_allclose(m._A_inv(m._A(t, s), s), t, rtol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", [1, 3, 10])
def test_defining_equation_holds_at_wm(variant, n):
    """Eq. (8): N_m − C·T_m − β = 0 at the W_m found, in both regimes (with and without Phase I); H-TCP
    on its exact path (its table's error: test_models_htcp_table.py)."""
    tau = np.geomspace(0.002, 0.4, 9)[:, None]
    beta = np.array([0.0, 1e5, 2e6, 5e7, 5e8, 5e9])[None, :]  # small to ≫ BDP: Phase I present and absent
    exact = {"tabulated": False} if variant == "htcp" else {}
    m = make_model(variant, buffer_bytes=1.0, wmax_bytes=math.inf, **exact)
    c = m.components(tau, n=n, buffer=beta)
    assert np.all(c["case"] == 2) and np.all(c["W_m"] >= C * tau * (1 - 1e-12))
    res = m.epoch_residual(c["W_m"] / 8, tau, n=n, buffer=beta)
    # exact up to rounding of the cancelling terms N_m and C·T_m
    assert np.all(np.abs(res) <= 1e-8 * beta * 8 + 1e-12 * (c["N_m"] + C * c["T_m"]) + 1e-6)
    assert c["phase1"].any() and (~c["phase1"]).any()


@pytest.mark.parametrize("variant", VARIANTS)
def test_case1_rate_is_wmax_over_tau(variant):
    tau = np.array([0.05, 0.1, 0.3])
    wmax = 2e6  # bytes: 1.6e7 bits < Cτ for every τ here
    m = make_model(variant, buffer_bytes=1e6, wmax_bytes=wmax)
    c = m.components(tau)
    assert np.all(c["case"] == 1)
    np.testing.assert_allclose(c["throughput"], wmax * 8 / tau, rtol=1e-12)
    # finite F: S = F/(T_s + (F − N_s)τ/W_max)
    F = 1e9 * 8
    cf = m.components(tau, size=1e9)
    np.testing.assert_allclose(cf["S"], F / (cf["T_s"] + (F - cf["N_s"]) * tau / (wmax * 8)), rtol=1e-12)


def test_slow_start_by_hand():
    # w0 = 1 segment reproduces Eq. (2)–(3): T_s = τ log2(ssthresh), N_s = (ssthresh − 1)/ln 2 (segments).
    tau, beta = 0.1, 1e6
    m = STCP(buffer_bytes=beta, wmax_bytes=math.inf, initial_window=1)
    c = m.components(tau, n=1)
    ss = C * tau / 2 + beta * 8  # Cτ/2 + β  [bits]
    assert c["T_s"] == pytest.approx(tau * math.log2(ss / M), rel=1e-12)
    assert c["N_s"] == pytest.approx((ss - M) / math.log(2), rel=1e-12)
    # n flows: thresh = min(ssthresh, Cτ/n, W_max/n), N_s × n  (§IV-D rule 3)
    c4 = m.components(tau, n=4, wmax=2e7)
    th = min(ss, C * tau / 4, 2e7 * 8 * 4 / 4)
    assert c4["thresh"] == pytest.approx(th)
    assert c4["N_s"] == pytest.approx(4 * (th - M) / math.log(2), rel=1e-12)
    assert c4["W_max"] == pytest.approx(4 * 2e7 * 8)  # W_max = min(n·W_max, W_maxH)
    hard = STCP(buffer_bytes=beta, wmax_bytes=math.inf, wmax_hard_bytes=5e7).components(tau, n=4)
    assert hard["W_max"] == pytest.approx(5e7 * 8)


def test_transfer_ending_in_slow_start():
    m = CUBIC(buffer_bytes=1e7, wmax_bytes=math.inf, initial_window=10)
    tau, F = 0.2, 1e5  # 100 kB: far less than N_s
    c = m.components(tau, size=F)
    assert c["case"] == 0
    t = tau * math.log2(1 + F * 8 * math.log(2) / (10 * M))
    assert c["throughput"] == pytest.approx(F * 8 / t, rel=1e-12)


def test_registry_is_explicit():
    assert set(MODELS) == {"stcp", "scalable", "cubic", "htcp", "reno"}
    assert MODELS["scalable"] is STCP


# -- queue_fill: the buffer overflows when the window exceeds Cτ + β (docs/models.md) ------------------
def test_queue_fill_reno_epoch_by_hand():
    """Reno, ACK-clocked queue: Phase I from W0 = b(Cτ+β) to Cτ at a·M per RTT τ with rate w/τ, Phase II
    from Cτ to Cτ+β with the link full (rate C) and the RTT W/C, so dW/dt = aMC/W (Eq. (5)):
    T_m = ((Cτ+β)² − (Cτ)²)/(2aMC). Sustained = (N_0 + C·T_m)/(T_0 + T_m)."""
    C, tau, M = 10e9, 0.0456, 8948 * 8.0
    bdp = C * tau
    for beta in (0.1 * bdp, 0.5 * bdp):
        W0 = 0.5 * (bdp + beta)
        T0 = (bdp - W0) / M * tau                    # a = 1 segment per RTT  [s]
        N0 = (W0 + bdp) / 2 * T0 / tau               # mean window / τ over T0  [bits]
        Tm = ((bdp + beta) ** 2 - bdp ** 2) / (2 * M * C)   # a = 1  [s]
        want = (N0 + C * Tm) / (T0 + Tm)
        m = Reno(capacity_bps=C, buffer_bytes=beta / 8, wmax_bytes=math.inf, mss_bytes=8948, queue_fill=True)
        comp = m.components(tau)
        assert float(np.ravel(comp["W_m"])[0]) == pytest.approx(bdp + beta, rel=1e-12)   # components in bits
        assert float(m.predict(tau)) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("variant", ["reno", "stcp", "cubic", "htcp"])
def test_queue_fill_keeps_the_link_full_when_the_cut_stays_above_the_pipe(variant):
    """(1 − b)(Cτ + β) ≥ Cτ: the window never falls below the BDP, so the sustained rate is C; below
    that it is less than C, and more buffer never lowers it. The paper's Eq. (8) gives less than C
    even with β = 4·BDP for CUBIC (its peak W_m barely exceeds Cτ)."""
    C, tau = 10e9, np.array([0.0118, 0.0916])
    bdp_bytes = C * tau / 8
    m = make_model(variant, capacity_bps=C, wmax_bytes=math.inf, mss_bytes=8948, queue_fill=True)
    full = m.predict(tau, buffer=10 * bdp_bytes)
    assert full == pytest.approx(C, rel=1e-9)
    rates = [m.predict(tau, buffer=k * bdp_bytes) for k in (0.05, 0.2, 0.5, 1.0, 10.0)]
    assert np.all(np.diff(np.array(rates), axis=0) >= -1e-6 * C)
    if variant == "reno":
        assert np.all(rates[0] < C)


def test_queue_fill_window_cap_below_the_overflow_point_never_loses():
    """Subcase 2 (W_max between Cτ and Cτ + β): the queue never overflows, so the rate is C."""
    C, tau = 10e9, 0.0456
    bdp = C * tau / 8
    m = CUBIC(capacity_bps=C, buffer_bytes=bdp, wmax_bytes=1.5 * bdp, mss_bytes=8948, queue_fill=True)
    assert float(m.predict(tau)) == pytest.approx(C, rel=1e-9)


def test_queue_fill_must_be_a_boolean():
    from tcpprofile.errors import ValidationError
    with pytest.raises(ValidationError, match="queue_fill"):
        Reno(buffer_bytes=1e6, wmax_bytes=1e8, queue_fill=1).predict(0.01)
