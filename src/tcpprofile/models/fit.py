"""Fitting the first-principles models to measured profiles and validating them (models paper §V).

As in the paper, β (bottleneck buffer) and W_max (per-flow window limit) are fitted once per dataset
(variant, link rate, buffer, socket buffer, transfer size) over all RTTs and stream counts, by bounded
least squares on the relative error of the profile; E = 100/|RTTs| Σ_r |M_r − P_r|/M_r per variant and n.
Uncertainty of a prediction comes from a residual bootstrap (relative residuals resampled, refitted).

Held-out error: E is also computed leave-one-RTT-out — for each measured τ the model is refitted on the
other RTTs and predicts the held-out one — since a model meant to predict unmeasured RTTs must be judged
on RTTs it was not fitted on.

Tables are plain: a dict of equal-length numpy arrays (or a list of dicts, see ``as_columns``) with
columns variant, streams, rtt_s (τ [s]), rate_bps, transfer_bytes, throughput_bps, and optionally
buffer or buffer_bytes and socket_buffer_bytes (parts of the dataset key), duration_target_s (time-
limited runs: the model's duration mode), loss_mode and loss_rate (external loss), mtu (segment size
M = MTU − 52 bytes), size_bytes (the transfer size F when transfer_bytes is NULL and no duration is known)
and configured_buffer_bytes (the bottleneck buffer the link was set to at that τ; not part of the key).

β relative to the BDP: a dataset whose configured buffer changes with τ (the spec's "BDP" or "2xBDP":
β = k·C·τ/8 bytes) cannot be one β in bytes. There the fit is of a multiple m of the configured buffer,
β_r = m·configured_r, and W_max (``DatasetFit.buffer_multiple``; m = 1 is the link as configured).

W_max known, not fitted: runs with autotuned socket buffers (no iperf3 -w) are limited only by the
kernel's maximum (tcp_rmem[2] / tcp_wmem[2]), which the store records as effective_socket_buffer_bytes;
the column window_limit_bytes carries it (autotuned datasets only). At least half of a receive buffer is
window (tcp_adv_win_scale = 1; newer kernels' scaling_ratio gives more), so W_max = limit/2 per flow is
fixed instead of fitted. Fitting a limit that does not bind is not identifiable: on the reproduce store
(10 Gbit/s, 2 GiB limit) leaving out 183 ms let the fit bend the profile with a W_max of a few hundred
MB and predict 3.8 Gbit/s where 7.2 was measured (CUBIC n = 1 held-out E 13 % → 4.6 % with W_max known).
Explicit -w buffers keep the W_max fit: how much of a granted buffer is window is not recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ValidationError
from ..packet_overhead import TCP_IP_HEADERS, mss_bytes
from ..store.reads import fit_table
from .diagnostics import at_bound, flags_of, residual_structure
from .framework import SEND_BACKLOG, FirstPrinciplesModel
from .lsq import BUFFER_BOUNDS, WMAX_BOUNDS, fit_buffer_wmax
from .registry import MODELS, make_model
from .configurations import PHYSICAL_BUFFER, variant_parameters

PROFILE_COLUMNS = ("variant", "streams", "rtt_s", "rate_bps", "transfer_bytes", "throughput_bps")
# β keys a dataset as the spec wrote it ("buffer", from the store) or in bytes (plain tables); the
# model fits its own β either way.
DATASET_KEYS = ("variant", "rate_bps", "buffer", "buffer_bytes", "socket_buffer_bytes", "transfer_bytes",
                "duration_target_s", "loss_mode", "loss_rate", "mtu")
INITIAL_WINDOW = 10  # segments: Linux's IW10 (RFC 6928), the models' default initial_window
DEFAULT_MSS = 1448   # bytes: MTU 1500 − TCP_IP_HEADERS, the models' default mss_bytes (no MTU recorded)


def mean_relative_error(measured, predicted) -> float:
    """§V: E = 100/|RTTs| · Σ_r |M_r − P_r| / M_r  [%]."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    return float(100.0 * np.mean(np.abs(m - p) / m))


