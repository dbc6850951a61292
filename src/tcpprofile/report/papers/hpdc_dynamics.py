"""HPDC'17 Figs. 12–13 (local Lyapunov exponents of the Poincaré map at 11.6 vs 183 ms, per stream count)
and abstract (iii) (smaller exponents ↔ wider concave region), from the store's 1 s traces.

The exponent is the paper's local one, L_i = ln|dM/dX| by successive secants of the aggregate trace's
Poincaré map (analysis.local_lyapunov); its distribution is what Fig. 13 plots, so "closer to zero" is
read as the median |L_i| of the pooled traces (0: a map of slope ±1, no divergence)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

from ... import analysis
from ... import units
from ..common import Figure, Table, label, runs_phrase, save, subplots
from ..data import ReportData
from ..profiles import SigmoidFits
from .common import SLIDES_SPEC, buffer_text, censored_side, conditions, lacks, ns_text, rtts_text, tau_text, versus

FIG13 = "HPDC'17 Figs. 12–13: Lyapunov exponents at 11.6 vs 183 ms"
ABSTRACT = "HPDC'17 abstract (iii): smaller exponents ↔ wider concave region"
SHORT, LONG = (11.6, 1.5), (183.0, 10.0)     # the paper's RTTs and how far a measured RTT may lie from them
PER_BOX = 20                                  # traced runs per (RTT, n)
PAPER_SECONDS = 100                           # §4: traces of 100 s at 1 s


def _traced(data: ReportData):
    """{(group index, variant, B): {rtt: {n: [run_id]}}} of the runs with interval traces."""
    out: dict[tuple, dict] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for gi, g in enumerate(data.groups):
        traced = data.runs_with_intervals([r for p in g.profiles for ids in p.run_ids for r in ids])
        for p in g.profiles:
            for t, ids in zip(p.rtts_ms, p.run_ids):
                for r in ids:
                    if r in traced:
                        out[(gi, p.config.variant, p.config.buffer_bytes)][t][p.config.streams].append(r)
    return out


def _near(rtts, target) -> float | None:
    c, tol = target
    close = [t for t in rtts if abs(t - c) <= tol]
    return min(close, key=lambda t: abs(t - c)) if close else None


def _exponents(data: ReportData, ids: list[str], *, spreads: bool = True
               ) -> tuple[np.ndarray, list[float], list[int]]:
    """Pooled L_i of the runs' aggregate traces, each trace's Poincaré spread (only if asked: a nearest-
    neighbour search per trace) and length (intervals)."""
    traces = [data.traces(r)[2] for r in ids]
    traces = [x for x in traces if x.size >= 3 and np.all(np.isfinite(x))]
    L = np.concatenate([analysis.local_lyapunov(x) for x in traces]) if traces else np.empty(0)
    return L, [analysis.poincare_spread(x) for x in traces] if spreads else [], [x.size for x in traces]


def _spread(spreads: list[float]) -> str:
    """The median Poincaré spread of the traces; '–' when no trace is long enough for one (9 points)."""
    ok = [x for x in spreads if np.isfinite(x)]
    return f"{np.median(ok):.2f}" if ok else "–"


def _median_abs(L: np.ndarray) -> float:
    return float(np.median(np.abs(L))) if L.size else float("nan")


def exponents(data: ReportData, out: Path) -> list:
    traced = _traced(data)
    cands = []
    for key, by_rtt in traced.items():
        lo, hi = _near(by_rtt, SHORT), _near(by_rtt, LONG)
        if lo is not None and hi is not None:
            runs = sum(len(x) for t in (lo, hi) for x in by_rtt[t].values())
            cands.append((key[1] == "cubic", -1 if key[2] is None else key[2], runs, key, lo, hi))
    if not cands:
        have = sorted({t for by_rtt in traced.values() for t in by_rtt})
        return [lacks(FIG13, "1 s throughput traces (iperf3 intervals) of one variant and buffer at an RTT near "
                      "11.6 ms and near 183 ms, ideally at n = 1–10 and 100 s long (HPDC'17: CUBIC, large buffer)"
                      + (f"; traces here only at {rtts_text(have)}" if have else "; the store has no traces"),
                      f"{SLIDES_SPEC} with variant = \"cubic\" and rtt = [\"11.8ms\", \"183ms\"]")]
    *_, key, lo, hi = max(cands, key=lambda c: c[:3])   # CUBIC, then the largest B, then the most runs
    gi, v, b = key
    g = data.groups[gi]
    data.prefetch([r for rtt in (lo, hi) for ids in traced[key][rtt].values() for r in ids[:PER_BOX]])
    fig, axes = subplots(2, cols=2, w=5.0, h=3.4)
    rows, runs, seconds, ns, summary = [], 0, [], set(), {}
    for ax, rtt in zip(axes, (lo, hi)):
        by_n = traced[key][rtt]
        boxes = []
        for n in sorted(by_n):
            ids = by_n[n][:PER_BOX]
            L, spreads, lengths = _exponents(data, ids)
            runs += len(lengths)
            seconds += lengths
            ns.add(n)
            m = _median_abs(L)
            summary[(rtt, n)] = (m, L)
            q1, q3 = np.percentile(L, [25, 75]) if L.size else (np.nan, np.nan)
            rows.append([f"{rtt:g}", str(n), str(len(lengths)), _range(lengths), str(L.size), f"{m:.3f}",
                         f"{q3 - q1:.3f}", _spread(spreads)])
            boxes.append((n, L))
        keep = [(n, L) for n, L in boxes if L.size]
        if keep:
            ax.boxplot([L for _, L in keep], positions=range(len(keep)), widths=0.6, showfliers=False)
            ax.set_xticks(range(len(keep)), [str(n) for n, _ in keep])
        ax.axhline(0, color="r", lw=0.8)
        label(ax, f"{v}, B={units.fmt_buffer(b)}, {rtt:g} ms", "streams n", r"local exponent ln|dM/dX|")
    name = "papers-fig13"
    cond = conditions(g, variant=v, B=buffer_text(b), n=ns_text(ns),
                      RTTs=f"{lo:g} and {hi:g} ms", traces=f"{_range(seconds)} intervals of 1 s")
    short = "" if seconds and min(seconds) >= PAPER_SECONDS else (
        f" The paper's traces are {PAPER_SECONDS} s; these are shorter, so fewer exponents per box.")
    figure = Figure(name, "HPDC'17 Figs. 12–13 from this store: local Lyapunov exponents at the two RTTs",
                    f"Distribution of the local exponents L_i = ln|dM/dX| of the aggregate trace's Poincaré map "
                    f"(successive secants, tcpprofile.analysis.local_lyapunov) per stream count, pooled over up "
                    f"to {PER_BOX} traced runs per box; red: 0. {cond}.{short} {runs_phrase(runs)}.",
                    runs, save(fig, out, name))
    table = Table("papers-fig13-data", "Figs. 12–13 data: local exponents per RTT and n",
                  f"median |L_i| (distance from the zero line), the IQR of L_i (compactness) and the median "
                  f"Poincaré spread (0: a 1-D curve, ≈ 0.65: an isotropic cloud). {cond}.",
                  ["RTT (ms)", "n", "traces", "intervals per trace", "L_i", "median |L_i|", "IQR of L_i",
                   "Poincaré spread"], rows, runs=runs)
    pooled = {rtt: _median_abs(np.concatenate([L for (t, _), (_, L) in summary.items() if t == rtt]))
              for rtt in (lo, hi)}
    def ends(rtt):
        here = sorted(n for t, n in summary if t == rtt)
        if len(here) < 2:
            return f"{rtt:g} ms: one stream count"
        return f"{rtt:g} ms: n={here[0]} {summary[(rtt, here[0])][0]:.3f} → n={here[-1]} {summary[(rtt, here[-1])][0]:.3f}"
    compare = versus("papers-fig13-vs", "Figs. 12–13: the paper and this store", [
        ["exponents at the long RTT more compact and closer to 0", "§4.1, Fig. 13 (CUBIC, SONET, large buffers)",
         "183 ms closer to the zero line than 11.6 ms",
         f"median |L_i| {pooled[lo]:.3f} at {lo:g} ms, {pooled[hi]:.3f} at {hi:g} ms (all n pooled)"],
        ["more streams pull the exponents toward 0", "§4.1, Fig. 13", "both RTTs",
         "median |L_i| " + "; ".join(ends(t) for t in (lo, hi))],
        ["trace length", "§4", f"{PAPER_SECONDS} s at 1 s", f"{_range(seconds)} intervals"],
    ], runs)
    return [figure, table, compare]


def _range(xs) -> str:
    if not xs:
        return "–"
    lo, hi = min(xs), max(xs)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _spearman_text(x: np.ndarray, order: np.ndarray) -> str:
    """Spearman's ρ (scipy.stats.spearmanr) of the exponents against the τ_T order, or why it is undefined:
    fewer than 3 configurations, or one side constant (every τ_T censored on the same side, or every
    exponent equal), where the rank correlation divides by a zero variance."""
    if x.size < 3:
        return f"Spearman ρ undefined: {x.size} configuration(s) with an exponent (it needs 3)"
    for values, what in ((order, "τ_T is the same for every configuration (every one censored on the same "
                                 "side of the grid, or equal)"), (x, "every median |L_i| is equal")):
        if np.unique(values).size < 2:
            return f"Spearman ρ undefined: {what}, so the ranks do not vary"
    rho, pval = stats.spearmanr(x, stats.rankdata(order))
    return f"Spearman ρ = {rho:.2f} (p = {pval:.2g})"


def exponents_vs_concavity(data: ReportData, out: Path, fits: SigmoidFits) -> list:
    traced = _traced(data)
    best = None
    for gi, g in enumerate(data.groups):
        pts = []
        for p in g.profiles:
            tr = fits.transition(p)
            by_rtt = traced.get((gi, p.config.variant, p.config.buffer_bytes), {})
            ids = {t: by_rtt[t].get(p.config.streams, []) for t in by_rtt}
            ids = {t: x for t, x in ids.items() if x}
            if tr is not None and ids:
                pts.append((p, tr, ids))
        if len(pts) < 3:
            continue
        common = set.intersection(*(set(ids) for _, _, ids in pts))
        if common and (best is None or len(pts) > len(best[1])):
            best = (g, pts, sorted(common))
    if best is None:
        return [lacks(ABSTRACT, "at least three configurations (V, n, B) of one group, each with a profile over ≥ 3 "
                      "RTTs (for τ_T) and 1 s traces at a common RTT (HPDC'17: CUBIC, H-TCP, STCP, n = 1–10, 100 s "
                      "traces)", f"{SLIDES_SPEC} with variant = [\"cubic\", \"htcp\", \"scalable\"]")]
    g, pts, common = best
    chosen = [[r for t in common for r in ids[t][:max(1, PER_BOX // len(common))]]   # ≤ PER_BOX per point
              for _, _, ids in pts]
    data.prefetch([r for c in chosen for r in c])
    rows, classes, x, y, cens, runs = [], [], [], [], [], 0
    for (p, tr, ids), chosen_ids in zip(pts, chosen):
        L, _, lengths = _exponents(data, chosen_ids, spreads=False)
        m = _median_abs(L)
        runs += len(lengths)
        side = censored_side(tr.fit)
        rows.append([p.config.label(), rtts_text(p.rtts_ms), tau_text(tr.fit, p.rtts_s), tr.fit.kind,
                     str(len(lengths)), f"{m:.3f}"])
        classes.append("flagged" if side else "")
        x.append(m)
        y.append(max(p.rtts_ms) if side == "right" else min(p.rtts_ms) if side == "left" else units.to_ms(tr.fit.tau_T))
        cens.append(side)
    # ranks: a τ_T censored above the grid ranks above every measured one (ties among themselves),
    # one censored below ranks below them: Spearman's ρ needs only the order
    order = np.array([np.inf if c == "right" else -np.inf if c == "left" else t for t, c in zip(y, cens)])
    ok = np.isfinite(np.asarray(x))
    rho_text = _spearman_text(np.asarray(x)[ok], order[ok])
    fig, axes = subplots(1, w=6.0, h=4.0)
    ax = axes[0]
    xs, ys = np.asarray(x), np.asarray(y)
    for side, marker, text in ((None, "o", "τ_T measured"), ("right", "^", "τ_T > τ_max (censored)"),
                               ("left", "v", "τ_T < τ_min (censored, all convex)")):
        sel_ = np.array([c == side for c in cens])
        if sel_.any():
            ax.plot(xs[sel_], ys[sel_], marker, ms=7, mfc="none" if side else None, ls="none", label=text)
    label(ax, g.label, "median |L_i| (local exponent)", r"$\tau_T$ (ms)")
    ax.legend(fontsize=7)
    name = "papers-abstract-iii"
    cond = conditions(g, configurations=f"{len(pts)} (V, n, B)", exponents_at=rtts_text(common))
    figure = Figure(name, "HPDC'17 abstract (iii) from this store: exponents against the concave region's extent",
                    f"Per configuration: the median |L_i| of its traces' local exponents at the RTTs traced for "
                    f"every configuration (up to {max(1, PER_BOX // len(common))} traced runs per RTT), against its "
                    f"τ_T (Figs. 9–10); open triangles: τ_T censored at the grid's "
                    f"end (a bound, drawn at the bound). Spearman ρ orders a censored τ_T above (below) every "
                    f"measured one. {cond}. {runs_phrase(runs)} traced.", runs, save(fig, out, name))
    table = Table("papers-abstract-iii-data", "Abstract (iii) data: exponent and τ_T per configuration",
                  f"{cond}; censored τ_T shaded.", ["configuration", "RTTs", "τ_T", "fit", "traces", "median |L_i|"],
                  rows, classes, runs)
    compare = versus("papers-abstract-iii-vs", "Abstract (iii): the paper and this store", [
        ["smaller exponents ↔ wider concave region", "abstract (iii), §4.2", "stable dynamics (smaller exponents) "
         "lead to wider concave regions: ρ(exponent, τ_T) < 0",
         f"{rho_text} over {int(ok.sum())} configurations, {sum(c is not None for c in cens)} τ_T censored"],
    ], runs)
    return [figure, table, compare]
