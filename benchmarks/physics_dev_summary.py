"""Summary of the models' development store (benchmarks/data/physics-dev-0.2bdp.toml) as CSV: one row per
run with what docs/models.md ("Fixed-size transfers", "What shallow buffers exercise") uses — the receiver's
rate and bytes, the unsent backlog U = F − bytes received, the largest aggregate cwnd and the slow-start
peak from the kernel traces. Usage: python benchmarks/physics_dev_summary.py DB > benchmarks/data/physics-dev-0.2bdp-runs.csv
"""

from __future__ import annotations

import csv
import sys

import duckdb

SQL = """
WITH peaks AS (
    SELECT run_id, stream, max(snd_cwnd) AS cwnd_max FROM cwnd GROUP BY run_id, stream)
SELECT r.variant, r.streams, l.rtt_ms, l.buffer_bytes, l.goodput_ceiling_bps AS capacity_bps, r.transfer_bytes,
       r.bytes_transferred AS bytes_received, r.transfer_bytes - r.bytes_transferred AS unsent_bytes,
       r.throughput_bps, r.duration_s, r.retransmits, coalesce(r.flags, '') AS flags,
       (SELECT sum(p.cwnd_max) FROM peaks p WHERE p.run_id = r.run_id) AS cwnd_max_segments_sum
FROM runs r JOIN links l USING (link_id)
WHERE r.status = 'ok'
ORDER BY r.variant, r.streams, l.rtt_ms, r.repetition
"""


def main(db: str) -> None:
    con = duckdb.connect(db, read_only=True)
    cur = con.execute(SQL)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow([d[0] for d in cur.description])
    out.writerows(cur.fetchall())


if __name__ == "__main__":
    main(sys.argv[1])
