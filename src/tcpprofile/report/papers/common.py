"""What every figure of "The papers side by side" shares: the paper-against-here table, the note for
a store that lacks a figure's runs, censored transition RTTs, and the conditions of the runs used."""

from __future__ import annotations

import math

from ... import units
from ..common import G, Note, Table
from ..data import Group

# The figures' conditions as the papers give them, and the example specs that contain such runs.
HPDC_SPEC = "examples/hpdc17-table1.toml"
SLIDES_SPEC = "examples/eleven-variants.toml"
LOSS_SPEC = "examples/losses.toml"
MODELS_SPEC = "examples/profiles-10g.toml"


def versus(id_: str, title: str, rows: list[list[str]], runs: int) -> Table:
    """The papers' numbers (quoted, with figure/section) beside the same statistic on this store."""
    return Table(id_, title, "Each row: what the paper's text states, where, and the same quantity computed "
                 "from the runs behind the figure above (descriptive: the verdicts with intervals are "
                 "`tcpprofile reproduce`'s).", ["claim", "paper (where)", "paper says", "here"], rows, runs=runs)


def lacks(title: str, needs: str, spec: str) -> Note:
    """A figure the store has no runs for: what it needs and which spec produces such runs."""
    return Note(title, f"the store lacks the runs for it: it needs {needs}; run {spec}")


def gbit(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x / G:.2f}"


def censored_side(fit) -> str | None:
    """'right' when the dual-sigmoid fit found no convex part (τ_T at the grid's largest τ: the concave
    region reaches beyond the measured RTTs), 'left' when no concave part (τ_T < the smallest τ); None
    when τ_T lies inside the grid and is a measured value (analysis.tau_t.side_of, the one definition)."""
    from ...analysis.tau_t import ABOVE, BELOW, side_of
    return {ABOVE: "right", BELOW: "left"}.get(side_of(fit))


def tau_text(fit, rtts_s) -> str:
    """τ_T as the report prints it (analysis.tau_t, the one τ_T `analyze` prints too; RTTs [s]): a censored
    τ_T is a bound, never a value."""
    from ...analysis.tau_t import tau_t_of
    return tau_t_of(fit, rtts_s).text()


def interval_text(tr, rtts_s) -> str:
    """The bootstrap interval of τ_T (RTTs and interval in s), printed in ms; an end at the grid's edge is
    censored there too."""
    if censored_side(tr.fit) or not (math.isfinite(tr.ci_low) and math.isfinite(tr.ci_high)):
        return "–"
    ms = units.to_ms
    lo = f"≤ {ms(min(rtts_s)):g}" if tr.ci_low <= min(rtts_s) else f"{ms(tr.ci_low):.3g}"
    hi = f"> {ms(max(rtts_s)):g}" if tr.ci_high >= max(rtts_s) else f"{ms(tr.ci_high):.3g}"
    return f"[{lo}, {hi}] ms"


def paper_buffer(b: int | None) -> str | None:
    """HPDC'17 Table 1's name for a socket buffer as this project requests it (iperf3 -w asks for half of
    what Linux grants: 128MiB → 256 MiB "normal", 512MiB → 1 GiB "large"; "default" was a fixed 244 KB
    allocation, so ≤ 1 MiB); None for autotuning and other sizes."""
    if b is None:
        return None
    if b <= 1 << 20:
        return "default"
    if b == 128 << 20:
        return "normal"
    if b >= 512 << 20:
        return "large"
    return None


def buffer_text(b: int | None) -> str:
    """The socket buffer with its Table 1 name, if it has one."""
    name = paper_buffer(b)
    if b is None:
        return "auto (autotuning: not a Table 1 buffer)"
    return f"{units.fmt_bytes(b)} (Table 1: {name})" if name else units.fmt_bytes(b)


def size_text(size: int) -> str:
    """A transfer size in decimal GB, as the papers write it."""
    return f"{size / 1e9:g} GB"


def conditions(group: Group, *, varies: str | None = None, **what) -> str:
    """The runs' conditions: the group's (size or duration, loss, C, β, link kind; without the one the figure
    `varies`, e.g. "F=" or "loss=") and what the figure fixed."""
    base = " ".join(w for w in group.label.split() if not (varies and w.startswith(varies)))
    fixed = "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in what.items())
    return f"Runs with {base}{'; ' + fixed if fixed else ''}"


def ns_text(ns) -> str:
    return ", ".join(str(n) for n in sorted(ns))


def rtts_text(rtts) -> str:
    return ", ".join(dict.fromkeys(f"{t:g}" for t in sorted(rtts))) + " ms"
