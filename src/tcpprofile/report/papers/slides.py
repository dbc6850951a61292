"""The eleven-variants slides (Rao et al.): Group 1 / Group 2 against BBR, and the profiles under external
loss (1/100K, 1/50K, 1/25K, 1/500; periodic vs uniform; BBR 9.3 → 2 Gbit/s at 1/500), from the store."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from ...choose import decide
from ... import units
from ...choose import select as sel
from ..common import G, Figure, Table, label, runs_phrase, save, subplots
from ..data import Group, ReportData
from ..profiles import SigmoidFits
from .common import LOSS_SPEC, SLIDES_SPEC, conditions, gbit, lacks, rtts_text, tau_text, versus

GROUPS = "Slides: Group 1 / Group 2 against BBR"
LOSSES = "Slides: throughput profiles under external loss"
# "Throughput Measurements": differences of the profiles with respect to BBR
GROUP1 = ("htcp", "highspeed", "illinois", "scalable", "yeah")       # positive at all RTTs
GROUP2 = ("bic", "cubic", "lp", "vegas", "westwood")                 # mixed
SERIES = (1e-5, 2e-5, 4e-5, 2e-3)                                    # 1 in 100K, 50K, 25K, 500
SERIES_NAMES = {1e-5: "1/100K", 2e-5: "1/50K", 4e-5: "1/25K", 2e-3: "1/500"}


def _sign(d: decide.Mean) -> str:
    ci = d.interval()
    if ci is None:
        return "no interval (1 run)"
    return "above" if ci[0] > 0 else "below" if ci[1] < 0 else "straddles 0"


def groups_vs_bbr(data: ReportData, out: Path) -> list:
    best = None
    for g in data.groups:
        if g.conditions["loss_mode"] not in (None, "none"):
            continue
        by_cfg: dict = defaultdict(dict)
        for p in g.profiles:
            by_cfg[(p.config.streams, p.config.buffer_bytes)][p.config.variant] = p
        for (n, b), vs in by_cfg.items():
            others = [v for v in vs if v in GROUP1 + GROUP2 and "bbr" in vs
                      and len(set(vs[v].rtts_ms) & set(vs["bbr"].rtts_ms)) >= 2]
            if others:
                rank = (len(others), -n, g.runs)
                if best is None or rank > best[0]:
                    best = (rank, g, n, b, vs, others)
    if best is None:
        return [lacks(GROUPS, "loss-free runs of BBR and of Group 1 (H-TCP, HighSpeed, Illinois, Scalable, YeAH) or "
                      "Group 2 (BIC, CUBIC, LP, Vegas, Westwood) variants at the same n and socket buffer over two or "
                      "more common RTTs (the slides: 1–10 streams, 100 s, large buffer, 0–366 ms)", SLIDES_SPEC)]
    _, g, n, b, vs, others = best
    bbr = vs["bbr"]
    fig, axes = subplots(2, cols=2, w=5.2, h=3.6)
    rows, classes, runs, verdict = [], [], bbr.runs, {}
    for ax, (gname, members) in zip(axes, (("Group 1", GROUP1), ("Group 2", GROUP2))):
        for v in [v for v in members if v in others]:
            p = vs[v]
            runs += p.runs
            pb = dict(zip(bbr.rtts_ms, bbr.samples))
            ts, ds, errs, signs = [], [], [], []
            for t, s in zip(p.rtts_ms, p.samples):
                if t not in pb:
                    continue
                d = decide.difference(decide.mean_of(s), decide.mean_of(pb[t]))
                ci = d.interval()
                sign = _sign(d)
                ts.append(t)
                ds.append(d.value / G)
                errs.append(0.0 if ci is None else (ci[1] - ci[0]) / 2 / G)
                signs.append(sign)
                rows.append([v, gname, f"{t:g}", gbit(s.mean()), gbit(pb[t].mean()), f"{d.value / G:+.3f}",
                             "–" if ci is None else f"[{ci[0] / G:+.3f}, {ci[1] / G:+.3f}]", sign])
                classes.append("" if sign == "above" else "flagged")
            verdict[v] = (gname, signs)
            ax.errorbar(ts, ds, yerr=errs, fmt="o-", ms=4, capsize=3, label=v)
        ax.axhline(0, color="black", lw=0.8)
        label(ax, f"{gname} − BBR, n={n}, B={units.fmt_buffer(b)}", "RTT (ms)", "Θ_V − Θ_BBR (Gbit/s)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    name = "papers-slides-groups"
    cond = conditions(g, n=n, B=units.fmt_buffer(b), variants="bbr, " + ", ".join(others),
                      RTTs=rtts_text(bbr.rtts_ms))
    figure = Figure(name, "Slides' Group 1 and Group 2 against BBR, from this store",
                    f"Θ_V(τ) − Θ_BBR(τ) per variant with its 95 % Welch interval (tcpprofile.choose.decide), one panel per "
                    f"group of the slides. {cond}. {runs_phrase(runs)}.", runs, save(fig, out, name))
    table = Table("papers-slides-groups-data", "Group 1 / Group 2 data: profile differences to BBR",
                  f"Per variant and RTT: means (Gbit/s), their difference and 95 % Welch interval; 'above': the "
                  f"interval lies above 0 (rows not above are shaded). {cond}.",
                  ["variant", "group", "RTT (ms)", "Θ_V", "Θ_BBR", "Θ_V − Θ_BBR", "95 % interval", "interval"],
                  rows, classes, runs)

    def summary(gname):
        got = [f"{v}: above at {s.count('above')} of {len(s)} RTTs" for v, (gn, s) in verdict.items() if gn == gname]
        return "; ".join(got) or "no variant of the group measured with BBR"
    compare = versus("papers-slides-groups-vs", "Groups against BBR: the slides and this store", [
        ["Group 1 above BBR", "slides, Throughput Measurements", "higher than BBR uniformly for all RTTs",
         summary("Group 1")],
        ["Group 2 against BBR", "slides, Throughput Measurements", "mixed", summary("Group 2")],
    ], runs)
    return [figure, table, compare]


def _rate_name(rate: float) -> str:
    """1/100K etc. for the slides' rates, else the rate itself."""
    near = next((s for s in SERIES if math.isclose(rate, s, rel_tol=1e-6)), None)
    return SERIES_NAMES[near] if near else f"{rate:g}"


