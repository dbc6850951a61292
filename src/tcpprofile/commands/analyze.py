"""`tcpprofile analyze`: profiles, regions, τ_T, dynamics, Lyapunov relation and the §5.2 bound of a store.

Output: a readable table (default: throughput in Gbit/s, the configuration in words, τ_T as a value or a
censored bound; analyze_text), or one flat JSON object per row (jsonl) / CSV with a header; the columns of
each --what are documented in docs/analysis.md. NaN is written as null (jsonl) or empty (csv).
"""

from __future__ import annotations

import csv
import json
import math
import sys

from . import analyze_text
from ..store.grouping import DEFAULT_BY, DIMENSIONS, check_by
from ..errors import ValidationError

NAME = "analyze"
HELP = "profiles, concave/convex regions, τ_T, dynamics, bounds"
ORDER = 70            # its place in `tcpprofile --help`

WHAT = ("profiles", "regions", "transition", "dynamics", "lyapunov", "bound")
FORMATS = ("table", "jsonl", "csv")


def register(subparsers) -> None:
    p = subparsers.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="the store (DuckDB file)")
    p.add_argument("--what", default="profiles", choices=WHAT)
    p.add_argument("--by", default=",".join(DEFAULT_BY),
                   help=f"comma-separated grouping dimensions (from: {', '.join(DIMENSIONS)}); "
                        "runs differing only in the others are pooled")
    p.add_argument("--format", default="table", choices=FORMATS)
    p.add_argument("--seed", type=int, default=0, help="master seed for bootstraps and surrogates")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="leave out runs on links that failed calibration (default: include, counted)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of intervals")
    p.add_argument("--n-boot", type=int, default=None,
                   help="bootstrap resamples (default 2000 for profiles, 200 for transition)")
    p.add_argument("--per-stream", action="store_true", help="dynamics: also each stream's trace")
    p.add_argument("--surrogates", type=int, default=0,
                   help="dynamics/lyapunov: IAAFT surrogates per aggregate trace for the exponent's p-value "
                        "(0: skip; 19 gives p >= 0.05, about 3-5 ms per trace)")
    p.add_argument("--distinguishable-only", action="store_true",
                   help="lyapunov: only runs whose exponent beats its surrogates (needs --surrogates)")
    p.add_argument("--eps", type=float, default=0.1, help="bound: ε as a fraction of capacity")
    p.add_argument("--alpha", type=float, default=0.05, help="bound: target probability")
    p.add_argument("--out", default="-", help="output file (default: stdout)")
    p.set_defaults(func=run)


def _by(text: str) -> tuple[str, ...]:
    by = tuple(d.strip() for d in text.split(",") if d.strip())
    return check_by(by)


def rows_for(args, store) -> list[dict]:
    from .. import analysis as A      # numpy and scipy load only for this command

    by = _by(args.by)
    if not (0 < args.level < 1):
        raise ValidationError("--level", f"must be in (0, 1), got {args.level}")
    if args.n_boot is not None and args.n_boot < 0:
        raise ValidationError("--n-boot", "must be >= 0")
    if args.what in ("profiles", "regions"):
        profiles = A.profiles_from_store(store, by=by, exclude_flagged=args.exclude_flagged, level=args.level,
                                         n_boot=2000 if args.n_boot is None else args.n_boot, seed=args.seed)
        if args.what == "profiles":
            return [r for p in profiles for r in p.rows()]
        return [{**p.key, "mean": float(m), **r}
                for p in profiles for m, r in zip(p.mean, A.regions_of(p).rows())]
    if args.what == "transition":
        return [t.row() for t in A.transitions_from_store(
            store, by=by, exclude_flagged=args.exclude_flagged, level=args.level,
            n_boot=200 if args.n_boot is None else args.n_boot, seed=args.seed)]
    if args.what in ("dynamics", "lyapunov"):
        if args.surrogates < 0:
            raise ValidationError("--surrogates", "must be >= 0")
        if args.distinguishable_only and args.surrogates == 0:
            raise ValidationError("--distinguishable-only", "needs --surrogates N (N > 0)")
        dyn = A.dynamics_from_store(store, per_stream=args.per_stream and args.what == "dynamics",
                                    exclude_flagged=args.exclude_flagged, n_surrogates=args.surrogates,
                                    seed=args.seed)
        if args.what == "dynamics":
            return [d.row() for d in dyn]
        return [{**A.row_key(key), "n": r.n, "spearman_rho": r.spearman_rho, "p_value": r.p_value,
                 "mean_throughput_bps": r.mean_throughput_bps, "mean_lyapunov": r.mean_lyapunov}
                for key, r in A.relations_from_store(store, by=by, dynamics=dyn,
                                                     distinguishable_only=args.distinguishable_only)]
    return A.bounds_from_store(store, by=by, eps=args.eps, alpha=args.alpha, exclude_flagged=args.exclude_flagged)


def _plain(v):
    if hasattr(v, "item"):            # a numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _key_names(args) -> tuple[str, ...]:
    """The grouping columns of this --what's rows (printed in words by analyze_text)."""
    if args.what in ("dynamics",):
        return DEFAULT_BY
    return _by(args.by)


def run(args) -> int:
    from ..store import Store

    with Store.open(args.db, read_only=True) as store:
        rows = rows_for(args, store)
    out = sys.stdout if args.out == "-" else open(args.out, "w", newline="")
    try:
        if args.format == "jsonl":
            for r in rows:
                out.write(json.dumps({k: _plain(v) for k, v in r.items()}) + "\n")
        elif args.format == "csv":
            cols = list(dict.fromkeys(k for r in rows for k in r))
            w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: "" if _plain(v) is None else _plain(v) for k, v in r.items()})
        elif args.what == "transition" and rows and "streams" in _by(args.by):
            analyze_text.fig10(rows, _by(args.by), out)
        else:
            analyze_text.table(rows, _key_names(args), out)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0
