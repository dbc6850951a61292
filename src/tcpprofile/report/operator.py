"""The operator's page, the report's first section: per path, every configuration's mean
throughput with its interval against a log RTT axis, the recommendation with the lines to paste, throughput
over calendar time, and the host settings the runs were measured under.

A path is an emulated link's condition group (rate C, bottleneck buffer β, loss, size or duration, direction:
select.CONDITION_FIELDS), or, off emulated links, one host pair within a group (store.reads.run_context).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection

from ..choose import decide, select as sel
from .. import units
from ..hostcheck import rules as hostcheck_rules
from ..errors import TcpProfileError
from ..store import reads
from .common import (G, Code, Figure, Heading, Note, Section, Table, label, runs_phrase, save, slug,
                     spans_decades, subplots)
from .data import Group, ReportData

CONFIDENCE = 0.95
MIN_INTERVAL_RUNS = 3        # no interval from fewer runs (project standard): the point is drawn without a bar
MAX_SETTING_SETS = 6         # host-settings columns shown (the most-used sets)
MAX_CALENDAR_CONFIGS = 8     # configurations coloured in the calendar figure (the others grey)


@dataclass
class OpPath:
    id: str
    label: str
    group: Group
    profiles: list[sel.Profile]
    context: dict[str, dict]          # run_id -> reads.run_context row

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.profiles)

    @property
    def rtts_s(self) -> list[float]:
        return sorted({t for p in self.profiles for t in p.rtts_s})

    @property
    def rtts(self) -> list[float]:
        """rtts_s in ms, as drawn and printed."""
        return [units.to_ms(t) for t in self.rtts_s]

    def profile_set(self) -> sel.ProfileSet:
        return sel.ProfileSet(self.group.conditions, self.profiles)


def subset(p: sel.Profile, keep: set[str]) -> sel.Profile | None:
    """The profile restricted to the runs in `keep` (RTTs left without runs dropped); None when none is left."""
    rtts, samples, ids, flagged = [], [], [], []
    for k, t in enumerate(p.rtts_s):
        m = np.array([r in keep for r in p.run_ids[k]], dtype=bool)
        if m.any():
            rtts.append(t)
            samples.append(p.samples[k][m])
            ids.append([r for r, x in zip(p.run_ids[k], m) if x])
            flagged.append(p.flagged[k][m] if p.flagged else np.zeros(int(m.sum()), bool))
    if not rtts:
        return None
    return sel.Profile(p.config, rtts, samples, kernel_name=p.kernel_name, rate_bps=p.rate_bps, run_ids=ids,
                       transfer_bytes=p.transfer_bytes, duration_s=p.duration_s, flagged=flagged)


def host_pair(ctx: dict) -> tuple[str, str]:
    """(this side, the peer) of a run off an emulated link: the host iperf3's JSON names (uname) and the remote
    link's target, else the peer the JSON connected to or accepted."""
    peer = ctx.get("link_host") if ctx.get("link_kind") == "remote" else None
    return ctx.get("local_host") or "this host", peer or ctx.get("peer_host") or ctx.get("link_host") or "unknown peer"


def paths(data: ReportData) -> list[OpPath]:
    out = []
    for gi, g in enumerate(data.groups):
        ids = [r for p in g.profiles for rs in p.run_ids for r in rs]
        ctx = reads.run_context(data.store, ids)
        if g.conditions.get("link_kind") == "emulated":
            out.append(OpPath(f"g{gi}", f"emulated link, {g.label}", g, g.profiles, ctx))
            continue
        by_pair: dict[tuple[str, str], set[str]] = defaultdict(set)
        for r in ids:
            by_pair[host_pair(ctx.get(r, {}))].add(r)
        for k, (pair, keep) in enumerate(sorted(by_pair.items())):
            profs = [q for q in (subset(p, keep) for p in g.profiles) if q is not None]
            out.append(OpPath(f"g{gi}-{k}", f"{pair[0]} → {pair[1]}, {g.label}", g, profs, ctx))
    return out


# -- configurations against RTT ---------------------------------------------------------------------------
def interval(samples: np.ndarray, capacity: float | None) -> tuple[float, float] | None:
    """The mean's two-sided Student-t interval at CONFIDENCE (decide.mean_of: s²/n, n − 1 df, as select's exact
    estimate), clipped to the physical range [0, C] (bits/s); None from fewer than MIN_INTERVAL_RUNS runs."""
    if samples.size < MIN_INTERVAL_RUNS:
        return None
    ci = decide.mean_of(samples).interval(CONFIDENCE)
    if ci is None:
        return None
    hi = ci[1] if capacity is None else min(ci[1], capacity)
    return max(ci[0], 0.0), hi


