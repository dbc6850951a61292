"""One configuration's throughput outside its measured RTTs (`select --extrapolate`): a named model
configuration (models/configurations.py; default: the validated one) fitted to the profile's means as
`model fit` fits a dataset (fit.fit_rows: loss at W = Cτ + β, iperf3's receiver interval, β the link's
configured buffer where the configuration takes it and the link has one, else fitted with W_max), predicting
at the new τ from its configuration alone (fit.predict_rows), with a residual bootstrap for the interval
(relative residuals resampled onto the fitted profile, refitted: as fit.bootstrap_predict)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .configurations import DEFAULT_CONFIGURATION, configuration
from .fit import RowsFit, fit_rows, params_for, predict_rows


@dataclass
class Extrapolation:
    value_bps: float
    low_bps: float
    high_bps: float
    fit: RowsFit          # the fit on every measured point (its model, β multiple, bounds for flags)
    residuals: np.ndarray  # relative residuals (M − P)/M at the measured points
    config: str


def _table(variant, rate_bps, rtt_s, throughput, streams, transfer_bytes, buffer_at) -> dict:
    """A fit table (fit.PROFILE_COLUMNS and the optional ones fit_rows reads) of one configuration's profile."""
    k = len(rtt_s)
    cols = {"variant": np.array([variant] * k), "streams": np.full(k, float(streams)),
            "rtt_s": np.asarray(rtt_s, float), "rate_bps": np.full(k, float(rate_bps)),
            "transfer_bytes": np.full(k, np.nan if transfer_bytes is None else float(transfer_bytes)),
            "throughput_bps": np.asarray(throughput, float)}
    if buffer_at is not None:   # the link's configured β at each τ [bytes]
        cols["configured_buffer_bytes"] = np.array([float(buffer_at(t)) for t in cols["rtt_s"]])
    return cols


def extrapolate(variant: str, rate_bps: float, rtt_s, means, rtt_new_s: float, *, streams: int,
                transfer_bytes: float | None = None, duration_s: float | None = None, loss: float = 0.0,
                buffer_at=None, config: str = DEFAULT_CONFIGURATION, level: float = 0.9, repeats: int = 50,
                seed: int = 0) -> Extrapolation:
    """The profile (rtt_s [s] ascending, means [bit/s]) of one (variant, n) at one link rate [bit/s], fitted with the
    model configuration `config` and predicted at rtt_new_s [s]: value and the central `level` bootstrap interval.
    transfer_bytes (iperf3 -n) or duration_s (-t); loss: the link's drop probability (periodic 1 in N: 1/N);
    buffer_at: τ [s] → the link's configured buffer [bytes] (None: unknown, β fitted)."""
    params, per_variant = configuration(config)
    kd = {"variant": variant, "rate_bps": float(rate_bps),
          "duration_target_s": None if duration_s is None else float(duration_s),
          "loss_mode": "periodic" if loss > 0 else "none", "loss_rate": float(loss)}
    params = params_for(kd, params, per_variant)
    cols = _table(variant, rate_bps, rtt_s, means, streams, transfer_bytes, buffer_at)
    new = _table(variant, rate_bps, [rtt_new_s], [1.0], streams, transfer_bytes, buffer_at)
    rows, one = np.arange(len(rtt_s)), np.array([0])
    whole = fit_rows(cols, kd, rows, **params)
    P = predict_rows(whole, cols, kd, rows, own_sizes=True)
    value = float(predict_rows(whole, new, kd, one)[0])
    M = cols["throughput_bps"]
    e = M / P - 1.0
    rng = np.random.default_rng(seed)
    sims = []
    for _ in range(repeats):
        boot = dict(cols, throughput_bps=np.maximum(P * (1.0 + rng.choice(e, size=e.shape)), 1.0))
        part = fit_rows(boot, kd, rows, relative=whole.multiple is not None, **params)
        sims.append(float(predict_rows(part, new, kd, one)[0]))
    q = (1 - level) / 2
    lo, hi = np.quantile(np.array(sims), [q, 1 - q])
    return Extrapolation(value, float(lo), float(hi), whole, (M - P) / M, config)
