"""`tcpprofile export --db DB --what runs|intervals|links|cwnd|campaigns --format jsonl|csv|parquet`."""

from __future__ import annotations

import argparse
import sys

from ..store import export as exp

NAME = "export"
HELP = "export runs, intervals, links, cwnd or campaigns"
ORDER = 30            # its place in `tcpprofile --help`


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP,
                       description="Export a store table. jsonl and csv go to stdout unless --out is given; "
                                   "parquet needs --out.")
    p.add_argument("--db", required=True, help="the store (DuckDB file)")
    p.add_argument("--what", required=True, choices=exp.WHAT)
    p.add_argument("--format", default="jsonl", choices=exp.FORMATS)
    p.add_argument("--out", help="output file (default: stdout for jsonl/csv)")
    p.add_argument("--campaign", help="only this campaign id")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ..store.db import Store      # duckdb loads only for this command

    with Store.open(args.db, read_only=True) as store:
        n = exp.export(store, args.what, args.format, args.out or sys.stdout, campaign_id=args.campaign)
    if args.out:
        print(f"{n} {args.what} rows written to {args.out}", file=sys.stderr)
    return 0