def bootstrap_predict(model: FirstPrinciplesModel, tau, throughput, tau_new, *, n=1, size=None, n_new=1,
                      size_new=None, repeats: int = 50, level: float = 0.9, seed: int = 0, grid: int = 12):
    """Residual bootstrap: (prediction, low, high) in bit/s at tau_new for a model fitted to (tau, throughput).

    The model is fitted (if not already), its relative residuals are resampled onto the fitted profile,
    the model is refitted ``repeats`` times and the central ``level`` interval of its predictions returned.
    """
    if not hasattr(model, "buffer_bytes_"):
        model.fit(tau, throughput, n=n, size=size)
    tau, M, n_a, s_a = np.broadcast_arrays(np.asarray(tau, float), np.asarray(throughput, float), np.asarray(n, float),
                                           np.asarray(model.size_bytes if size is None else size, float))
    P = model.predict(tau, n=n_a, size=s_a)
    pred = model.predict(tau_new, n=n_new, size=size_new)
    rng = np.random.default_rng(seed)
    e = M / P - 1.0
    twin = type(model)(**model.get_params())
    sims = []
    for _ in range(repeats):
        Mb = P * (1.0 + rng.choice(e.ravel(), size=e.shape))
        bb, wb, _ = fit_buffer_wmax(twin, tau, np.maximum(Mb, 1.0), n=n_a, size=s_a, grid=grid, starts=1)
        sims.append(twin.predict(tau_new, n=n_new, size=size_new, buffer=bb, wmax=wb))
    q = (1 - level) / 2
    lo, hi = np.quantile(np.array(sims), [q, 1 - q], axis=0)
    return pred, lo, hi


def as_columns(table) -> dict[str, np.ndarray]:
    """A dict of arrays from a dict of sequences or a list of row dicts."""
    if isinstance(table, dict):
        cols = {k: np.asarray(v) for k, v in table.items()}
    else:
        rows = list(table)
        cols = {k: np.asarray([row[k] for row in rows]) for k in (rows[0] if rows else PROFILE_COLUMNS)}
    missing = [c for c in PROFILE_COLUMNS if c not in cols]
    if missing:
        raise ValidationError("profiles", f"missing columns {missing}; need {list(PROFILE_COLUMNS)}")
    return cols


@dataclass
class DatasetFit:
    """One dataset's fit: its key, the fitted model, E [%] per stream count in-sample and held out
    (leave-one-RTT-out; nan with fewer than 3 RTTs). buffer_multiple: the fitted β as a multiple of the
    configured buffer when that changes with τ (β = k×BDP; the model then has no single β in bytes).
    flags: what the fit cannot explain (diagnostics.py: parameters at a bound, structure over τ);
    structure: the residual-structure test's result, also when it found nothing or could not be run;
    rows, predicted_bps, heldout_bps: the dataset's rows of the table and the predictions at them."""

    key: dict
    model: FirstPrinciplesModel
    errors: dict[int, float] = field(default_factory=dict)
    points: int = 0
    heldout: dict[int, float] = field(default_factory=dict)
    buffer_multiple: float | None = None
    wmax_known: bool = False
    flags: list[dict] = field(default_factory=list)
    structure: dict | None = None
    rows: np.ndarray | None = None          # the table's rows of this dataset
    predicted_bps: np.ndarray | None = None  # in-sample predictions at those rows
    heldout_bps: np.ndarray | None = None    # leave-one-RTT-out predictions at those rows

    def as_dict(self) -> dict:
        params = self.model.get_params()
        settings = {k: params[k] for k in ("capacity_bps", "queue_fill", "startup_rtts", "receiver_report")}
        return {**{k: (v.item() if hasattr(v, "item") else v) for k, v in self.key.items()}, **settings,
                "buffer_bytes_fit": getattr(self.model, "buffer_bytes_", None),
                "buffer_multiple_fit": self.buffer_multiple, "wmax_bytes_fit": self.model.wmax_bytes_,
                "wmax_known": self.wmax_known,
                "points": self.points, "E_percent": {int(k): v for k, v in self.errors.items()},
                "E_mean_percent": float(np.mean(list(self.errors.values()))),
                "E_heldout_percent": {int(k): v for k, v in self.heldout.items()},
                "flagged": bool(self.flags), "flags": self.flags, "residual_structure": self.structure}