def configurations_figure(path: OpPath, out: Path) -> Figure | Note:
    by_variant: dict[str, list[sel.Profile]] = defaultdict(list)
    for p in path.profiles:
        by_variant[p.config.variant].append(p)
    capacity = path.group.conditions.get("rate_bps")
    means = [m for p in path.profiles for m in p.means]
    log_y = spans_decades(means)
    streams = sorted({p.config.streams for p in path.profiles})
    buffers = sorted({p.config.buffer_bytes for p in path.profiles}, key=lambda b: -1 if b is None else b)
    cmap = matplotlib.colormaps["viridis"]
    colour = {n: cmap(i / max(1, len(streams) - 1) * 0.9) for i, n in enumerate(streams)}
    marker = dict(zip(buffers, "osD^vP*Xph"))
    fig, axes = subplots(len(by_variant), cols=3, w=4.6, h=3.4, layout="grid")
    bars = lone = 0
    floor = min((m for m in means if m > 0), default=1.0) / 2 / G
    for ax, (v, profs) in zip(axes, sorted(by_variant.items())):
        # a few collections per panel, not an artist per point: hundreds of configurations draw in seconds
        lines, line_cols, bar_x, bar_lo, bar_hi, bar_cols = [], [], [], [], [], []
        points: dict[tuple, list] = defaultdict(list)        # (marker, filled) -> [(x, y, colour)]
        for p in sorted(profs, key=lambda p: p.config.simplicity()):
            c = colour[p.config.streams]
            lines.append(np.column_stack([p.rtts_ms, p.means / G]))
            line_cols.append(c)
            for t, smp, m in zip(p.rtts_ms, p.samples, p.means):
                ci = interval(smp, capacity)
                points[(marker[p.config.buffer_bytes], ci is not None)].append((t, m / G, c))
                if ci is None:
                    lone += 1
                    continue
                bars += 1
                bar_x.append(t)
                bar_lo.append(max(ci[0] / G, floor) if log_y else ci[0] / G)   # 0 on a log axis: its bottom
                bar_hi.append(ci[1] / G)
                bar_cols.append(c)
        ax.add_collection(LineCollection(lines, colors=line_cols, linewidths=0.8, alpha=0.8))
        if bar_x:
            ax.vlines(bar_x, bar_lo, bar_hi, colors=bar_cols, lw=1.0)   # the 95 % intervals
        for (mk, filled), pts in points.items():
            x, y, cols = zip(*pts)
            ax.scatter(x, y, s=16, marker=mk, c=list(cols) if filled else "white",
                       edgecolors=list(cols), linewidths=0.9, zorder=3)
        ax.autoscale_view()
        ax.set_xscale("log")
        ax.set_xticks(path.rtts, [f"{t:g}" for t in path.rtts], rotation=45, fontsize=7)   # the measured RTTs
        if log_y:
            ax.set_yscale("log")
        ax.minorticks_off()      # log axes' minor ticks: unlabelled, and most of the figure's drawing time
        label(ax, v, "RTT (ms, log scale)", "throughput (Gbit/s" + (", log)" if log_y else ")"), zero=not log_y)
    proxies = [axes[0].plot([], [], "-", color=colour[n], label=f"n={n}")[0] for n in streams]
    proxies += [axes[0].plot([], [], marker[b], color="grey", ls="none", label=f"B={units.fmt_buffer(b)}")[0]
                for b in buffers]
    axes[0].legend(handles=proxies, fontsize=7, ncol=2)
    name = f"operator-{slug(path.id)}-configurations"
    hollow = (f" {lone} point(s) rest on fewer than {MIN_INTERVAL_RUNS} runs: drawn hollow, without an interval."
              if lone else "")
    return Figure(name, f"Every configuration on this path: {path.label}",
                  f"Mean throughput of each configuration (V, n, B) against the RTT on a log axis, one panel per "
                  f"variant; colour: stream count n, marker: socket buffer B; bars: the mean's {CONFIDENCE:.0%} "
                  f"Student-t interval over the repetitions (as select computes it), clipped to [0, C]"
                  f"{' (a bound at 0 reaches the log axis bottom)' if log_y else ''}"
                  f"{', throughput on a log axis (the means span more than a decade)' if log_y else ''}. "
                  f"{bars} intervals.{hollow} {_configs(len(path.profiles))}, {runs_phrase(path.runs)} at "
                  f"{len(path.rtts)} RTT(s).", path.runs, save(fig, out, name))


