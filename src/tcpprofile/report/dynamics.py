"""Trace figures: throughput traces (HPDC'17 Fig. 11), Poincaré maps (12), local Lyapunov exponents (13),
throughput vs Lyapunov exponent (14) and cwnd traces.

Traces are sampled: per comparable group, the (variant, buffer) with the most traced runs is the
reference configuration; each figure names the runs or how many it draws.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .. import units
from .. import analysis
from .common import G, Figure, Note, Section, Table, label, pick, runs_phrase, save, subplots
from .data import Group, ReportData

MAX_LYAPUNOV_RUNS = 300     # Fig. 14 draws at most this many traced runs
SURROGATES = 19             # IAAFT surrogates per exponent (p ≥ 1/20)
ALPHA = 0.05


@dataclass
class Reference:
    """The traced runs of one (variant, buffer) in a group: {rtt: {streams: [run_id, ...]}}."""
    group_index: int
    group: Group
    variant: str
    buffer_bytes: int | None
    runs: dict[float, dict[int, list[str]]]

    @property
    def label(self) -> str:
        return f"{self.variant}, B={units.fmt_buffer(self.buffer_bytes)}"

    def all_runs(self) -> list[str]:
        return [r for by_n in self.runs.values() for ids in by_n.values() for r in ids]


def references(data: ReportData) -> list[Reference]:
    refs = []
    for gi, g in enumerate(data.groups):
        traced = data.runs_with_intervals([r for p in g.profiles for ids in p.run_ids for r in ids])
        if not traced:
            continue
        by_vb: dict[tuple, dict] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
        for p in g.profiles:
            for t, ids in zip(p.rtts_ms, p.run_ids):
                for r in ids:
                    if r in traced:
                        by_vb[(p.config.variant, p.config.buffer_bytes)][t][p.config.streams].append(r)
        key = max(by_vb, key=lambda k: sum(len(x) for by_n in by_vb[k].values() for x in by_n.values()))
        refs.append(Reference(gi, g, key[0], key[1], {t: dict(v) for t, v in sorted(by_vb[key].items())}))
    return refs


def _no_traces(title: str) -> Note:
    return Note(title, "the store has no per-interval throughput traces (iperf3 intervals)")


def traces(data: ReportData, out: Path, refs: list[Reference]) -> Section:
    items = []
    for ref in refs:
        rtts = list(ref.runs)
        rtt = rtts[len(rtts) // 2]
        ns = pick(ref.runs[rtt], 4)
        fig, axes = subplots(len(ns), cols=2, w=5.0, h=3.0)
        ids = []
        for ax, n in zip(axes, ns):
            run_id = ref.runs[rtt][n][0]
            ids.append(run_id)
            times, per, agg = data.traces(run_id)
            for s, v in per.items():
                ax.plot(v[:, 0], v[:, 1] / G, lw=0.8, alpha=0.8)
            ax.plot(times, agg / G, "k-", lw=2, label="aggregate")
            label(ax, f"{ref.label}, n={n}, {rtt:g} ms", "time (s)", "throughput (Gbit/s)", zero=True)
        name = f"traces-g{ref.group_index}"
        items.append(Figure(name, f"Throughput traces: {ref.label} at {rtt:g} ms ({ref.group.label})",
                            f"Per-interval throughput of each stream (thin) and the aggregate (thick black) for "
                            f"{ref.label} at {rtt:g} ms RTT, one panel per stream count; one run each (runs "
                            f"{', '.join(ids)}). {runs_phrase(len(ids))}.", len(ids), save(fig, out, name)))
    return Section("traces", "Throughput traces", "HPDC'17 Fig. 11", items or [_no_traces("Traces")])


def _extreme_rtts(ref: Reference) -> list[float]:
    rtts = list(ref.runs)
    return rtts if len(rtts) <= 2 else [rtts[0], rtts[-1]]


def poincare(data: ReportData, out: Path, refs: list[Reference]) -> Section:
    items = []
    for ref in refs:
        rtts = _extreme_rtts(ref)
        fig, axes = subplots(2 * len(rtts), cols=4, w=3.6, h=3.4, sharey=False)
        used = 0
        for i, rtt in enumerate(rtts):
            ns = pick(ref.runs[rtt], 5)
            colors = plt.cm.viridis(np.linspace(0, 0.9, len(ns)))
            sep, agg_ax = axes[2 * i], axes[2 * i + 1]
            for n, c in zip(ns, colors):
                _, per, agg = data.traces(ref.runs[rtt][n][0])
                used += 1
                for v in per.values():
                    sep.plot(v[:-1, 1] / G, v[1:, 1] / G, ".", ms=3, color=c)
                agg_ax.plot(agg[:-1] / G, agg[1:] / G, ".", ms=4, color=c, label=f"n={n}")
            for ax, kind in ((sep, "separate"), (agg_ax, "aggregate")):
                lim = max(ax.get_xlim()[1], ax.get_ylim()[1])
                ax.plot([0, lim], [0, lim], color="grey", lw=0.6)
                ax.set(title=f"{rtt:g} ms, {kind}", xlabel=r"$\theta_i$ (Gbit/s)", ylabel=r"$\theta_{i+1}$ (Gbit/s)")
                ax.set_aspect("equal", adjustable="box")
            agg_ax.legend(fontsize=6)
        name = f"poincare-g{ref.group_index}"
        items.append(Figure(name, f"Poincaré maps: {ref.label} ({ref.group.label})",
                            f"Poincaré map θ(i+1) against θ(i) of the 1 s throughput trace, per stream (“separate”) "
                            f"and aggregate, for {ref.label} at {' and '.join(f'{t:g}' for t in rtts)} ms; colour: "
                            f"stream count; grey: the 45° line. One run per stream count: {runs_phrase(used)}.",
                            used, save(fig, out, name)))
    return Section("poincare", "Poincaré maps", "HPDC'17 Fig. 12", items or [_no_traces("Poincaré maps")])


def lyapunov(data: ReportData, out: Path, refs: list[Reference]) -> Section:
    items = []
    for ref in refs:
        rtts = _extreme_rtts(ref)
        data.prefetch([r for rtt in rtts for ids in ref.runs[rtt].values() for r in ids[:20]])
        fig, axes = subplots(len(rtts), cols=2, w=5.0, h=3.2)
        used = 0
        for ax, rtt in zip(axes, rtts):
            ns = sorted(ref.runs[rtt])
            dists = []
            for n in ns:
                ids = ref.runs[rtt][n][:20]
                used += len(ids)
                dists.append(np.concatenate([analysis.local_lyapunov(data.traces(r)[2]) for r in ids]))
            keep = [(n, d) for n, d in zip(ns, dists) if len(d)]
            if keep:
                ax.boxplot([d for _, d in keep], positions=range(len(keep)), widths=0.6, showfliers=False)
                for j, (_, d) in enumerate(keep):
                    ax.plot(np.full(len(d), j) + np.random.default_rng(j).uniform(-0.2, 0.2, len(d)), d, ".",
                            ms=2, alpha=0.4, color="C0")
                ax.set_xticks(range(len(keep)), [str(n) for n, _ in keep])
            ax.axhline(0, color="r", lw=0.8)
            label(ax, f"{ref.label}, {rtt:g} ms", "streams n", "local Lyapunov exponent")
        name = f"lyapunov-g{ref.group_index}"
        items.append(Figure(name, f"Lyapunov exponents: {ref.label} ({ref.group.label})",
                            f"Local Lyapunov exponents ln|dM/dX| of the aggregate trace's Poincaré map per stream "
                            f"count, for {ref.label} at {' and '.join(f'{t:g}' for t in rtts)} ms; red: 0 "
                            f"(negative: stable). Up to 20 traced runs per box: {runs_phrase(used)}.",
                            used, save(fig, out, name)))
    return Section("lyapunov", "Lyapunov exponents", "HPDC'17 Fig. 13", items or [_no_traces("Lyapunov exponents")])


def _exponents(data: ReportData, ids: list[str]) -> list[tuple[str, analysis.TraceDynamics]]:
    """Each run's aggregate-trace dynamics with the exponent's surrogate test, in one batch."""
    got = []
    data.prefetch(ids)
    for r in ids:
        agg = data.traces(r)[2]
        if agg.size >= 8 and np.all(np.isfinite(agg)):
            got.append((r, agg))
    dyn = analysis.dynamics_many([(agg, None, None) for _, agg in got], n_surrogates=SURROGATES,
                                 alpha=ALPHA, seed=0)
    return [(r, d) for (r, _), d in zip(got, dyn)]


def _exponent_table(ref: Reference, rows: list[tuple[str, analysis.TraceDynamics, dict]]) -> Table:
    body, classes = [], []
    for r, d, info in sorted(rows, key=lambda t: (t[2]["streams"], t[2]["rtt_s"], t[0])):
        p = "–" if d.surrogate_p is None else f"{d.surrogate_p:.2f}"
        verdict = {True: "beats surrogates", False: "indistinguishable from noise", None: d.lyapunov_status}
        body.append([r, str(info["streams"]), f"{units.to_ms(info['rtt_s']):g}", f"{info['throughput_bps'] / G:.3f}",
                     "–" if d.lyapunov is None else f"{d.lyapunov:+.3f}", d.lyapunov_status, p,
                     verdict[d.distinguishable]])
        classes.append("" if d.distinguishable else "flagged")
    return Table(f"lyap-table-g{ref.group_index}", f"Lyapunov exponents and surrogate p-values: {ref.label} "
                 f"({ref.group.label})",
                 f"Each run's largest Lyapunov exponent (Rosenstein, sustainment phase of the aggregate 1 s "
                 f"trace, fitted beyond the noise floor) and its one-sided p-value against {SURROGATES} IAAFT "
                 f"surrogates (linear Gaussian noise with the trace's spectrum and values; p ≥ "
                 f"{1 / (SURROGATES + 1):.2f}). Rows not beating the surrogates at p ≤ {ALPHA:g} are shaded. "
                 f"{runs_phrase(len(rows))}.",
                 ["run", "n", "RTT (ms)", "Gbit/s", "λ (1/s)", "status", "p", "verdict"], body, classes, len(rows))


def throughput_vs_lyapunov(data: ReportData, out: Path, refs: list[Reference]) -> Section:
    items = []
    for ref in refs:
        ids = ref.all_runs()[:MAX_LYAPUNOV_RUNS]
        t0 = time.perf_counter()
        dyn = _exponents(data, ids)
        cost = time.perf_counter() - t0
        rows = [(r, d, data.run_info(r)) for r, d in dyn]
        pts = [row for row in rows if row[1].lyapunov is not None]
        if len(pts) < 2:
            items.append(Note(f"Throughput vs Lyapunov exponent: {ref.label} ({ref.group.label})",
                              "fewer than 2 traced runs long enough for a Rosenstein exponent"))
            continue
        thr = [p[2]["throughput_bps"] for p in pts]
        rel = analysis.throughput_vs_lyapunov(thr, [p[1].lyapunov for p in pts])
        real = [p for p in pts if p[1].distinguishable]
        rel_real = analysis.throughput_vs_lyapunov([p[2]["throughput_bps"] for p in real],
                                                   [p[1].lyapunov for p in real])
        fig, axes = subplots(1, w=6.0, h=4.0)
        ax = axes[0]
        norm = plt.Normalize(min(p[2]["rtt_s"] for p in pts), max(p[2]["rtt_s"] for p in pts))
        for group, filled in ((real, True), ([p for p in pts if not p[1].distinguishable], False)):
            if not group:
                continue
            colors = plt.cm.plasma(norm([p[2]["rtt_s"] for p in group]))
            ax.scatter([p[1].lyapunov for p in group], [p[2]["throughput_bps"] / G for p in group], s=16,
                       facecolors=colors if filled else "none", edgecolors=colors, linewidths=0.9,
                       label=f"beats surrogates (p ≤ {ALPHA:g})" if filled else "indistinguishable from noise")
        fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap="plasma"), ax=ax, label="RTT (ms)")
        ax.axvline(0, color="grey", lw=0.6)
        ax.legend(fontsize=7)
        label(ax, ref.label, "largest Lyapunov exponent (Rosenstein, 1/s)", "run throughput (Gbit/s)")
        name = f"thr-lyap-g{ref.group_index}"
        only = (f"; over the {len(real)} distinguishable ones ρ = {rel_real.spearman_rho:.2f}"
                if len(real) >= 3 else f"; {len(real)} distinguishable, too few for ρ")
        items.append(Figure(name, f"Throughput vs Lyapunov exponent: {ref.label} ({ref.group.label})",
                            f"Each point a traced run of {ref.label} (all stream counts and RTTs, colour: RTT): its "
                            f"largest Lyapunov exponent (Rosenstein, sustainment phase, fitted beyond the noise floor) "
                            f"against its throughput. Filled: the exponent beats {SURROGATES} IAAFT surrogates "
                            f"(p ≤ {ALPHA:g}); hollow: indistinguishable from noise ({len(pts) - len(real)} of "
                            f"{len(pts)}). Spearman ρ = {rel.spearman_rho:.2f} (p = {rel.p_value:.2g}) over all{only}. "
                            f"Surrogate tests took {cost:.1f} s. {runs_phrase(len(pts))}"
                            f"{f' (first {MAX_LYAPUNOV_RUNS} traced runs)' if len(ref.all_runs()) > len(ids) else ''}.",
                            len(pts), save(fig, out, name)))
        items.append(_exponent_table(ref, rows))
    return Section("thr-lyap", "Throughput vs Lyapunov exponent", "HPDC'17 Fig. 14",
                   items or [_no_traces("Throughput vs Lyapunov exponent")])


def cwnd_traces(data: ReportData, out: Path, max_runs: int = 4) -> Section:
    ids = data.cwnd_runs(max_runs)
    if not ids:
        return Section("cwnd", "Congestion-window traces", "tcp:tcp_probe",
                       [Note("cwnd traces", "the store has no tcp_probe cwnd samples")])
    fig, axes = subplots(len(ids), cols=2, w=5.0, h=3.0, sharey=False)
    for ax, r in zip(axes, ids):
        info = data.run_info(r)
        for s, v in data.cwnd(r).items():
            ax.plot(v[:, 0], v[:, 1], lw=0.8, label=f"stream {s}")
        label(ax, f"{info['variant']} n={info['streams']}, {units.to_ms(info['rtt_s']):g} ms, run {r}", "time (s)",
              "cwnd (packets)", zero=True)
    name = "cwnd"
    return Section("cwnd", "Congestion-window traces", "tcp:tcp_probe", [
        Figure(name, "Congestion window traces", f"snd_cwnd from the kernel's tcp:tcp_probe tracepoint per stream, "
               f"for the first {runs_phrase(len(ids))} with samples (by run id: {', '.join(ids)}).",
               len(ids), save(fig, out, name))])


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {
    "traces": (80, traces),
    "poincare": (90, poincare),
    "lyapunov": (100, lyapunov),
    "throughput_vs_lyapunov": (110, throughput_vs_lyapunov),
    "cwnd_traces": (140, cwnd_traces),
}
