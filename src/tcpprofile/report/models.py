"""Model vs measurement (tcp-models-high-bdp Figs. 6–8, with the average error E of §V).

The fits are `tcpprofile model fit`'s: the same profile table (models.fit_table_from_store), the same
datasets, the same fitting path (models.fit_profiles: β in bytes, or β = m × the configured buffer
on k×BDP links) and the same model configuration (ReportData.model_config: `model fit`'s default, the
validated one), so a panel's E is the E `model fit` prints for that dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import models
from .. import units
from .common import G, Figure, Note, Section, label, pick, runs_phrase, save, subplots
from .data import ReportData

MAX_DATASETS = 6     # model fits cost ~1 s each: the datasets with the most runs


def _grid_inputs(fit, table, tau_s, grid_s) -> dict:
    """predict() keywords on an RTT grid: duration or interpolated size, and β as fitted."""
    d = table["duration_target_s"][0]
    kw = ({"duration": float(d)} if d is not None and d == d
          else {"size": np.interp(grid_s, tau_s, table["size_bytes"].astype(float))})
    if fit.buffer_multiple is not None:   # β = m × the configured buffer (k×BDP: linear in τ)
        cfg = table["configured_buffer_bytes"].astype(float)
        kw["buffer"] = fit.buffer_multiple * np.interp(grid_s, tau_s, cfg)
    return kw


def model_curve(fit, rows: dict, n: int, points: int = 80):
    """One stream count of a fitted dataset: (τ in ms, measured bit/s) sorted by τ, and the model on a grid
    of `points` RTTs spanning them (grid ms, predicted bit/s)."""
    one = {c: v[rows["streams"].astype(int) == n] for c, v in rows.items()}
    order = np.argsort(one["rtt_s"].astype(float))
    one = {c: v[order] for c, v in one.items()}
    tau = one["rtt_s"].astype(float)
    grid = np.linspace(tau[0], tau[-1], points)
    predicted = fit.model.predict(grid, n=n, **_grid_inputs(fit, one, tau, grid))
    return tau * 1e3, one["throughput_bps"].astype(float), grid * 1e3, predicted   # ms: the figures' axis


def link_buffer(key) -> str:
    """The bottleneck buffer as the spec wrote it ("BDP") or, for a byte count, in bytes."""
    b = str(key.get("buffer"))
    return units.fmt_bytes(int(b)) if b.isdigit() else b


def _beta(fit, key) -> str:
    if fit.buffer_multiple is not None:
        return f"β={fit.buffer_multiple:.3g}×{link_buffer(key)}"
    return f"β={units.fmt_bytes(fit.model.buffer_bytes_)}"


def _verdict(fit) -> str:
    """What the fit cannot explain (models.diagnostics), in words: every flag, or the structure test's verdict."""
    if fit.flags:
        return "FLAGGED: " + "; ".join(f["text"] for f in fit.flags)
    return fit.structure["text"]


def model_vs_measurement(data: ReportData, out: Path) -> Section:
    table = data.model_table
    candidates = []   # (runs, key, row indices) of datasets with at least 3 RTTs
    for key, idx in data.model_datasets:
        if np.unique(table["rtt_s"][idx]).size >= 3:
            candidates.append((int(table["runs"][idx].sum()), key, idx))
    known = {str(v).lower() for v in table["variant"]} & set(models.MODELS)
    skipped = sorted({str(v) for v in table["variant"] if str(v).lower() not in models.MODELS})
    if not candidates:
        return Section("models", "Model vs measurement", "tcp-models-high-bdp Figs. 6–8", [Note(
            "Model vs measurement", "no loss-free profile with at least 3 measured RTTs of a modelled variant "
            f"({', '.join(sorted(set(models.MODELS)))})" + (f"; runs of {', '.join(sorted(known))} have fewer"
                                                            if known else ""))])
    candidates.sort(key=lambda c: -c[0])
    chosen = candidates[:MAX_DATASETS]
    fig, axes = subplots(len(chosen), sharey=False)
    errors, runs = [], 0
    for ax, (n_runs, key, idx) in zip(axes, chosen):
        rows = {k: v[idx] for k, v in table.items()}
        fit = data.model_fit(idx)    # `model fit`'s path, this dataset's rows (fitted once per report)
        runs += n_runs
        n = rows["streams"].astype(int)
        for k, s in enumerate(pick(set(n.tolist()), 4)):
            tau, measured, grid, pred = model_curve(fit, rows, s)
            ax.plot(tau, measured / G, "o", color=f"C{k}", ms=4, label=f"n={s} measured")
            ax.plot(grid, pred / G, "-", color=f"C{k}", lw=1, label=f"model, E={fit.errors[s]:.1f} %")
        sock = units.fmt_buffer(None if key.get("socket_buffer_bytes") is None
                              or key["socket_buffer_bytes"] != key["socket_buffer_bytes"]
                              else int(key["socket_buffer_bytes"]))
        label(ax, f"{key['variant']}, B={sock}, link β={link_buffer(key)}" + (" — FLAGGED" if fit.flags else ""),
              "RTT (ms)", "throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=6)
        d = fit.as_dict()
        errors.append(f"{key['variant']} B={sock}: E={d['E_mean_percent']:.1f} % (fitted {_beta(fit, key)}, "
                      f"W_max={units.fmt_bytes(d['wmax_bytes_fit'])}; {_verdict(fit)})")
    name = "models"
    left = len(candidates) - len(chosen)
    caption = (f"Mean measured throughput (points) against the variant's first-principles model (lines, "
               f"tcpprofile.models) fitted as `tcpprofile model fit` fits it, {data.model_config_text()}: W_max "
               f"and, unless the configuration takes β as the link's configured buffer, β per dataset over all "
               f"its stream counts and RTTs (β as a multiple of the configured buffer where that changes with "
               f"τ, k×BDP); E = 100/|RTTs|·Σ|M−P|/M per stream count, as `model fit` prints it. A fit is FLAGGED "
               f"when a fitted parameter sits at the end of its range or its residuals have a trend or bend over τ "
               f"(stratified rank test, level 5 %; docs/models.md): the model does not explain those runs. "
               f"{'; '.join(errors)}. {runs_phrase(runs)} (loss-free runs only).")
    if left:
        caption += f" {left} further dataset(s) with fewer runs not shown."
    if skipped:
        caption += f" No model for: {', '.join(skipped)}."
    return Section("models", "Model vs measurement", "tcp-models-high-bdp Figs. 6–8",
                   [Figure(name, "Model vs measurement", caption, runs, save(fig, out, name))])


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {"model_vs_measurement": (120, model_vs_measurement)}
