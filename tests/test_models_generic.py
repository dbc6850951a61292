"""Generic ramp-up/sustainment model (HPDC'17 §3): hand values, derivatives, concavity, fitting."""

import numpy as np
import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.models import GenericModel, ramp_sustain

C = 10e9
M = 1448 * 8
TAU = np.geomspace(0.005, 0.4, 40)


def test_exponential_ramp_by_hand():
    # p = 1, κ = 1, ρ = 2, θ̄_S = C: Θ_O = C − C·(T_R − 2τ)/T_O with T_R = τ·log2(Cτ/(M·w0)).
    m = GenericModel(capacity_bps=C, duration_s=100.0, initial_window=1)
    tau = np.array([0.01, 0.1, 0.366])
    T_R = tau * np.log2(C * tau / M)
    c = m.components(tau)
    np.testing.assert_allclose(c["T_R"], T_R, rtol=1e-12)
    np.testing.assert_allclose(c["theta_R"], 2 * C * tau / T_R, rtol=1e-12)
    np.testing.assert_allclose(c["throughput"], C - C * (T_R - 2 * tau) / 100.0, rtol=1e-12)


@pytest.mark.parametrize("p,s1", [(1.0, 0.0), (1.0, -8e9), (1.4, 0.0), (0.6, 0.0), (0.8, -2e9)])
def test_derivatives_match_finite_differences(p, s1):
    m = GenericModel(duration_s=60.0, ramp_exponent=p, ramp_scale=1.3, sustained_bps=9e9, sustained_slope=s1)
    h = 1e-5
    c = m.components(TAU)
    f = m.predict
    np.testing.assert_allclose(c["dtheta"], (f(TAU + h) - f(TAU - h)) / (2 * h), rtol=1e-5, atol=1e-3)
    num2 = (f(TAU + 1e-4) - 2 * f(TAU) + f(TAU - 1e-4)) / 1e-8
    np.testing.assert_allclose(c["d2theta"], num2, rtol=1e-3, atol=5e3)
    assert np.array_equal(m.concave(TAU)[np.abs(num2) > 1e5], (num2 <= 0)[np.abs(num2) > 1e5])


def test_ramp_shapes_faster_concave_slower_convex():
    """§3.4: exponential ramp with sustained C is concave (strictly, with log2 W* depending on τ);
    faster than exponential (p > 1) concave; slower (p < 1, the corrected τ^{1−ε}) convex."""
    for p, concave in ((1.0, True), (1.5, True), (0.5, False)):
        m = GenericModel(duration_s=60.0, ramp_exponent=p)
        assert np.all(m.concave(TAU) == concave)
        c = m.components(TAU)
        ok = c["theta_R"] <= c["theta_S"]  # §3.3: decreasing wherever the ramp is slower than sustainment
        assert ok.sum() > 20 and np.all(c["dtheta"][ok] < 0)


def test_decreasing_sustainment_gives_concave_then_convex():
    m = GenericModel(duration_s=60.0, sustained_bps=10e9, sustained_slope=-5e9)
    conc = m.concave(TAU)
    assert conc[0] and not conc[-1]
    k = int(np.argmin(conc))  # one transition RTT τ_T: concave below, convex above
    assert conc[:k].all() and not conc[k:].any()


def test_ramp_sustain_estimates():
    trace = np.array([1, 3, 7, 9.5, 10, 9.8, 10.2, 10, 9.9, 10.1]) * 1e9
    T_R, th_R, th_S, T_O = ramp_sustain(trace, dt=1.0)
    assert (T_R, T_O) == (3.0, 10.0)
    assert th_R == pytest.approx(11e9 / 3) and th_S == pytest.approx(np.mean(trace[3:]))
    assert ramp_sustain(np.full(5, 9e9))[0] == 0.5  # already sustained in the first sample
    with pytest.raises(ValidationError) as err:
        ramp_sustain([1e9])
    assert err.value.field == "trace"


def test_fit_recovers_parameters_from_synthetic_traces():
    true = GenericModel(duration_s=30.0, ramp_scale=1.2, ramp_exponent=1.3, ramp_data=1.8,
                        sustained_bps=9.5e9, sustained_slope=-4e9)
    taus = np.repeat([0.02, 0.05, 0.1, 0.2, 0.4], 3)
    c = true.components(taus)
    dt = 0.001
    traces = []
    for T_R, th_R, th_S in zip(c["T_R"], c["theta_R"], c["theta_S"]):
        k = int(round(T_R / dt))
        traces.append(np.concatenate([np.full(k, th_R), np.full(int(30 / dt) - k, th_S)]))
    fitted = GenericModel().fit(taus, traces, dt=dt)
    assert fitted.ramp_exponent_ == pytest.approx(1.3, rel=0.02)
    assert fitted.ramp_scale_ == pytest.approx(1.2, rel=0.05)
    assert fitted.ramp_data_ == pytest.approx(1.8, rel=0.02)
    assert fitted.sustained_bps_ == pytest.approx(9.5e9, rel=1e-6)
    assert fitted.sustained_slope_ == pytest.approx(-4e9, rel=1e-6)
    assert fitted.duration_s_ == pytest.approx(30.0)
    np.testing.assert_allclose(fitted.predict(TAU), true.predict(TAU), rtol=0.01)


def test_fit_needs_one_trace_per_rtt():
    with pytest.raises(ValidationError) as err:
        GenericModel().fit([0.1, 0.2], [np.ones(10)])
    assert err.value.field == "traces"


def test_duration_required_for_prediction():
    with pytest.raises(ValidationError) as err:
        GenericModel().predict(0.1)
    assert err.value.field == "duration_s"