def is_missing(v) -> bool:
    """A value the table lacks: NULL (None) or nan."""
    return v is None or (isinstance(v, float) and np.isnan(v))


def lossy(kd: dict) -> bool:
    """Whether a dataset's link drops segments (external loss: a mode and a rate above 0)."""
    rate = kd.get("loss_rate")
    return not is_missing(rate) and float(rate) > 0 and kd.get("loss_mode") not in (None, "none")


def _mode(cols, idx, kd, size=None) -> dict:
    """Per-row model inputs of a dataset: size or duration, loss; model parameters from its key.
    size: the rows' transfer sizes [bytes] (default: the size_bytes column, which holds throughput ×
    duration where no size was configured)."""
    kw, params = {}, {}
    dur = kd.get("duration_target_s")
    if not is_missing(dur):
        kw["duration"] = np.full(idx.size, float(dur))
    else:
        kw["size"] = (cols["size_bytes" if "size_bytes" in cols else "transfer_bytes"][idx].astype(float)
                      if size is None else size)
        delivered = float_column(cols, "delivered_share", idx) if "delivered_share" in cols else None
        if delivered is not None and np.nanmax(delivered, initial=0.0) > 0:
            # runs timed by their delivery of F (iperf.parse): nothing is left unsent in the sender's buffers
            # (framework.py: F − U with U = send_backlog·(Cτ + β)); a mix of both kinds: their share
            params["send_backlog"] = SEND_BACKLOG * (1.0 - float(np.nanmean(delivered)))
    if lossy(kd):
        kw["loss"] = np.full(idx.size, float(kd["loss_rate"]))  # uniform p: by its mean, 1 in 1/p (framework.py)
    mtu = kd.get("mtu")
    if not is_missing(mtu):
        params["mss_bytes"] = mss_bytes(mtu)
    return kw | {"_params": params}


RELATIVE_BOUNDS = (1e-3, 1e3)   # the multiple m of a configured buffer that changes with τ
PHYSICAL_BOUNDS = (1 - 1e-12, 1 + 1e-12)   # m with PHYSICAL_BUFFER: the configured buffer itself


def fit_relative(model: FirstPrinciplesModel, tau, M, n, scale, *, buffer_bounds=RELATIVE_BOUNDS, **kw) -> float:
    """Fit W_max and β = m·scale (scale: the configured buffer per row [bytes]; m within buffer_bounds); sets
    the model's wmax_bytes_ (and residuals_, no buffer_bytes_: β has no single value in bytes) and returns m."""
    m, model.wmax_bytes_, model.residuals_ = fit_buffer_wmax(model, tau, M, n=n, buffer_scale=scale,
                                                             buffer_bounds=buffer_bounds, **kw)
    if hasattr(model, "buffer_bytes_"):
        del model.buffer_bytes_
    return m


def leave_one_out(labels, fit_predict, *, minimum: int = 3) -> np.ndarray:
    """Held-out predictions: for each distinct label (a τ, a buffer setting), fit_predict(train, held)
    predicts the rows `held` (boolean mask) from a fit on the rows `train` (the other labels' rows) only.
    nan everywhere with fewer than `minimum` distinct labels."""
    labels = np.asarray(labels)
    P = np.full(labels.shape, np.nan)
    values = np.unique(labels)
    if values.size < minimum:
        return P
    for v in values:
        held = labels == v
        P[held] = fit_predict(~held, held)
    return P


def leave_one_rtt_out(model: FirstPrinciplesModel, tau, M, n, *, buffer_scale=None, wmax_bounds=WMAX_BOUNDS,
                      startup=None, **kw) -> np.ndarray:
    """Held-out predictions of arrays: for each distinct τ, the model refitted on the other τ predicts it
    (nan everywhere with fewer than 3 distinct τ). buffer_scale: fit β relative to it (fit_relative);
    wmax_bounds: W_max's range [bytes] (fixed_wmax_bounds for a known W_max); startup: the start-up lag
    measured per row (nan: none), re-estimated from the other τ's rows in each fold (startup_rtts_of).
    kw (size, duration, loss per row) are configuration: a size measured per row belongs in fit_profiles,
    which predicts the held-out rows without it."""
    twin = type(model)(**model.get_params())

    def fold(train, held):
        if startup is not None:
            twin.set_params(startup_rtts=startup_rtts_of(startup[train]))
        sub = {k: v[train] for k, v in kw.items()}
        new = {k: v[held] for k, v in kw.items()}
        if buffer_scale is None:
            twin.fit(tau[train], M[train], n=n[train], wmax_bounds=wmax_bounds, **sub)
        else:
            m = fit_relative(twin, tau[train], M[train], n[train], buffer_scale[train], wmax_bounds=wmax_bounds, **sub)
            new["buffer"] = m * buffer_scale[held]
        return twin.predict(tau[held], n=n[held], **new)

    return leave_one_out(tau, fold)


