"""The report section "The papers side by side": each figure of the three papers that this store can
regenerate, drawn from its runs with the conditions they were measured under, beside the numbers the
papers' text gives; a note naming the runs (and the spec) a figure still needs; and the figures this
emulator cannot reproduce at all.

One module per figure family: hpdc_profiles (HPDC'17 Figs. 6, 9–10), hpdc_dynamics (Figs. 12–13,
abstract (iii)), models_paper (models paper Figs. 3, 6–8), slides (groups against BBR, loss series)."""

from __future__ import annotations

from pathlib import Path

from ..common import Section, Table
from ..data import ReportData
from ..profiles import SigmoidFits
from . import hpdc_dynamics, hpdc_profiles, models_paper, slides

TITLE = "The papers side by side"
PAPERS = "HPDC'17 Figs. 6, 9–10, 12–13, abstract (iii); models paper Figs. 3, 6–8; eleven-variants slides"

# Figures no run on this emulator can reproduce: what they compare, and why not here.
NOT_HERE = [
    ["HPDC'17 Figs. 4, 5, 7 (and Fig. 2's modalities)", "SONET/OC192 (9.6 Gbit/s through a Force10 E300 "
     "WAN-PHY switch) against 10GigE", "one modality here: a veth pair whose bottleneck is the delay engine "
     "(native/delayd); no SONET framing or WAN-PHY conversion"],
    ["HPDC'17 Figs. 4, 5", "hosts on Linux 2.6 (f1, f2) against Linux 3.10 (f3, f4)", "both ends run this "
     "machine's one kernel (each run records it: runs.kernel)"],
    ["Models paper Fig. 2 and §III.C", "SONET against 10GigE cwnd traces and buffering (SONET better behaved)",
     "one modality here, as above"],
    ["HPDC'17 Figs. 8, 11–14 (SONET runs)", "CUBIC over emulated SONET", "drawn here over the emulated 10GigE-like "
     "link; the physical 11.6 ms connection is stood in for by an emulated RTT near it"],
]


def not_reproducible() -> Table:
    return Table("papers-not-here", "Figures this emulator cannot reproduce",
                 "What the papers compare that has no counterpart on an emulated link on one host.",
                 ["paper figure", "compares", "why not here"], NOT_HERE)


def side_by_side(data: ReportData, out: Path, fits: SigmoidFits) -> Section:
    items = [*hpdc_profiles.transfer_sizes(data, out), *hpdc_profiles.transitions(data, out, fits),
             *hpdc_dynamics.exponents(data, out), *hpdc_dynamics.exponents_vs_concavity(data, out, fits),
             *models_paper.variants_by_streams(data, out), *models_paper.model_vs_measurement(data, out),
             *slides.groups_vs_bbr(data, out), *slides.losses(data, out, fits), not_reproducible()]
    return Section("papers", TITLE, PAPERS, items)


# The report's sections this module draws (report/__init__.py): id -> (its place in the report, the function);
# build_report passes each function the arguments its parameters name
SECTIONS = {"side_by_side": (150, side_by_side)}
