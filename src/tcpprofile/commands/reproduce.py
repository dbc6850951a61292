"""`tcpprofile reproduce [--quick|--full] --db DB [--out DIR]`: run a compact version of the papers'
campaigns on the emulated 10 Gbit/s link (resumable: run it again to continue), then check the papers'
findings on the data and print the verdict table (reproduced / not reproduced / undetermined, each
with its statistic, interval and what was measured). With --out, also write the report (verdicts first).

Exit status: 0 when the campaigns ran (whatever the verdicts); 2 when they could not run; 130 when
interrupted (rerun to resume).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run the papers' campaigns (compact) and check their findings",
                       description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="183 runs of 8 s, about 35 minutes on 2 cores (default)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="1,155 runs of 30-60 s, about a day")
    p.set_defaults(mode="quick")
    p.add_argument("--db", required=True, help="the store (a DuckDB file; created if absent)")
    p.add_argument("--out", help="write the report (with the verdict table first) to this directory")
    p.add_argument("--check-only", action="store_true",
                   help="do not run anything: check the findings on the runs already in the store")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="check the findings (and write the report) without the runs the instrument flagged")
    p.set_defaults(func=main)


def _terminate(signum, frame):
    raise KeyboardInterrupt


def _clean(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def main(args: argparse.Namespace) -> int:
    from .. import campaign
    from ..reproduce import campaigns, findings
    from ..store.db import Store

    specs = campaigns.specs(args.mode)
    with Store.open(args.db) as store:
        if not args.check_only:
            previous = signal.signal(signal.SIGTERM, _terminate)
            try:
                for s in specs:
                    print(f"campaign {s.name}: {len(s.sweep())} runs", file=sys.stderr)
                    summary = campaign.run_campaign(s, store, out=sys.stderr)
                    print(campaign.format_summary(summary, args.db), file=sys.stderr)
            finally:
                signal.signal(signal.SIGTERM, previous)
        ids = [s.campaign_id for s in specs]
        result = findings.check_findings(store, ids, exclude_flagged=args.exclude_flagged)
        if args.json:
            json.dump([{k: _clean(v) for k, v in f.row().items()} for f in result], sys.stdout, indent=1)
            print()
        else:
            print(f"Findings of the papers on {args.db} ({args.mode} campaigns):")
            print(findings.format_table(result))
            if flagged := findings.flagged_runs(store, ids):
                print(f"{flagged} flagged runs " + ("left out (--exclude-flagged)" if args.exclude_flagged
                                                    else "included; --exclude-flagged leaves them out"))
        if args.out:
            from ..report import build_report
            report = build_report(store, args.out, exclude_flagged=args.exclude_flagged)
            print(f"report: {report.index}", file=sys.stderr)
    return 0
