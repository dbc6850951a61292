"""Model vs measurement (tcp-models-high-bdp Figs. 6–8, with the average error E of §V)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import models
from .. import select as sel
from .common import G, Figure, Note, Section, label, pick, runs_phrase, save, subplots
from .data import ReportData

MAX_DATASETS = 6     # model fits cost ~1 s each: the datasets with the most runs


def _table(profiles: list[sel.Profile], cond: dict) -> dict[str, np.ndarray]:
    """The models' profile table (tcpprofile.models.fit: one row per configuration and RTT)."""
    rows = []
    for p in profiles:
        for t, s in zip(p.rtts_ms, p.samples):
            mean = float(s.mean())
            size = cond["transfer_bytes"] or mean * (cond["duration_s"] or 0) / 8     # F = Θ·T  [bytes]
            rows.append({"variant": p.config.variant, "streams": p.config.streams, "rtt_ms": t,
                         "rate_bps": float(cond["rate_bps"]), "buffer_bytes": None,   # β is fitted
                         "socket_buffer_bytes": p.config.buffer_bytes, "transfer_bytes": cond["transfer_bytes"],
                         "size_bytes": size, "throughput_bps": mean,
                         "duration_target_s": None if cond["transfer_bytes"] else cond["duration_s"]})
    return {k: np.array([r[k] for r in rows], dtype=object if k in ("buffer_bytes", "socket_buffer_bytes",
                                                                      "transfer_bytes") else None)
            for k in rows[0]}


def model_vs_measurement(data: ReportData, out: Path) -> Section:
    candidates = []   # (runs, group, profiles of one dataset)
    skipped = set()
    for g in data.groups:
        c = g.conditions
        if c["loss_mode"] != "none" or not c["rate_bps"] or not (c["transfer_bytes"] or c["duration_s"]):
            continue
        datasets: dict[tuple, list[sel.Profile]] = {}
        for p in g.profiles:
            if p.config.variant.lower() not in models.MODELS:
                skipped.add(p.config.variant)
            elif len(p.rtts_ms) >= 3:
                datasets.setdefault((p.config.variant, p.config.buffer_bytes), []).append(p)
        candidates += [(sum(p.runs for p in ps), g, ps) for ps in datasets.values()]
    if not candidates:
        return Section("models", "Model vs measurement", "tcp-models-high-bdp Figs. 6–8", [Note(
            "Model vs measurement", "no loss-free profile with at least 3 measured RTTs of a modelled variant "
            f"({', '.join(sorted(set(models.MODELS)))})")])
    candidates.sort(key=lambda c: -c[0])
    chosen = candidates[:MAX_DATASETS]
    fig, axes = subplots(len(chosen), sharey=False)
    errors, runs = [], 0
    for ax, (n_runs, g, ps) in zip(axes, chosen):
        (fit,) = models.fit_profiles(_table(ps, g.conditions), heldout=False)
        runs += n_runs
        ns = pick({p.config.streams for p in ps}, 4)
        for k, p in enumerate(sorted((p for p in ps if p.config.streams in ns), key=lambda p: p.config.streams)):
            tau = np.asarray(p.rtts_ms)
            sizes = (np.full(len(tau), float(g.conditions["transfer_bytes"])) if g.conditions["transfer_bytes"]
                     else p.means * g.conditions["duration_s"] / 8)
            grid = np.linspace(tau[0], tau[-1], 80)
            mode = ({"size": np.interp(grid, tau, sizes)} if g.conditions["transfer_bytes"]
                    else {"duration": float(g.conditions["duration_s"])})  # iperf3 -t: the model's duration mode
            pred = fit.model.predict(grid / 1e3, n=p.config.streams, **mode)
            ax.plot(tau, p.means / G, "o", color=f"C{k}", ms=4, label=f"n={p.config.streams} measured")
            ax.plot(grid, pred / G, "-", color=f"C{k}", lw=1, label=f"model, E={fit.errors[p.config.streams]:.1f} %")
        cfg = ps[0].config
        label(ax, f"{cfg.variant}, B={sel.fmt_buffer(cfg.buffer_bytes)}",
              "RTT (ms)", "throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=6)
        d = fit.as_dict()
        errors.append(f"{cfg.label().split(' n=')[0]} B={sel.fmt_buffer(cfg.buffer_bytes)}: "
                      f"E={d['E_mean_percent']:.1f} % (fitted β={sel.fmt_bytes(d['buffer_bytes_fit'])}, "
                      f"W_max={sel.fmt_bytes(d['wmax_bytes_fit'])})")
    name = "models"
    left = len(candidates) - len(chosen)
    caption = (f"Mean measured throughput (points) against the variant's first-principles model (lines, "
               f"tcpprofile.models) with β and W_max fitted per panel over all its stream counts and RTTs; "
               f"E = 100/|RTTs|·Σ|M−P|/M per stream count. {'; '.join(errors)}. {runs_phrase(runs)} (loss-free "
               f"runs only).")
    if left:
        caption += f" {left} further dataset(s) with fewer runs not shown."
    if skipped:
        caption += f" No model for: {', '.join(sorted(skipped))}."
    return Section("models", "Model vs measurement", "tcp-models-high-bdp Figs. 6–8",
                   [Figure(name, "Model vs measurement", caption, runs, save(fig, out, name))])
