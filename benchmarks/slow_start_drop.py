"""Slow start's first drop from kernel cwnd traces (docs/models.md "Slow start's trains"): one CSV row per traced
run with the aggregate window when the first packet was dropped (W_d, × Cτ), the window when the loss was seen
(P, × Cτ) and whether HyStart, not a loss, ended slow start. With --fit, the trains' law P/2 = W0 + s·β/Cτ by
least squares over the rows where the trains decide (loss-ended, β ≤ 0.3 × BDP, n ≤ 4), as trajectory.py's
SS_TRAIN_WINDOW and SS_TRAIN_SLOPE. P/2, not W_d: slow start doubles the window in the round after the drop
(P/W_d = 1.9 here; W_d is read with the smoothed RTT, which lags the dropped segment's own), and P is what the
model uses.

  python benchmarks/slow_start_drop.py DB [DB ...] > benchmarks/data/slow-start-drop.csv
  python benchmarks/slow_start_drop.py --fit benchmarks/data/slow-start-drop.csv

How a row is read: the first stream whose ssthresh leaves its initial value (TCP_INFINITE_SSTHRESH) saw the
loss at t_seen; the dropped segment left one smoothed RTT earlier (its RTT: τ plus the queue it waited in), so
W_d = Σ cwnd(t_seen − srtt) over the streams, P = the largest Σ cwnd in the 0.3 τ before t_seen. HyStart ends
slow start with ssthresh = cwnd (tcp_cubic.c hystart_update), a loss with ssthresh below it.
"""

from __future__ import annotations

import csv
import sys

import duckdb
import numpy as np

INITIAL_SSTHRESH = 1e6   # segments: above any window here, below TCP_INFINITE_SSTHRESH (0x7fffffff)
FIT_MAX_BUFFER = 0.3     # × Cτ: the trains' regime (the fluid overflow Cτ + β decides above, docs/models.md)
FIT_MAX_STREAMS = 4

RUNS = """
SELECT r.run_id, r.variant, r.streams, l.rtt_ms, l.buffer_bytes, l.goodput_ceiling_bps, l.mtu
FROM runs r JOIN links l USING (link_id)
WHERE r.trace_cwnd AND r.status = 'ok'
ORDER BY r.variant, r.streams, l.rtt_ms, l.buffer_bytes, r.repetition
"""
COLUMNS = ("variant", "streams", "rtt_ms", "buffer_bdp", "w_drop_bdp", "peak_bdp", "hystart")


def first_drop(con, run_id: str, streams: int, bdp_segments: float, tau: float):
    traces = [con.execute("SELECT t_s, snd_cwnd, ssthresh, srtt_us FROM cwnd WHERE run_id = ? AND stream = ? "
                          "ORDER BY t_s", [run_id, s]).fetchnumpy() for s in range(streams)]
    traces = [x for x in traces if len(x["t_s"])]
    seen = []
    for x in traces:
        i = np.flatnonzero(x["ssthresh"] < INITIAL_SSTHRESH)
        seen.append((x["t_s"][i[0]], i[0], x) if len(i) else (np.inf, -1, x))
    t_seen, i, x = min(seen, key=lambda s: s[0])
    if i < 0:
        return None
    total = lambda t: sum(np.interp(t, y["t_s"], y["snd_cwnd"]) for y in traces) / bdp_segments  # noqa: E731
    w_drop = total(t_seen - x["srtt_us"][max(i - 1, 0)] / 1e6)
    peak = max(total(t) for t in np.linspace(t_seen - 0.3 * tau, t_seen, 31))
    hystart = abs(float(x["ssthresh"][i]) - float(x["snd_cwnd"][i])) <= 2   # ssthresh = cwnd: no reduction
    return w_drop, peak, hystart


def rows(db: str):
    con = duckdb.connect(db, read_only=True)
    for run_id, variant, n, rtt_ms, buffer_bytes, capacity, mtu in con.execute(RUNS).fetchall():
        tau = rtt_ms / 1e3
        bdp_bytes = capacity * tau / 8
        got = first_drop(con, run_id, n, bdp_bytes / (mtu - 52), tau)
        if got is not None:
            w, p, hy = got
            yield variant, n, rtt_ms, round(buffer_bytes / bdp_bytes, 4), round(w, 4), round(p, 4), int(hy)


def train_rows(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(β/Cτ, P/Cτ) of the CSV's rows where the trains decide: loss-ended, β ≤ FIT_MAX_BUFFER, n ≤ FIT_MAX_STREAMS."""
    with open(path) as f:
        data = [r for r in csv.DictReader(f) if not int(r["hystart"]) and float(r["buffer_bdp"]) <= FIT_MAX_BUFFER
                and int(r["streams"]) <= FIT_MAX_STREAMS]
    return (np.array([float(r["buffer_bdp"]) for r in data]), np.array([float(r["peak_bdp"]) for r in data]))


def fit(path: str) -> tuple[float, float, int]:
    """W0, s of P/2 = W0 + s·y over the trains' rows (least squares), and how many rows."""
    y, peak = train_rows(path)
    s, w0 = np.polyfit(y, peak / 2, 1)   # P/2: the loss is seen one round after the drop
    return float(w0), float(s), len(y)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--fit"]:
        w0, s, count = fit(argv[1])
        print(f"P/2 = {w0:.3f} + {s:.3f}·β/Cτ over {count} runs (loss-ended, β ≤ {FIT_MAX_BUFFER} × BDP, "
              f"n ≤ {FIT_MAX_STREAMS})")
        return
    write_csv(COLUMNS, rows, argv)


def write_csv(columns, rows_of, dbs) -> None:
    """The header `columns`, then rows_of(db)'s rows for each store, as CSV on stdout."""
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(columns)
    for db in dbs:
        out.writerows(rows_of(db))


if __name__ == "__main__":
    main(sys.argv[1:])
