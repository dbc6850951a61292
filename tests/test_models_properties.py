"""First-principles models: bounds, monotonicity, limits, n scaling, parameter validation."""

import math

import numpy as np
import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.models import MODELS, GenericModel, make_model

C = 10e9
VARIANTS = ["stcp", "cubic", "htcp", "reno"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_throughput_positive_and_at_most_capacity(variant):
    tau = np.geomspace(0.0005, 0.5, 12)[:, None, None, None, None]
    n = np.array([1, 2, 10])[None, :, None, None, None]
    beta = np.array([0, 1e4, 5e6, 5e8])[None, None, :, None, None]
    wmax = np.array([1e5, 5e7, math.inf])[None, None, None, :, None]
    size = np.array([1e4, 1e8, 2e10, math.inf])[None, None, None, None, :]
    th = make_model(variant, wmax_bytes=1.0, buffer_bytes=0).predict(tau, n=n, buffer=beta, wmax=wmax, size=size)
    assert th.shape == (12, 3, 4, 3, 4)
    assert np.all(np.isfinite(th)) and np.all(th > 0) and np.all(th <= C)


@pytest.mark.parametrize("variant", ["stcp", "cubic", "reno"])
def test_profile_non_increasing_without_window_limit(variant):
    """Loss-limited profiles (W_max = ∞) decrease with τ. (With W_max, throughput can rise where Case 2
    turns into Case 1 — the window limit stops the losses; H-TCP's Δ_L switch gives ≤ 0.3 % bumps.)"""
    tau = np.geomspace(0.001, 0.5, 80)[:, None, None, None]
    n = np.array([1, 4, 10])[None, :, None, None]
    beta = np.array([0, 1e5, 5e6, 5e8])[None, None, :, None]
    size = np.array([1e6, 2e10, math.inf])[None, None, None, :]
    th = make_model(variant, wmax_bytes=math.inf, buffer_bytes=0).predict(tau, n=n, buffer=beta, size=size)
    assert np.all(np.diff(th, axis=0) <= 1e-9 * th[:-1])


@pytest.mark.parametrize("variant", VARIANTS)
def test_large_transfer_tends_to_sustained_rate(variant):
    m = make_model(variant, buffer_bytes=5e6, wmax_bytes=1e8)
    tau = np.array([0.01, 0.1, 0.3])
    c = m.components(tau, size=math.inf)
    big = m.predict(tau, size=1e18)
    np.testing.assert_allclose(big, np.minimum(c["S"], C), rtol=1e-6)
    with np.errstate(invalid="ignore"):  # Case 1 with F = ∞ has N_a = T_a = ∞
        sustained = np.where(c["case"] == 1, c["W_max"] / tau, c["N_a"] / c["T_a"])
    np.testing.assert_allclose(c["S"], sustained, rtol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_window_limited_rate_scales_with_streams_up_to_the_hard_limit(variant):
    tau = 0.2  # Cτ = 2e9 bits
    m = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e7, wmax_hard_bytes=6e7)  # 8e7 bits per flow
    th = m.predict(tau, n=np.array([1, 2, 5, 6, 8]))
    np.testing.assert_allclose(th, np.minimum(np.array([1, 2, 5, 6, 8]) * 8e7, 4.8e8) / tau, rtol=1e-12)


def _bad_values(con):
    if con.kind is bool:
        return ["yes", 1]
    bad = ["x", True, float("nan")]
    if con.kind is int:
        bad.append(1.5)
    if math.isfinite(con.low):
        bad.append(con.low if con.closed in ("right", "neither") else con.low - 1)
    if math.isfinite(con.high):
        bad.append(con.high if con.closed in ("left", "neither") else con.high + 1)
    return bad


CASES = [(cls, name, bad) for cls in sorted({*MODELS.values(), GenericModel}, key=lambda c: c.__name__)
         for name, con in cls._constraints.items() for bad in _bad_values(con)]


@pytest.mark.parametrize("cls,name,bad", CASES, ids=[f"{c.__name__}-{n}-{b!r}" for c, n, b in CASES])
def test_invalid_parameter_rejected_with_its_name(cls, name, bad):
    model = cls(**{name: bad})
    with pytest.raises(ValidationError) as err:
        model.predict(np.array([0.05]))
    assert err.value.field == name


@pytest.mark.parametrize("cls", sorted({*MODELS.values()}, key=lambda c: c.__name__))
def test_constructor_only_stores_and_params_round_trip(cls):
    m = cls(capacity_bps=-1)  # no validation at construction (scikit-learn contract)
    assert m.get_params()["capacity_bps"] == -1
    with pytest.raises(TypeError):
        cls(1e9)  # keyword-only
    assert set(m.get_params()) == set(cls._constraints)
    with pytest.raises(ValidationError) as err:
        m.set_params(nonsense=1)
    assert err.value.field == "nonsense"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kw,field", [({"tau": -0.1}, "tau"), ({"tau": 0.1, "n": 1.5}, "n"),
                                      ({"tau": 0.1, "n": 0}, "n"), ({"tau": 0.1, "buffer": -1}, "buffer"),
                                      ({"tau": 0.1, "size": 0}, "size"), ({"tau": float("nan")}, "tau")])
def test_invalid_call_arguments_named(variant, kw, field):
    m = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e8)
    with pytest.raises(ValidationError) as err:
        m.predict(**kw)
    assert err.value.field == field


def test_missing_buffer_is_named():
    with pytest.raises(ValidationError) as err:
        make_model("cubic", wmax_bytes=1e8).predict(0.1)
    assert err.value.field == "buffer"
