"""Benchmark: `report` and `select` on the paper-size synthetic store (issue 29, item 6: report ≤ 30 s,
select ≤ 1 s).

Store: bench_analysis.build's 11 variants × 10 streams × 3 socket buffers × 7 RTTs × 10 repetitions = 23 100
runs with 100-interval traces (built once into --db, reused when it exists). Prints, measured in this process:
  - select: load_profiles + select at 45.6 ms + host_settings on the open store, against the previous RTT
    clustering (one np.mean per run instead of per cluster: O(runs²)), timed on the same rows;
    and `tcpprofile select` as a command (a fresh interpreter: imports included);
  - report: build_report end to end (the τ_T fits and box plots in a worker process beside the rest), against
    the same report in one process (no worker), with each section's time there; and against the previous trace
    reads (one query over the intervals table per run, `ReportData.traces` without `prefetch`).
Run: .venv/bin/python benchmarks/bench_report.py [--db PATH] [--no-baseline], on a quiet host (wall-clock
times; a busy core inflates every one of them).
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_analysis import build
from tcpprofile.choose import select as sel
from tcpprofile.report import build_report, common, dynamics, findings, models, operator, papers, profiles, tables
from tcpprofile.report.data import ReportData
from tcpprofile.store import Store, reads

REPORT_TARGET_S, SELECT_TARGET_S = 30.0, 1.0
SECTIONS = [(operator, "operator_page"), (findings, "verdicts"), (tables, "selection"), (tables, "calibration"),
            (profiles, "mean_profiles"), (profiles, "box_plots"), (profiles, "sigmoid_fits"),
            (profiles, "transition_rtts"), (profiles, "loss_profiles"), (dynamics, "traces"), (dynamics, "poincare"),
            (dynamics, "lyapunov"), (dynamics, "throughput_vs_lyapunov"), (dynamics, "cwnd_traces"),
            (models, "model_vs_measurement"), (papers, "side_by_side")]


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def bench_select(db: Path) -> None:
    with Store.open(db, read_only=True) as s:
        def one():
            ps = sel.load_profiles(s)
            choice = sel.select(ps, 45.6e-3)
            return sel.host_settings(choice.recommended, 45.6e-3, ps.conditions.get("rate_bps"))
        one()                                                        # warm-up: imports, the store's pages
        _, t_new = timed(one)
        rtts = [r["rtt_s"] for r in reads.profile_runs(s)]
    clusters = sel.cluster_rtts(rtts)
    _, t_centre_new = timed(lambda: {v: m for c in clusters for m in (float(np.mean(c)),) for v in c})
    _, t_centre_old = timed(lambda: {v: float(np.mean(c)) for c in clusters for v in c})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    _, t_cli = timed(lambda: subprocess.run([sys.executable, "-m", "tcpprofile.cli", "select", "--db", str(db),
                                             "--rtt", "45.6ms"], check=True, capture_output=True, env=env))
    print(f"select on {len(rtts)} runs: {t_new:.2f} s in process (target ≤ {SELECT_TARGET_S:g} s); the previous "
          f"RTT clustering alone took {t_centre_old:.2f} s of it, now {t_centre_new * 1e3:.1f} ms "
          f"(x{t_centre_old / max(t_centre_new, 1e-9):.0f}), so the previous select ≈ "
          f"{t_new - t_centre_new + t_centre_old:.2f} s; `tcpprofile select` as a command: {t_cli:.2f} s "
          f"(a fresh interpreter, imports included)")


def report_once(db: Path, out: Path, *, background: bool = True) -> tuple[float, dict[str, float]]:
    """build_report's wall time and each section's time in this process (with a worker, the τ_T fits and
    the box plots run beside them: their sections then show only the waiting); background=False: no worker
    (common.background_pool gives None), the report as one process draws it."""
    spent: dict[str, float] = {}
    saved = [(m, n, getattr(m, n)) for m, n in SECTIONS] + [(common, "background_pool", common.background_pool)]
    if not background:
        common.background_pool = lambda profiles: None
    for mod, name in SECTIONS:
        def wrap(f, key=f"{mod.__name__.rsplit('.', 1)[-1]}.{name}"):
            @functools.wraps(f)
            def g(*a, **k):
                out_, dt = timed(lambda: f(*a, **k))
                spent[key] = dt
                return out_
            return g
        setattr(mod, name, wrap(getattr(mod, name)))
    try:
        with Store.open(db, read_only=True) as s:
            _, total = timed(lambda: build_report(s, out))
    finally:
        for mod, name, f in saved:
            setattr(mod, name, f)
    return total, spent


def previous_reads():
    """ReportData.prefetch reading one run at a time: the report's trace reads before prefetch."""
    original = ReportData.prefetch

    def one_by_one(self, run_ids):
        for r in run_ids:
            if r not in self._traces:
                original(self, [r])
    return original, one_by_one


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "tcpprofile-bench-paper.duckdb",
                    help="the paper-size store (built there when missing)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the report with the previous trace reads")
    args = ap.parse_args()
    if not args.db.exists():
        with Store.open(args.db) as s:
            _, dt = timed(lambda: build(s, 11, 10, 10, 100))
        print(f"built the paper-size store in {dt:.1f} s: {args.db}")
    bench_select(args.db)
    with tempfile.TemporaryDirectory() as tmp:
        total, spent = report_once(args.db, Path(tmp) / "new")
        alone, spent_alone = report_once(args.db, Path(tmp) / "alone", background=False)
        print(f"report: {total:.1f} s (target ≤ {REPORT_TARGET_S:g} s); in one process (no worker for the τ_T fits "
              f"and box plots): {alone:.1f} s, x{alone / total:.2f}")
        print("  sections in one process:")
        for k, v in sorted(spent_alone.items(), key=lambda kv: -kv[1]):
            print(f"  {k:<36s} {v:6.2f} s")
        if not args.no_baseline:
            original, one_by_one = previous_reads()
            ReportData.prefetch = one_by_one
            try:
                old, spent_old = report_once(args.db, Path(tmp) / "old")
            finally:
                ReportData.prefetch = original
            print(f"report with the previous trace reads (a query per run): {old:.1f} s; now x{old / total:.2f} "
                  f"faster (papers {spent_old['papers.side_by_side']:.1f} → {spent['papers.side_by_side']:.1f} s)")


if __name__ == "__main__":
    main()
