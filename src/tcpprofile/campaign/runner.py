"""The driver loop: the policy plans, the executor runs, the recorder commits each event as it arrives.

Every run has a deterministic run_id, is marked 'running' before it starts and committed when it
ends, so a killed campaign loses at most the runs in flight and a rerun of the same spec skips what
finished. A failed run is retried `retries` times (by the executor); what still fails is stored with
its reason.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from ..store import reads
from ..spec import CampaignSpec
from ..store.db import Store
from . import policies
from .policy import Policy
from .environments import EnvironmentFactory, emulated, link_config, path_rtt_notes
from .executor import Block, Executor, LinkSetup, LinkUp, LocalExecutor, RunDone, RunStarted, Settings, default_environments
from .progress import Progress, expected_seconds
from .recorder import Recorder


@dataclass
class Summary:
    campaign_id: str
    seed: int | None
    total: int
    skipped: int                 # finished before this invocation
    ok: int
    failed: int
    flagged: int
    table: list[dict]
    remaining: int = 0           # left for a later invocation (--max-runs)
    notes: tuple[str, ...] = ()  # what the policy has to say (adaptive: transfer time against the fixed design)


def run_campaign(spec: CampaignSpec, store: Store, *, out: TextIO = sys.stderr,
                 environments: EnvironmentFactory | None = None, max_runs: int | None = None,
                 executor: Executor | None = None, policy: Policy | None = None) -> Summary:
    """Run (or resume) the campaign; returns its summary. Raises TcpProfileError if it cannot run.

    max_runs: run at most this many of the runs still to do (in schedule order); the rest stay for
    the next invocation of the same spec. executor: where runs execute (default: this machine, with
    `environments` or the spec's mode). policy: what to run (default: the spec's).
    """
    campaign_id = spec.campaign_id
    recorder = Recorder(store, campaign_id)
    seed = recorder.open(spec)
    if spec.rerun_flagged and (redo := recorder.rerun_flagged()):
        out.write(f"rerun_flagged: {redo} ok run{'s' if redo != 1 else ''} with instrument flags will be run again\n")
    policy = policy or policies.for_spec(spec, seed)
    skipped = len(recorder.finished_run_ids())
    if executor is None:
        if environments is None:
            environments = default_environments(spec)
        if spec.mode == "emulated" and environments is emulated:
            for link in spec.links:
                link_config(link)
            from .crash_cleanup import remove_leftovers
            remove_leftovers()
        executor = LocalExecutor(Settings.of(spec, campaign_id), environments)

    progress = Progress(0, 0.0, 0, out)
    progress.note = policy.progress_note
    remaining, budget = 0, max_runs
    blocks = policy.plan(recorder)
    with executor:
        while blocks:
            now, later = _take(blocks, budget)
            progress.extend(sum(len(b.runs) for b in now), sum(expected_seconds(p) for b in now for _, p in b.runs),
                            len(now))
            for event in executor.run(now):
                recorder.record(event)        # committed before it is shown
                policy.observe(event)
                _show(progress, event)
            if budget is not None:
                budget -= sum(len(b.runs) for b in now)
                if later or budget <= 0:
                    remaining = later or sum(len(b.runs) for b in policy.plan(recorder))
                    break
            blocks = policy.plan(recorder)
    if stops := policy.stops(recorder):        # why each configuration stopped (adaptive, tune)
        recorder.record_stops(stops)
    notes = tuple(policy.summary_notes(recorder))
    return summarise(store, campaign_id, seed, policy.total(recorder), skipped, remaining, notes)


def _take(blocks: Sequence[Block], budget: int | None) -> tuple[list[Block], int]:
    """The first `budget` runs of the plan (all without a budget), and how many are left over."""
    if budget is None:
        return list(blocks), 0
    now, left = [], budget
    for b in blocks:
        if left > 0:
            now.append(Block(b.link, b.runs[:left]))
            left -= len(now[-1].runs)
    return now, sum(len(b.runs) for b in blocks) - sum(len(b.runs) for b in now)


def _show(progress: Progress, event) -> None:
    if isinstance(event, LinkSetup):
        if event.why:
            progress.rebuild(event.link, event.why)
        else:
            progress.link(event.link)
    elif isinstance(event, LinkUp):
        progress.calibrated(event.row)
    elif isinstance(event, RunStarted):
        progress.start(event.point, event.attempt)
    elif isinstance(event, RunDone):
        progress.finish(event.point, event.row, expected_seconds(event.point))


def summarise(store: Store, campaign_id: str, seed: int | None, total: int, skipped: int,
              remaining: int = 0, notes: tuple[str, ...] = ()) -> Summary:
    counts = reads.campaign_counts(store, campaign_id)   # flagged: as analyze, select and report count them
    table = reads.campaign_table(store, campaign_id)
    notes = tuple(path_rtt_notes(store, campaign_id)) + notes    # a remote path's RTT: TCP's, ping beside it
    return Summary(campaign_id, seed, total, skipped, counts["ok"], counts["failed"], counts["flagged"], table,
                   remaining, notes)


def format_summary(s: Summary, db_path: str) -> str:
    lines = [f"campaign {s.campaign_id} (seed {s.seed}): {s.total} runs, {s.ok} ok, {s.failed} failed, "
             f"{s.flagged} flagged; {s.skipped} were already done"
             + (f"; {s.remaining} left for later (run the spec again to continue)" if s.remaining else "")]
    header = f"{'link':<34} {'variant':<9} {'n':>3} {'socket buf':>10} {'amount':>8} {'runs':>4} {'mean Gbit/s':>11} {'sd':>7}"
    lines.append(header)
    for r in s.table:
        if r["kind"] == "remote":
            link = f"remote {r['host']}"
        else:
            loss = "" if not r["loss_rate"] else f" loss {r['loss_rate']:.0e}"
            link = f"{(r['rate_bps'] or 0) / 1e9:g}G {r['rtt_ms']:g}ms buf {(r['buffer_bytes'] or 0) / 1e6:.3g}MB{loss}"
        buf = "default" if r["socket_buffer_bytes"] is None else f"{r['socket_buffer_bytes'] / 2**20:g}MiB"
        amount = (f"{r['transfer_bytes'] / 1e9:g}GB" if r["transfer_bytes"] is not None
                  else f"{r['duration_target_s']:g}s")
        mean = f"{r['mean_bps'] / 1e9:.3f}" if r["mean_bps"] is not None else "-"
        sd = f"{r['sd_bps'] / 1e9:.3f}" if r["sd_bps"] is not None else "-"
        lines.append(f"{link:<34} {r['variant']:<9} {r['streams']:>3} {buf:>10} {amount:>8} "
                     f"{r['ok']:>2}/{r['runs']:<1} {mean:>11} {sd:>7}")
    lines.extend(s.notes)
    lines.append(f"store: {db_path}")
    return "\n".join(lines)


def exit_code(s: Summary) -> int:
    """0: the campaign completed with at least one usable run; 1: it completed but every run failed."""
    return 0 if s.ok > 0 or s.total == 0 else 1
