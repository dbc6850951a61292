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
from . import common, dynamics, findings, html, models, operator, papers, profiles, tables
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


SECTION_ORDER = ("operator", "verdicts", "selection", "mean_profiles", "box_plots", "sigmoid_fits", "transition_rtts",
                 "traces", "poincare", "lyapunov", "throughput_vs_lyapunov", "model_vs_measurement", "loss_profiles",
                 "cwnd_traces", "side_by_side", "calibration")


def build_report(store: Store, out_dir: str | Path, *, exclude_flagged: bool = False) -> Report:
    """exclude_flagged: leave flagged runs out of every figure and table (grouping.FLAGGED_SQL);
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
    every = [p for g in data.groups for p in g.profiles]
    pool = common.background_pool(len(every))      # the τ_T fits and box plots beside the other sections
    try:
        fits.start(every, pool)
        boxes = pool.submit(profiles.box_plots_of, data.groups, out) if pool else None
        refs = dynamics.references(data)
        done = {  # computed in this order (what needs the fits last), shown in SECTION order
            "operator": operator.operator_page(data, out),
            "verdicts": findings.verdicts(store, exclude_flagged=exclude_flagged),
            "selection": tables.selection(data),
            "mean_profiles": profiles.mean_profiles(data, out),
            "traces": dynamics.traces(data, out, refs),
            "poincare": dynamics.poincare(data, out, refs),
            "lyapunov": dynamics.lyapunov(data, out, refs),
            "throughput_vs_lyapunov": dynamics.throughput_vs_lyapunov(data, out, refs),
            "model_vs_measurement": models.model_vs_measurement(data, out),
            "loss_profiles": profiles.loss_profiles(data, out),
            "cwnd_traces": dynamics.cwnd_traces(data, out),
            "calibration": tables.calibration(data),
            "sigmoid_fits": profiles.sigmoid_fits(data, out, fits),
            "transition_rtts": profiles.transition_rtts(data, out, fits),
            "side_by_side": papers.side_by_side(data, out, fits),
        }
        done["box_plots"] = boxes.result() if boxes else profiles.box_plots(data, out)
    finally:
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
    sections = [done[name] for name in SECTION_ORDER]
    runs = sum(g.runs for g in data.groups)
    subtitle = [f"Store {store.path}: {runs} ok runs in {len(data.groups)} comparable group(s): "
                + "; ".join(f"{g.label} ({g.runs} runs)" for g in data.groups),
                data.flag_note(),
                f"Generated {_dt.datetime.now().isoformat(timespec='seconds')} by tcpprofile report."]
    index = out / "index.html"
    index.write_text(html.page("tcpprofile report", subtitle, sections))
    return Report(index, sections)
