"""The verdict table of `tcpprofile reproduce` at the top of the report: the papers' findings checked
on the store's reproduce-* campaigns (tcpprofile.reproduce.findings)."""

from __future__ import annotations

import math

from ..store import Store, reads
from .common import Note, Section, Table


def _fmt(x: float) -> str:
    """A number; ±∞ for a bound left open by a censored τ_T; – when nothing was computed."""
    return "–" if math.isnan(x) else ("∞" if x > 0 else "−∞") if math.isinf(x) else f"{x:.3g}"


def verdicts(store: Store, *, exclude_flagged: bool = False) -> Section:
    from ..reproduce.campaigns import PREFIX
    from ..reproduce.findings import check_findings
    from ..reproduce.standard import level_of

    title, paper = "Findings of the papers, checked on this data", "HPDC'17 §2-3; eleven-variants slides"
    has = len(reads.campaign_ids_named(store, PREFIX + "%"))
    if not has:
        return Section("findings", title, paper, [Note(
            "Verdicts", "no reproduce-* campaign in this store (run `tcpprofile reproduce --quick --db DB`)")])
    level = level_of(store)        # the stored campaigns' looks: the level the CLI prints
    result = check_findings(store, exclude_flagged=exclude_flagged, level=level)
    rows = [[f"({f.id})", f.claim, f.verdict, f.statistic, _fmt(f.interval.estimate),
             f"[{_fmt(f.interval.low)}, {_fmt(f.interval.high)}]", str(f.interval.n), f.measured] for f in result]
    classes = ["" if f.verdict == "reproduced" else "flagged" for f in result]
    return Section("findings", title, paper, [Table(
        "findings", "Verdicts",
        "Each finding as a statistic with an interval from repeated runs (Student t with at least 3 "
        "repetitions per group; the level follows from the stored campaigns' looks: 95 % for one look, "
        "1 − 0.05/3 over the standard mode's three, as the CLI prints it). Reproduced: the interval "
        "lies on the claimed side; not reproduced: on the other side; undetermined: it straddles; not "
        "testable: the design or the instrument cannot show it (τ_T beyond the same grid end on both "
        "sides, traces too short, too few RTTs or repetitions). ±∞: a bound left open by a censored τ_T.",
        ["", "claim", "verdict", "statistic", "estimate", f"{level:.4g} interval", "n", "measured"], rows,
        row_classes=classes)])


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {"verdicts": (20, verdicts)}