# -- the recommendation -----------------------------------------------------------------------------------
def paste_lines(settings: sel.Settings, config: sel.Config, rtt_s: float, rate_bps: float | None) -> str:
    """The settings as lines to paste on the sending host. The report does not know that host's current values,
    so it writes no sysctl value (a value written blind could lower a host tuned higher): it gives the
    `tcpprofile hostcheck` line that compares them there and prints the /etc/sysctl.d lines that only raise,
    the minimums as comments, then the congestion control's steps and the transfer tools' command lines (what
    `tcpprofile select` prints, commands/settings_text.py)."""
    cc = settings.congestion_control
    check = (f"tcpprofile hostcheck --rtt {units.to_ms(rtt_s):g}ms --rate {(rate_bps or 10e9) / 1e9:g}Gbit "
             f"--streams {config.streams}" + (f" --buffer {config.buffer_bytes}B" if config.buffer_bytes else ""))
    lines = ["# on the sending host: compares its values with these minimums and prints the",
             f"# {hostcheck_rules.SNIPPET_PATH} lines that only raise (nothing is lowered)", check]
    lines += [f"#   {k} = {t.text()}" if isinstance(t.minimum, str) else
              f"#   {k} at least {t.text()}" + (" (per field; 0: no requirement)" if len(t.minimum) > 1 else "")
              for k, t in settings.targets.items()]
    lines += [f"# congestion control {cc['name']} ({cc['impl']}, {cc['how']}):", *cc["steps"]]
    lines += ["# transfer tools:", *settings.commands]
    return "\n".join(lines)


def recommendation(path: OpPath) -> list:
    rows, blocks, runs = [], defaultdict(list), 0
    ps = path.profile_set()
    for t_s in path.rtts_s:
        t = units.to_ms(t_s)   # as printed
        try:
            choice = sel.select(ps, t_s, confidence=CONFIDENCE)
        except TcpProfileError as err:
            rows.append([f"{t:g}", "–", "–", "–", "–", str(err)])
            continue
        r = choice.recommended
        used = sum(r.repetitions)
        runs += sum(sum(e.repetitions) for e in choice.ranking)
        ci = ("–" if r.ci_low_bps is None or min(r.repetitions) < MIN_INTERVAL_RUNS else
              f"{max(r.ci_low_bps, 0) / G:.3f}–{r.ci_high_bps / G:.3f}")
        why = "best" if r is choice.best else f"the simplest within {choice.margin:.0%} of {choice.best.config.label()}"
        rows.append([f"{t:g}", r.config.label(), f"{r.throughput_bps / G:.3f}", ci, str(used), why])
        rate = path.group.conditions.get("rate_bps")
        settings = sel.host_settings(r, t_s, rate)
        blocks[(r.config.label(), paste_lines(settings, r.config, t_s, rate))].append(t)
    table = Table(f"operator-{slug(path.id)}-recommended", f"Recommended configuration per RTT: {path.label}",
                  f"At each RTT measured on this path, tcpprofile select's recommendation (the best mean; configurations "
                  f"within the margin of it are a tie that goes to the simplest: {sel.TIE_BREAK}), its mean and {CONFIDENCE:.0%} Student-t interval (– from "
                  f"fewer than {MIN_INTERVAL_RUNS} runs) and the runs at that RTT. {runs_phrase(runs)} ranked.",
                  ["RTT (ms)", "recommended", "Gbit/s", f"{CONFIDENCE:.0%} CI", "runs", "why"], rows, runs=runs)
    codes = [Code(f"operator-{slug(path.id)}-paste-{k}", f"Lines to paste for {cfg} at "
                  f"{', '.join(f'{t:g}' for t in rtts)} ms",
                  "For this recommendation (select.host_settings): the hostcheck line to run on the sending host "
                  "(it prints the sysctl.d lines that only raise what is below these minimums), how to get the "
                  "congestion control, transfer-tool command lines; HOST, SRC_URL and DST_URL are placeholders.",
                  text)
             for k, ((cfg, text), rtts) in enumerate(blocks.items())]
    return [table, *codes]


