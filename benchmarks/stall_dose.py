"""What a stall costs: a dose-response of injected delay-engine stalls (issue 33, item 1).

On an emulated link where the engines keep up without natural stalls (1 and 3 Gbit/s, τ = 20 ms,
β = BDP, MTU 9000 with offloads: few packets per second), the forward engine is made to hold every
release for D ∈ {1, 3, 10, 30, 100} ms every P = 2 s (LinkConfig.stall_inject, delayd.c "Stall
injection"), and one CUBIC stream runs fixed-size transfers (N = C·10 s / 8 bytes, timed by their
delivery) and 10 s duration runs, k repetitions of each dose and of no injection, interleaved in a
seeded random order on one link per rate (the holds are switched between runs: EmulatedLink.set_stall_inject).
Each run goes through the campaign's own run path (executor.run_one: iperf3, the fidelity monitor,
the kernel cwnd trace), so Θ and every column are what a campaign would store.

Per cell (rate, mode, D) it prints: runs, mean Θ, ΔΘ (% against no injection) with a 95 % Welch t
interval (≥ 3 runs each side; clipped to what Θ can be: ≥ 0 and ≤ the goodput ceiling), retransmits,
the largest RTT iperf3 saw (max_rtt), the cwnd trace's largest srtt, slow-start exit (first ssthresh
below the initial one: s and cwnd), the cwnd trace's Poincaré spread and Lyapunov exponent (its
sustainment phase, 0.1 s bins; analysis.dynamics), injected holds, the engines' observed Σ excess
stall time, the part of it the bottleneck's queue did not cover (delayd.c "Uncovered excess") and
stall_effect_bound (amplification 1, from the uncovered excess). Then, per rate and mode, the run-to-run
resolution (CoV of Θ without injection) and the amplification: ΔΘ against the bound, fitted through
the origin over the injected runs (−(Θ/Θ̄₀ − 1) = a · bound): the value for
fidelity.thresholds.Thresholds.stall_amplification. A cell whose interval holds 0, or whose |ΔΘ| is below the
resolution, is marked "within resolution".

Needs root: without it (or the testbed's tools) it exits 2, having measured nothing. Run it alone on
the host (the measurement is the host's CPU): the full design is 2 rates × 2 modes × 6 doses × k = 5
= 120 runs of ~10-12 s plus two link set-ups: ~30 min; --quick (1 Gbit/s, D ∈ {10, 100} ms, k = 3,
both modes: 18 runs) ~5 min.
    .venv/bin/python benchmarks/stall_dose.py [--quick] [--rates 1,3] [--holds 1,3,10,30,100]
        [--every 2s] [--direction forward] [--reps 5] [--seconds 10] [--seed 33] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import secrets
import sys
from dataclasses import dataclass

import numpy as np

from tcpprofile.choose.decide import MIN_INTERVAL_RUNS, difference, mean_of

RTT = "20ms"
QUICK = {"rates": "1", "holds": "10,100", "reps": 3}
SSTHRESH_INITIAL = 1 << 30       # the kernel starts ssthresh at TCP_INFINITE_SSTHRESH (0x7fffffff)
BIN_S = 0.1                      # cwnd resampled to 0.1 s bins for the dynamics statistics


@dataclass
class Record:
    """One run: its cell (rate [bit/s], mode 'size' | 'duration', hold [ms], 0 = none) and what it measured."""
    rate_bps: float
    mode: str
    hold_ms: float
    theta_bps: float
    retransmits: int | None = None
    max_rtt_ms: float | None = None
    srtt_max_ms: float | None = None
    ss_exit_s: float | None = None
    ss_exit_cwnd: int | None = None
    poincare_spread: float | None = None
    lyapunov: float | None = None
    holds: int | None = None
    excess_ms: float | None = None
    bound: float | None = None
    ceiling_bps: float | None = None
    flags: str | None = None
    uncovered_ms: float | None = None    # the part of the excess the bottleneck's queue did not cover


# -- analysis (pure: tests/test_stall_dose.py) ------------------------------------------------------------
def welch_rel(x, y, level: float = 0.95) -> tuple[float, float, float] | None:
    """(Δ, low, high) of mean(x) − mean(y) as a share of mean(y), Welch's t interval (the baseline mean y
    is taken as known: its own spread is in the interval's variance); None with fewer than
    MIN_INTERVAL_RUNS runs on either side."""
    if len(x) < MIN_INTERVAL_RUNS or len(y) < MIN_INTERVAL_RUNS:
        return None
    d = difference(mean_of(x), mean_of(y))           # Welch: decide's difference of independent means
    lo, hi = d.interval(level)
    m0 = float(np.mean(y))
    return d.value / m0, lo / m0, hi / m0


def clipped(interval, mean0: float, ceiling: float | None):
    """An interval of Θ's relative change kept within what Θ can be: Θ ≥ 0 (≥ −1) and Θ ≤ the ceiling."""
    d, lo, hi = interval
    top = ceiling / mean0 - 1 if ceiling else math.inf
    return d, max(lo, -1.0), min(hi, top)


