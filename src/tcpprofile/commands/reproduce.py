"""`tcpprofile reproduce [--quick|--standard|--full] --db DB [--out DIR]`: run the papers' campaigns on the
emulated 10 Gbit/s link (resumable: run it again to continue), then check the papers' findings on the
data and print the verdict table (reproduced / not reproduced / undetermined / not testable, each
with its statistic, interval and what was measured). With --out, also write the report (verdicts first).
--standard: the papers' conditions, sequential looks within ≤ 6 h of transfer (reproduce/standard.py);
--confirm: the confirmatory designs for (ii), (iv), (v), to run on a fresh store the same way;
--plan prints its design and expected transfer time without running; --cluster divides runs over Ray.

Exit status: 0 when the campaigns ran (whatever the verdicts); 2 when they could not run; 130 when
interrupted (rerun to resume).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import signal
import sys

from ..errors import ValidationError

NAME = "reproduce"
HELP = "run the papers' campaigns (compact) and check their findings"
ORDER = 130            # its place in `tcpprofile --help`


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="183 runs of 8 s, about 35 minutes on 2 cores (default)")
    mode.add_argument("--standard", dest="mode", action="store_const", const="standard",
                      help="all five findings in the papers' conditions, sequential, ≤ 6 h of transfer "
                           "(--plan shows the estimate)")
    mode.add_argument("--confirm", dest="mode", action="store_const", const="confirm",
                      help="the confirmatory designs for (ii), (iv), (v) on a fresh store, sequential as --standard "
                           "(--plan shows them and their budget)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="1,155 runs of 30-60 s, about a day")
    p.set_defaults(mode="quick")
    p.add_argument("--db", required=True, help="the store (a DuckDB file; created if absent)")
    p.add_argument("--out", help="write the report (with the verdict table first) to this directory")
    p.add_argument("--check-only", action="store_true",
                   help="do not run anything: check the findings on the runs already in the store")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.add_argument("--plan", action="store_true",
                   help="print the mode's designs and expected transfer time, run nothing")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run on a Ray cluster (HEAD:PORT) whose testbed nodes offer tcpprofile_testbed "
                        "(docs/cluster.md); this process stays the store's only writer")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="check the findings (and write the report) without the runs the instrument flagged")
    p.add_argument("--rerun-flagged", action="store_true",
                   help="run again, once, every stored ok run that carries an instrument flag (a busy host, a late "
                        "engine: fidelity.thresholds.RERUN_FLAGS) before the findings are judged; the new run replaces it and "
                        "its failure_reason says what it replaced")
    p.set_defaults(func=main)


def _terminate(signum, frame):
    raise KeyboardInterrupt


def _clean(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _plan(mode: str) -> str:
    from ..campaign import expected_seconds
    from ..reproduce import campaigns, standard

    if mode in standard.SEQUENTIAL:
        designs = standard.SEQUENTIAL[mode]
        return standard.format_plan(standard.plan(designs), designs)
    specs = campaigns.specs(mode)
    runs = [p for s in specs for p in s.sweep()]
    return (f"{mode} mode: {len(specs)} campaigns, {len(runs)} runs, about "
            f"{sum(expected_seconds(p) for p in runs) / 3600:.2f} h of transfer")


def main(args: argparse.Namespace) -> int:
    from .. import campaign
    from ..reproduce import campaigns, findings, standard
    from ..store import reads
    from ..store.db import Store
    from .options import cluster_executor

    if args.rerun_flagged and (args.check_only or args.plan):
        raise ValidationError("--rerun-flagged", "runs campaigns: not with --check-only or --plan")
    if args.plan:
        print(_plan(args.mode))
        return 0

    def run(s):
        if args.rerun_flagged:       # not part of the campaign's identity (spec.normalised): the same campaign
            s = dataclasses.replace(s, rerun_flagged=True)
        print(f"campaign {s.name}: {len(s.sweep())} runs", file=sys.stderr)
        summary = campaign.run_campaign(s, store, out=sys.stderr, executor=cluster_executor(s, args.cluster))
        print(campaign.format_summary(summary, args.db), file=sys.stderr)

    with Store.open(args.db) as store:
        sequential = standard.SEQUENTIAL.get(args.mode)
        specs = None if sequential else campaigns.specs(args.mode)
        if not args.check_only:
            previous = signal.signal(signal.SIGTERM, _terminate)
            try:
                if sequential:
                    specs = standard.run_standard(store, run, out=sys.stderr, designs=sequential)
                else:
                    for s in specs:
                        run(s)
            finally:
                signal.signal(signal.SIGTERM, previous)
        # --check-only reads every reproduce-* campaign in the store (fixed-size ones included)
        ids = None if specs is None or args.check_only else [s.campaign_id for s in specs]
        level = standard.level_of(store, ids)     # from the stored campaigns' looks, as the report takes it
        result = findings.check_findings(store, ids, exclude_flagged=args.exclude_flagged, level=level)
        if args.json:
            json.dump([{k: _clean(v) for k, v in f.row().items()} for f in result], sys.stdout, indent=1)
            print()
        else:
            which = "every reproduce-* campaign" if ids is None else f"{args.mode} campaigns"
            print(f"Findings of the papers on {args.db} ({which}, {level:.4g} intervals):")
            print(findings.format_table(result))
            counted = ids if ids is not None else reads.campaign_ids_named(store, campaigns.PREFIX + "%")
            if flagged := findings.flagged_runs(store, counted):
                print(f"{flagged} flagged runs " + ("left out (--exclude-flagged)" if args.exclude_flagged
                                                    else "included; --exclude-flagged leaves them out"))
            if sequential:     # --check-only: every campaign of the mode stored
                went = standard.spent(store, specs, sequential)
                print("transfer time per finding (a design feeding two findings counts toward both): "
                      + ", ".join(f"({k}) {v / 3600:.2f} h" for k, v in went.items() if k != "all")
                      + f"; all {went['all'] / 3600:.2f} h")
        if args.out:
            from ..report import build_report
            report = build_report(store, args.out, exclude_flagged=args.exclude_flagged)
            print(f"report: {report.index}", file=sys.stderr)
    return 0
