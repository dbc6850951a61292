"""The emulated 10 Gbit/s link against its targets and against raw veth, both packet modes, one run.

For each mode — per packet (offloads off, MTU 9000: what every lossy link uses) and offloads on
(MTU 9000, GSO/BIG TCP) — and tau in {0.4, 11.8, 45.6, 91.6, 183, 366} ms: one CUBIC stream's
sustained throughput (last half of the run, iperf3 -J intervals) as a ratio to 10 Gbit/s and to a raw
veth pair in the same mode measured in this same process; the idle RTT by an independent `ping -U`
(not the calibration's own figure) and the smallest RTT TCP saw under load (tcp_info min_rtt); each
delay engine's CPU share and lateness; the host's CPU busy share. Goals (issue 9): per packet >= 9.5
Gbit/s at 11.8-366 ms, >= 9.3 at 0.4 ms in both modes; idle RTT within max(1 %, 0.1 ms).

Issue 21: --loss periodic:N | uniform:P puts the engine's loss stage in place (per packet only; the
issue's runs use periodic:100000000, so that the link runs as every lossy study does), --streams 1,4,8
runs each configuration with n parallel streams, --buffer bdp sets beta = BDP (default max(BDP, 4 MB)).
Each run prints the release lateness per direction: mean, 99th and 99.9th percentile (upper edges of
delayd's histogram buckets) and maximum, and what limited the sender (fidelity.limited_by from the
tcp_info chrono counters busy / rwnd_limited / sndbuf_limited and app_limited, sampled every second).

Needs root: without it (or without the testbed's tools) it exits 2, because it measured nothing.
    .venv/bin/python benchmarks/bench_link.py [--rtts 0.4,45.6] [--modes per-packet,offload] [--scale 1]
        [--loss periodic:100000000] [--streams 1,4,8] [--buffer bdp] [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

from tcpprofile import ping
from tcpprofile.fidelity import THRESHOLDS, HostSampler, limited_by, parse_ss, sender_limits
from tcpprofile.testbed import EmulatedLink, LinkConfig, netns
from tcpprofile.testbed.netns import process_cpu_seconds

RTTS_MS = (0.4, 11.8, 45.6, 91.6, 183.0, 366.0)
SECONDS = {0.4: 10, 11.8: 15, 45.6: 20, 91.6: 20, 183.0: 30, 366.0: 40}   # slow start ends by the last half
MODES = {"per-packet": "off", "offload": "on"}
RAW_SECONDS = 10
MTU = 9000
RATE = 10e9


def throughput(result: dict) -> tuple[float, float]:
    """(whole-run, last-half) receiver throughput [Gbit/s] from iperf3 -J output."""
    iv = [i["sum"] for i in result["intervals"]]
    end = iv[-1]["end"]
    half = [i for i in iv if i["start"] >= end / 2 - 1e-6]
    last = sum(i["bytes"] for i in half) * 8 / sum(i["seconds"] for i in half)
    return result["end"]["sum_received"]["bits_per_second"] / 1e9, last / 1e9


def raw_veth(offloads: str) -> float:
    """Last-half Gbit/s of one CUBIC stream over a plain veth pair (MTU 9000, offloads as asked)."""
    tag = secrets.token_hex(3)
    a, b = f"tcpp-b{tag}-a", f"tcpp-b{tag}-b"
    da, db = f"tcppb{tag}a", f"tcppb{tag}b"
    try:
        for ns in (a, b):
            netns.sh(["ip", "netns", "add", ns])
            netns.sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        netns.sh(["ip", "link", "add", da, "netns", a, "mtu", str(MTU), "type", "veth", "peer", "name", db,
                  "netns", b, "mtu", str(MTU)])
        for ns, dev, addr in ((a, da, "10.78.0.1"), (b, db, "10.78.0.2")):
            netns.sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            netns.sh(["ip", "-n", ns, "link", "set", dev, "up"])
        if offloads == "off":
            netns.sh(netns.in_ns(a, ["ethtool", "-K", da, "tso", "off", "gso", "off"]))
            netns.sh(netns.in_ns(b, ["ethtool", "-K", db, "gro", "off"]))
        server = subprocess.Popen(netns.in_ns(b, ["iperf3", "-s", "-1"]), stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not netns.sh(netns.in_ns(b, ["ss", "-Hltn", "sport = :5201"])).stdout.strip():
                if time.monotonic() > deadline:
                    raise RuntimeError("iperf3 server did not start")
                time.sleep(0.02)
            proc = subprocess.run(netns.in_ns(a, ["iperf3", "-c", "10.78.0.2", "-J", "-C", "cubic",
                                                  "-t", str(RAW_SECONDS)]), capture_output=True, text=True,
                                  timeout=120)
            return throughput(json.loads(proc.stdout))[1]
        finally:
            server.kill()
            server.wait()
    finally:
        for ns in (a, b):
            netns.sh(["ip", "netns", "del", ns], check=False)


def independent_ping_ms(link: EmulatedLink) -> float:
    """Idle RTT by ping -U (user-to-user: both delays included) through the link, average of 20."""
    out = link.run("sender", ["ping", "-U", "-n", "-q", "-c", "20", "-i", "0.05", link.receiver_addr],
                   timeout=60).stdout
    return ping.summary(out)["avg_ms"]


def sched_counters(pid: int) -> dict:
    """The scheduler's view of a process: /proc/PID/schedstat (ns on the CPU, ns runnable but waiting
    for it, time slices) and its context switches (/proc/PID/status)."""
    run_ns, wait_ns, slices = (int(x) for x in open(f"/proc/{pid}/schedstat").read().split())
    status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
    return {"run_ns": run_ns, "wait_ns": wait_ns, "slices": slices,
            "nvcsw": int(status["voluntary_ctxt_switches"]), "nivcsw": int(status["nonvoluntary_ctxt_switches"])}


def steal_ms(cpus) -> float:
    """Time the hypervisor ran something else on these (virtual) CPUs: /proc/stat steal [ms]."""
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    total = 0
    for line in open("/proc/stat").read().splitlines():
        name = line.split(maxsplit=1)[0]
        if name[3:].isdigit() and name.startswith("cpu") and int(name[3:]) in cpus:
            total += int(line.split()[8])
    return total * tick_ms


def emulated(rtt_ms: float, offloads: str, seconds: int, *, loss: tuple[str, float] = ("none", 0.0),
             streams: int = 1, buffer_bdp: bool = False, reverse_fifo: bool = True,
             forward_fifo: int = 0) -> dict:
    bdp = int(RATE * rtt_ms / 1e3 / 8)
    cfg = LinkConfig.checked(rate_bps=RATE, rtt_s=rtt_ms / 1e3, buffer_bytes=bdp if buffer_bdp else max(bdp, 4 << 20),
                             mtu=MTU, offloads=offloads, loss_mode=loss[0], loss_rate=loss[1])
    with EmulatedLink(cfg) as link:
        idle = independent_ping_ms(link)
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        if not reverse_fifo:      # experiment (issue 21, stalls): both engines in the fair class
            os.sched_setscheduler(pids["reverse"], os.SCHED_OTHER, os.sched_param(0))
        if forward_fifo:          # experiment: the forward engine real-time too, below the reverse one
            os.sched_setscheduler(pids["forward"], os.SCHED_FIFO, os.sched_param(forward_fifo))
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        sched0 = {k: sched_counters(p) for k, p in pids.items()}
        steal0 = steal_ms(link.engine_cpus)
        link.engine_stats(period=True)
        # iperf3's JSON goes to a file: -P 8 writes more than a pipe holds while we sample (it blocked)
        report = tempfile.TemporaryFile(mode="w+")
        proc = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", "cubic", "-t", str(seconds),
                                     "-P", str(streams)], stdout=report, stderr=subprocess.DEVNULL, text=True)
        t0 = time.monotonic()
        conns = []
        with HostSampler(cpus=link.app_cpus) as host:
            while proc.poll() is None:
                conns += parse_ss(link.run("sender", ["ss", "-tinH", "state", "established", "dport = :5201"],
                                           check=False, timeout=10).stdout)
                time.sleep(1.0)
            proc.wait()
        report.seek(0)
        out = report.read()
        loaded = [c.min_rtt_ms for c in conns if c.min_rtt_ms is not None]
        limits = sender_limits(conns)
        wall = time.monotonic() - t0
        cpu = {k: (process_cpu_seconds(p) - cpu0[k]) / wall for k, p in pids.items()}
        sched = {k: {c: v - sched0[k][c] for c, v in sched_counters(p).items()} for k, p in pids.items()}
        stats = link.engine_stats(period=True)
        link.stop_process(server)
        whole, last = throughput(json.loads(out))
        return {"whole": whole, "last": last, "cpu": cpu, "idle": idle, "loaded": min(loaded) if loaded else None,
                "cal_rate": link.calibration.rate_measured_bps / 1e9, "busy": host.result().busy_share,
                "late_mean": {k: s.late_mean_ns / 1e3 for k, s in stats.items()},
                "late_max": {k: s.period_late_max_ns / 1e3 for k, s in stats.items()},
                "late_p99": {k: (s.period_late_quantile_ns(0.99) or 0) / 1e3 for k, s in stats.items()},
                "late_p999": {k: (s.period_late_quantile_ns(0.999) or 0) / 1e3 for k, s in stats.items()},
                "drops": stats["forward"].bottleneck_drops, "loss_dropped": stats["forward"].loss_dropped,
                "app_busy": host.result().cpus_busy_share, "limits": limits,
                "limited_by": limited_by(limits, THRESHOLDS), "sched": sched, "wall": wall,
                "steal_ms": steal_ms(link.engine_cpus) - steal0,
                "stalls": {k: (s.period_stalls, s.period_stall_log) for k, s in stats.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtts", default=",".join(map(str, RTTS_MS)))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply run lengths")
    ap.add_argument("--seconds", type=int, help="every run this long (instead of per-tau lengths x scale)")
    ap.add_argument("--loss", default="none", help="none | periodic:N | uniform:P (per packet mode only)")
    ap.add_argument("--streams", default="1", help="comma-separated stream counts, e.g. 1,4,8")
    ap.add_argument("--buffer", choices=("4MB", "bdp"), default="4MB", help="beta: max(BDP, 4 MB) or BDP")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw veth reference")
    ap.add_argument("--forward-fifo", type=int, default=0, metavar="PRIO",
                    help="experiment: run the forward engine SCHED_FIFO PRIO (default: SCHED_OTHER)")
    ap.add_argument("--reverse-cfs", action="store_true",
                    help="experiment: run the reverse engine SCHED_OTHER like the forward one (default FIFO 10)")
    args = ap.parse_args()
    loss = ("none", 0.0)
    if args.loss != "none":
        kind, _, value = args.loss.partition(":")
        if kind not in ("periodic", "uniform") or not value:
            ap.error("--loss: none, periodic:N or uniform:P")
        loss = (kind, 1 / float(value) if kind == "periodic" else float(value))
    streams = [int(x) for x in args.streams.split(",")]
    if os.geteuid() != 0:
        print("bench_link: FAILED: needs root (network namespaces); nothing was measured", file=sys.stderr)
        return 2
    rtts = [float(x) for x in args.rtts.split(",")]
    modes = args.modes.split(",")
    if loss[0] != "none" and "offload" in modes:
        ap.error("--loss needs --modes per-packet (loss acts per wire packet)")
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    for mode in modes:
        raw = float("nan") if args.no_raw else raw_veth(MODES[mode])
        print(f"\n{mode} (MTU {MTU}, offloads {MODES[mode]}, loss {args.loss}, buffer {args.buffer}, reverse engine "
              f"{'SCHED_OTHER' if args.reverse_cfs else 'SCHED_FIFO'}, forward "
              f"{f'SCHED_FIFO {args.forward_fifo}' if args.forward_fifo else 'SCHED_OTHER'}): raw veth, "
              f"1 cubic stream, {RAW_SECONDS} s: {raw:.2f} Gbit/s (last half)")
        print(f"{'tau ms':>7} {'n':>2} {'ping -U':>8} {'minrtt':>8} {'whole':>6} {'last½':>6} {'÷10G':>5} "
              f"{'÷raw':>5} {'cal':>5} {'fwd cpu':>7} {'rev cpu':>7} {'fwd late µs mean/p99/p99.9/max':>32} "
              f"{'rev late µs mean/p99/p99.9/max':>32} {'drops':>6} {'lost':>5} {'busy':>5} {'app':>5} "
              f"{'limited by (rwnd/sndbuf % of busy, app_limited share)':>40}")
        for rtt in rtts:
            for n in streams:
                seconds = args.seconds or max(5, int(SECONDS.get(rtt, 20) * args.scale))
                r = emulated(rtt, MODES[mode], seconds, loss=loss, streams=n, buffer_bdp=args.buffer == "bdp",
                             reverse_fifo=not args.reverse_cfs, forward_fifo=args.forward_fifo)
                loaded = f"{r['loaded']:.3f}" if r["loaded"] is not None else "-"
                late = {d: f"{r['late_mean'][d]:.0f}/{r['late_p99'][d]:.0f}/{r['late_p999'][d]:.0f}/"
                           f"{r['late_max'][d]:.0f}" for d in ("forward", "reverse")}
                lim = r["limits"]
                why = (f"{r['limited_by']} ({100 * lim.rwnd_limited_ms / max(lim.busy_ms, 1):.1f}/"
                       f"{100 * lim.sndbuf_limited_ms / max(lim.busy_ms, 1):.1f}/{lim.app_limited_share:.2f})"
                       if lim else "-")
                app = f"{r['app_busy']:.0%}" if r["app_busy"] is not None else "-"
                print(f"{rtt:>7} {n:>2} {r['idle']:>8.3f} {loaded:>8} {r['whole']:>6.2f} {r['last']:>6.2f} "
                      f"{r['last'] * 1e9 / RATE:>5.2f} {r['last'] / raw:>5.2f} {r['cal_rate']:>5.2f} "
                      f"{r['cpu']['forward']:>7.0%} {r['cpu']['reverse']:>7.0%} {late['forward']:>32} "
                      f"{late['reverse']:>32} {r['drops']:>6} {r['loss_dropped']:>5} {r['busy']:>5.0%} {app:>5} "
                      f"{why:>40}", flush=True)
                for d in ("forward", "reverse"):     # the scheduler's view and the engine's stall log
                    sc, (nstalls, log) = r["sched"][d], r["stalls"][d]
                    kinds = {k: sum(1 for e in log if e[0] == k) for k in "sw"}
                    worst = max(log, key=lambda e: e[2]) if log else None
                    print(f"        {d}: on CPU {sc['run_ns'] / 1e9 / r['wall']:.0%}, runnable-waiting "
                          f"{sc['wait_ns'] / 1e9 / r['wall']:.1%} of the run, {sc['nivcsw']} involuntary / "
                          f"{sc['nvcsw']} voluntary switches; stalls > 1 ms: {nstalls} (last {len(log)}: "
                          f"{kinds['s']} sleep overran, {kinds['w']} work long"
                          + (f"; longest {worst[0]} {worst[2] / 1e6:.1f} ms)" if worst else ")"), flush=True)
                    long = [f"{e[0]} {e[2] / 1e6:.1f} ms at {e[1] / 1e9:.3f} s" for e in log if e[2] >= 2e6]
                    if long:
                        print(f"          stalls >= 2 ms (kind, length, CLOCK_MONOTONIC): {'; '.join(long)}")
                print(f"        hypervisor steal on the engines' CPU during the run: {r['steal_ms']:.0f} ms", flush=True)
    print("\nGbit/s of iperf3 goodput (the line rate's goodput ceiling at MTU 9000 is 9.94); ÷10G and ÷raw: last "
          "half over 10 Gbit/s and over raw veth in the same mode; cal: calibration's measured rate; cpu: share "
          "of one core; late: release lateness per direction (p99/p99.9: upper edges of delayd's log buckets); drops: "
          "the modelled buffer's, lost: the loss stage's; busy: host CPU busy share, app: the application CPUs' "
          "during the run")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