WMAX_KNOWN_REL = 1e-6   # width of the W_max "range" when it is known (the fit needs low < high)


def fixed_wmax_bounds(wmax_bytes: float) -> tuple[float, float]:
    """W_max bounds that fix it (up to 1e-6 relative) for fit_buffer_wmax."""
    return (wmax_bytes * (1 - WMAX_KNOWN_REL), wmax_bytes)


def float_column(cols, name, idx=slice(None)) -> np.ndarray | None:
    """An optional per-row column of the rows idx as floats (nan where missing), None without the column."""
    if name not in cols:
        return None
    return np.array([np.nan if is_missing(x) else float(x) for x in cols[name][idx]])


def positive_column(cols, name, idx) -> np.ndarray | None:
    """An optional per-row column [bytes] of the dataset's rows, when every row has a positive value."""
    v = float_column(cols, name, idx)
    return v if v is not None and np.all(np.isfinite(v) & (v > 0)) else None


def _known_wmax(cols, idx) -> float | None:
    """W_max per flow [bytes] when the dataset's window limit is known (autotuned buffers: the kernel's
    maximum, window_limit_bytes; at least half of it is window), else None (fitted)."""
    lim = positive_column(cols, "window_limit_bytes", idx)
    return None if lim is None else float(lim.min()) / 2


def startup_rtts_of(per_row) -> float:
    """The start-up lag d [RTTs] a fit uses: the median of the rows' measured lags (each a configuration's
    median over its runs, _STARTUP_SQL), 0 (the paper's slow start) where none was measured."""
    v = np.asarray(per_row, float)
    v = v[np.isfinite(v)]
    return float(np.clip(np.median(v), 0.0, 64.0)) if v.size else 0.0


def _relative_scale(cols, idx) -> np.ndarray | None:
    """The configured buffer per row [bytes] when it changes across the rows (k×BDP), else None."""
    cfg = positive_column(cols, "configured_buffer_bytes", idx)
    return None if cfg is None or np.ptp(cfg) <= 1e-9 * cfg.max() else cfg


def datasets(table, keys=DATASET_KEYS) -> list[tuple[dict, np.ndarray]]:
    """The datasets fit_profiles fits, in its order: (key as a dict of `keys`, row indices). Rows with a
    variant that has no model are left out."""
    cols = as_columns(table)
    keys = [k for k in keys if k in cols]
    groups: dict[tuple, list[int]] = {}
    for i in range(len(cols["variant"])):
        if str(cols["variant"][i]).lower() in MODELS:
            groups.setdefault(tuple(cols[k][i] for k in keys), []).append(i)
    return [(dict(zip(keys, key)), np.asarray(idx))
            for key, idx in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0])))]


@dataclass
class RowsFit:
    """A model fitted on some rows of a table (fit_rows), with what predict_rows needs to predict other
    rows from their configuration alone: β as a multiple of the configured buffer (or in bytes), the
    median training size for rows without a configured size, the parameters' ranges (for flags)."""

    model: FirstPrinciplesModel
    multiple: float | None
    wmax_known: bool
    size_bytes: float | None
    bounds: dict


