"""Profile figures: mean profiles (HPDC'17 Figs. 3–6), box plots (7–8), dual-sigmoid fits (9),
transition RTTs (10) and loss profiles (slides: throughput profiles under losses)."""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection

from ..choose import select as sel
from .. import units
from .. import analysis
from ..errors import ValidationError
from .common import G, Figure, Note, Section, label, pick, runs_phrase, save, slug, spans_decades, subplots
from .data import Group, ReportData


def _by_variant(group: Group) -> dict[str, list[sel.Profile]]:
    out: dict[str, list[sel.Profile]] = defaultdict(list)
    for p in group.profiles:
        out[p.config.variant].append(p)
    return out


def _buffers(profiles) -> list:
    return sorted({p.config.buffer_bytes for p in profiles}, key=lambda b: -1 if b is None else b)


def _reps(profiles) -> str:
    counts = [len(s) for p in profiles for s in p.samples]
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def mean_profiles(data: ReportData, out: Path) -> Section:
    items = []
    for gi, g in enumerate(data.groups):
        for v, profs in _by_variant(g).items():
            profs = [p for p in profs if len(p.rtts_ms) >= 2]
            if not profs:
                items.append(Note(f"Mean profile: {v}, {g.label}", "every configuration was measured at a single "
                                  "RTT; a profile needs at least two"))
                continue
            bufs = _buffers(profs)
            fig, axes = subplots(len(bufs), layout="grid")
            for ax, b in zip(axes, bufs):
                for p in sorted((p for p in profs if p.config.buffer_bytes == b), key=lambda p: p.config.streams):
                    ax.plot(p.rtts_ms, p.means / G, "o-", ms=4, label=f"n={p.config.streams}")
                label(ax, f"{v}, B={units.fmt_buffer(b)}", "RTT (ms)", "mean throughput (Gbit/s)", zero=True)
                ax.legend(fontsize=7, ncol=2)
            runs = sum(p.runs for p in profs)
            rtts = sorted({t for p in profs for t in p.rtts_ms})
            name = f"profile-g{gi}-{slug(v)}"
            items.append(Figure(name, f"Mean throughput profiles: {v} ({g.label})",
                                f"Mean throughput vs RTT for {v}, one line per stream count n "
                                f"({', '.join(str(n) for n in sorted({p.config.streams for p in profs}))}), one "
                                f"panel per socket buffer B ({', '.join(units.fmt_buffer(b) for b in bufs)}); runs with "
                                f"{g.label}. {runs_phrase(runs)} at {len(rtts)} RTTs, {_reps(profs)} repetitions "
                                f"per point.", runs, save(fig, out, name)))
    return Section("profiles", "Throughput profiles", "HPDC'17 Figs. 3–6", items)


MIN_BOX_RUNS = 3     # no box (quartiles, whiskers) from fewer runs: the runs are drawn as points


def box_plots(data: ReportData, out: Path) -> Section:
    return box_plots_of(data.groups, out)


