"""The validation protocol (docs/models.md, "Validation protocol"): E in-sample, leave-one-RTT-out and
leave-one-buffer-out per (variant, n), for the first-principles models and, beside them, the generic
ramp-up/sustainment model of HPDC'17 §3 (generic.py) fitted the same way, as the baseline to beat.

* First-principles: in-sample and leave-one-RTT-out are fit_profiles' (one fit per dataset: variant,
  link buffer setting, size or duration, …, over its RTTs and stream counts). Leave-one-buffer-out fits
  β = m × the configured buffer, one m and W_max shared by the buffer settings of a (variant, n, …) cell
  (the dataset key without the buffer, with n), on all its runs but one buffer setting's, and predicts
  that setting's rows from their configuration alone (fit.fit_rows / fit.predict_rows; the lag pooled
  without that setting).
* Baseline: per stream count n (the generic model has no streams: its initial window is n·10 segments),
  GenericModel.fit on the runs' aggregate iperf3 intervals (§3: T_R, θ̄_R, θ̄_S per run), over a
  dataset's RTTs (in-sample), over the other RTTs (leave-one-RTT-out) or over the other buffer settings
  (leave-one-buffer-out: it has no β, so this is its pooled fit), predicting the held-out rows from τ and
  the configured size (generic.transfer_throughput) or duration. No intervals stored: no baseline (nan).
* E = 100·mean |M − P|/M over the (τ, buffer) configurations of a (group, n) cell; nan when one of them
  has no prediction (fewer than 3 RTTs, or 2 buffer settings, to hold one out).
* The sampling floor (`sampling_floor`): the E that a model predicting every configuration's true mean would show
  on the sample at hand, in expectation — the part of E the runs' own spread makes, whatever the model.
* By novelty (`by_novelty`, issue 31): the same predictions' E per (variant, n, novelty group), the group saying
  how far a configuration is from the development design (models/novelty.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .diagnostics import short
from ..packet_overhead import mss_bytes
from ..store import reads
from ..units import to_ms
from .configurations import configuration
from .fit import (DATASET_KEYS, DEFAULT_MSS, float_column, is_missing, params_for,
                  positive_column, as_columns, datasets, fit_flags, fit_profiles, fit_rows, leave_one_out,
                  predict_rows)
from .generic import GenericModel, transfer_throughput

GROUP_KEYS = tuple(k for k in DATASET_KEYS if k not in ("buffer", "buffer_bytes"))
CELL_KEYS = GROUP_KEYS + ("streams",)   # a cell, and leave-one-buffer-out's shared fit: one (variant, n, …)
ROW_KEYS = ("variant", "streams", "rtt_s", "rate_bps", "buffer", "socket_buffer_bytes", "transfer_bytes",
            "duration_target_s", "loss_mode", "loss_rate", "mtu")   # PROFILE_SQL's configuration
MODES = ("in", "rtt", "buffer")   # in-sample, leave-one-RTT-out, leave-one-buffer-out


@dataclass
class Cell:
    """One (group, n) line of the validation table: E [%] per mode for the first-principles model and
    the generic baseline, what was fitted, and every flag of the fits behind it."""

    key: dict
    streams: int
    configs: int
    runs: int
    buffers: list[str]
    rtts: list[float]
    model: dict[str, float]
    baseline: dict[str, float]
    params: list[dict] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    codes: str = "-"
    floor: float = float("nan")   # sampling_floor [%] of the cell's configurations

    def as_dict(self) -> dict:
        key = {k: (v.item() if hasattr(v, "item") else v) for k, v in self.key.items()}
        return {**key, "streams": self.streams, "configurations": self.configs, "runs": self.runs,
                "buffers": self.buffers, "rtts_ms": self.rtts, "E_model_percent": _finite(self.model),
                "E_baseline_percent": _finite(self.baseline),
                "E_sampling_floor_percent": _finite({"": self.floor})[""], "parameters": self.params,
                "flags": self.flags, "flagged": bool(self.flags)}


def _finite(errors: dict[str, float]) -> dict[str, float | None]:
    """E per mode for JSON: None where it could not be computed (nan)."""
    return {k: (v if v == v else None) for k, v in errors.items()}


def _error(measured, predicted) -> float:
    """E [%] = 100·mean|M − P|/M (§V) over configurations; nan when one of them has no prediction."""
    return (float(100 * np.mean(np.abs(measured - predicted) / measured)) if np.all(np.isfinite(predicted))
            else float("nan"))


def sampling_floor(mean_bps, std_bps, runs) -> float:
    """E [%] that a model predicting every configuration's true mean μ would show on this sample, in expectation:
    100·mean over configurations of E|x̄ − μ|/x̄. For k normal runs E|x̄ − μ| = σ·√(2/(πk)), with σ estimated
    without bias by s/c4(k), c4(k) = √(2/(k − 1))·Γ(k/2)/Γ((k − 1)/2) (s the sample standard deviation); for
    k = 2 this is |x1 − x2|/2. A model's E at or near it is limited by the runs, not by the model. nan when a
    configuration has fewer than 2 runs (no spread to read)."""
    m, s, k = (np.asarray(a, dtype=float) for a in (mean_bps, std_bps, runs))
    if m.size == 0 or np.any(k < 2) or not np.all(np.isfinite(s)):
        return float("nan")
    c4 = np.array([math.sqrt(2 / (j - 1)) * math.exp(math.lgamma(j / 2) - math.lgamma((j - 1) / 2)) for j in k])
    return float(100 * np.mean(s / c4 * np.sqrt(2 / (np.pi * k)) / m))


def _label(v) -> str:
    return "none" if is_missing(v) else str(v)


def _row_key(values) -> tuple:
    """Configuration values comparable between the profile table and SQL rows (numbers as rounded floats)."""
    return tuple(None if is_missing(v) else round(float(v), 9) if isinstance(v, (int, float, np.integer, np.floating))
                 else str(v) for v in values)


def load_traces(con, cols, *, campaigns=None, exclude_flagged: bool = False) -> dict[int, list]:
    """Per row of the profile table: the aggregate (all streams) iperf3 interval rates [bit/s] of each of
    its runs, with the interval length dt [s] — (rates, dt) pairs. The final interval is dropped when
    shorter than half of dt (a partial one). Empty where the store keeps no intervals."""
    index = {_row_key(cols[k][i] for k in ROW_KEYS): i for i in range(len(cols["variant"]))}
    out: dict[int, list] = {}
    for row in reads.run_interval_lists(con, campaigns=campaigns, exclude_flagged=exclude_flagged):
        i = index.get(_row_key(row[:len(ROW_KEYS)]))
        lens, data = np.asarray(row[-3], float), np.asarray(row[-2], float)
        if i is None or lens.size < 2:
            continue
        dt = float(np.median(lens))
        keep = lens > 0
        if lens[-1] < 0.5 * dt:
            keep[-1] = False
        out.setdefault(i, []).append((8.0 * data[keep] / lens[keep], dt))
    return out


def _baseline(cols, kd, train, held, traces) -> np.ndarray:
    """The generic model fitted on the runs of rows `train` (one stream count), predicting rows `held`
    from τ and the configured size or duration; nan without traces at 2 RTTs."""
    runs = [(cols["rtt_s"][i], x, dt) for i in train for x, dt in traces.get(i, [])]
    if len({r[0] for r in runs}) < 2:
        return np.full(held.size, np.nan)
    n = int(cols["streams"][train[0]])
    mtu = kd.get("mtu")
    cap = positive_column(cols, "capacity_bps", train)
    model = GenericModel(capacity_bps=float(np.mean(cap)) if cap is not None else float(kd["rate_bps"]),
                         mss_bytes=DEFAULT_MSS if is_missing(mtu) else mss_bytes(mtu), initial_window=10 * n)
    model.fit(np.array([r[0] for r in runs]), [r[1] for r in runs], dt=float(np.median([r[2] for r in runs])))
    tau = cols["rtt_s"][held].astype(float)
    dur = kd.get("duration_target_s")
    if not is_missing(dur):
        model.duration_s_ = float(dur)            # T_O is the configured duration
        return model.predict(tau)
    size = float_column(cols, "transfer_bytes", held)
    if not np.all(np.isfinite(size)):             # no configured size: the training runs' median
        size = np.where(np.isfinite(size), size, np.median(cols["size_bytes"][train].astype(float)))
    return transfer_throughput(model, tau, size)


def _per_n(labels, idx, cols, fn, minimum: int = 3) -> np.ndarray:
    """fn(train, held) applied per stream count of the rows idx, leaving out one label at a time (at
    least `minimum` labels), or in-sample with labels None."""
    out = np.full(idx.size, np.nan)
    n = cols["streams"][idx]
    for s in np.unique(n):
        sub = idx[n == s]
        if labels is None:
            out[n == s] = fn(sub, sub)
        else:
            lab = labels[n == s]
            out[n == s] = leave_one_out(lab, lambda tr, he: fn(sub[tr], sub[he]), minimum=minimum)
    return out


@dataclass
class Validation:
    """The validation table (cells) and the predictions behind it: per mode (MODES), one value per row of
    the profile table [bit/s], for the first-principles model (model) and the generic baseline."""

    cells: list[Cell]
    model: dict[str, np.ndarray]
    baseline: dict[str, np.ndarray]
    configuration: str = "paper"


def validate(table, traces: dict | None = None, *, config: str = "paper") -> Validation:
    """The validation table of a profile table (fit_table_from_store) and its runs' traces (load_traces),
    every first-principles fit (in-sample, leave-one-RTT-out, leave-one-buffer-out) with the model
    configuration `config` (models/configurations.py; as fit_profiles, the paper's rule unless named: `model
    validate` names DEFAULT_CONFIGURATION when given none)."""
    model_params, variant_params = configuration(config)
    cols = as_columns(table)
    traces = traces or {}
    rows = len(cols["variant"])
    P = {m: np.full(rows, np.nan) for m in MODES}
    B = {m: np.full(rows, np.nan) for m in MODES}
    lags = float_column(cols, "startup_rtts")
    buf = np.array([_label(b) for b in cols.get("buffer", cols.get("buffer_bytes", np.full(rows, None)))])
    rtt = cols["rtt_s"].astype(float)
    params: dict[tuple, list] = {}
    flags: dict[tuple, list] = {}
    fits = fit_profiles(cols, variant_params=variant_params, **model_params)
    for f in fits:
        P["in"][f.rows], P["rtt"][f.rows] = f.predicted_bps, f.heldout_bps
        g = _row_key(f.key.get(k) for k in GROUP_KEYS if k in cols)
        d = f.as_dict()
        params.setdefault(g, []).append({"buffer": _label(f.key.get("buffer", f.key.get("buffer_bytes"))),
                                         "beta_multiple": f.buffer_multiple, "beta_bytes": d["buffer_bytes_fit"],
                                         "wmax_bytes": f.model.wmax_bytes_, "wmax_known": f.wmax_known,
                                         "startup_rtts": float(f.model.startup_rtts)})
        flags.setdefault(g, []).extend(f"β setting {params[g][-1]['buffer']}: {x['text']}" for x in f.flags)
        for s in {int(v) for v in cols["streams"][f.rows]}:
            flags.setdefault(g + (s,), []).append(short(f.flags, f.structure))
        r_rtt = rtt[f.rows]
        B["in"][f.rows] = _per_n(None, f.rows, cols, lambda tr, he, kd=f.key: _baseline(cols, kd, tr, he, traces))
        B["rtt"][f.rows] = _per_n(r_rtt, f.rows, cols, lambda tr, he, kd=f.key: _baseline(cols, kd, tr, he, traces))
    cells = []
    std = float_column(cols, "std_bps")   # the runs' spread per configuration (the sampling floor's)
    for kd, idx in datasets(cols, CELL_KEYS):
        g = _row_key(kd.get(k) for k in GROUP_KEYS if k in cols)
        mparams = params_for(kd, model_params, variant_params)

        def fold(train, held, kd=kd, idx=idx, mparams=mparams):
            pool = None if lags is None else lags[buf != buf[idx[held]][0]]
            part = fit_rows(cols, kd, idx[train], lags=lags, lag_pool=pool, relative=True, **mparams)
            return predict_rows(part, cols, kd, idx[held])

        P["buffer"][idx] = leave_one_out(buf[idx], fold, minimum=2)
        B["buffer"][idx] = _per_n(buf[idx], idx, cols, lambda tr, he, kd=kd: _baseline(cols, kd, tr, he, traces),
                                  minimum=2)
        pooled = fit_rows(cols, kd, idx, lags=lags, lag_pool=lags, relative=True, **mparams)
        M = cols["throughput_bps"][idx].astype(float)
        n = cols["streams"][idx].astype(float)
        pooled_flags, structure = fit_flags(pooled, rtt[idx], (M - predict_rows(pooled, cols, kd, idx,
                                                                                     own_sizes=True)) / M,
                                            n * 1e6 + np.unique(buf[idx], return_inverse=True)[1])
        shared = {"buffer": "shared", "beta_multiple": pooled.multiple,
                  "beta_bytes": getattr(pooled.model, "buffer_bytes_", None), "wmax_bytes": pooled.model.wmax_bytes_,
                  "wmax_known": pooled.wmax_known, "startup_rtts": float(pooled.model.startup_rtts)}
        for s in np.unique(n):
            sel = idx[n == s]
            Ms = cols["throughput_bps"][sel].astype(float)

            def E(pred, sel=sel, Ms=Ms):
                return _error(Ms, pred[sel])

            words = flags.get(g, []) + [f"shared β (leave-one-buffer-out's fit): {x['text']}" for x in pooled_flags]
            shared_code = short(pooled_flags, structure)
            codes = ",".join(dict.fromkeys(c for c in flags.get(g + (int(s),), []) + [f"shared:{shared_code}"]
                                           if c not in ("-", "shared:-"))) or "-"
            runs = cols["runs"][sel] if "runs" in cols else np.ones(sel.size)
            floor = sampling_floor(Ms, std[sel], runs) if std is not None else float("nan")
            cells.append(Cell(kd, int(s), int(sel.size), int(np.sum(runs.astype(float))), sorted(set(buf[sel])),
                              sorted(set(to_ms(rtt[sel]).tolist())), {m: E(P[m]) for m in MODES},
                              {m: E(B[m]) for m in MODES}, params.get(g, []) + [shared], words, codes, floor))
    cells.sort(key=lambda c: (tuple(str(c.key.get(k)) for k in GROUP_KEYS), c.streams))
    return Validation(cells, P, B, config)


@dataclass
class NoveltyRow:
    """One line of `model validate --by-novelty`: the configurations of a (variant, n) in one novelty group
    (models/novelty.py), with E [%] per named prediction and mode."""

    variant: str
    streams: int
    group: str
    distance: tuple[int, int]       # the fewest and most dimensions its configurations differ in (novelty.distance)
    configs: int
    runs: int
    errors: dict[str, dict[str, float]]

    def as_dict(self) -> dict:
        return {"variant": self.variant, "streams": self.streams, "group": self.group,
                "distance": list(self.distance), "configurations": self.configs, "runs": self.runs,
                "E_percent": {k: _finite(v) for k, v in self.errors.items()}}


def by_novelty(table, predictions: dict[str, dict[str, np.ndarray]], development,
               modes: tuple[str, ...] = MODES) -> list[NoveltyRow]:
    """E per (variant, n, novelty group) of a profile table: predictions maps a name (a configuration, the baseline)
    to one prediction per row and mode (Validation.model / .baseline); development: the development design's cells
    (novelty.development_cells). E = 100·mean|M − P|/M over the group's configurations, nan when one of them has no
    prediction (as the validation table's E)."""
    from .novelty import cells_of_table, distance, group

    cols = as_columns(table)
    found = [distance(c, development) for c in cells_of_table(cols)]
    label = np.array([group(*d) for d in found])
    dist = np.array([d[0] for d in found])
    M = cols["throughput_bps"].astype(float)
    runs = cols["runs"].astype(float) if "runs" in cols else np.ones(M.size)
    out = []
    keys = sorted({(str(v), int(n), g) for v, n, g in zip(cols["variant"], cols["streams"], label)},
                  key=lambda k: (k[0], k[1], int(dist[label == k[2]].min()), k[2]))
    for v, n, g in keys:
        sel = (cols["variant"] == v) & (cols["streams"] == n) & (label == g)

        def E(p, sel=sel):
            return _error(M[sel], p[sel])

        out.append(NoveltyRow(v, n, str(g), (int(dist[sel].min()), int(dist[sel].max())), int(sel.sum()),
                              int(runs[sel].sum()), {name: {m: E(P[m]) for m in modes}
                                                     for name, P in predictions.items()}))
    return out