def fit_rows(cols, kd, rows, *, lags=None, lag_pool=None, relative: bool | None = None,
             **model_params) -> RowsFit:
    """Fit the variant's model (β, W_max) on the rows `rows` of the table `cols` only (every value read
    here is of those rows, or of lag_pool). kd: the dataset key (variant, rate, duration, loss, MTU).
    lags: the start-up lag per row of the table (nan: not measured); a fit whose rows have none takes
    the median of lag_pool (the lags of the table's rows the caller allows: never a held-out one).
    relative: fit β = m × the configured buffer (None: when the configured buffer changes over the rows).
    PHYSICAL_BUFFER in model_params: β is the configured buffer where every row has one, else fitted (RowsFit
    then has multiple None or not 1: the caller says so, physical_buffer_missing)."""
    kw = _mode(cols, rows, kd)
    model_params = dict(model_params)
    physical = bool(model_params.pop(PHYSICAL_BUFFER, False))
    startup = None
    if lags is not None:
        own = lags[rows]
        startup = startup_rtts_of(own if np.isfinite(own).any() else lag_pool)
    params = {**kw.pop("_params"), "queue_fill": True, "receiver_report": True,   # -t and -n: iperf3's receiver
              **({} if startup is None else {"startup_rtts": startup}), **model_params}
    cap = positive_column(cols, "capacity_bps", rows)
    capacity = float(np.mean(cap)) if cap is not None else float(kd["rate_bps"])
    model = make_model(str(kd["variant"]), capacity_bps=capacity, **params)
    tau = cols["rtt_s"][rows].astype(float)
    n = cols["streams"][rows].astype(float)
    M = cols["throughput_bps"][rows].astype(float)
    scale = (_relative_scale(cols, rows) if relative is None
             else positive_column(cols, "configured_buffer_bytes", rows) if relative else None)
    known = _known_wmax(cols, rows)
    wb = WMAX_BOUNDS if known is None else fixed_wmax_bounds(known)
    configured = positive_column(cols, "configured_buffer_bytes", rows) if physical else None
    if configured is not None:   # β = the configured buffer: m = 1 within rounding, no bound to report
        scale = configured       # (a dataset without it, e.g. a remote host's links: β fitted as below)
        fit_relative(model, tau, M, n, scale, buffer_bounds=PHYSICAL_BOUNDS, wmax_bounds=wb, **kw)
        multiple, bounds = 1.0, {}
    elif scale is None:
        model.fit(tau, M, n=n, wmax_bounds=wb, **kw)
        multiple, bounds = None, {"β": BUFFER_BOUNDS}
    else:
        multiple, bounds = fit_relative(model, tau, M, n, scale, wmax_bounds=wb, **kw), {"β": RELATIVE_BOUNDS}
    if known is None:
        bounds["W_max"] = WMAX_BOUNDS
    size = float(np.median(kw["size"])) if "size" in kw else None
    return RowsFit(model, multiple, known is not None, size, bounds)


def physical_buffer_missing(fits, model_params: dict) -> list:
    """The fits of a configuration that takes β as the configured buffer (PHYSICAL_BUFFER) that had to fit it:
    their rows carry no configured buffer (a remote host's links)."""
    return [f for f in fits if model_params.get(PHYSICAL_BUFFER) and f.buffer_multiple != 1.0]


def predict_rows(fit: RowsFit, cols, kd, rows, *, own_sizes: bool = False) -> np.ndarray:
    """The fitted model's throughput [bit/s] at the rows `rows`, from their configuration only: τ, n, the
    configured buffer, the configured size or duration, loss. A row without a configured size (size
    measured as throughput × duration) takes the fit's median training size, unless own_sizes (in-sample)."""
    size = None
    if is_missing(kd.get("duration_target_s")) and not own_sizes:
        size = float_column(cols, "transfer_bytes", rows)
        size = np.where(np.isfinite(size), size, fit.size_bytes)
    kw = _mode(cols, rows, kd, size=size)
    kw.pop("_params")
    if fit.multiple is not None:
        kw["buffer"] = fit.multiple * cols["configured_buffer_bytes"][rows].astype(float)
    tau = cols["rtt_s"][rows].astype(float)
    return fit.model.predict(tau, n=cols["streams"][rows].astype(float), **kw)


