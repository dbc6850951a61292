"""Self-contained static HTML report of a store: the papers' figures from the user's data.

`build_report(store, out_dir)` writes out_dir/index.html and one PNG per figure beside it; nothing is
fetched when viewing it (no CDN, fonts or scripts).
"""

from __future__ import annotations

import datetime as _dt
import inspect
from dataclasses import dataclass
from pathlib import Path

from ..errors import TcpProfileError
from ..store import Store
from ..registry import modules_declaring
from . import common, dynamics, html, profiles
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


def _sections() -> tuple[dict, dict]:
    """(id -> function in the report's order, id -> worker function) from every module of this package that
    declares SECTIONS (id -> (place, function)) and, for sections a worker can draw, IN_WORKER."""
    declared, in_worker = {}, {}
    for module in modules_declaring(__name__, __path__, "SECTIONS"):
        for id_, entry in module.SECTIONS.items():
            if id_ in declared:
                raise RuntimeError(f"report section {id_!r} declared twice ({module.__name__})")
            declared[id_] = entry
        in_worker.update(getattr(module, "IN_WORKER", {}))
    places = [place for place, _ in declared.values()]
    if len(places) != len(set(places)):
        raise RuntimeError(f"report sections share a place: {sorted(places)}")
    return {id_: fn for id_, (_, fn) in sorted(declared.items(), key=lambda kv: kv[1][0])}, in_worker


SECTIONS, IN_WORKER = _sections()


def _draw(fn, inputs: dict):
    """fn called with the inputs its parameters name (those with a default keep it unless given)."""
    params = inspect.signature(fn).parameters
    return fn(**{p: inputs[p] for p in params if p in inputs or params[p].default is inspect.Parameter.empty})


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
        workers = {id_: pool.submit(fn, data.groups, out) for id_, fn in IN_WORKER.items()} if pool else {}
        refs = dynamics.references(data)
        inputs = {"data": data, "out": out, "store": store, "exclude_flagged": exclude_flagged, "refs": refs,
                  "fits": fits}
        # drawn in the report's order, but what needs the τ_T fits after the rest (the fits go on in the
        # workers meanwhile), and what a worker draws last
        needs_fits = {id_ for id_, fn in SECTIONS.items() if "fits" in inspect.signature(fn).parameters}
        later = needs_fits | set(IN_WORKER)
        order = ([id_ for id_ in SECTIONS if id_ not in later] + [id_ for id_ in SECTIONS if id_ in later - set(IN_WORKER)]
                 + list(IN_WORKER))
        done = {}
        for id_ in order:
            done[id_] = workers[id_].result() if id_ in workers else _draw(SECTIONS[id_], inputs)
    finally:
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
    sections = [done[id_] for id_ in SECTIONS]
    runs = sum(g.runs for g in data.groups)
    subtitle = [f"Store {store.path}: {runs} ok runs in {len(data.groups)} comparable group(s): "
                + "; ".join(f"{g.label} ({g.runs} runs)" for g in data.groups),
                data.flag_note(),
                f"Generated {_dt.datetime.now().isoformat(timespec='seconds')} by tcpprofile report."]
    index = out / "index.html"
    index.write_text(html.page("tcpprofile report", subtitle, sections))
    return Report(index, sections)
