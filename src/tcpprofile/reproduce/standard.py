"""The standard mode of `tcpprofile reproduce`: the five findings in the papers' conditions, in at most
six hours of transfer, spending runs only where a verdict still straddles.

Sequential rule (decide only at planned looks, fixed maximum, Bonferroni error spending):
  look k = 1, 2, 3 brings every open cell (design, variant, streams) to campaigns.LOOKS[k] repetitions
  per τ (3, 5, 8; the dynamics design 10, 15, 20). After each look the findings are checked on the data
  of the looks so far at level 1 − 0.05/3 (each cell's claim is looked at no more than 3 times, so
  the chance of any false verdict is at most 3 · 0.05/3 = 0.05 per part). A cell stays open only while
  a part of a finding it feeds is undetermined; once every such part is reproduced, not reproduced or
  not testable, it gets no more runs. After the last look an open part stays undetermined.

Each look of each cell is one campaign (named reproduce-standard-<design>-<variant>-n<streams>-look<k>);
the specs of look k follow from the stored data of looks < k only, so a rerun rebuilds the same specs
and the campaign runner resumes them (resumable at any point). With an executor factory (--cluster),
each campaign's runs are divided over the Ray cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..spec import CampaignSpec
from ..store import reads
from . import stats
from .campaigns import CONFIRM_DESIGNS, DESIGNS, PREFIX, Design  # noqa: F401 (CONFIRM_DESIGNS re-exported)
from .levels import LEVEL, LOOKS_PLANNED, SEQUENTIAL, level_of  # noqa: F401 (re-exported)

BUDGET_S = 6 * 3600                        # the standard mode's transfer-time budget
STANDARD_PREFIX = PREFIX + "standard-"
RUN_OVERHEAD_S = 2.5                       # per run: iperf3 start, JSON, store (measured on the quick mode)


Cell = tuple[Design, tuple[str, int]]


def all_cells(designs: tuple[Design, ...] = DESIGNS) -> list[Cell]:
    return [(d, c) for d in designs for c in d.cells]


def open_cells(findings, cells: Iterable[Cell]) -> list[Cell]:
    """The cells that feed an undetermined part of one of their design's findings (a part's config
    (variant, streams, …) matches a cell whose configuration starts with it)."""
    straddling = [(f.id, cfg) for f in findings for p in f.parts if p.verdict == stats.UNDETERMINED
                  for cfg in p.configs]
    keep = []
    for d, c in cells:
        key = d.key(c)
        if any(fid in d.findings and key[:len(cfg)] == tuple(cfg) for fid, cfg in straddling):
            keep.append((d, c))
    return keep


def look_specs(cells: Iterable[Cell], look: int) -> list[CampaignSpec]:
    return [d.spec(c, look) for d, c in cells if look < len(d.looks)]


def expected_transfer_s(spec: CampaignSpec) -> float:
    """The campaign runner's per-run estimate (campaign.progress.expected_seconds) summed over the sweep."""
    from ..campaign import expected_seconds

    return sum(expected_seconds(p) for p in spec.sweep())


@dataclass
class Plan:
    """Expected transfer seconds per design: at the first look, and if every cell ran to its maximum."""
    first: dict[str, float] = field(default_factory=dict)
    maximum: dict[str, float] = field(default_factory=dict)
    runs_first: int = 0
    runs_max: int = 0

    @property
    def total_first(self) -> float:
        return sum(self.first.values())

    @property
    def total_max(self) -> float:
        return sum(self.maximum.values())


def plan(designs: tuple[Design, ...] = DESIGNS) -> Plan:
    p = Plan()
    for d, c in all_cells(designs):
        for k in range(len(d.looks)):
            s = d.spec(c, k)
            t = expected_transfer_s(s)
            p.maximum[d.name] = p.maximum.get(d.name, 0.0) + t
            p.runs_max += len(s.sweep())
            if k == 0:
                p.first[d.name] = p.first.get(d.name, 0.0) + t
                p.runs_first += len(s.sweep())
    return p


def format_plan(p: Plan, designs: tuple[Design, ...] = DESIGNS) -> str:
    lines = [f"{designs[0].mode} mode: {len(designs)} designs, {len(all_cells(designs))} cells, looks at "
             f"{'/'.join(map(str, designs[0].looks))} repetitions per τ (dynamics "
             f"{'/'.join(map(str, designs[-1].looks))}), verdicts at level {LEVEL:.4f} (0.05 spent over 3 looks)",
             f"{'design':<14} {'findings':<9} {'first look':>11} {'maximum':>9}  conditions"]
    for d in designs:
        lines.append(f"{d.name:<14} {','.join(d.findings):<9} {p.first[d.name] / 3600:>10.2f}h "
                     f"{p.maximum[d.name] / 3600:>8.2f}h  {d.cite}")
    lines.append(f"{'total':<24} {p.total_first / 3600:>10.2f}h {p.total_max / 3600:>8.2f}h  transfer time "
                 f"({p.runs_first} / {p.runs_max} runs; about {RUN_OVERHEAD_S:g} s per run and 20 s per link "
                 f"set-up come on top); budget {BUDGET_S / 3600:g} h")
    return "\n".join(lines)


def spent(store, specs: Iterable[CampaignSpec] | None = None, designs: tuple[Design, ...] = DESIGNS
          ) -> dict[str, float]:
    """Measured transfer seconds (runs.duration_s of ok runs) per finding, from the standard campaigns
    (these specs', or every standard campaign stored); a design that feeds two findings counts toward both
    (its seconds are shared, not doubled in 'all')."""
    con = getattr(store, "con", store)
    mode = designs[0].mode
    campaigns = ([(s.name, s.campaign_id) for s in specs] if specs is not None
                 else reads.campaigns_named(con, f"{PREFIX}{mode}-%"))
    by_design: dict[str, float] = {}
    names = {d.name for d in designs}
    for name, campaign_id in campaigns:
        design = next((n for n in sorted(names, key=len, reverse=True) if name.startswith(f"{PREFIX}{mode}-{n}-")),
                      None)
        if design is None:
            continue
        got = reads.ok_seconds(con, campaign_id)
        by_design[design] = by_design.get(design, 0.0) + float(got)
    out = {f: 0.0 for f in ("i", "ii", "iii", "iv", "v")}
    for d in designs:
        for f in d.findings:
            out[f] += by_design.get(d.name, 0.0)
    out["all"] = sum(by_design.values())
    return out


def run_standard(store, run: Callable[[CampaignSpec], object], *, check=None, out=None,
                 designs: tuple[Design, ...] = DESIGNS) -> list[CampaignSpec]:
    """Run (or resume) the looks; `run(spec)` runs one campaign into `store`; `check(store, ids, level)`
    gives the findings (reproduce.findings.check_findings). Returns every spec run, in order."""
    if check is None:
        from .findings import check_findings

        def check(st, ids, level):
            return check_findings(st, ids, level=level)
    done: list[CampaignSpec] = []
    cells = all_cells(designs)
    for look in range(max(len(d.looks) for d in designs)):
        if look:
            cells = open_cells(check(store, [s.campaign_id for s in done], LEVEL), cells)
        specs = look_specs(cells, look)
        if out is not None:
            out.write(f"{designs[0].mode} look {look + 1}: {len(specs)} open cells, {sum(len(s.sweep()) for s in specs)} runs\n")
        if not specs:
            break
        for s in specs:
            run(s)
        done.extend(specs)
    return done