def box_plots_of(groups: list[Group], out: Path) -> Section:
    """The box-plot section from the groups alone (no store): a worker process can draw it."""
    items = []
    for gi, g in enumerate(groups):
        for v, profs in _by_variant(g).items():
            bufs = _buffers(profs)
            ns = pick(sorted({p.config.streams for p in profs}), 4)
            shown = [p for p in profs if p.config.streams in ns]
            panels = [(b, n) for b in bufs for n in ns
                      if any(p.config.buffer_bytes == b and p.config.streams == n for p in shown)]
            fig, axes = subplots(len(panels), cols=len(ns), layout="grid")
            few = 0
            for ax, (b, n) in zip(axes, panels):
                p = next(p for p in shown if p.config.buffer_bytes == b and p.config.streams == n)
                boxed = [k for k, s in enumerate(p.samples) if s.size >= MIN_BOX_RUNS]
                if boxed:
                    draw_boxes(ax, boxed, [analysis.box_stats(p.samples[k] / G) for k in boxed],
                               [float(p.samples[k].mean() / G) for k in boxed])
                for k, s in enumerate(p.samples):
                    if s.size < MIN_BOX_RUNS:      # quartiles of 1–2 runs say nothing: the runs themselves
                        few += 1
                        ax.plot(np.full(s.size, k), s / G, "o", ms=4, mfc="white", color="C3")
                ax.set_xticks(range(len(p.samples)), [f"{t:g}" for t in p.rtts_ms], rotation=45, fontsize=7)
                label(ax, f"{v}, n={n}, B={units.fmt_buffer(b)}", "RTT (ms)", "throughput (Gbit/s)", zero=True)
            runs = sum(p.runs for p in shown)
            name = f"box-g{gi}-{slug(v)}"
            points = (f" {few} RTT(s) with fewer than {MIN_BOX_RUNS} runs: no box, the runs as red open circles."
                      if few else "")
            items.append(Figure(name, f"Throughput box plots: {v} ({g.label})",
                                f"Throughput of {v} per RTT; one panel per socket buffer B and stream count n "
                                f"(n shown: {', '.join(map(str, ns))}). Boxes: quartiles; line: median; triangle: "
                                f"mean; whiskers: furthest run within 1.5·IQR; circles: runs beyond.{points} "
                                f"{runs_phrase(runs)}, {_reps(shown)} repetitions per RTT; runs with {g.label}.",
                                runs, save(fig, out, name)))
    return Section("boxplots", "Throughput box plots", "HPDC'17 Figs. 7–8", items)


def draw_boxes(ax, positions: list, boxes: list, means: list, width: float = 0.6) -> None:
    """Tukey boxes (analysis.box_stats: quartiles, median, whiskers, outliers) and the means, drawn as what
    matplotlib's bxp draws but in six collections per panel instead of seven artists per box (the box plots
    of a paper-size store draw ~1,000 boxes)."""
    h = width / 2
    outline, median, whisker, cap = [], [], [], []
    fliers_x, fliers_y = [], []
    for x, b in zip(positions, boxes):
        outline.append([(x - h, b.q1), (x + h, b.q1), (x + h, b.q3), (x - h, b.q3), (x - h, b.q1)])
        median.append([(x - h, b.median), (x + h, b.median)])
        whisker += [[(x, b.q1), (x, b.whisker_low)], [(x, b.q3), (x, b.whisker_high)]]
        cap += [[(x - h / 2, b.whisker_low), (x + h / 2, b.whisker_low)],
                [(x - h / 2, b.whisker_high), (x + h / 2, b.whisker_high)]]
        fliers_x += [x] * len(b.outliers)
        fliers_y += list(b.outliers)
    ax.add_collection(LineCollection(outline + whisker + cap, colors="black", linewidths=1.0))
    ax.add_collection(LineCollection(median, colors="C1", linewidths=1.5))
    ax.plot(positions, means, "^", color="C2", ms=6, ls="none")
    if fliers_x:
        ax.plot(fliers_x, fliers_y, "o", mfc="none", color="black", ms=5, ls="none")
    ax.autoscale_view()


TRANSITION_BOOT = 200     # bootstrap refits of τ_T per profile (Fig. 10 intervals)


def _transition(samples: list, rtts_s: np.ndarray, capacity: float | None) -> analysis.Transition | None:
    """analysis.transition of one profile as the report draws it (TRANSITION_BOOT draws, seed 0); None where
    the profile cannot be fitted. A module-level function: worker processes run it too."""
    try:
        return analysis.transition(samples, rtts_s, capacity, n_boot=TRANSITION_BOOT, seed=0)
    except ValidationError:
        return None


