"""Benchmark: end-to-end analysis of a paper-size synthetic store, and Rosenstein vs nolds.lyap_r.

Store: 11 variants × 10 streams × 3 socket buffers × 7 RTTs × 10 repetitions = 23 100 runs, each with a
100-interval aggregate 1 s trace (2.31 M interval rows; per-stream rows are not generated), written
with the bulk path (Store.insert_columns). Traces: slow-start ramp-up to a level that
follows a concave-then-convex profile, then a noisy AIMD-like sawtooth.

Prints the time of each analysis step (end to end: target ≤ 30 s), then ratios against baselines measured
in the same run: τ_T against the previous implementation (three least-squares starts per side), trace
dynamics against the previous per-trace code (baseline_dynamics.py), Rosenstein against nolds.lyap_r on
the same sustained traces and settings (target ≥ 20×), the cost of the exponent's surrogate test, and the
report of a 6,300-run store from tests/synthetic_store.py with and without surrogates (target ≤ 10 s).
Run: .venv/bin/python benchmarks/bench_analysis.py [--small] [--no-report], on a quiet host (no other
CPU-bound process: the times are wall-clock, and a busy core inflates every one of them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import baseline_dynamics
from tcpprofile.analysis import (DEFAULT_BY, dynamics_from_store, dynamics_many, load_runs, load_traces,
                                 lyapunov_tests, profiles_from_store, ramp_up, regions_of, rosenstein,
                                 rosenstein_many, transition_rtt, transitions_from_store)
from tcpprofile.analysis import sigmoid
from tcpprofile.analysis.lyapunov import default_min_tsep
from tcpprofile.store import Store

GRID = np.array([0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0])
CAP = 9.4e9


def build(store: Store, variants: int, streams: int, reps: int, n_iv: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    buffers = np.array([250e3, 250e6, 1e9])
    V, N, B, T, R = np.meshgrid(np.arange(variants), np.arange(1, streams + 1), np.arange(3),
                                np.arange(GRID.size), np.arange(reps), indexing="ij")
    V, N, B, T, R = (a.ravel() for a in (V, N, B, T, R))
    tau = GRID[T]
    # transition RTT grows with buffer and streams; level concave before, convex after
    tau_T = 20.0 * (1 + B) ** 1.5 * (1 + 0.15 * N) * (1 + 0.05 * V)
    u = tau / 366.0
    level = np.where(tau <= tau_T, 0.97 - 0.3 * u**2, (0.97 - 0.3 * (tau_T / 366) ** 2) * np.exp(-(tau - tau_T) / 150))
    level *= np.minimum(1.0, (buffers[B] * N * 8) / (CAP * tau / 1e3 + 1e-9)) ** 0.3  # window limit
    ramp = tau / 1e3 * np.log2(np.maximum(2.0, CAP * tau / 1e3 / 12e3)) / N**0.3      # slow start [s]
    t = np.arange(n_iv)[None, :] + 0.5
    period = 2 + tau[:, None] / 20.0
    saw = 1 - 0.15 * ((t / period) % 1.0)
    noise = 0.04 * rng.standard_normal((V.size, n_iv))
    trace = CAP * level[:, None] * np.minimum(1.0, 2.0 ** ((t - ramp[:, None]) * 3)) * saw * (1 + noise)
    trace = np.clip(trace, 1e5, CAP)
    run_id = np.array([f"v{v}-n{n}-b{b}-t{k}-r{r}" for v, n, b, k, r in zip(V, N, B, T, R)], dtype=object)
    for k, tt in enumerate(GRID):
        store.insert_link({"link_id": f"L{k}", "campaign_id": "bench", "kind": "emulated", "rate_bps": 1e10,
                           "goodput_ceiling_bps": CAP, "rtt_ms": float(tt), "loss_mode": "none", "loss_rate": 0.0,
                           "calibration_ok": True})
    store.insert_columns("runs", {
        "run_id": run_id, "campaign_id": np.full(V.size, "bench", dtype=object),
        "link_id": np.array([f"L{k}" for k in T], dtype=object),
        "variant": np.array([f"variant{v:02d}" for v in V], dtype=object), "streams": N,
        "socket_buffer_bytes": buffers[B].astype(np.int64), "repetition": R,
        "duration_target_s": np.full(V.size, float(n_iv)), "status": np.full(V.size, "ok", dtype=object),
        "throughput_bps": trace.mean(axis=1)})
    starts = np.tile(np.arange(n_iv, dtype=float), V.size)
    store.insert_columns("intervals", {
        "run_id": np.repeat(run_id, n_iv), "start_s": starts, "end_s": starts + 1.0,
        "bits_per_second": trace.ravel(), "bytes": (trace.ravel() / 8).astype(np.int64)})
    return V.size * n_iv


def timed(label, f):
    t0 = time.perf_counter()
    out = f()
    dt = time.perf_counter() - t0
    print(f"  {label:<52s} {dt:8.2f} s")
    return out, dt


def sustained(store, n):
    traces = load_traces(store)
    keys = sorted(traces)[:: max(1, len(traces) // n)][:n]
    return [traces[k] for k in keys], [traces[k].bps[ramp_up(traces[k].bps).index:] for k in keys]


def bench_tau_T(store, n_groups: int) -> None:
    """τ_T per profile: ours against the previous implementation (three least-squares starts per side)."""
    runs = load_runs(store)
    groups = runs.groups(DEFAULT_BY)[:n_groups]

    def fit_all():
        for key, i in groups:
            grid, inv = np.unique(runs.tau_s[i], return_inverse=True)
            samples = [runs.throughput_bps[i][inv == k] for k in range(grid.size)]
            transition_rtt(samples, grid, capacity=CAP, n_boot=200, seed=1)
    _, t_new = timed(f"τ_T, {len(groups)} profiles (ours)", fit_all)
    saved, sigmoid._START_FACTORS = sigmoid._START_FACTORS, (1.0, 3.0, 1 / 3)
    try:
        _, t_old = timed(f"τ_T, {len(groups)} profiles (previous: 3 starts per side)", fit_all)
    finally:
        sigmoid._START_FACTORS = saved
    print(f"  τ_T speed-up x{t_old / t_new:.1f} ({1e3 * t_new / len(groups):.1f} vs {1e3 * t_old / len(groups):.1f} ms per profile)")


def bench_dynamics(store, n: int) -> None:
    """Trace dynamics: ours (batched) against the previous per-trace implementation on the same traces."""
    traces, _ = sustained(store, n)
    triples = [(t.bps, t.start_s, t.end_s) for t in traces]
    new, t_new = timed(f"dynamics, {len(traces)} traces (ours, batched)", lambda: dynamics_many(triples))
    old, t_old = timed(f"dynamics, {len(traces)} traces (previous, per trace)",
                       lambda: [baseline_dynamics.trace_dynamics(*t) for t in triples])
    spread = max(abs(a.poincare_spread - b["spread"]) for a, b in zip(new, old) if np.isfinite(b["spread"]))
    print(f"  dynamics speed-up x{t_old / t_new:.1f}; Poincaré spread max |diff| {spread:.1e}")
    ours = np.array([np.nan if d.lyapunov is None else d.lyapunov for d in new])
    prev = np.array([b["lyapunov"] for b in old])
    print(f"  exponents of these traces: ours median {np.nanmedian(ours):+.3f} (IQR {iqr(ours):.3f}), previous "
          f"median {np.nanmedian(prev):+.3f} (IQR {iqr(prev):.3f}) per step")


def iqr(x) -> float:
    q = np.nanpercentile(x, [25, 75])
    return float(q[1] - q[0])


def bench_rosenstein(store, n: int) -> None:
    """Rosenstein against nolds.lyap_r on the same sustained traces and settings (full-range linear fit)."""
    import nolds  # dev dependency, the baseline
    _, sus = sustained(store, n)
    tseps = [default_min_tsep(s) for s in sus]
    P = dict(emb_dim=3, lag=1, trajectory_len=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rosenstein_many(sus[:10], min_tsep=tseps[:10], fit_range=(0, 10), **P)       # warm-up, both
        [nolds.lyap_r(s, min_tsep=w, fit="poly", **P) for s, w in zip(sus[:3], tseps[:3])]
        t0 = time.perf_counter()
        ours = rosenstein_many(sus, min_tsep=tseps, fit_range=(0, 10), **P)
        t_batch = time.perf_counter() - t0
        t0 = time.perf_counter()
        one = [rosenstein(s, min_tsep=w, fit_range=(0, 10), **P) for s, w in zip(sus, tseps)]
        t_one = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = np.array([nolds.lyap_r(s, min_tsep=w, fit="poly", **P) for s, w in zip(sus, tseps)])
        t_ref = time.perf_counter() - t0
    e = np.array([np.nan if d.exponent is None else d.exponent for d in ours])
    e1 = np.array([np.nan if d.exponent is None else d.exponent for d in one])
    ok = np.isfinite(e) & np.isfinite(ref)
    print(f"Rosenstein vs nolds.lyap_r on {len(sus)} sustained traces (emb_dim 3, lag 1, trajectory 10, "
          f"Theiler window = mean period, full-range linear fit):")
    print(f"  nolds {1e3 * t_ref / len(sus):.3f} ms/trace; ours batched {1e3 * t_batch / len(sus):.3f} ms/trace "
          f"(speed-up x{t_ref / t_batch:.1f}), ours one at a time {1e3 * t_one / len(sus):.3f} ms/trace "
          f"(x{t_ref / t_one:.1f})")
    print(f"  same exponents: correlation {np.corrcoef(e[ok], ref[ok])[0, 1]:.6f}, max |diff| "
          f"{np.max(np.abs(e[ok] - ref[ok])):.1e} (nolds computes in float32); batched = one at a time: "
          f"{np.array_equal(e, e1, equal_nan=True)}")
    auto = rosenstein_many(sus, min_tsep=tseps, **P)
    a = np.array([np.nan if d.exponent is None else d.exponent for d in auto])
    print(f"  our default fit (beyond the noise floor): median {np.nanmedian(a):+.3f}, IQR {iqr(a):.3f}; "
          f"nolds full range from k = 0: median {np.nanmedian(ref):+.3f}, IQR {iqr(ref):.3f} per step")
    t0 = time.perf_counter()
    tests = lyapunov_tests(sus, n_surrogates=19, seed=1)
    dt = time.perf_counter() - t0
    p = np.array([np.nan if t.p_value is None else t.p_value for t in tests])
    print(f"surrogate test of the exponent (19 IAAFT surrogates): {1e3 * dt / len(sus):.2f} ms/trace "
          f"(x{dt / t_batch:.0f} the exponent alone); {np.mean(p <= 0.05):.0%} of {len(sus)} traces beat their "
          f"surrogates at 5 % (the synthetic traces are periodic sawtooth plus noise); whole store: "
          f"≈ {dt / len(sus) * 23100:.0f} s")


def bench_report(reps: int) -> None:
    """Report of a 6,300-run synthetic store (tests/synthetic_store.py), with and without the surrogate
    tests (the baseline: the report before they were added)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import synthetic_store
    from tcpprofile.report import build_report
    from tcpprofile.report import dynamics as report_dynamics
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.duckdb"
        with Store.open(path) as s:
            n, _ = timed("build the synthetic store", lambda: synthetic_store.build(
                s, variants=("cubic", "htcp", "scalable", "reno", "bbr"), streams=(1, 4, 8),
                buffers=(None, 256 << 20), rtts=(0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0), reps=reps,
                with_intervals=True, with_cwnd=True))
        print(f"  {n} runs, 2 traced repetitions per configuration")
        with Store.open(path, read_only=True) as s:
            saved = report_dynamics.SURROGATES

            def report(surrogates: int, name: str):
                report_dynamics.SURROGATES = surrogates
                try:
                    return build_report(s, Path(tmp) / name)
                finally:
                    report_dynamics.SURROGATES = saved
            # the first report pays one-off costs (imports, font cache, the store's pages): untimed warm-up
            timed(f"report, {n} runs (warm-up, not counted)", lambda: report(0, "warm"))
            _, t_new = timed(f"report, {n} runs (surrogate p-values on)", lambda: report(saved, "r1"))
            _, t_old = timed(f"report, {n} runs (surrogates off)", lambda: report(0, "r0"))
        print(f"  report: {t_new:.1f} s (target ≤ 10 s); the surrogate tests cost {t_new - t_old:+.1f} s "
              f"(x{t_new / t_old:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="2 variants × 3 streams (quick check)")
    ap.add_argument("--nolds-traces", type=int, default=200)
    ap.add_argument("--baseline-traces", type=int, default=1000, help="traces for the previous dynamics")
    ap.add_argument("--baseline-profiles", type=int, default=30, help="profiles for the previous τ_T")
    ap.add_argument("--no-report", action="store_true", help="skip the 6,300-run report")
    args = ap.parse_args()
    variants, streams = (2, 3) if args.small else (11, 10)
    store = Store.open(":memory:")
    print(f"synthetic store: {variants} V × {streams} n × 3 B × 7 τ × 10 reps × 100 intervals")
    rows, _ = timed("build (bulk insert)", lambda: build(store, variants, streams, 10, 100))
    print(f"  {rows} interval rows")
    total = 0.0
    profiles, dt = timed("profiles (BCa, 2000 resamples)", lambda: profiles_from_store(store, seed=1))
    total += dt
    _, dt = timed(f"regions ({len(profiles)} profiles)", lambda: [regions_of(p) for p in profiles])
    total += dt
    trans, dt = timed("transition τ_T (200 bootstrap refits each)", lambda: transitions_from_store(store, seed=1))
    total += dt
    dyn, dt = timed("dynamics of every run (no surrogates)", lambda: dynamics_from_store(store, seed=1))
    total += dt
    print(f"  end-to-end analysis: {total:.1f} s (target ≤ 30 s) for {len(profiles)} profiles, {len(trans)} τ_T, "
          f"{len(dyn)} traces ({1e3 * dt / max(1, len(dyn)):.2f} ms per trace dynamics)")
    print("baselines measured now, on subsets:")
    bench_tau_T(store, args.baseline_profiles)
    bench_dynamics(store, args.baseline_traces)
    bench_rosenstein(store, args.nolds_traces)
    if not args.no_report:
        bench_report(3 if args.small else 30)


if __name__ == "__main__":
    main()
