"""Tables: the selection per measured RTT (HPDC'17 §5) and every link's calibration."""

from __future__ import annotations

from ..choose import decide, select as sel
from .. import units
from ..errors import TcpProfileError
from .common import G, Note, Section, Table, runs_phrase
from .data import ReportData

SELECTION_BOOT = 1000


def _g(x) -> str:
    return "–" if x is None else f"{x / G:.3f}"


def selection(data: ReportData) -> Section:
    items = []
    for g in data.groups:
        rtts = sorted({t for p in g.profiles for t in p.rtts_s})
        rows, runs = [], 0
        for t_s in rtts:
            t = units.to_ms(t_s)   # as printed
            try:
                choice = sel.select(sel.ProfileSet(g.conditions, g.profiles), t_s, n_boot=SELECTION_BOOT)
            except TcpProfileError:
                continue
            b, c, r = choice.best, choice.comparison, choice.recommended
            here = sum(sum(e.repetitions) for e in choice.ranking)
            flagged = sum(sum(e.flagged) for e in choice.ranking)
            runs += here
            verdict = _verdict(c)
            second = choice.ranking[1].config.label() if len(choice.ranking) > 1 else "–"
            rows.append([f"{t:g}", b.config.label(), _g(b.throughput_bps),
                         "–" if b.ci_low_bps is None else f"{_g(b.ci_low_bps)}–{_g(b.ci_high_bps)}", second,
                         f"{_g(c.difference_bps)} [{_g(c.ci_low_bps)}, {_g(c.ci_high_bps)}]" if c.ci_low_bps
                         is not None else _g(c.difference_bps) if c.decision != "single" else "–",
                         verdict, r.config.label(), str(len(choice.ranking)), f"{here - flagged}/{flagged}"])
        if not rows:
            continue
        items.append(Table(f"selection-{len(items)}", f"Best configuration per measured RTT ({g.label})",
                           f"At each measured RTT, the configuration (V, n, B) with the highest mean throughput, its "
                           f"95 % Student-t interval over the repetitions, the runner-up, the Welch interval of the "
                           f"difference and, when the best leads by more than the {decide.DEFAULT_MARGIN:.0%} "
                           f"indifference margin with confidence, the t test's p-value; configurations within the "
                           f"margin of the best are a tie that goes to the simplest ({sel.TIE_BREAK}). "
                           f"{runs_phrase(runs)} at these RTTs; runs with {g.label}. Runs unflagged/flagged: "
                           f"the runs every configuration's estimate rests on at that RTT, by the flag "
                           f"definition of docs/analysis.md"
                           f"{' (flagged runs left out)' if data.exclude_flagged else ''}.",
                           ["RTT (ms)", "best", "Gbit/s", "95 % CI", "runner-up", "difference [CI] (Gbit/s)",
                            "best vs runner-up", "recommended", "configurations", "runs unflagged/flagged"],
                           rows, runs=runs))
    return Section("selection", "Transport selection", "HPDC'17 §5",
                   items or [Note("Selection", "no ok runs with a known RTT")])


def _verdict(c: sel.Comparison) -> str:
    if c.decision == "significant":
        return f"better by > margin (p={c.p_value:.2g})"
    if c.decision == "tie":
        return "tie (shown within ±margin)"
    if c.decision == "unresolved":
        return "not separated" + (f" (~{c.runs_to_decide} repetitions each would decide)" if c.runs_to_decide else "")
    return "only configuration" if c.decision == "single" else "not assessed (too few runs for an interval)"


def calibration(data: ReportData) -> Section:
    links = data.links()
    if not links:
        return Section("calibration", "Link calibration", "testbed",
                       [Note("Link calibration", "the store has no links")])
    rows, classes = [], []
    for l in links:
        bad = l["calibration_ok"] is False or bool(l["flags"])
        rows.append([l["link_id"], l["kind"], l["host"] or "", _ms(l["rtt_ms"]), _ms(l["rtt_measured_ms"]),
                     _g(l["rate_bps"]), _g(l["rate_measured_bps"]),
                     "" if l["buffer_bytes"] is None else units.fmt_bytes(l["buffer_bytes"]),
                     "none" if (l["loss_mode"] or "none") == "none" else f"{l['loss_mode']} {l['loss_rate']:g}",
                     {True: "ok", False: "MISSED", None: "–"}[l["calibration_ok"]], l["flags"] or "",
                     str(l["ok_runs"]), str(l["flagged_runs"]), str(l["failed_runs"])])
        classes.append("flagged" if bad else "")
    ok = sum(l["ok_runs"] for l in links)
    flagged = sum(1 for c in classes if c)
    return Section("calibration", "Link calibration", "testbed", [Table(
        "calibration", "Link calibration of every run",
        f"Every link the runs used: configured against measured RTT (idle ping) and bottleneck rate, drop-tail "
        f"buffer, external loss; remote links show their host. {len(links)} links, {flagged} flagged (highlighted: "
        f"calibration missed or flags set); {ok} ok runs use them, {sum(l['flagged_runs'] for l in links)} of them "
        f"flagged (their link is flagged, or the run carries flags: docs/analysis.md).",
        ["link", "kind", "host", "RTT set (ms)", "RTT measured (ms)", "rate set (Gbit/s)",
         "rate measured (Gbit/s)", "buffer", "loss", "calibration", "flags", "ok runs", "flagged runs",
         "failed runs"],
        rows, classes, runs=ok)])


def _ms(x) -> str:
    return "–" if x is None else f"{x:.3f}"


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {
    "selection": (30, selection),
    "calibration": (160, calibration),
}
