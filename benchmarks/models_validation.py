"""The models' validation table (issue 20; docs/models.md, "Validation protocol").

Run on the store measured from benchmarks/data/models-validation.toml — after the models were frozen,
so that no fitting choice has seen it:

    tcpprofile run benchmarks/data/models-validation.toml --db out/models-validation.duckdb
    .venv/bin/python benchmarks/models_validation.py --db out/models-validation.duckdb [--configuration NAME] [--json]

It prints, per variant and n, E in-sample, leave-one-RTT-out and leave-one-buffer-out for the
first-principles model (fitted as `tcpprofile model fit` fits) and for the generic ramp-up/sustainment
model of HPDC'17 §3 (the baseline it must beat), with every flag of the fits, the number of runs and
configurations and the fitted parameters, under a first line naming the model configuration used
(--configuration NAME, models/configurations.py; without it the default, the validated one). The same as
`tcpprofile model validate --db STORE [--configuration NAME]`.
"""

from __future__ import annotations

import argparse
import sys

from tcpprofile.cli import main as cli

SPEC = "benchmarks/data/models-validation.toml"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True, help=f"the store measured from {SPEC}")
    p.add_argument("--campaign", default="models-validation", help="campaign name (default models-validation)")
    p.add_argument("--exclude-flagged", action="store_true", help="leave out runs the instrument flagged")
    p.add_argument("--configuration", metavar="NAME",
                   help="a named model configuration (models/configurations.py, e.g. trajectory, paper); else the "
                        "default, the validated one")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    return cli(["model", "validate", "--db", args.db, "--campaign", args.campaign]
               + (["--exclude-flagged"] if args.exclude_flagged else [])
               + (["--configuration", args.configuration] if args.configuration else [])
               + (["--json"] if args.json else []))


if __name__ == "__main__":
    sys.exit(main())
