"""`tcpprofile run SPEC --db DB`: run (or resume) a measurement campaign.

Exit status: 0 when the campaign completed with at least one usable run (failed runs are listed in
the summary with their reasons); 1 when it completed but every run failed; 2 with a one-line reason
when it could not run (bad spec, missing environment); 130 when interrupted (SIGINT or SIGTERM; what
was in flight is redone on the next run of the same spec).
"""

from __future__ import annotations

import argparse
import signal
import sys

from .options import cluster_executor

NAME = "run"
HELP = "run or resume a measurement campaign from a TOML spec"
ORDER = 10            # its place in `tcpprofile --help`


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    p.add_argument("spec", help="campaign spec (TOML, see docs/spec.md)")
    p.add_argument("--db", required=True, help="the store (a DuckDB file; created if absent)")
    p.add_argument("--max-runs", type=_positive_int, metavar="N",
                   help="run at most N of the remaining runs now; run the spec again to continue")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run on a Ray cluster (HEAD:PORT) whose testbed nodes offer the resource "
                        "tcpprofile_testbed (see docs/cluster.md); this process stays the store's only writer")
    p.set_defaults(func=main)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-runs: a whole number ≥ 1, got {text!r}")
    return value


def _terminate(signum, frame):
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    from .. import campaign, spec     # duckdb loads only for this command
    from ..store.db import Store

    s = spec.load(args.spec)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with Store.open(args.db) as store:
            summary = campaign.run_campaign(s, store, out=sys.stderr, max_runs=args.max_runs,
                                            executor=cluster_executor(s, args.cluster))
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(campaign.format_summary(summary, args.db))
    return campaign.exit_code(summary)
