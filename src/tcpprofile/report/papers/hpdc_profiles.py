"""HPDC'17 Fig. 6 (throughput vs RTT per transfer size) and Figs. 9–10 (transition RTT τ_T over stream
counts and buffers), from the store, beside the numbers of the paper's text."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ... import units
from ...same_rtt import rtt_tolerance_s
from ..common import G, Figure, Table, label, pick, runs_phrase, save, subplots
from ..data import Group, ReportData
from ..profiles import TRANSITION_BOOT, SigmoidFits
from .common import (HPDC_SPEC, buffer_text, censored_side, conditions, gbit, interval_text, lacks, ns_text,
                     paper_buffer, rtts_text, size_text, tau_text, versus)

FIG6 = "HPDC'17 Fig. 6: throughput vs transfer size"
FIG10 = "HPDC'17 Figs. 9–10: transition RTT τ_T over streams and buffers"
TABLE1_SIZES = "≈ 1 GB (default), 20, 50, 100 GB"


def _prefer(variants) -> str:
    """The paper's figures are CUBIC's; otherwise the variant measured most."""
    return "cubic" if "cubic" in variants else max(variants, key=variants.get)


def _size_series(data: ReportData):
    """Fixed-size groups that differ only in the transfer size, as {size: group} per base condition."""
    bases: dict[tuple, dict[int, Group]] = defaultdict(dict)
    for g in data.groups:
        if g.conditions["transfer_bytes"]:
            key = tuple(v for k, v in g.conditions.items() if k != "transfer_bytes")
            bases[key][int(g.conditions["transfer_bytes"])] = g
    return [dict(sorted(s.items())) for s in bases.values()]


def transfer_sizes(data: ReportData, out: Path) -> list:
    best = None
    for series in _size_series(data):
        sizes: dict[tuple, int] = defaultdict(int)    # (V, B) -> sizes with a profile over ≥ 2 RTTs
        runs: dict[tuple, int] = defaultdict(int)
        for g in series.values():
            for k in {(p.config.variant, p.config.buffer_bytes) for p in g.profiles if len(p.rtts_ms) >= 2}:
                sizes[k] += 1
            for p in g.profiles:
                runs[(p.config.variant, p.config.buffer_bytes)] += p.runs
        ok = [k for k, c in sizes.items() if c >= 2]
        if ok:
            v = _prefer({k[0]: runs[k] for k in ok})
            b = max((k[1] for k in ok if k[0] == v), key=lambda x: -1 if x is None else x)   # the largest buffer
            if best is None or runs[(v, b)] > best[0]:
                best = (runs[(v, b)], series, v, b)
    if best is None:
        return [lacks(FIG6, "fixed-size transfers (iperf3 -n) of one variant at two or more sizes, each over at "
                      "least two RTTs, under otherwise equal conditions (HPDC'17: CUBIC, large buffer, n = 1–10, "
                      f"sizes {TABLE1_SIZES}, RTTs 0.4–366 ms)",
                      f"{HPDC_SPEC} with variant = \"cubic\" and socket_buffer = \"512MiB\"")]
    _, series, v, b = best
    # per size, the chosen (V, B)'s profiles over ≥ 2 RTTs, by n
    by_size = {size: sorted((p for p in g.profiles if (p.config.variant, p.config.buffer_bytes) == (v, b)
                             and len(p.rtts_ms) >= 2), key=lambda p: p.config.streams) for size, g in series.items()}
    by_size = {size: profs for size, profs in by_size.items() if profs}
    sizes = list(by_size)
    fig, axes = subplots(len(sizes), cols=4, w=3.8)
    rows, runs, ns, rtts = [], 0, set(), set()
    for ax, size in zip(axes, sizes):
        shown = pick({p.config.streams for p in by_size[size]}, 5)
        for p in by_size[size]:
            runs += p.runs
            ns.add(p.config.streams)
            rtts.update(p.rtts_ms)
            for t, s in zip(p.rtts_ms, p.samples):
                rows.append([size_text(size), str(p.config.streams), f"{t:g}", str(len(s)), gbit(s.mean())])
            if p.config.streams in shown:
                ax.plot(p.rtts_ms, p.means / G, "o-", ms=4, label=f"n={p.config.streams}")
        label(ax, f"F={size_text(size)}", "RTT (ms)", "mean throughput (Gbit/s)", zero=True)
        ax.legend(fontsize=7)
    name = "papers-fig6"
    cond = conditions(series[sizes[-1]], varies="F=", variant=v, B=buffer_text(b), n=ns_text(ns),
                      sizes=", ".join(size_text(s) for s in sizes), RTTs=rtts_text(rtts))
    figure = Figure(name, "HPDC'17 Fig. 6 from this store: throughput vs RTT per transfer size",
                    f"Mean throughput vs RTT, one panel per transfer size F, one line per stream count (up to 5 "
                    f"shown; all in the table). {cond} (sizes differ only in F). {runs_phrase(runs)}.",
                    runs, save(fig, out, name))
    data_table = Table("papers-fig6-data", "Fig. 6 data: mean throughput (Gbit/s) per F, n and RTT",
                       f"{cond}.", ["F", "n", "RTT (ms)", "runs", "Gbit/s"], rows, runs=runs)
    near = [(p.config.streams, s) for p in by_size[sizes[-1]] for t, s in zip(p.rtts_s, p.samples)
            if abs(t - 45.6e-3) <= rtt_tolerance_s(45.6e-3)]
    at45 = ("; ".join(f"n={n}: {gbit(s.mean())}" for n, s in near) + f" Gbit/s (F={size_text(sizes[-1])})"
            if near else "no run at 45.6 ms")
    low = [f"F={size_text(size)}: {gbit(max(p.samples[0].mean() for p in profs))} Gbit/s at "
           f"{min(p.rtts_ms[0] for p in profs):g} ms" for size, profs in by_size.items()]
    compare = versus("papers-fig6-vs", "Fig. 6: the paper and this store", [
        ["transfer sizes", "Table 1", TABLE1_SIZES, ", ".join(size_text(s) for s in sizes)],
        ["peaking at zero: Θ(τ → 0) ≈ C", "§3.2, Figs. 3, 4, 6", "≈ C = 9.6 (SONET) / 10 Gbit/s",
         "best n at the smallest RTT: " + "; ".join(low)],
        ["aggregate at 45.6 ms, ≈ 100 GB transfers", "§4 (Fig. 11, consistent with Fig. 6(d))", "≈ 9 Gbit/s", at45],
    ], runs)
    return [figure, data_table, compare]


# -- Figs. 9–10 ----------------------------------------------------------------------------------
def _paper_cubic(buffer: str, n: int) -> str:
    """HPDC'17 §2.3's τ_T for CUBIC (Fig. 10, 10GigE) at a Table 1 buffer and n streams."""
    if buffer == "default":
        return "0.4 ms" if n <= 3 else "11.8 ms"
    if buffer == "normal":
        return "≠ 45.6 ms (the exception)" if n == 2 else "91.6 ms" if n == 10 else "45.6 ms"
    if buffer == "large":
        return "≠ 91.6 ms (the exception)" if n == 2 else "91.6 ms" if n <= 6 else "183 ms"
    return "–"


def transitions(data: ReportData, out: Path, fits: SigmoidFits) -> list:
    best = None
    for g in data.groups:
        fitted = [p for p in g.profiles if fits.transition(p) is not None]
        by_v = defaultdict(set)
        for p in fitted:
            by_v[p.config.variant].add(p.config.streams)
        keep = [p for p in fitted if len(by_v[p.config.variant]) >= 2]
        if keep and (best is None or len(keep) > len(best[1])):
            best = (g, keep)
    if best is None:
        return [lacks(FIG10, "profiles over at least 3 RTTs of one variant at two or more stream counts in one "
                      "group (HPDC'17: CUBIC, H-TCP, STCP; n = 1–10; default, normal and large buffers; RTTs "
                      "0.4–366 ms)", f"{HPDC_SPEC} (one size, e.g. size = \"20GB\")")]
    g, profs = best
    variants = sorted({p.config.variant for p in profs})
    fig, axes = subplots(len(variants))
    rows, classes, runs, censored, count = [], [], 0, 0, 0
    for ax, v in zip(axes, variants):
        mine = [p for p in profs if p.config.variant == v]
        for b in sorted({p.config.buffer_bytes for p in mine}, key=lambda x: -1 if x is None else x):
            line = sorted((p for p in mine if p.config.buffer_bytes == b), key=lambda p: p.config.streams)
            n_in, t_in, n_hi, n_lo = [], [], [], []
            for p in line:
                tr = fits.transition(p)
                side = censored_side(tr.fit)
                count += 1
                censored += side is not None
                runs += p.runs
                (n_hi if side == "right" else n_lo if side == "left" else n_in).append(p.config.streams)
                if side is None:
                    t_in.append(units.to_ms(tr.fit.tau_T))   # drawn in ms
                name = paper_buffer(b)
                rows.append([v, buffer_text(b), str(p.config.streams), rtts_text(p.rtts_ms),
                             str(p.runs), tau_text(tr.fit, p.rtts_s), interval_text(tr, p.rtts_s), tr.fit.kind,
                             _paper_cubic(name, p.config.streams) if v == "cubic" else "–"])
                classes.append("flagged" if side else "")
            color = ax.plot(n_in, t_in, "o-", ms=5, label=f"B={units.fmt_buffer(b)}")[0].get_color()
            top, bottom = max(max(p.rtts_ms) for p in line), min(min(p.rtts_ms) for p in line)
            if n_hi:
                ax.plot(n_hi, [top] * len(n_hi), "^", ms=8, color=color, mfc="none",
                        label=f"B={units.fmt_buffer(b)}: τ_T > {top:g} ms (censored)")
            if n_lo:
                ax.plot(n_lo, [bottom] * len(n_lo), "v", ms=8, color=color, mfc="none",
                        label=f"B={units.fmt_buffer(b)}: τ_T < {bottom:g} ms (censored)")
        label(ax, v, "streams n", r"$\tau_T$ (ms)")
        ax.legend(fontsize=6)
    name = "papers-fig10"
    cond = conditions(g, variants=", ".join(variants),
                      n=ns_text({p.config.streams for p in profs}),
                      buffers=", ".join(sorted({buffer_text(p.config.buffer_bytes) for p in profs})),
                      RTTs=rtts_text({t for p in profs for t in p.rtts_ms}))
    figure = Figure(name, "HPDC'17 Figs. 9–10 from this store: transition RTT τ_T over n and B",
                    f"τ_T of the dual-sigmoid fit (tcpprofile.analysis.transition_rtt, as the Transition RTTs "
                    f"section) per stream count, one line per socket buffer, one panel per variant. A fit without "
                    f"a convex part puts τ_T at the grid's largest RTT: it is censored (the concave region reaches "
                    f"beyond the measured RTTs) and drawn as an open triangle at the grid's end, never as a value "
                    f"({censored} of {count} τ_T censored). {cond}. {runs_phrase(runs)}.", runs, save(fig, out, name))
    table = Table("papers-fig10-data", "Figs. 9–10 data: τ_T per variant, buffer and n",
                  f"τ_T with its 95 % bootstrap interval ({TRANSITION_BOOT} refits); censored rows shaded (a bound, not "
                  f"a value). 'paper' is HPDC'17 §2.3's CUBIC τ_T on 10GigE at the same Table 1 buffer. {cond}.",
                  ["variant", "B", "n", "RTTs", "runs", "τ_T", "95 % interval", "fit", "paper (CUBIC, Fig. 10)"],
                  rows, classes, runs)
    compare = versus("papers-fig10-vs", "Figs. 9–10: the paper and this store", [
        ["τ_T grows with n (CUBIC, large buffer)", "§2.3, Fig. 10", "91.6 ms for 1–6 streams (except 2), 183 ms "
         "for 7 or more", _trend(rows, "cubic", "large")],
        ["τ_T grows with n (CUBIC, normal buffer)", "§2.3, Fig. 10", "45.6 ms (except 2 streams), 91.6 ms at 10",
         _trend(rows, "cubic", "normal")],
        ["τ_T grows with n (CUBIC, default buffer)", "§2.3, Fig. 10", "0.4 ms for 1–3 streams, 11.8 ms for 4 or more",
         _trend(rows, "cubic", "default")],
        ["τ_T grows with the buffer (one CUBIC stream)", "§2.3, Fig. 9", "default: entirely convex; τ_T rises "
         "with the buffer", _by_buffer(rows)],
        ["similar trends for H-TCP and STCP", "§2.3, Fig. 10", "increasing τ_T with n and B",
         "; ".join(f"{v}: {_trend(rows, v, None)}" for v in ("htcp", "scalable") if v in variants) or "not measured"],
        ["censored τ_T", "–", "the paper reports grid values", f"{censored} of {count} here (shown as > τ_max)"],
    ], runs)
    return [figure, table, compare]


def _trend(rows, variant: str, buffer: str | None) -> str:
    """τ_T at the smallest and the largest n of each matching (variant, B) line."""
    lines: dict[str, list] = defaultdict(list)
    for r in rows:
        if r[0] == variant and (buffer is None or r[1].endswith(f"(Table 1: {buffer})")):
            lines[r[1]].append((int(r[2]), r[5]))
    if not lines:
        return "not measured"
    return "; ".join(f"B={b}: n={s[0][0]} {s[0][1]} → n={s[-1][0]} {s[-1][1]}"
                     for b, s in ((b, sorted(v)) for b, v in lines.items()))


def _by_buffer(rows) -> str:
    one = [r for r in rows if r[0] == "cubic" and r[2] == "1"]
    return "; ".join(f"B={r[1]}: {r[5]}" for r in one) or "no single-stream CUBIC profile"