def cv(values) -> float | None:
    """Coefficient of variation (sample sd / mean); None with fewer than MIN_INTERVAL_RUNS values."""
    v = np.asarray(values, float)
    return float(v.std(ddof=1) / v.mean()) if v.size >= MIN_INTERVAL_RUNS and v.mean() > 0 else None


def amplification(records: list[Record]) -> float | None:
    """Least squares through the origin of Θ's relative drop (against the cell's no-injection mean) on the
    run's stall_effect_bound (amplification 1) over the injected runs of one rate and mode: a = Σxy / Σx².
    None without a baseline of MIN_INTERVAL_RUNS runs or any injected run with a bound > 0."""
    base = [r.theta_bps for r in records if r.hold_ms == 0]
    if len(base) < MIN_INTERVAL_RUNS:
        return None
    m0 = float(np.mean(base))
    pts = [(r.bound, 1 - r.theta_bps / m0) for r in records if r.hold_ms > 0 and r.bound]
    sxx = sum(x * x for x, _ in pts)
    return sum(x * y for x, y in pts) / sxx if sxx > 0 else None


def _mean(values) -> float | None:
    v = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(v)) if v else None


def summarise(records: list[Record]) -> list[dict]:
    """One row per cell (rate, mode, hold), in that order; ΔΘ against the same rate and mode without injection."""
    rows = []
    for rate, mode in sorted({(r.rate_bps, r.mode) for r in records}):
        cell_runs = [r for r in records if (r.rate_bps, r.mode) == (rate, mode)]
        base = [r.theta_bps for r in cell_runs if r.hold_ms == 0]
        resolution = cv(base)
        for hold in sorted({r.hold_ms for r in cell_runs}):
            runs = [r for r in cell_runs if r.hold_ms == hold]
            theta = [r.theta_bps for r in runs]
            row = {"rate_gbit": rate / 1e9, "mode": mode, "hold_ms": hold, "n": len(runs),
                   "theta_gbit": float(np.mean(theta)) / 1e9, "delta": None, "low": None, "high": None,
                   "within_resolution": None, "resolution": resolution}
            if hold > 0:
                iv = welch_rel(theta, base)
                if iv is not None:
                    d, lo, hi = clipped(iv, float(np.mean(base)), _mean(r.ceiling_bps for r in runs))
                    row.update(delta=d, low=lo, high=hi,
                               within_resolution=lo <= 0 <= hi or (resolution is not None and abs(d) < resolution))
            for key in ("retransmits", "max_rtt_ms", "srtt_max_ms", "ss_exit_s", "ss_exit_cwnd", "poincare_spread",
                        "lyapunov", "holds", "excess_ms", "uncovered_ms", "bound"):
                row[key] = _mean(getattr(r, key) for r in runs)
            row["amplification"] = amplification(cell_runs) if hold == 0 else None
            rows.append(row)
    return rows