class SigmoidFits:
    """analysis.transition per profile (≥ 3 RTTs): the dual-sigmoid fit and τ_T's bootstrap interval,
    computed once for Figs. 9 and 10 and the papers section; the same function and capacity (the runs'
    payload ceiling, analysis.capacity_of) as `analyze --what transition`, so both say one τ_T.

    `start` fits them in worker processes (common.background_pool) while the report draws its other figures;
    `transition` then takes a profile's result from its worker. The same function and seed either way, so the
    numbers do not depend on where they were computed."""

    def __init__(self, capacities: dict[str, float] | None = None):
        self._fits: dict[int, analysis.Transition | None] = {}
        self._pending: dict[int, Future] = {}
        self._capacities = capacities     # run_id -> its link's payload ceiling, else rate [bit/s]

    @classmethod
    def for_store(cls, store) -> "SigmoidFits":
        runs = analysis.load_runs(store)
        return cls(dict(zip(runs.run_id, runs.capacity_bps)))

    def capacity(self, p: sel.Profile) -> float | None:
        if self._capacities is None:
            return p.rate_bps
        return analysis.capacity_of([self._capacities.get(r, np.nan) for ids in p.run_ids for r in ids])

    def start(self, profiles: list[sel.Profile], pool: ProcessPoolExecutor | None) -> None:
        """Submit every profile not yet fitted to `pool` (common.background_pool; None: fit when asked)."""
        if pool is None:
            return
        for p in profiles:
            if len(p.rtts_s) >= 3 and id(p) not in self._fits and id(p) not in self._pending:
                self._pending[id(p)] = pool.submit(_transition, list(p.samples), np.asarray(p.rtts_s),
                                                   self.capacity(p))

    def transition(self, p: sel.Profile) -> analysis.Transition | None:
        if id(p) not in self._fits:
            pending = self._pending.pop(id(p), None)
            if pending is not None:
                self._fits[id(p)] = pending.result()
            else:
                self._fits[id(p)] = (_transition(list(p.samples), np.asarray(p.rtts_s), self.capacity(p))
                                     if len(p.rtts_s) >= 3 else None)
        return self._fits[id(p)]

    def get(self, p: sel.Profile) -> analysis.DualSigmoidFit | None:
        tr = self.transition(p)
        return None if tr is None else tr.fit


def sigmoid_fits(data: ReportData, out: Path, fits: SigmoidFits) -> Section:
    items = []
    for gi, g in enumerate(data.groups):
        for v, profs in _by_variant(g).items():
            n = min(p.config.streams for p in profs)
            chosen = [p for p in profs if p.config.streams == n and fits.get(p)]
            if not chosen:
                items.append(Note(f"Sigmoid fits: {v}, {g.label}", "no profile with at least 3 measured RTTs"))
                continue
            chosen.sort(key=lambda p: -1 if p.config.buffer_bytes is None else p.config.buffer_bytes)
            fig, axes = subplots(len(chosen))
            for ax, p in zip(axes, chosen):
                f = fits.get(p)
                ax.plot(p.rtts_ms, np.clip(p.means / f.capacity, 0, 1), "ko", ms=4, label="scaled mean")
                if f.kind in ("dual", "concave"):    # the fit in s (analysis), drawn over ms
                    x = np.linspace(p.rtts_s[0], f.tau_T if f.kind == "dual" else p.rtts_s[-1], 60)
                    ax.plot(units.to_ms(x), analysis.flipped_sigmoid(x, f.a1, f.tau1), "b-", label="concave fit")
                if f.kind in ("dual", "convex"):
                    x = np.linspace(f.tau_T if f.kind == "dual" else p.rtts_s[0], p.rtts_s[-1], 60)
                    ax.plot(units.to_ms(x), analysis.flipped_sigmoid(x, f.a2, f.tau2), "k--", label="convex fit")
                tau = fits.transition(p).tau_T      # analysis.tau_t: "137 ms", or censored "> 366 ms"
                ax.axvline(units.to_ms(tau.bound_s), color="r", lw=1, ls="-" if not tau.censored else ":",
                           label=rf"$\tau_T$ {'' if tau.censored else '= '}{tau.text()} ({f.kind})")
                label(ax, f"{v}, n={n}, B={units.fmt_buffer(p.config.buffer_bytes)}", "RTT (ms)", "scaled throughput")
                ax.set_ylim(0, 1.05)
                ax.legend(fontsize=7)
            runs = sum(p.runs for p in chosen)
            name = f"sigmoid-g{gi}-{slug(v)}"
            items.append(Figure(name, f"Dual-sigmoid fits: {v}, n={n} ({g.label})",
                                f"Mean throughput of {v} with n={n} scaled by the link rate, with the flipped-"
                                f"sigmoid concave fit (τ ≤ τ_T, solid) and convex fit (τ ≥ τ_T, dashed) minimising "
                                f"the summed squared error (tcpprofile.analysis.fit_dual_sigmoid); red: transition "
                                f"RTT τ_T; one panel per socket buffer. "
                                f"{runs_phrase(runs)}; runs with {g.label}.", runs, save(fig, out, name)))
    return Section("sigmoid", "Concave–convex fits", "HPDC'17 Fig. 9", items)


