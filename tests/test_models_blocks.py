"""components() evaluates rows in blocks of framework.BLOCK_ROWS (cache-sized arrays; models/framework.py): the
same components, shapes and dtypes as one evaluation of all rows, for every variant in every mode bench_models
measures (clean, -n as the receiver reports it, -t, periodic and uniform loss; the configurations ss-trains and
single-flow), with broadcast inputs, scalars and a last block shorter than the others."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tcpprofile.models import framework, make_model
from tcpprofile.models.configurations import configuration, model_parameters, variant_parameters

MODES = {"clean": dict(size=math.inf), "-n 10GB": dict(size=1e10), "-t 8s": dict(duration=8.0),
         "periodic -t 8s": dict(duration=8.0, loss=1 / 500), "uniform 1e-4": dict(size=math.inf, loss=1e-4)}


def _rows(count=203, seed=5):
    """bench_models' mix (τ 1–400 ms, n = 1…10, β 0.1–100 MB, W_max 10 MB–∞), fewer rows."""
    rng = np.random.default_rng(seed)
    return (np.exp(rng.uniform(math.log(1e-3), math.log(0.4), count)), rng.integers(1, 11, count).astype(float),
            np.exp(rng.uniform(math.log(1e5), math.log(1e8), count)), rng.choice([1e7, 1e8, 1e9, math.inf], count))


def _model(variant, config, lossy):
    m = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=8948, queue_fill=True, receiver_report=True)
    if config:
        params, per_variant = configuration(config)
        m.set_params(**model_parameters(params), **variant_parameters(variant, per_variant, lossy=lossy))
    return m


def _same(blocked, whole):
    assert blocked.keys() == whole.keys()
    for k, v in whole.items():
        assert blocked[k].shape == v.shape and blocked[k].dtype == v.dtype, k
        # the Newton loops' stop tests (and H-TCP's quadrature in BLAS) see the rows of their own block: the
        # last digits may differ, as they did between one call and another over different rows
        np.testing.assert_allclose(blocked[k], v, rtol=1e-12, atol=0, equal_nan=True, err_msg=k)


@pytest.mark.parametrize("variant", ["stcp", "reno", "cubic", "htcp"])
@pytest.mark.parametrize("config", [None, "ss-trains", "single-flow"])
@pytest.mark.parametrize("mode", list(MODES))
def test_blocks_match_one_evaluation(monkeypatch, variant, config, mode):
    kw = MODES[mode]
    m = _model(variant, config, "loss" in kw)
    tau, n, beta, wmax = _rows()
    whole = m.components(tau, n=n, buffer=beta, wmax=wmax, **kw)
    monkeypatch.setattr(framework, "BLOCK_ROWS", 16)  # 13 blocks of 16 rows, the last of 11
    _same(m.components(tau, n=n, buffer=beta, wmax=wmax, **kw), whole)


def test_blocks_broadcast_inputs(monkeypatch):
    """A τ × n grid (as `tcpprofile model` evaluates it), a scalar buffer, and a per-row duration."""
    m = _model("cubic", "single-flow", False)
    tau = np.exp(np.linspace(math.log(2e-3), math.log(0.3), 23))[:, None]
    n = np.arange(1.0, 8.0)[None, :]
    duration = np.linspace(1.0, 20.0, 7)[None, :]
    whole = m.components(tau, n=n, buffer=3e6, wmax=math.inf, duration=duration)
    assert whole["throughput"].shape == (23, 7)
    monkeypatch.setattr(framework, "BLOCK_ROWS", 10)
    _same(m.components(tau, n=n, buffer=3e6, wmax=math.inf, duration=duration), whole)
