"""`tcpprofile report`: write the self-contained HTML report of a store."""

from __future__ import annotations

import time

NAME = "report"
HELP = "write a static HTML report with the papers' figures"
ORDER = 120            # its place in `tcpprofile --help`


def register(subparsers) -> None:
    p = subparsers.add_parser(NAME, help=HELP, description=__doc__)
    p.add_argument("--db", required=True, help="the store (DuckDB file)")
    p.add_argument("--out", required=True, help="directory for index.html and the figure files")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="leave flagged runs out (link calibration missed, or run flags: docs/analysis.md)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report import build_report      # matplotlib loads only for this command
    from ..store import Store

    t0 = time.monotonic()
    with Store.open(args.db, read_only=True) as store:
        report = build_report(store, args.out, exclude_flagged=args.exclude_flagged)
    print(f"{report.index}: {len(report.figures())} figures, {len(report.notes())} left out "
          f"({time.monotonic() - t0:.1f} s)")
    for note in report.notes():
        print(f"  omitted: {note.title}: {note.message}")
    return 0
