"""The models paper (Vardoyan, Rao, Towsley): Fig. 3 (CUBIC and H-TCP against STCP as n grows) and
Figs. 6–8 (model vs measurement per n, fitted as `tcpprofile model fit` fits: models.fit_table_from_store
+ models.fit_profiles, the path report/models.py takes), beside the paper's numbers."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ... import units
from ..common import G, Figure, Table, label, pick, runs_phrase, save, subplots
from ..data import ReportData
from ..models import link_buffer, model_curve
from .common import MODELS_SPEC, conditions, gbit, lacks, ns_text, rtts_text, size_text, versus

FIG3 = "Models paper Fig. 3: CUBIC and H-TCP against STCP as n grows"
FIG68 = "Models paper Figs. 6–8: model vs measurement per n"
TEN_GB = 10 * 10**9
# Figs. 6–8: the paper's variant, figure, stream counts drawn, and E over RTTs and n = 1–10 (§V)
PAPER_FITS = {"htcp": ("Fig. 6", (1, 5, 10), 5.2), "scalable": ("Fig. 7", (1, 2, 4, 6, 8, 10), 9.3),
              "cubic": ("Fig. 8", (1, 2, 4, 6, 8, 10), 4.5)}


def _common(a, b):
    """RTTs both profiles measured, with the two means there."""
    pb = dict(zip(b.rtts_ms, b.means))
    return [(t, m, pb[t]) for t, m in zip(a.rtts_ms, a.means) if t in pb]


def variants_by_streams(data: ReportData, out: Path) -> list:
    best = None
    for g in data.groups:
        if g.conditions["loss_mode"] not in (None, "none"):
            continue
        by_b: dict = defaultdict(dict)
        for p in g.profiles:
            if p.config.variant in ("cubic", "htcp", "scalable"):
                by_b[p.config.buffer_bytes].setdefault(p.config.streams, {})[p.config.variant] = p
        for b, by_n in by_b.items():
            ns = [n for n, vs in by_n.items() if "scalable" in vs and len(vs) >= 2
                  and all(len(_common(vs[v], vs["scalable"])) >= 1 for v in vs if v != "scalable")]
            if len(ns) >= 2:
                rank = (g.conditions["transfer_bytes"] == TEN_GB, bool(g.conditions["transfer_bytes"]), len(ns), g.runs)
                if best is None or rank > best[0]:
                    best = (rank, g, b, {n: by_n[n] for n in sorted(ns)})
    if best is None:
        return [lacks(FIG3, "STCP (scalable) and CUBIC or H-TCP at the same socket buffer, at two or more stream "
                      "counts and common RTTs, loss-free (the paper: 10 GB transfers on 10GigE, n = 1–10)",
                      f"{MODELS_SPEC} with streams = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")]
    _, g, b, by_n = best
    shown = pick(by_n, 4)
    fig, axes = subplots(len(shown), cols=4, w=3.8)
    for ax, n in zip(axes, shown):
        for v in ("cubic", "htcp", "scalable"):
            if v in by_n[n]:
                p = by_n[n][v]
                ax.plot(p.rtts_ms, p.means / G, "o-", ms=4, label=v)
        label(ax, f"n={n}, B={units.fmt_buffer(b)}", "RTT (ms)", "mean throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=7)
    rows, runs = [], 0
    ratio: dict[int, dict[str, float]] = {}
    for n, vs in by_n.items():
        runs += sum(p.runs for p in vs.values())
        ratio[n] = {}
        for v in ("cubic", "htcp"):
            if v in vs:
                pairs = _common(vs[v], vs["scalable"])
                ratio[n][v] = float(np.mean([a / s for _, a, s in pairs]))
        rtts = sorted({t for p in vs.values() for t in p.rtts_ms})
        rows.append([str(n), rtts_text(rtts), *(gbit(np.mean(vs[v].means)) if v in vs else "–"
                                                for v in ("cubic", "htcp", "scalable")),
                     *(f"{ratio[n][v]:.3f}" if v in ratio[n] else "–" for v in ("cubic", "htcp")),
                     str(sum(p.runs for p in vs.values()))])
    name = "papers-models-fig3"
    cond = conditions(g, variants=", ".join(sorted({v for vs in by_n.values() for v in vs})), B=units.fmt_buffer(b),
                      n=ns_text(by_n))
    figure = Figure(name, "Models paper Fig. 3 from this store: CUBIC, H-TCP and STCP per stream count",
                    f"Mean throughput vs RTT per variant, one panel per stream count (up to 4 shown; all in the "
                    f"table). {cond}. {runs_phrase(runs)}.", runs, save(fig, out, name))
    table = Table("papers-models-fig3-data", "Fig. 3 data: throughput averaged over RTTs and the ratio to STCP",
                  f"Per n: each variant's profile mean averaged over its RTTs, and Θ_V/Θ_STCP averaged over the "
                  f"RTTs both measured. {cond}.",
                  ["n", "RTTs", "CUBIC (Gbit/s)", "H-TCP (Gbit/s)", "STCP (Gbit/s)", "CUBIC/STCP", "H-TCP/STCP",
                   "runs"], rows, runs=runs)
    lo, hi = min(by_n), max(by_n)

    def at(n):
        return ", ".join(f"{v} {r:.3f}" for v, r in ratio[n].items())
    compare = versus("papers-models-fig3-vs", "Fig. 3: the paper and this store", [
        ["few streams: the three almost equal", "§III.C, Fig. 3 (10GigE, 10 GB)", "almost equally well",
         f"n={lo}: Θ_V/Θ_STCP {at(lo)}"],
        ["many streams: CUBIC and H-TCP above STCP", "§III.C, Fig. 3; §VI", "significantly outperform STCP with "
         "ten flows; more pronounced as n grows", f"n={hi}: Θ_V/Θ_STCP {at(hi)}"],
        ["transfer size", "§III.C", "10 GB per flow set", size_text(g.conditions["transfer_bytes"])
         if g.conditions["transfer_bytes"] else f"time-limited ({g.conditions['duration_s']:g} s)"],
    ], runs)
    return [figure, table, compare]


def model_vs_measurement(data: ReportData, out: Path) -> list:
    table = data.model_table
    chosen = {}
    for key, idx in data.model_datasets:
        v = str(key["variant"])
        if v in PAPER_FITS and np.unique(table["rtt_s"][idx]).size >= 3:
            rank = (np.unique(table["streams"][idx]).size, int(table["runs"][idx].sum()))
            if v not in chosen or rank > chosen[v][0]:
                chosen[v] = (rank, key, idx)
    if not chosen:
        return [lacks(FIG68, "loss-free profiles over at least 3 RTTs of H-TCP, STCP or CUBIC, ideally at n = 1–10 "
                      "(the paper: 10 GB transfers on 10GigE)",
                      f"{MODELS_SPEC} with streams = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")]
    order = [v for v in PAPER_FITS if v in chosen]
    fig, axes = subplots(len(order), sharey=False)
    rows, compare_rows, runs, conds = [], [], 0, []
    for ax, v in zip(axes, order):
        _, key, idx = chosen[v]
        ds = {k: c[idx] for k, c in table.items()}
        fit = data.model_fit(idx)      # `model fit`'s path, this dataset's rows (fitted once per report)
        where, paper_ns, paper_e = PAPER_FITS[v]
        n = ds["streams"].astype(int)
        measured = sorted(set(n.tolist()))
        drawn = [s for s in paper_ns if s in measured] or pick(measured, 4)
        for k, s in enumerate(drawn):
            tau, measured_bps, grid, pred = model_curve(fit, ds, s)
            ax.plot(tau, measured_bps / G, "o", color=f"C{k}", ms=4, label=f"n={s}")
            ax.plot(grid, pred / G, "-", color=f"C{k}", lw=1)
        label(ax, f"{v} ({where})", "RTT (ms)", "throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=6)
        n_runs = int(ds["runs"].sum())
        runs += n_runs
        for s in measured:
            rtts = sorted(set(units.to_ms(ds["rtt_s"][n == s].astype(float)).tolist()))
            rows.append([v, str(s), rtts_text(rtts), str(int(ds["runs"][n == s].sum())), f"{fit.errors[s]:.1f}"])
        mean_e = float(np.mean([fit.errors[s] for s in measured]))
        missing = [s for s in range(1, 11) if s not in measured]
        compare_rows.append([f"{v}: E over RTTs and n", f"§V, {where}", f"{paper_e:g} % (n = 1–10)",
                             f"{mean_e:.1f} % (n = {ns_text(measured)}"
                             + (f"; not measured: n = {ns_text(missing)})" if missing else ")")])
        size = key.get("transfer_bytes")
        sock = key.get("socket_buffer_bytes")
        conds.append(f"{v}: {n_runs} runs, n = {ns_text(measured)}, B = "
                     f"{units.fmt_buffer(None if sock is None or sock != sock else int(sock))}, "   # nan: autotuned
                     + (f"F = {size_text(size)}" if size is not None and size == size
                        else f"{float(key['duration_target_s']):g} s runs")
                     + f", C = {float(key['rate_bps']) / 1e9:g} Gbit/s, link β = {link_buffer(key)}, loss-free")
    for v in PAPER_FITS:
        if v not in chosen:
            compare_rows.append([f"{v}: E over RTTs and n", f"§V, {PAPER_FITS[v][0]}", f"{PAPER_FITS[v][2]:g} %",
                                 "not measured here (no loss-free profile over ≥ 3 RTTs)"])
    name = "papers-models-fig68"
    figure = Figure(name, "Models paper Figs. 6–8 from this store: model vs measurement per n",
                    f"Mean measured throughput (points) and the first-principles model (lines) fitted as `tcpprofile "
                    f"model fit` fits it, {data.model_config_text()} (W_max, and β unless the configuration takes "
                    f"the configured buffer, per dataset over all its n and RTTs); per variant the loss-free "
                    f"dataset with the most stream counts, drawn at the paper's n where measured. "
                    f"Runs with, per variant, {'; '.join(conds)}. {runs_phrase(runs)}.", runs, save(fig, out, name))
    data_table = Table("papers-models-fig68-data", "Figs. 6–8 data: E per variant and n",
                       "E = 100/|RTTs|·Σ|M − P|/M in-sample, as `model fit` prints it (its E_percent). "
                       + "; ".join(conds) + ".", ["variant", "n", "RTTs", "runs", "E (%)"], rows, runs=runs)
    return [figure, data_table, versus("papers-models-fig68-vs", "Figs. 6–8: the paper and this store",
                                       compare_rows, runs)]
