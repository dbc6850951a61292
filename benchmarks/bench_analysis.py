"""Benchmark: end-to-end analysis of a paper-size synthetic store, and Rosenstein vs nolds.lyap_r.

Store: 11 variants × 10 streams × 3 socket buffers × 7 RTTs × 10 repetitions = 23 100 runs, each with a
100-interval aggregate 1 s trace (2.31 M interval rows; per-stream rows are not generated), written
with the bulk path (Store.insert_columns). Traces: slow-start ramp-up to a level that
follows a concave-then-convex profile, then a noisy AIMD-like sawtooth.

Prints the time of each analysis step, then our Rosenstein estimator against nolds.lyap_r on the same
N sustained traces with the same settings (per-trace time ratio, and the correlation of the
exponents). Run: .venv/bin/python benchmarks/bench_analysis.py [--small] [--nolds-traces N]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from tcpprofile.analysis import (dynamics_from_store, load_traces, lyap_rosenstein, profiles_from_store,
                                 ramp_up, regions_of, surrogate_test, transitions_from_store)
from tcpprofile.analysis.lyapunov import mean_period
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
    print(f"  {label:<46s} {dt:8.2f} s")
    return out, dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="2 variants × 3 streams (quick check)")
    ap.add_argument("--nolds-traces", type=int, default=200)
    args = ap.parse_args()
    variants, streams = (2, 3) if args.small else (11, 10)
    store = Store.open(":memory:")
    print(f"synthetic store: {variants} V × {streams} n × 3 B × 7 τ × 10 reps × 100 intervals")
    rows, t_build = timed("build (bulk insert)", lambda: build(store, variants, streams, 10, 100))
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
    print(f"  end-to-end analysis: {total:.1f} s for {len(profiles)} profiles, {len(trans)} τ_T, "
          f"{len(dyn)} traces ({1e3 * dt / max(1, len(dyn)):.2f} ms per trace dynamics)")

    n = args.nolds_traces
    traces = load_traces(store)
    keys = sorted(traces)[:: max(1, len(traces) // n)][:n]
    sus = [traces[k].bps[ramp_up(traces[k].bps).index:] for k in keys]
    params = [dict(emb_dim=3, lag=1, min_tsep=max(1, min(int(round(mean_period(s))), s.size // 4)),
                   trajectory_len=10) for s in sus]
    t0 = time.perf_counter()
    ours = np.array([lyap_rosenstein(s, **p, fit_range=(0, 10)) for s, p in zip(sus, params)])
    t_ours = time.perf_counter() - t0
    import nolds  # dev dependency, the baseline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        ref = np.array([nolds.lyap_r(s, **p, fit="poly") for s, p in zip(sus, params)])
        t_ref = time.perf_counter() - t0
    ok = np.isfinite(ours) & np.isfinite(ref)
    r = np.corrcoef(ours[ok], ref[ok])[0, 1]
    print(f"Rosenstein on {len(sus)} sustained traces (emb_dim 3, lag 1, trajectory 10, linear fit):")
    print(f"  ours {1e3 * t_ours / len(sus):.3f} ms/trace, nolds {1e3 * t_ref / len(sus):.3f} ms/trace, "
          f"speed-up x{t_ref / t_ours:.1f}")
    print(f"  exponents: correlation {r:.6f}, max |diff| {np.max(np.abs(ours[ok] - ref[ok])):.2e}")
    auto = np.array([lyap_rosenstein(s, **p) for s, p in zip(sus, params)])
    ok2 = ok & np.isfinite(auto)
    print(f"  our default (automatic linear region) vs nolds full-range fit: "
          f"correlation {np.corrcoef(auto[ok2], ref[ok2])[0, 1]:.3f}")
    m = min(50, len(sus))
    t0 = time.perf_counter()
    pvals = [surrogate_test(s, n_surrogates=39, seed=i).p_value for i, s in enumerate(sus[:m])]
    dt = time.perf_counter() - t0
    print(f"surrogate test (39 IAAFT surrogates): {1e3 * dt / m:.1f} ms/trace; "
          f"{np.mean(np.array(pvals) <= 0.05):.0%} of {m} traces distinguishable from noise at 5%")


if __name__ == "__main__":
    main()
