"""Summary of the wire's acceptance campaign (benchmarks/data/wire-acceptance.toml, issue 21 "Must show").

Per tau and n: runs done, last-half throughput (receiver bytes of the 1 s intervals that start in the
second half of the run) min / median, the distribution of each run's largest release lateness (either
engine), how many runs exceeded the issue's threshold max(0.5 ms, 1 % tau), the flags carried and the
limiting factor stored. Then the issue's two criteria over all runs done: last half >= 9.5 Gbit/s at
11.8-183 ms and >= 9.3 at 366 ms unless flagged host_limited; largest lateness within the threshold in
>= 99 of 100 runs, every run beyond it marked: engine_stall, or engine_stall_minor where the stall's
bound on Θ stays within the instrument's resolution (fidelity.verdicts.stall_flag, issue 33).

Usage: python benchmarks/wire_acceptance_summary.py DB [--campaign wire-acceptance]
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter

import duckdb

SQL = """
WITH half AS (
    SELECT i.run_id, sum(i.bytes) * 8 / sum(i.end_s - i.start_s) AS last_half_bps
    FROM intervals i JOIN (SELECT run_id, max(end_s) AS t_end FROM intervals WHERE stream IS NULL GROUP BY run_id) e
         USING (run_id)
    WHERE i.stream IS NULL AND i.start_s >= e.t_end / 2 - 1e-6
    GROUP BY i.run_id)
SELECT l.rtt_ms, r.streams, h.last_half_bps,
       greatest(coalesce(r.engine_fwd_late_max_us, 0), coalesce(r.engine_rev_late_max_us, 0)) AS late_max_us,
       coalesce(r.flags, '') AS flags, r.limited_by
FROM runs r JOIN links l USING (link_id) JOIN campaigns c ON c.campaign_id = r.campaign_id
     LEFT JOIN half h USING (run_id)
WHERE r.status = 'ok' AND c.name = ?
ORDER BY l.rtt_ms, r.streams, r.repetition
"""

FLOOR_GBPS = {366.0: 9.3}      # the floor at 366 ms; 9.5 Gbit/s at 11.8-183 ms
DEFAULT_FLOOR_GBPS = 9.5
STALL_MARKS = {"engine_stall", "engine_stall_minor"}   # a stall seen: material, or within the resolution


def threshold_us(rtt_ms: float) -> float:
    """The issue's largest-lateness bound: max(0.5 ms, 1 % tau) [µs]."""
    return max(500.0, 10.0 * rtt_ms)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--campaign", default="wire-acceptance")
    args = ap.parse_args()
    rows = duckdb.connect(args.db, read_only=True).execute(SQL, [args.campaign]).fetchall()
    if not rows:
        print(f"no ok runs of campaign {args.campaign!r} in {args.db}")
        return 1
    groups: dict[tuple, list] = {}
    for row in rows:
        groups.setdefault((row[0], row[1]), []).append(row)
    print(f"{'tau ms':>7} {'n':>2} {'runs':>4} {'last½ Gbit/s min/med':>21} "
          f"{'max lateness ms min/med/max':>28} {'>thr':>4} flags; limited_by")
    slow = beyond = beyond_unflagged = slow_unflagged = 0
    for (rtt, n), rs in sorted(groups.items()):
        gb = [r[2] / 1e9 for r in rs if r[2] is not None]
        late = [r[3] / 1e3 for r in rs]
        over = sum(1 for r in rs if r[3] > threshold_us(rtt))
        flags = Counter(f for r in rs for f in r[4].split(",") if f)
        lim = Counter(r[5] or "-" for r in rs)
        floor = FLOOR_GBPS.get(rtt, DEFAULT_FLOOR_GBPS)
        for r in rs:
            if r[2] is not None and r[2] / 1e9 < floor:
                slow += 1
                slow_unflagged += "host_limited" not in r[4].split(",")
            if r[3] > threshold_us(rtt):
                beyond += 1
                beyond_unflagged += not STALL_MARKS & set(r[4].split(","))
        tput = f"{min(gb):.2f}/{statistics.median(gb):.2f}" if gb else "-"
        print(f"{rtt:>7} {n:>2} {len(rs):>4} {tput:>21} "
              f"{min(late):>8.2f}/{statistics.median(late):.2f}/{max(late):.2f} {over:>4} "
              f"{dict(flags)}; {dict(lim)}")
    print(f"\n{len(rows)} runs done. Last half below the floor (9.5, 366 ms: 9.3 Gbit/s): {slow} "
          f"({slow_unflagged} of them not flagged host_limited). Largest lateness beyond max(0.5 ms, 1 % tau): "
          f"{beyond} of {len(rows)} (criterion: at most 1 in 100), {beyond_unflagged} of them without engine_stall or engine_stall_minor.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
