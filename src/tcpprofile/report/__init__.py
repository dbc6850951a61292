"""Self-contained static HTML report of a store: the papers' figures from the user's data.

`build_report(store, out_dir)` writes out_dir/index.html and one PNG per figure beside it; nothing is
fetched when viewing it (no CDN, fonts or scripts).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from ..errors import TcpProfileError
from ..store import Store
from . import dynamics, findings, html, models, operator, papers, profiles, tables
from .common import Code, Figure, Heading, Note, Section, Table
from .data import ReportData

__all__ = ["build_report", "Report", "Figure", "Note", "Table", "Section", "Code", "Heading"]


@dataclass
class Report:
    index: Path
    sections: list[Section]

    def figures(self) -> list[Figure]:
        return [i for s in self.sections for i in s.items if isinstance(i, Figure)]

    def notes(self) -> list[Note]:
        return [i for s in self.sections for i in s.items if isinstance(i, Note)]


def build_report(store: Store, out_dir: str | Path, *, exclude_flagged: bool = False) -> Report:
    """exclude_flagged: leave flagged runs out of every figure and table (dimensions.FLAGGED_SQL);
    the header says whether they were left out and how many."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()                     # figures of an earlier report would linger otherwise
    data = ReportData.load(store, exclude_flagged=exclude_flagged)
    if not data.groups:
        more = f" ({data.flagged} flagged runs left out)" if exclude_flagged and data.flagged else ""
        raise TcpProfileError(f"{store.path}: no ok runs with a known RTT{more}; nothing to report")
    fits = profiles.SigmoidFits.for_store(data.store)
    refs = dynamics.references(data)
    sections = [
        operator.operator_page(data, out),
        findings.verdicts(store, exclude_flagged=exclude_flagged),
        tables.selection(data),
        profiles.mean_profiles(data, out),
        profiles.box_plots(data, out),
        profiles.sigmoid_fits(data, out, fits),
        profiles.transition_rtts(data, out, fits),
        dynamics.traces(data, out, refs),
        dynamics.poincare(data, out, refs),
        dynamics.lyapunov(data, out, refs),
        dynamics.throughput_vs_lyapunov(data, out, refs),
        models.model_vs_measurement(data, out),
        profiles.loss_profiles(data, out),
        dynamics.cwnd_traces(data, out),
        papers.side_by_side(data, out, fits),
        tables.calibration(data),
    ]
    runs = sum(g.runs for g in data.groups)
    subtitle = [f"Store {store.path}: {runs} ok runs in {len(data.groups)} comparable group(s): "
                + "; ".join(f"{g.label} ({g.runs} runs)" for g in data.groups),
                data.flag_note(),
                f"Generated {_dt.datetime.now().isoformat(timespec='seconds')} by tcpprofile report."]
    index = out / "index.html"
    index.write_text(html.page("tcpprofile report", subtitle, sections))
    return Report(index, sections)