def transition_rtts(data: ReportData, out: Path, fits: SigmoidFits) -> Section:
    items = []
    for gi, g in enumerate(data.groups):
        by_v = {v: [p for p in profs if fits.get(p)] for v, profs in _by_variant(g).items()}
        by_v = {v: ps for v, ps in by_v.items() if len({p.config.streams for p in ps}) >= 2}
        if not by_v:
            items.append(Note(f"Transition RTTs ({g.label})", "no variant has fitted profiles (at least 3 "
                              "measured RTTs) for two or more stream counts"))
            continue
        fig, axes = subplots(len(by_v))
        runs = censored = 0
        for ax, (v, ps) in zip(axes, sorted(by_v.items())):
            for b in _buffers(ps):
                trs = sorted(((p.config.streams, fits.transition(p)) for p in ps if p.config.buffer_bytes == b),
                             key=lambda x: x[0])
                censored += _draw_tau_line(ax, trs, f"B={units.fmt_buffer(b)}")
            label(ax, v, "streams n", r"$\tau_T$ (ms)")
            ax.legend(fontsize=7)
            runs += sum(p.runs for p in ps)
        name = f"transition-g{gi}"
        items.append(Figure(name, f"Transition RTT τ_T over n, B and V ({g.label})",
                            f"Transition RTT τ_T of the dual-sigmoid fit (Fig. 9; tcpprofile.analysis.tau_t, the "
                            f"τ_T `analyze --what transition` prints) per stream count n, with its 95 % bootstrap "
                            f"interval ({TRANSITION_BOOT} resamples of the runs within each RTT, refitted; none "
                            f"from fewer than 3 runs at an RTT), one line per socket buffer B, one panel per "
                            f"variant. A censored τ_T (beyond the largest measured RTT, or below the smallest) is "
                            f"a bound: an open triangle at the grid's end pointing the way it lies, never a point "
                            f"({censored} censored). {len(sum(by_v.values(), []))} profiles from "
                            f"{runs_phrase(runs)}; runs with {g.label}.", runs, save(fig, out, name)))
    return Section("transition", "Transition RTTs", "HPDC'17 Fig. 10", items)


def _draw_tau_line(ax, trs: list, name: str) -> int:
    """One line of τ_T over n: measured τ_T as points with their interval (where there is one), censored
    ones as open triangles at the grid's end (▲: τ_T above it, ▼: below); returns how many were censored."""
    taus = [(n, tr.tau_T, tr) for n, tr in trs]
    measured = [(n, t, tr) for n, t, tr in taus if not t.censored]
    x = np.array([n for n, _, _ in measured])
    y = np.array([units.to_ms(t.value_s) for _, t, _ in measured])     # drawn in ms
    err = units.to_ms(np.array([[t.value_s - tr.ci_low, tr.ci_high - t.value_s]
                                for _, t, tr in measured]).reshape(-1, 2).T)
    line = ax.errorbar(x, y, yerr=np.clip(np.nan_to_num(err), 0, None), fmt="o-", capsize=3, label=name)
    color = line[0].get_color()
    for side, marker, word in (("above", "^", ">"), ("below", "v", "<")):
        cens = [(n, t) for n, t, _ in taus if t.side == side]
        if cens:
            ax.plot([n for n, _ in cens], [units.to_ms(t.bound_s) for _, t in cens], marker, ms=8, mfc="none",
                    ls="none", color=color, label=f"{name}: τ_T {word} {units.to_ms(cens[0][1].bound_s):g} ms (censored)")
    return sum(t.censored for _, t, _ in taus)


