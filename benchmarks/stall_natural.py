"""The natural experiment of issue 33 (item 2): within each configuration of a measured store, does a run
whose engines stalled more deliver less?

For every ok run with the engines' stall record (schema ≥ 7), its stall load is the bound it would get from
its summed excess (both directions, over its wall time: what issue 33's first bound used) and from the
uncovered excess (schema ≥ 8, delayd.c "Uncovered excess": what stall_effect_bound uses now). Runs are
grouped by configuration (the link: rate, τ, buffer, loss; the transfer: variant, streams, socket buffer,
size or duration, direction); within a group, Θ is taken relative to the group's mean and the load
centred on the group's mean (the within estimator: what differs between configurations cannot pose as a
stall effect). The slope of relative Θ on load, pooled over groups, with its Student-t interval
(df = runs − groups − 1): a bound that is tight has slope −1 (a stall of 1 % of the run costs 1 % of Θ);
a load that costs nothing has slope 0; an interval that holds 0 says the store cannot tell.

A CSV of runs (benchmarks/data/stall-quiet-1g-runs.csv: a campaign column, the link's rtt_ms, streams,
throughput_bps, duration_s and the engines' stall columns) is read as a store whose configurations are
(campaign, rtt_ms, streams).

Usage: .venv/bin/python benchmarks/stall_natural.py DB|CSV [DB|CSV ...] [--level 0.95]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tcpprofile.choose.decide import t_interval  # noqa: E402
from tcpprofile.store.db import Store  # noqa: E402

SQL = """
SELECT l.rate_bps, l.rtt_ms, l.buffer_bytes, l.loss_mode, l.loss_rate, r.variant, r.streams,
       r.socket_buffer_bytes, r.transfer_bytes, r.duration_target_s, r.reverse,
       r.throughput_bps, r.duration_s,
       r.engine_fwd_stall_excess_ms AS fe, r.engine_rev_stall_excess_ms AS re,
       r.engine_fwd_stall_uncovered_ms AS fu, r.engine_rev_stall_uncovered_ms AS ru
FROM runs r JOIN links l USING (link_id)
WHERE r.status = 'ok' AND r.engine_fwd_stall_excess_ms IS NOT NULL AND r.duration_s > 0
"""
GROUP = ("rate_bps", "rtt_ms", "buffer_bytes", "loss_mode", "loss_rate", "variant", "streams",
         "socket_buffer_bytes", "transfer_bytes", "duration_target_s", "reverse")


def csv_rows(path: Path) -> list[dict]:
    """The runs of a CSV summary, keyed as rows() keys a store's (configuration: campaign, τ, streams)."""
    def num(x):
        return None if x in ("", None) else float(x)
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = dict.fromkeys(GROUP)
            row.update(campaign=r["campaign"], rtt_ms=num(r["rtt_ms"]), streams=num(r["streams"]),
                       throughput_bps=num(r["throughput_bps"]), duration_s=num(r["duration_s"]),
                       fe=num(r["engine_fwd_stall_excess_ms"]), re=num(r["engine_rev_stall_excess_ms"]),
                       fu=num(r.get("engine_fwd_stall_uncovered_ms")), ru=num(r.get("engine_rev_stall_uncovered_ms")))
            if row["fe"] is not None and row["duration_s"]:
                out.append(row)
    return out


def rows(db: Path) -> list[dict]:
    if db.suffix == ".csv":
        return csv_rows(db)
    with Store.open(db, read_only=True) as s:    # an older store reads as current: its missing columns NULL
        return s.query(SQL)


def within_slope(groups: dict, load_key: str, level: float) -> dict | None:
    """Pooled within-group OLS slope of Θ/mean(Θ) − 1 on load − mean(load): value, interval, runs, groups."""
    xs, ys, k = [], [], 0
    for runs in groups.values():
        pts = [(r[load_key], r["throughput_bps"]) for r in runs if r[load_key] is not None]
        if len(pts) < 2:
            continue
        x = np.array([p[0] for p in pts], float)
        y = np.array([p[1] for p in pts], float)
        xs.append(x - x.mean())
        ys.append(y / y.mean() - 1)
        k += 1
    if not xs:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    n, sxx = x.size, float(x @ x)
    df = n - k - 1
    if sxx <= 0 or df < 1:
        return {"n": n, "groups": k, "slope": None, "interval": None, "load_sd": None}
    b = float(x @ y) / sxx
    resid = y - b * x
    se = float(np.sqrt(resid @ resid / df / sxx))
    return {"n": n, "groups": k, "slope": b, "interval": t_interval(b, se, df, level),
            "load_sd": float(np.sqrt(sxx / n))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", nargs="+", type=Path)
    ap.add_argument("--level", type=float, default=0.95)
    args = ap.parse_args()
    groups: dict[tuple, list[dict]] = defaultdict(list)
    total = 0
    for db in args.db:
        for r in rows(db):
            wall = r["duration_s"]
            r["excess_load"] = ((r["fe"] or 0) + (r["re"] or 0)) / 1e3 / wall
            r["uncovered_load"] = None if r["fu"] is None else ((r["fu"] or 0) + (r["ru"] or 0)) / 1e3 / wall
            groups[(str(db), r.get("campaign")) + tuple(r[k] for k in GROUP)].append(r)
            total += 1
    print(f"{total} ok runs with the engines' stall record in {len(groups)} configurations "
          f"({', '.join(str(d) for d in args.db)})")
    if not total:
        return 1
    for key, name in (("excess_load", "summed excess / wall time"), ("uncovered_load", "uncovered excess / wall time")):
        loads = [r[key] for rs in groups.values() for r in rs if r[key] is not None]
        s = within_slope(groups, key, args.level)
        if not loads or s is None:
            print(f"{name}: not recorded")
            continue
        q = np.percentile(loads, [50, 90, 100])
        head = (f"{name}: {len(loads)} runs, load median {100 * q[0]:.3f} %, p90 {100 * q[1]:.3f} %, "
                f"max {100 * q[2]:.3f} %")
        if s["slope"] is None:
            print(f"{head}; slope undetermined ({s['n']} runs in {s['groups']} configurations of ≥ 2 runs)")
            continue
        lo, hi = s["interval"]
        verdict = ("cannot tell (the interval holds 0)" if lo <= 0 <= hi else
                   "Θ falls with it" if hi < 0 else "Θ rises with it")
        print(f"{head}; within-configuration slope of relative Θ {s['slope']:+.3f} "
              f"[{lo:+.3f}, {hi:+.3f}] ({100 * args.level:g} %, {s['n']} runs, {s['groups']} configurations, "
              f"centred load sd {100 * s['load_sd']:.3f} %): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
