"""`tcpprofile import FILE... --db DB`: ingest existing throughput results (iperf3 -J, pScheduler, iperf2).

One line per file: `stored` (with its format, what was stored, the host pair and the file's smallest
RTT where it says them, and its run; `already stored` when its content was in the store before),
`rejected` (with the reason), and `warning` lines under a stored file (a given --rtt the file's RTT
disagrees with). docs/import.md. Exit status: 0 only when every file was stored;
1 with "N of M files rejected" otherwise. No store is created when no file could be read.
"""

from __future__ import annotations

import argparse
import sys

from .. import units
from ..cc.registry import canonical, known_names
from ..errors import ValidationError

NAME = "import"
HELP = "import existing iperf3 -J, pScheduler or iperf2 results into a store"
ORDER = 20            # its place in `tcpprofile --help`


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="iperf3 -J files, pScheduler results or run records (JSON), iperf2 client reports "
                        "(text or -y C)")
    p.add_argument("--db", required=True, help="the store (a DuckDB file; created if absent)")
    p.add_argument("--name", default="import", help="campaign name for this batch (default: import)")
    p.add_argument("--variant",
                   help=f"congestion-control variant (default: what the file reports); known: {known_names()}")
    p.add_argument("--rtt", help="the path's RTT, e.g. 45.6ms (default: unknown); a file's own smallest RTT "
                                 "beyond max(1 %%, 0.1 ms) of it is a warning")
    p.add_argument("--rate", help="the path's bottleneck rate, e.g. 10Gbit (default: unknown)")
    p.add_argument("--buffer", help="the bottleneck buffer, e.g. 50MB (default: unknown)")
    p.add_argument("--repetition", type=int,
                   help="repetition number for every file (default: rank among same-configuration files)")
    p.set_defaults(func=main)


def overrides(args: argparse.Namespace):
    from ..store import importer     # duckdb loads only for this command

    if args.repetition is not None and args.repetition < 0:
        raise ValidationError("--repetition", f"{args.repetition}: must be 0 or more")
    return importer.Overrides(
        variant=None if args.variant is None else canonical(args.variant, "--variant"),
        rtt_s=None if args.rtt is None else units.seconds("--rtt", args.rtt, units.RTT_S),
        rate_bps=None if args.rate is None else units.rate_bps("--rate", args.rate, units.POSITIVE),
        buffer_bytes=None if args.buffer is None else units.size_bytes("--buffer", args.buffer, units.Range(1)),
        repetition=args.repetition,
    )


def main(args: argparse.Namespace) -> int:
    from ..store import importer
    from ..store.db import Store

    ov = overrides(args)
    read = importer.read_files(args.files)
    if not any(f.runs for f in read):             # nothing to store: the store is not created or opened
        for f in read:
            print(f"rejected {f.path}: {f.reason}")
        print(f"0 stored, {len(read)} rejected; nothing written to {args.db}")
        print(f"tcpprofile import: no file could be imported ({len(read)} of {len(read)} files rejected)",
              file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        campaign_id, results = importer.store_files(store, read, ov, name=args.name)
    stored = [r for r in results if r.run_id]
    for r in results:
        if r.run_id:
            print(f"stored   {r.path}: {r.format}: {r.summary}{r.about}" + _run_note(r))
            for w in r.warnings:
                print(f"warning  {r.path}: {w}")
        else:
            print(f"rejected {r.path}: {r.reason}")
    runs = sum(len(r.run_ids) for r in stored)
    both = f" ({runs} runs: a --bidir file gives one per direction)" if runs != len(stored) else ""
    again = sum(1 for r in stored if r.already)
    again = f" ({again} already stored)" if again else ""
    print(f"{len(stored)} stored{again}, {len(results) - len(stored)} rejected{both}; "
          f"campaign {campaign_id} in {args.db}")
    if len(stored) < len(results):
        print(f"tcpprofile import: {len(results) - len(stored)} of {len(results)} files rejected", file=sys.stderr)
        return 1
    return 0


def _run_note(r) -> str:
    """' (run X)', and whether the file's content was stored before: replaced, or under other runs."""
    run = f"run {r.run_id}" if len(r.run_ids) == 1 else ""
    if not r.already:
        return f" ({run})" if run else ""
    if set(r.already) == set(r.run_ids):
        said = "already stored: replaced, not added"
    else:
        said = (f"already stored as run {', '.join(r.already)} (other overrides): "
                f"stored again as {', '.join(r.run_ids)}")
    return f" ({run}; {said})" if run else f" ({said})"