def loss_profiles(data: ReportData, out: Path) -> Section:
    fields = [f for f in sel.CONDITION_FIELDS if f not in ("loss_mode", "loss_rate")]
    bases: dict[tuple, list[Group]] = defaultdict(list)
    for g in data.groups:
        bases[tuple(g.conditions[f] for f in fields)].append(g)
    items = []
    for bi, groups in enumerate(bases.values()):
        if all(g.conditions["loss_mode"] == "none" for g in groups):
            continue
        variants = sorted({v for g in groups if g.conditions["loss_mode"] != "none" for v in g.variants()})
        fig, axes = subplots(len(variants))
        runs, configs, drawn = 0, [], []
        for ax, v in zip(axes, variants):
            counts: dict[tuple, int] = defaultdict(int)
            for g in groups:
                for p in g.profiles:
                    if p.config.variant == v:
                        counts[(p.config.streams, p.config.buffer_bytes)] += p.runs
            n, b = max(counts, key=counts.get)
            configs.append(f"{v} n={n} B={units.fmt_buffer(b)}")
            for g in sorted(groups, key=lambda g: (g.conditions["loss_mode"] != "none", g.conditions["loss_rate"])):
                p = next((p for p in g.profiles if (p.config.variant, p.config.streams, p.config.buffer_bytes)
                          == (v, n, b)), None)
                if p is None:
                    continue
                c = g.conditions
                legend = "no loss" if c["loss_mode"] == "none" else f"{c['loss_mode']} {c['loss_rate']:g}"
                ax.plot(p.rtts_ms, p.means / G, "o-", ms=4, label=legend)
                drawn += list(p.means)
                runs += p.runs
            ax.legend(fontsize=7)
        # lossy profiles (0.02–0.15 Gbit/s) flatten to a line on a linear axis beside 9 Gbit/s: log where the
        # means span more than a decade (the axes share y)
        log = spans_decades(drawn)
        for ax, title in zip(axes, configs):
            if log:
                ax.set_yscale("log")
            label(ax, title, "RTT (ms)", "mean throughput (Gbit/s" + (", log)" if log else ")"), zero=not log)
        name = f"loss-b{bi}"
        base = " ".join(w for w in sel.describe_conditions(groups[0].conditions).split() if not w.startswith("loss="))
        items.append(Figure(name, "Throughput profiles under external loss",
                            f"Mean throughput vs RTT, one line per external loss setting (periodic 1/N or uniform "
                            f"p), one panel per variant at its most-measured configuration ({'; '.join(configs)})"
                            f"{'; throughput on a log axis (the means span more than a decade)' if log else ''}. "
                            f"{runs_phrase(runs)}; runs with {base}.", runs, save(fig, out, name)))
    if not items:
        items.append(Note("Loss profiles", "the store has no runs with external loss"))
    return Section("loss", "Profiles under external loss", "slides: throughput profiles under losses", items)


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {
    "mean_profiles": (40, mean_profiles),
    "box_plots": (50, box_plots),
    "sigmoid_fits": (60, sigmoid_fits),
    "transition_rtts": (70, transition_rtts),
    "loss_profiles": (130, loss_profiles),
}
# sections a worker process can draw from the groups alone (box_plots_of(groups, out)): id -> the function
IN_WORKER = {"box_plots": box_plots_of}