def _lossless(g: Group) -> bool:
    return g.conditions["loss_mode"] in (None, "none")


def _loss_key(g: Group) -> str:
    c = g.conditions
    return "no loss" if c["loss_mode"] in (None, "none") else f"{c['loss_mode']} {_rate_name(c['loss_rate'])}"


def _shape(fits: SigmoidFits, p) -> str:
    tr = fits.transition(p)
    if tr is None:
        return "– (< 3 RTTs)"
    if tr.fit.kind == "concave":
        return f"concave over the grid (τ_T {tau_text(tr.fit, p.rtts_s)})"
    if tr.fit.kind == "convex":
        return f"convex (τ_T {tau_text(tr.fit, p.rtts_s)})"
    return f"concave to τ_T = {tau_text(tr.fit, p.rtts_s)}, then convex"


def losses(data: ReportData, out: Path, fits: SigmoidFits) -> list:
    fields = [f for f in sel.CONDITION_FIELDS if f not in ("loss_mode", "loss_rate")]
    bases: dict[tuple, list[Group]] = defaultdict(list)
    for g in data.groups:
        bases[tuple(g.conditions[f] for f in fields)].append(g)
    best = None
    for groups in bases.values():
        lossy = [g for g in groups if g.conditions["loss_mode"] not in (None, "none")]
        if lossy and (best is None or sum(g.runs for g in lossy) > best[0]):
            best = (sum(g.runs for g in lossy), groups)
    if best is None:
        return [lacks(LOSSES, "runs with external loss (periodic 1 in 100,000, 50,000, 25,000 and 500, and uniform "
                      "at the same rates) of BBR, CUBIC and H-TCP over the RTT grid", LOSS_SPEC)]
    groups = sorted(best[1], key=lambda g: (g.conditions["loss_rate"] or 0, g.conditions["loss_mode"] or ""))
    counts: dict[tuple, int] = defaultdict(int)
    for g in groups:
        for p in g.profiles:
            if g.conditions["loss_mode"] not in (None, "none"):
                counts[(p.config.streams, p.config.buffer_bytes)] += p.runs
    n, b = max(counts, key=lambda k: (counts[k], -k[0]))
    rates = sorted({g.conditions["loss_rate"] for g in groups if g.conditions["loss_mode"] not in (None, "none")})
    lossy = [g for g in groups if not _lossless(g)]
    nolos = [g for g in groups if _lossless(g)]

    def chosen(g):
        return sorted((p for p in g.profiles if (p.config.streams, p.config.buffer_bytes) == (n, b)),
                      key=lambda p: p.config.variant)
    colour = {v: f"C{i}" for i, v in enumerate(sorted({p.config.variant for g in groups for p in chosen(g)}))}
    fig, axes = subplots(len(rates), cols=4, w=3.8)
    for ax, rate in zip(axes, rates):
        for g in [x for x in lossy if x.conditions["loss_rate"] == rate] + nolos:
            style = ":" if _lossless(g) else "-" if g.conditions["loss_mode"] == "periodic" else "--"
            for p in chosen(g):
                what = "no loss" if _lossless(g) else g.conditions["loss_mode"]
                ax.plot(p.rtts_ms, p.means / G, style, marker="" if _lossless(g) else "o", ms=3,
                        color=colour[p.config.variant], label=f"{p.config.variant} {what}")
        label(ax, f"loss {_rate_name(rate)}", "RTT (ms)", "mean throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=6)
    rows, runs, found = [], 0, {}
    for g in groups:
        for p in chosen(g):
            runs += p.runs
            shape = _shape(fits, p)
            found[(_loss_key(g), p.config.variant)] = (p, shape)
            rows.append([_loss_key(g), p.config.variant, rtts_text(p.rtts_ms), str(p.runs),
                         gbit(p.samples[0].mean()), gbit(p.samples[-1].mean()), shape])
    name = "papers-slides-losses"
    cond = conditions(lossy[0], varies="loss=", n=n, B=units.fmt_buffer(b),
                      loss_settings=", ".join(dict.fromkeys(_loss_key(g) for g in groups)))
    figure = Figure(name, "Slides' profiles under external loss, from this store",
                    f"Mean throughput vs RTT, one panel per loss rate (solid: periodic 1 in N, dashed: uniform p, "
                    f"dotted: no loss), one colour per variant; shape from the dual-sigmoid fit (a τ_T at the grid's "
                    f"end is a bound). {cond}. {runs_phrase(runs)}.", runs, save(fig, out, name))
    table = Table("papers-slides-losses-data", "Loss series data: throughput at the shortest and longest RTT, shape",
                  f"{cond}.", ["loss", "variant", "RTTs", "runs", "Θ at τ_min (Gbit/s)", "Θ at τ_max (Gbit/s)",
                               "shape"], rows, runs=runs)

    def shapes(key, variants=("bbr", "cubic", "htcp")):
        got = [f"{v}: {found[(key, v)][1]}" for v in variants if (key, v) in found]
        return "; ".join(got) or f"no {key} runs"

    def ends(key, v):
        if (key, v) not in found:
            return f"no {v} at {key}"
        p = found[(key, v)][0]
        return (f"{v} {gbit(p.samples[0].mean())} at {p.rtts_ms[0]:g} ms → "
                f"{gbit(p.samples[-1].mean())} at {p.rtts_ms[-1]:g} ms")
    compare = versus("papers-slides-losses-vs", "Profiles under loss: the slides and this store", [
        ["1 in 100,000 (periodic)", "slides, Throughput Profiles Under Losses", "BBR, CUBIC and HTCP remain concave",
         shapes("periodic 1/100K")],
        ["1 in 50,000 (periodic)", "same", "retain overall shape; CUBIC shows more variability", shapes("periodic 1/50K")],
        ["1 in 25,000 (periodic)", "same", "CUBIC and HTCP begin transition to convex", shapes("periodic 1/25K")],
        ["periodic vs uniform", "same", "transitions of CUBIC and HTCP differ",
         "; ".join(f"{SERIES_NAMES[s]} uniform: {shapes(f'uniform {SERIES_NAMES[s]}', ('cubic', 'htcp'))}"
                   for s in SERIES if any(k[0] == f"uniform {SERIES_NAMES[s]}" for k in found)) or "no uniform runs"],
        ["1 in 500: CUBIC and HTCP", "same", "significantly lower and convex",
         shapes("periodic 1/500", ("cubic", "htcp"))],
        ["1 in 500: BBR", "same", "concave throughout; 9.3 Gbit/s for the shortest, 2 Gbit/s for the longest "
         "connection", ends("periodic 1/500", "bbr") + f"; {shapes('periodic 1/500', ('bbr',))}"],
    ], runs)
    return [figure, table, compare]
