"""`tcpprofile import FILE... --db DB`: ingest existing iperf3 JSON files.

Exit status: 0 when at least one file was stored (rejected files are listed with their reason),
1 when none was.
"""

from __future__ import annotations

import argparse
import sys

from .. import units
from ..errors import ValidationError


def register(sub) -> None:
    p = sub.add_parser("import", help="import existing iperf3 JSON files into a store",
                       description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", metavar="FILE", help="iperf3 -J output files")
    p.add_argument("--db", required=True, help="the store (a DuckDB file; created if absent)")
    p.add_argument("--name", default="import", help="campaign name for this batch (default: import)")
    p.add_argument("--variant", help="congestion-control variant (default: what iperf3 reported)")
    p.add_argument("--rtt", help="the path's configured RTT, e.g. 45.6ms (default: unknown)")
    p.add_argument("--rate", help="the path's bottleneck rate, e.g. 10Gbit (default: unknown)")
    p.add_argument("--buffer", help="the bottleneck buffer, e.g. 50MB (default: unknown)")
    p.add_argument("--repetition", type=int,
                   help="repetition number for every file (default: rank among same-configuration files)")
    p.set_defaults(func=main)


def overrides(args: argparse.Namespace):
    from .. import importer           # duckdb loads only for this command

    if args.repetition is not None and args.repetition < 0:
        raise ValidationError("--repetition", f"{args.repetition}: must be 0 or more")
    return importer.Overrides(
        variant=args.variant,
        rtt_s=units.seconds("--rtt", args.rtt) if args.rtt else None,
        rate_bps=units.rate_bps("--rate", args.rate) if args.rate else None,
        buffer_bytes=units.size_bytes("--buffer", args.buffer) if args.buffer else None,
        repetition=args.repetition,
    )


def main(args: argparse.Namespace) -> int:
    from .. import importer
    from ..store.db import Store

    ov = overrides(args)
    with Store.open(args.db) as store:
        campaign_id, results = importer.import_files(store, args.files, ov, name=args.name)
    stored = [r for r in results if r.run_id]
    for r in results:
        if r.run_id:
            print(f"stored   {r.path}: {r.summary}" + (f" (run {r.run_id})" if len(r.run_ids) == 1 else ""))
        else:
            print(f"rejected {r.path}: {r.reason}")
    where = f"campaign {campaign_id} in {args.db}" if stored else f"no run added to {args.db}"
    runs = sum(len(r.run_ids) for r in stored)
    both = f" ({runs} runs: a --bidir file gives one per direction)" if runs != len(stored) else ""
    print(f"{len(stored)} stored, {len(results) - len(stored)} rejected{both}; {where}")
    if not stored:
        print("tcpprofile import: no file could be imported", file=sys.stderr)
        return 1
    return 0
