"""E per variant × n of two model configurations on the committed run summaries (benchmarks/data/*-runs.csv), by
the project's own validation code (models/validation.validate: in-sample, leave-one-RTT-out, leave-one-buffer-out)
— docs/models.md "Single flows".

The summaries keep each run's configuration and receiver's rate but not its iperf3 intervals, so two things the
store would give are fixed here: the start-up lag d is START_RTTS for every row (the validation stores' fits
measured d = 1.16–1.24 per setting, benchmarks/data/models-validation-3-table.txt), and there is no baseline
(no intervals). Both configurations see the same table, so the comparison between them is like with like.

  python benchmarks/single_flow.py [--old ss-trains] [--new single-flow] CSV [CSV ...]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict

import numpy as np

from tcpprofile.models.validation import validate

START_RTTS = 1.2          # RTTs: the start-up lag of every row (the validation stores' measured 1.16–1.24)
RATE_BPS = 10e9           # the links' configured rate (every development and validation store)
MTU = 9000                # bytes (every development and validation store)
WINDOW_LIMIT = 2 ** 31    # bytes: the kernel's socket-buffer maximum of the autotuned runs (W_max = 1074 MB known)


def buffer_label(buffer_bytes: float, rtt_ms: float) -> str:
    """The spec's buffer setting, k×BDP (β / (rate·τ/8), to two significant digits)."""
    k = buffer_bytes / (RATE_BPS * rtt_ms / 1e3 / 8)
    return f"{float(f'{k:.2g}'):g}xBDP"


def profile_table(paths) -> dict[str, np.ndarray]:
    """The profile table validate() reads (as store.reads.PROFILE_SQL groups it): mean throughput per
    (variant, n, τ, buffer setting) over the runs of the CSVs."""
    groups = defaultdict(list)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["variant"], int(row["streams"]), float(row["rtt_ms"]),
                       buffer_label(float(row["buffer_bytes"]), float(row["rtt_ms"])))
                groups[key].append(row)
    cols = defaultdict(list)
    for (variant, n, rtt, label), rows in sorted(groups.items()):
        tput = [float(r["throughput_bps"]) for r in rows]
        for name, value in (("variant", variant), ("streams", n), ("rtt_s", rtt / 1e3), ("rate_bps", RATE_BPS),
                            ("buffer", label), ("socket_buffer_bytes", None),
                            ("transfer_bytes", float(rows[0]["transfer_bytes"])), ("duration_target_s", None),
                            ("loss_mode", "none"), ("loss_rate", 0.0), ("mtu", MTU),
                            ("size_bytes", float(rows[0]["transfer_bytes"])),
                            ("configured_buffer_bytes", float(np.mean([float(r["buffer_bytes"]) for r in rows]))),
                            ("window_limit_bytes", WINDOW_LIMIT), ("throughput_bps", float(np.mean(tput))),
                            ("runs", len(rows)), ("capacity_bps", float(np.mean([float(r["capacity_bps"])
                                                                                 for r in rows]))),
                            ("startup_rtts", START_RTTS), ("delivered_share", 0.0)):
            cols[name].append(value)
    return {k: np.asarray(v, dtype=object if k in ("socket_buffer_bytes", "duration_target_s") else None)
            for k, v in cols.items()}


def cells(table, config: str) -> dict[tuple, dict[str, float]]:
    """E [%] per (variant, n) and mode (in, rtt, buffer) of one configuration."""
    return {(c.key["variant"], c.streams): c.model for c in validate(table, config=config).cells}


def fmt(x: float) -> str:
    return "-" if x != x else f"{x:.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+", help="run summaries (benchmarks/data/*-runs.csv)")
    p.add_argument("--old", default="ss-trains", help="the configuration compared against (default ss-trains)")
    p.add_argument("--new", default="single-flow", help="the configuration judged (default single-flow)")
    args = p.parse_args(argv)
    table = profile_table(args.csv)
    old, new = cells(table, args.old), cells(table, args.new)
    print(f"E % in-sample / leave-one-RTT-out / leave-one-buffer-out: {args.old} → {args.new} "
          f"({', '.join(args.csv)}; d = {START_RTTS} RTTs every row)")
    head = (args.old + " in / rtt / buf", args.new + " in / rtt / buf")
    print(f"{'variant':>9} {'n':>3} | {head[0]:>28} | {head[1]:>30} | better?")
    for key in sorted(old):
        a, b = old[key], new[key]
        pa, pb = ([fmt(x[m]) for m in x] for x in (a, b))   # judged as printed (2 decimals)
        verdict = "=" if pa == pb else "yes" if all(y == "-" or float(y) <= float(x) for x, y in zip(pa, pb)) else "no"
        print(f"{key[0]:>9} {key[1]:>3} | {' / '.join(fmt(a[m]) for m in a):>28} | "
              f"{' / '.join(fmt(b[m]) for m in b):>30} | {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
