"""The window slow start's end leaves, from kernel cwnd traces (docs/models.md "Slow start's burst at 5 Gbit/s"):
one CSV row per traced single flow with the peak P (× Cτ, as benchmarks/slow_start_drop.py reads it), the window
congestion avoidance starts from, W1 (× Cτ: the smallest ssthresh in the 0.5 s + 10 RTTs after the loss was seen,
where recovery ends and cwnd = ssthresh), the ssthresh reductions in that time, and how many of them are congestion
events: a reduction by the variant's own factor, within ±0.05 (CUBIC 717/1024, STCP 0.875: tcp_cubic.c beta = 717,
tcp_scalable.c cwnd − cwnd/8; H-TCP's factor varies, 0.5–0.8, so every reduction counts). With --share, per variant
with a fixed factor and link rate, the share of loss-ended runs whose burst left less than LOW × keep²·P (the lower
outcome) and the mean factor on keep²·P they left, as cubic.py's BURST_BY_RATE.

  python benchmarks/slow_start_events.py DB [DB ...] > benchmarks/data/slow-start-events-5gbit.csv
  python benchmarks/slow_start_events.py --share benchmarks/data/slow-start-events-5gbit.csv

tcp_probe reports tcp_current_ssthresh (ssthresh in recovery, else the larger of ssthresh and ¾·cwnd), so the
smallest value after the loss is the ssthresh the burst left.
"""

from __future__ import annotations

import csv
import sys

import duckdb
import numpy as np

from slow_start_drop import INITIAL_SSTHRESH, first_drop, write_csv

KEEP = {"cubic": 717 / 1024, "scalable": 0.875}   # tcp_cubic.c beta = 717 (/1024); tcp_scalable.c: cwnd − cwnd/8
AFTER_S, AFTER_RTTS = 0.5, 10                      # the burst's recovery ends well within this after the loss is seen
RUNS = """
SELECT r.run_id, r.variant, r.streams, l.rtt_ms, l.buffer_bytes, l.goodput_ceiling_bps, l.mtu, l.rate_bps
FROM runs r JOIN links l USING (link_id)
WHERE r.trace_cwnd AND r.status = 'ok' AND r.streams = 1
ORDER BY r.variant, l.rtt_ms, l.buffer_bytes, r.repetition
"""
COLUMNS = ("variant", "rate_bps", "rtt_ms", "buffer_bdp", "peak_bdp", "w1_bdp", "reductions", "events", "hystart")
EVENT_TOLERANCE = 0.05
LOW = 0.96          # the lower outcome: W1 below 0.96 × keep²·P (two clean events leave 0.98–1.01 × it)


def after_loss(con, run_id: str, tau: float, bdp_segments: float, keep: float | None):
    """(W1 × Cτ, ssthresh reductions, events) in the AFTER_S + AFTER_RTTS·τ after the loss is first seen (None: no
    loss); the first reduction is from the peak (the initial ssthresh), an event whatever its factor."""
    x = con.execute("SELECT t_s, snd_cwnd, ssthresh FROM cwnd WHERE run_id = ? AND stream = 0 ORDER BY t_s",
                    [run_id]).fetchnumpy()
    i = np.flatnonzero(x["ssthresh"] < INITIAL_SSTHRESH)
    if not len(i):
        return None
    t0 = x["t_s"][i[0]]
    s = x["ssthresh"][i[0]:][x["t_s"][i[0]:] <= t0 + AFTER_S + AFTER_RTTS * tau].astype(float)
    down = np.diff(s) < 0
    cut = s[1:][down] / s[:-1][down]     # each later reduction's factor
    events = 1 + int(np.sum(np.abs(cut - keep) <= EVENT_TOLERANCE) if keep else len(cut))
    return float(s.min()) / bdp_segments, 1 + len(cut), events


def rows(db: str):
    con = duckdb.connect(db, read_only=True)
    for run_id, variant, n, rtt_ms, buffer_bytes, capacity, mtu, rate in con.execute(RUNS).fetchall():
        tau = rtt_ms / 1e3
        bdp_bytes = capacity * tau / 8
        seg = bdp_bytes / (mtu - 52)
        drop, after = first_drop(con, run_id, n, seg, tau), after_loss(con, run_id, tau, seg, KEEP.get(variant))
        if drop is None or after is None:
            continue
        _, peak, hystart = drop
        w1, reductions, events = after
        yield (variant, rate, rtt_ms, round(buffer_bytes / bdp_bytes, 4), round(peak, 4), round(w1, 4), reductions,
               events, int(hystart))


def share(path: str) -> dict[tuple, tuple[int, int, float]]:
    """(variant, rate) -> (runs of the lower outcome, loss-ended runs, their mean W1/(keep²·P)) over the CSV's rows
    of the variants with a fixed factor (KEEP)."""
    out: dict[tuple, list] = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            keep = KEEP.get(r["variant"])
            if keep is None or int(r["hystart"]):
                continue
            c = out.setdefault((r["variant"], float(r["rate_bps"])), [[], 0])
            ratio = float(r["w1_bdp"]) / float(r["peak_bdp"]) / keep ** 2
            c[0] += [ratio] if ratio < LOW else []
            c[1] += 1
    return {k: (len(low), runs, float(np.mean(low)) if low else 1.0) for k, (low, runs) in out.items()}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--share"]:
        for (variant, rate), (low, runs, factor) in sorted(share(argv[1]).items()):
            print(f"{variant} at {rate / 1e9:g} Gbit/s: {low} of {runs} loss-ended single flows left less than "
                  f"{LOW} × keep²·P, on average {factor:.3f} × it")
        return
    write_csv(COLUMNS, rows, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