def fit_flags(fit: RowsFit, tau, residuals, strata) -> tuple[list[dict], dict]:
    """(flags, structure test) of a fit: its parameters at a bound, residuals with structure over τ."""
    values = {"β": fit.multiple if fit.multiple is not None else getattr(fit.model, "buffer_bytes_", None),
              "W_max": fit.model.wmax_bytes_}
    bound = [at_bound(name, values[name], lim) for name, lim in fit.bounds.items()]
    structure = residual_structure(tau, residuals, strata)
    return flags_of(bound, structure), structure


def _per_stream(n, M, P) -> dict[int, float]:
    return {int(s): mean_relative_error(M[n == s], P[n == s]) for s in np.unique(n)}


def params_for(kd: dict, model_params: dict, variant_params: dict | None) -> dict:
    """The parameters of a dataset's model: model_params, then its variant's own (variant_params; on a lossy
    link without what its loss epochs do not model, configurations.UNMODELLED_WITH_LOSS)."""
    return {**model_params, **variant_parameters(str(kd["variant"]), variant_params, lossy=lossy(kd))}


def fit_profiles(table, *, heldout: bool = True, variant_params: dict | None = None, **model_params
                 ) -> list[DatasetFit]:
    """Fit β and W_max per dataset (same variant, rate, buffer, socket buffer, transfer size or duration,
    loss, MTU) and report E per stream count, in-sample and leave-one-RTT-out. Rows with a variant that
    has no model are skipped. A configured buffer that changes with τ is fitted as a multiple of it.

    What the model is compared with is what was measured (docs/models.md, "Fitting measured runs"): C is
    the link's payload ceiling (capacity_bps: rate × MSS/(MTU + 38) on the emulated link, else the rate);
    loss at W = Cτ + β (queue_fill=True); the slow start's start-up lag measured from the runs' first
    intervals (startup_rtts); duration-mode runs as iperf3's receiver reports them (receiver_report=True).
    model_params override any of these (e.g. queue_fill=False: the paper's Eq. (8)); variant_params adds
    parameters for one variant's datasets only ({"htcp": {"rtt_scaling": True}}).

    Held out (leave-one-RTT-out): the fold's fit reads only rows at the other RTTs — the lag pooled over
    the other datasets included — and predicts the held-out rows from their configuration alone."""

    cols = as_columns(table)
    base_params = model_params
    lags = None if "startup_rtts" in model_params else float_column(cols, "startup_rtts")
    rtt_all = cols["rtt_s"].astype(float)
    fits = []
    for kd, idx in datasets(cols):
        model_params = params_for(kd, base_params, variant_params)
        tau = rtt_all[idx]
        n = cols["streams"][idx].astype(float)
        M = cols["throughput_bps"][idx].astype(float)
        whole = fit_rows(cols, kd, idx, lags=lags, lag_pool=lags, **model_params)
        P = predict_rows(whole, cols, kd, idx, own_sizes=True)

        def fold(train, held, kd=kd, idx=idx, relative=whole.multiple is not None, params=model_params):
            pool = None if lags is None else lags[~np.isin(rtt_all, rtt_all[idx[held]])]
            part = fit_rows(cols, kd, idx[train], lags=lags, lag_pool=pool, relative=relative, **params)
            return predict_rows(part, cols, kd, idx[held])

        H = leave_one_out(tau, fold) if heldout else np.full(M.shape, np.nan)
        flags, structure = fit_flags(whole, tau, (M - P) / M, n)
        fits.append(DatasetFit(key=kd, model=whole.model, errors=_per_stream(n, M, P), points=idx.size,
                               heldout=_per_stream(n, M, H), buffer_multiple=whole.multiple,
                               wmax_known=whole.wmax_known, flags=flags, structure=structure, rows=idx,
                               predicted_bps=P, heldout_bps=H))
    return fits


def fit_table_from_store(con, *, campaigns=None, exclude_flagged: bool = False) -> dict[str, np.ndarray]:
    """The fits' profile table from a store (store.reads.fit_table), with the start-up lag measured for
    slow start from IW = INITIAL_WINDOW segments of MTU − TCP_IP_HEADERS bytes (DEFAULT_MSS without an MTU)."""
    return fit_table(con, campaigns=campaigns, exclude_flagged=exclude_flagged, initial_window=INITIAL_WINDOW,
                     tcp_ip_headers=TCP_IP_HEADERS, default_mss=DEFAULT_MSS)