# -- calendar time ----------------------------------------------------------------------------------------
def calendar_figure(path: OpPath, out: Path) -> Figure | Note:
    title = f"Throughput over calendar time: {path.label}"
    pts = [(path.context[r]["started_at"], float(x), p.config.label())
           for p in path.profiles for rs, s in zip(p.run_ids, p.samples) for r, x in zip(rs, s)
           if path.context.get(r, {}).get("started_at") is not None]
    if not pts:
        return Note(title, "no run on this path has a start time")
    days = sorted({t.date() for t, _, _ in pts})
    if len(days) < 2:
        return Note(title, f"every timed run on this path started on one day ({days[0].isoformat()}): no calendar "
                    f"view; {runs_phrase(len(pts))}")
    counts = Counter(c for _, _, c in pts)
    top = [c for c, _ in counts.most_common(MAX_CALENDAR_CONFIGS)]
    fig, axes = subplots(1, w=11.0, h=3.6)
    ax = axes[0]
    rest = [(t, x) for t, x, c in pts if c not in top]
    if rest:
        ax.plot([t for t, _ in rest], [x / G for _, x in rest], ".", color="0.7", ms=3, label="other configurations")
    for c in top:
        mine = sorted((t, x) for t, x, cc in pts if cc == c)
        ax.plot([t for t, _ in mine], [x / G for _, x in mine], "o", ms=3, label=c)
    if spans_decades([x for _, x, _ in pts]):
        ax.set_yscale("log")
    label(ax, path.label, "run start (UTC)", "throughput (Gbit/s)")
    ax.legend(fontsize=7, ncol=3)
    fig.autofmt_xdate()
    name = f"operator-{slug(path.id)}-calendar"
    return Figure(name, title, f"Each run's throughput at its start time (runs.started_at) over {len(days)} days "
                  f"({days[0].isoformat()} to {days[-1].isoformat()}); the {_configs(len(top))} with the most runs "
                  f"coloured{', the others grey' if rest else ''}. {runs_phrase(len(pts))}.", len(pts),
                  save(fig, out, name))


# -- host settings ----------------------------------------------------------------------------------------
def settings_table(path: OpPath) -> Table | Note:
    title = f"Host settings the runs were measured under: {path.label}"
    ids = [r for p in path.profiles for rs in p.run_ids for r in rs]
    sets: Counter = Counter()
    parsed: dict[str, dict] = {}
    for r in ids:
        raw = path.context.get(r, {}).get("sysctls_json")
        if raw:
            key = json.dumps(json.loads(raw), sort_keys=True)   # the same settings however the JSON was written
            sets[key] += 1
            parsed.setdefault(key, json.loads(key))
    if not sets:
        return Note(title, f"none of its {runs_phrase(len(ids))} recorded host settings (runs.sysctls_json: "
                    f"imported iperf3 files carry none)")
    shown = sets.most_common(MAX_SETTING_SETS)
    flat = [_flatten(parsed[k]) for k, _ in shown]
    keys = sorted({k for f in flat for k in f})
    rows, classes = [], []
    for k in keys:
        values = [f.get(k, "–") for f in flat]
        rows.append([k, *values])
        classes.append("differs" if len(set(values)) > 1 else "")
    more = (f" {len(sets) - len(shown)} rarer set(s) of {sum(sets.values()) - sum(n for _, n in shown)} runs not "
            f"shown." if len(sets) > len(shown) else "")
    unrecorded = len(ids) - sum(sets.values())
    return Table(f"operator-{slug(path.id)}-settings", title,
                 f"The TCP sysctls read in each role's namespace when the runs were measured (runs.sysctls_json), "
                 f"identical sets merged, the most used first; rows where the sets differ are highlighted. "
                 f"{runs_phrase(sum(sets.values()))} in {len(sets)} set(s).{more}"
                 f"{f' {unrecorded} run(s) recorded none.' if unrecorded else ''}",
                 ["sysctl (role: key)", *[f"set {i + 1} ({runs_phrase(n)})" for i, (_, n) in enumerate(shown)]],
                 rows, classes, runs=sum(sets.values()))


def _configs(n: int) -> str:
    return f"{n} configuration" if n == 1 else f"{n} configurations"


def _flatten(doc: dict) -> dict[str, str]:
    """{'sender': {key: value}} -> {'sender: key': value}; a flat {key: value} stays as it is."""
    out = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            out.update({f"{k}: {kk}": str(vv) for kk, vv in v.items()})
        else:
            out[k] = str(v)
    return out


def operator_page(data: ReportData, out: Path) -> Section:
    items: list = []
    for path in paths(data):
        items.append(Heading(f"operator-{slug(path.id)}", path.label,
                             f"{runs_phrase(path.runs)}, {_configs(len(path.profiles))}, RTT(s) "
                             f"{', '.join(f'{t:g}' for t in path.rtts)} ms."))
        items.append(configurations_figure(path, out))
        items += recommendation(path)
        items.append(calendar_figure(path, out))
        items.append(settings_table(path))
    return Section("operator", "Operator's page", "per path: configurations, recommendation, history, host settings",
                   items or [Note("Operator's page", "no ok runs with a known RTT")])


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {"operator": (10, operator_page)}