def _fmt(x, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


def _measures(r: dict) -> str:
    """The columns after ΔΘ, alike for every row."""
    return (f"{_fmt(r['retransmits'], '6.0f'):>6} {_fmt(r['max_rtt_ms'], '7.2f'):>7} {_fmt(r['srtt_max_ms'], '7.2f'):>7} "
            f"{_fmt(r['ss_exit_s'], '.2f') + '/' + _fmt(r['ss_exit_cwnd'], '.0f'):>15} "
            f"{_fmt(r['poincare_spread'], '7.3f'):>7} {_fmt(r['lyapunov'], '7.3f'):>7} {_fmt(r['holds'], '5.1f'):>5} "
            f"{_fmt(r['excess_ms'], '10.2f'):>10} {_fmt(r['uncovered_ms'], '9.2f'):>9} "
            f"{_fmt(r['bound'] and 100 * r['bound'], '8.3f'):>8}")


def print_table(rows: list[dict]) -> None:
    print(f"{'Gbit':>4} {'mode':>8} {'D ms':>5} {'n':>2} {'Θ Gbit/s':>8} {'ΔΘ % [95 %]':>24} {'retr':>6} "
          f"{'maxRTT':>7} {'srtt⁺':>7} {'SS exit s/cwnd':>15} {'Poinc.':>7} {'λ':>7} {'holds':>5} "
          f"{'Σexcess ms':>10} {'Σuncov ms':>9} {'bound %':>8}")
    for r in rows:
        if r["hold_ms"] == 0:
            res = _fmt(r["resolution"] and 100 * r["resolution"], ".3f")
            print(f"{r['rate_gbit']:>4g} {r['mode']:>8} {'none':>5} {r['n']:>2} {r['theta_gbit']:>8.3f} "
                  f"{'resolution (CoV) ' + res + ' %':>24} {_measures(r)}   amplification "
                  f"{_fmt(r['amplification'], '.2f')}")
            continue
        if r["delta"] is None:
            delta = "n < 3: no interval"
        else:
            delta = f"{100 * r['delta']:+.3f} [{100 * r['low']:+.3f}, {100 * r['high']:+.3f}]"
            delta += " ~" if r["within_resolution"] else ""
        print(f"{'':>4} {'':>8} {r['hold_ms']:>5g} {r['n']:>2} {r['theta_gbit']:>8.3f} {delta:>24} {_measures(r)}")
    print("~: within the instrument's resolution (the interval holds 0, or |ΔΘ| < the CoV without injection)")


# -- one run's measures from what the campaign path returned ------------------------------------------------
def max_rtt_ms(raw_json: str | None) -> float | None:
    """The largest RTT iperf3's sender saw [ms] (end.streams[].sender.max_rtt, µs: tcp_info samples)."""
    if not raw_json:
        return None
    streams = json.loads(raw_json).get("end", {}).get("streams", [])
    rtts = [s.get("sender", {}).get("max_rtt") for s in streams]
    rtts = [r for r in rtts if r is not None]
    return max(rtts) / 1e3 if rtts else None


def cwnd_measures(rows: list[dict]) -> dict:
    """From the kernel cwnd trace (stream 0): largest srtt [ms], slow-start exit (first ssthresh below the
    initial one: time [s], cwnd [packets]), and the Poincaré spread and Lyapunov exponent of cwnd in
    BIN_S bins over its sustainment phase (analysis.dynamics.trace_dynamics)."""
    rows = [r for r in rows if r["stream"] == 0]
    if not rows:
        return {}
    from tcpprofile.analysis.dynamics import trace_dynamics
    out = {"srtt_max_ms": max(r["srtt_us"] for r in rows) / 1e3}
    exit_row = next((r for r in rows if r["ssthresh"] < SSTHRESH_INITIAL), None)
    if exit_row is not None:
        out.update(ss_exit_s=exit_row["t_s"], ss_exit_cwnd=exit_row["snd_cwnd"])
    t = np.array([r["t_s"] for r in rows])
    w = np.array([r["snd_cwnd"] for r in rows], float)
    bins = np.floor((t - t[0]) / BIN_S).astype(int)
    counts = np.bincount(bins)
    series = np.bincount(bins, weights=w)[counts > 0] / counts[counts > 0]
    dyn = trace_dynamics(series)
    out.update(poincare_spread=dyn.poincare_spread if math.isfinite(dyn.poincare_spread) else None,
               lyapunov=dyn.lyapunov)
    return out


# -- measuring --------------------------------------------------------------------------------------------
def measure(args) -> list[Record]:
    from tcpprofile.campaign.environments import CongestionControl, emulated
    from tcpprofile.campaign.executor import LinkSession, RunDone, Settings, host_meta, run_one
    from tcpprofile.spec import LinkPoint, Loss, RunPoint
    from tcpprofile.testbed.inject import StallInject

    rng = random.Random(args.seed)
    settings = Settings(f"stall-dose-{secrets.token_hex(3)}", retries=0, trace_cwnd=True, variants=("cubic",))
    holds = [0.0] + [float(h) for h in args.holds.split(",")]
    records: list[Record] = []
    with CongestionControl(("cubic",)) as congestion:
        meta = host_meta()
        for rate in (float(r) * 1e9 for r in args.rates.split(",")):
            rtt_s = 0.020
            bdp = int(rate * rtt_s / 8)
            point = LinkPoint("emulated", rate, rtt_s, bdp, "BDP", Loss("none", 0.0), 9000)
            session = LinkSession(settings, emulated, point)
            try:
                for _ in session.up():
                    pass
                link = session.env.host
                ceiling = link.config.goodput_ceiling_bps
                size = int(rate * args.seconds / 8)
                order = [(mode, hold, rep) for mode in ("size", "duration") for hold in holds
                         for rep in range(args.reps)]
                rng.shuffle(order)
                for seq, (mode, hold, rep) in enumerate(order):
                    inject = StallInject(hold / 1e3, args.every_s, args.direction) if hold else None
                    link.set_stall_inject(inject)
                    p = RunPoint(point, "cubic", 1, None, size if mode == "size" else None,
                                 args.seconds if mode == "duration" else None, False, rep)
                    done = [e for e in run_one(settings, session, seq, p, congestion, meta) if isinstance(e, RunDone)]
                    row = done[-1].row
                    if row["status"] != "ok":
                        print(f"  run failed ({mode}, D {hold:g} ms): {row['failure_reason']}", file=sys.stderr)
                        continue
                    excess = [row.get(f"engine_{d}_stall_excess_ms") for d in ("fwd", "rev")]
                    uncovered = [row.get(f"engine_{d}_stall_uncovered_ms") for d in ("fwd", "rev")]
                    injected = [row.get(f"engine_{d}_stall_injected_holds") for d in ("fwd", "rev")]
                    rec = Record(rate, mode, hold, row["throughput_bps"], retransmits=row.get("retransmits"),
                                 max_rtt_ms=max_rtt_ms(row.get("raw_json")),
                                 holds=sum(h for h in injected if h is not None),
                                 excess_ms=sum(e for e in excess if e is not None),
                                 bound=row.get("stall_effect_bound"), ceiling_bps=ceiling, flags=row.get("flags"),
                                 uncovered_ms=None if None in uncovered else sum(uncovered),
                                 **cwnd_measures(done[-1].cwnd))
                    records.append(rec)
                    print(f"  {seq + 1}/{len(order)} {rate / 1e9:g} Gbit/s {mode} D {hold:g} ms: "
                          f"{rec.theta_bps / 1e9:.3f} Gbit/s, holds {rec.holds}, Σexcess {rec.excess_ms:.1f} ms "
                          f"(uncovered {_fmt(rec.uncovered_ms, '.1f')}), bound {_fmt(rec.bound and 100 * rec.bound, '.3f')} %, "
                          f"flags {rec.flags or '-'}", flush=True)
            finally:
                session.close()
    return records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 Gbit/s, D 10 and 100 ms, 3 repetitions (~5 min)")
    ap.add_argument("--rates", default="1,3", help="Gbit/s, comma-separated")
    ap.add_argument("--holds", default="1,3,10,30,100", help="hold D [ms], comma-separated (0 is always run)")
    ap.add_argument("--every", default="2s", help="period P of the holds (a duration with its unit)")
    ap.add_argument("--direction", default="forward", choices=("forward", "reverse", "both"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10, help="duration runs' -t, and N = C·seconds/8 bytes")
    ap.add_argument("--seed", type=int, default=33, help="the interleaved order's seed")
    ap.add_argument("--csv", help="write every run's record here")
    args = ap.parse_args()
    if args.quick:
        args.rates, args.holds, args.reps = QUICK["rates"], QUICK["holds"], QUICK["reps"]
    from tcpprofile import units
    args.every_s = units.seconds("--every", args.every, units.POSITIVE)
    if os.geteuid() != 0:
        print("stall_dose: FAILED: needs root (network namespaces); nothing was measured", file=sys.stderr)
        return 2
    print(f"stall dose-response: {args.rates} Gbit/s, τ {RTT}, β = BDP, MTU 9000, CUBIC n = 1, holds "
          f"{args.holds} ms every {args.every} {args.direction}, {args.reps} repetitions, seed {args.seed}; "
          f"load average before: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    records = measure(args)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(Record.__dataclass_fields__))
            w.writeheader()
            for r in records:
                w.writerow(r.__dict__)
    print_table(summarise(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
