"""The CPU plans against each other on the host it runs on (issue 33 item 6; docs/testbed.md, "CPU plan").

For each τ, runs alternate between the plans (two-core first, then four-core, repeated --reps times, each
run on its own freshly set-up and calibrated link): one iperf3 transfer (CUBIC, --streams n, --seconds s,
per packet: offloads off, MTU 9000, β = max(BDP, 4 MB), no loss) and, over exactly that transfer, each
delay engine's release lateness (delayd's period histogram: 99th and 99.9th percentile, upper bucket
edges, so at most 25 % above the true value; the largest release), its stall episodes and their summed
excess (delayd.c, "Stall episodes"), the four-core plan's verdict hand-off lag (99th percentile over the
transfer; the largest since the engine started, its calibration included: "Verdict thread"), the last
half's Gbit/s, and each CPU's busy share (/proc/stat). Printed per run, then per plan the median over
runs and the ratio of the four-core plan's median to the two-core plan's, both measured in this process
on this host.

On fewer than 4 CPUs the four-core plan is folded onto the CPUs there are (testbed/cpuplan.py): its
numbers then say nothing of a >= 4-core host, and the benchmark says so. Not measured on a >= 4-core
host yet.

Needs root: without it (or without the testbed's tools) it exits 2, because it measured nothing.
    .venv/bin/python benchmarks/bench_cpu_plan.py [--rtts 11.8,45.6] [--rate 10Gbit] [--streams 1]
        [--seconds 20] [--reps 3] [--plans two-core,four-core]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from tcpprofile.errors import TcpProfileError, ValidationError
from tcpprofile.testbed import EmulatedLink, LinkConfig, cpuplan
from tcpprofile.testbed.engine import late_quantile_ns

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_link import throughput  # noqa: E402  (beside this file: last-half Gbit/s from iperf3 -J)

PORT = 5201
MTU = 9000
BUFFER_MIN = 4_000_000
DIRECTIONS = ("forward", "reverse")


def cpu_times() -> dict[int, tuple[int, int]]:
    """Per CPU (busy, total) jiffies from /proc/stat (busy: all but idle and iowait)."""
    out = {}
    for line in open("/proc/stat").read().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            v = [int(x) for x in fields[:8]]
            out[int(name[3:])] = (sum(v) - v[3] - v[4], sum(v))
    return out


def busy_shares(before: dict, after: dict) -> dict[int, float]:
    return {c: (after[c][0] - before[c][0]) / max(after[c][1] - before[c][1], 1) for c in after if c in before}


def one_run(plan: str, rtt_ms: float, rate_bps: float, streams: int, seconds: int) -> dict:
    buffer = max(int(rate_bps * rtt_ms / 1e3 / 8), BUFFER_MIN)
    cfg = LinkConfig.checked(rate_bps=rate_bps, rtt_s=rtt_ms / 1e3, buffer_bytes=buffer, mtu=MTU, offloads="off",
                             cpu_plan=plan)
    with EmulatedLink(cfg) as link:
        server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(PORT)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", PORT)
        start = link.engine_stats(period=True)          # the period from here is the transfer
        cpus0 = cpu_times()
        out = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(PORT), "-J", "-C", "cubic",
                                  "-P", str(streams), "-t", str(seconds)], timeout=seconds + 60).stdout
        cpus1 = cpu_times()
        end = link.engine_stats(period=True)
        link.stop_process(server)
        row = {"plan": plan, "layout": link.plan.describe(), "tau_ms": rtt_ms, "streams": streams,
               "gbps_last_half": throughput(json.loads(out))[1],
               "cpu_busy": {str(c): round(b, 3) for c, b in sorted(busy_shares(cpus0, cpus1).items())}}
        for d in DIRECTIONS:
            s, e = start[d], end[d]
            lag_hist = [b - a for a, b in zip(s.verdict_lag_hist or (), e.verdict_lag_hist or ())]
            row[d] = {"late_p99_us": (late_quantile_ns(e.period_late_hist, 0.99) or 0) / 1e3,
                      "late_p999_us": (late_quantile_ns(e.period_late_hist, 0.999) or 0) / 1e3,
                      "late_max_ms": e.period_late_max_ns / 1e6,
                      "episodes": e.late_episodes - s.late_episodes,
                      "excess_ms": (e.late_excess_ns - s.late_excess_ns) / 1e6,
                      "lag_p99_us": (late_quantile_ns(lag_hist, 0.99) or 0) / 1e3 if any(lag_hist) else None,
                      "lag_max_ms": e.verdict_lag_max_ns / 1e6 if e.verdict_cpu not in (None, -1) else None}
    return row


def summary(rows: list[dict], plans: list[str]) -> None:
    """Medians per plan over its runs and the ratio of each plan's median to the two-core plan's."""
    keys = [("gbps_last_half", None)] + [(k, d) for d in DIRECTIONS
                                         for k in ("late_p99_us", "late_p999_us", "late_max_ms", "episodes",
                                                   "excess_ms")]
    med = {}
    for plan in plans:
        mine = [r for r in rows if r["plan"] == plan]
        med[plan] = {(k, d): statistics.median(r[k] if d is None else r[d][k] for r in mine) for k, d in keys}
    base = "two-core"
    print(f"\n{'quantity':28s} " + " ".join(f"{p:>12s}" for p in plans) + "   ratio to " + base)
    for k, d in keys:
        name = k if d is None else f"{d[:3]} {k}"
        vals = " ".join(f"{med[p][(k, d)]:12.3f}" for p in plans)
        ratios = " ".join(f"{med[p][(k, d)] / med[base][(k, d)]:.2f}" if med[base][(k, d)] else "n/a"
                          for p in plans[1:])
        print(f"{name:28s} {vals}   {ratios}")
    for plan in plans:                   # the verdict threads' hand-off (plans with them only)
        for d in DIRECTIONS:
            lags = [(r[d]["lag_p99_us"], r[d]["lag_max_ms"]) for r in rows if r["plan"] == plan
                    and r[d]["lag_max_ms"] is not None]
            if lags:
                p99 = statistics.median(a or 0 for a, _ in lags)
                print(f"{plan} {d[:3]} verdict hand-off: p99 median {p99:.1f} us, "
                      f"largest {max(b for _, b in lags):.3f} ms over {len(lags)} runs")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtts", default="11.8,45.6", help="τ values [ms], comma-separated")
    ap.add_argument("--rate", default="10Gbit")
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3, help="runs per plan and τ (medians; >= 3 for a spread)")
    ap.add_argument("--plans", default="two-core,four-core")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_cpu_plan: FAILED: needs root (network namespaces); nothing was measured", file=sys.stderr)
        return 2
    try:
        plans = [cpuplan.checked(p, "--plans") for p in args.plans.split(",")]
        if plans[0] != "two-core":
            raise ValidationError("--plans", f"must start with two-core (the ratios' base), got {args.plans!r}")
    except ValidationError as err:
        print(f"bench_cpu_plan: FAILED: {err}", file=sys.stderr)
        return 2
    n = len(os.sched_getaffinity(0))
    print(f"host: {n} usable CPUs; auto would choose {cpuplan.resolve('auto', n)}")
    if n < cpuplan.FOUR_CORE_MIN:
        print(f"NOTE: fewer than {cpuplan.FOUR_CORE_MIN} CPUs: the four-core plan is folded onto them; its "
              "numbers here are a correctness run, not its timing on a >= 4-core host")
    from tcpprofile.units import rate_bps
    rate = rate_bps("--rate", args.rate)
    rows = []
    try:
        for tau in (float(t) for t in args.rtts.split(",")):
            for rep in range(args.reps):
                for plan in plans:       # alternating: a drift of the host's load reaches every plan alike
                    row = one_run(plan, tau, rate, args.streams, args.seconds)
                    rows.append(row)
                    print(json.dumps({"rep": rep, **row}), flush=True)
            summary([r for r in rows if r["tau_ms"] == tau], plans)
    except TcpProfileError as err:
        print(f"bench_cpu_plan: FAILED: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
