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
delayd's histogram buckets) and maximum, and what limited the sender (fidelity.connections.limited_by from the
tcp_info chrono counters busy / rwnd_limited / sndbuf_limited and app_limited, sampled every second).
The engines' lateness periods are collected every second (a period's stall log keeps its last 32);
--probe samples the kernel's counters every 10 ms (stall_probe.py) and explains each engine's longest
stalls (who ran, steal, softirqs); --forward-policy / --reverse-policy fifo:P | other:N run an engine in
another scheduling class than the link's (experiments of issue 21; docs/testbed.md, "Why releases
stalled"); each run prints the engines' CPU per packet, ENOBUFS, minor faults and policy.

Needs root: without it (or without the testbed's tools) it exits 2, because it measured nothing.
    .venv/bin/python benchmarks/bench_link.py [--rtts 0.4,45.6] [--modes per-packet,offload] [--scale 1]
        [--loss periodic:100000000] [--streams 1,4,8] [--buffer bdp] [--seconds 30]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

from tcpprofile.measure import ping
from tcpprofile.measure.fidelity.connections import limited_by, parse_ss, sender_limits
from tcpprofile.measure.fidelity.host import HostSampler
from tcpprofile.measure.fidelity.thresholds import THRESHOLDS
from tcpprofile.testbed import EmulatedLink, LinkConfig, netns
from tcpprofile.testbed.engine import late_quantile_ns
from tcpprofile.testbed.netns import process_cpu_seconds

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stall_probe  # noqa: E402  (beside this file)

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


def minor_faults(pid: int) -> int:
    """Page faults served without I/O so far (/proc/PID/stat field 10)."""
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])


def steal_ms(cpus) -> float:
    """Time the hypervisor ran something else on these (virtual) CPUs: /proc/stat steal [ms]."""
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    total = 0
    for line in open("/proc/stat").read().splitlines():
        name = line.split(maxsplit=1)[0]
        if name[3:].isdigit() and name.startswith("cpu") and int(name[3:]) in cpus:
            total += int(line.split()[8])
    return total * tick_ms


class PeriodSum:
    """The engines' lateness periods of one run, collected every second (a period's stall log keeps
    only its last 32 stalls) and summed: histogram, maximum, stall count and every logged stall."""

    def __init__(self):
        self.hist, self.late_max, self.stalls, self.log = {}, {}, {}, {}

    def add(self, stats: dict) -> None:
        for k, s in stats.items():
            h = self.hist.setdefault(k, [0] * len(s.period_late_hist))
            self.hist[k] = [a + b for a, b in zip(h, s.period_late_hist)]
            if s.released:
                self.late_max[k] = max(self.late_max.get(k, s.period_late_max_ns), s.period_late_max_ns)
            self.stalls[k] = self.stalls.get(k, 0) + s.period_stalls
            self.log.setdefault(k, []).extend(s.period_stall_log)

    def quantile_us(self, k: str, q: float) -> float:
        return (late_quantile_ns(self.hist.get(k, []), q) or 0) / 1e3


def set_policy(pid: int, policy: str) -> None:
    """Experiment (issue 21): 'fifo:P' SCHED_FIFO P; 'other:N' SCHED_OTHER at nice N (and its session's
    autogroup at nice N: delayd runs in its own session, and CFS shares the CPU between autogroups)."""
    kind, _, value = policy.partition(":")
    if kind == "fifo":
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(int(value)))
    elif kind == "other":
        os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, pid, int(value or 0))
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(int(value or 0)))
    else:
        raise ValueError(f"policy must be fifo:P or other:N, got {policy!r}")


def emulated(rtt_ms: float, offloads: str, seconds: int, *, loss: tuple[str, float] = ("none", 0.0),
             streams: int = 1, buffer_bdp: bool = False, forward_policy: str = "",
             reverse_policy: str = "", probe: bool = False) -> dict:
    bdp = int(RATE * rtt_ms / 1e3 / 8)
    cfg = LinkConfig.checked(rate_bps=RATE, rtt_s=rtt_ms / 1e3, buffer_bytes=bdp if buffer_bdp else max(bdp, 4 << 20),
                             mtu=MTU, offloads=offloads, loss_mode=loss[0], loss_rate=loss[1])
    with EmulatedLink(cfg) as link:
        idle = independent_ping_ms(link)
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        for name, policy in (("forward", forward_policy), ("reverse", reverse_policy)):
            if policy:            # experiments (issue 21, stalls): another scheduling class for an engine
                set_policy(pids[name], policy)
        policies = {k: (os.sched_getscheduler(p), os.getpriority(os.PRIO_PROCESS, p)) for k, p in pids.items()}
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        minflt0 = {k: minor_faults(p) for k, p in pids.items()}
        sched0 = {k: sched_counters(p) for k, p in pids.items()}
        steal0 = steal_ms(link.engine_cpus)
        first = link.engine_stats(period=True)
        # iperf3's JSON goes to a file: -P 8 writes more than a pipe holds while we sample (it blocked)
        report = tempfile.TemporaryFile(mode="w+")
        proc = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", "cubic", "-t", str(seconds),
                                     "-P", str(streams)], stdout=report, stderr=subprocess.DEVNULL, text=True)
        t0 = time.monotonic()
        conns = []
        periods = PeriodSum()
        watched = {**{f"delayd-{k}": p for k, p in pids.items()}, "iperf3-c": proc.pid, "iperf3-s": server.pid,
                   **stall_probe.kernel_threads_of_cpu(min(link.engine_cpus))}
        with HostSampler(cpus=link.app_cpus) as host, \
                (stall_probe.Probe(watched) if probe else contextlib.nullcontext()) as prober:
            while proc.poll() is None:
                conns += parse_ss(link.run("sender", ["ss", "-tinH", "state", "established", "dport = :5201"],
                                           check=False, timeout=10).stdout)
                periods.add(link.engine_stats(period=True))
                time.sleep(1.0)
            proc.wait()
            periods.add(link.engine_stats(period=True))
        report.seek(0)
        out = report.read()
        loaded = [c.min_rtt_s * 1e3 for c in conns if c.min_rtt_s is not None]     # [ms], as printed
        limits = sender_limits(conns)
        wall = time.monotonic() - t0
        cpu = {k: (process_cpu_seconds(p) - cpu0[k]) / wall for k, p in pids.items()}
        sched = {k: {c: v - sched0[k][c] for c, v in sched_counters(p).items()} for k, p in pids.items()}
        stats = link.engine_stats()
        per_packet = {k: ((s.cpu_user_s - first[k].cpu_user_s) / max(s.packets - first[k].packets, 1) * 1e6,
                          (s.cpu_sys_s - first[k].cpu_sys_s) / max(s.packets - first[k].packets, 1) * 1e6,
                          (s.packets - first[k].packets) / wall) for k, s in stats.items()}
        minflt = {k: minor_faults(p) - minflt0[k] for k, p in pids.items()}
        link.stop_process(server)
        whole, last = throughput(json.loads(out))
        return {"whole": whole, "last": last, "cpu": cpu, "idle": idle, "loaded": min(loaded) if loaded else None,
                "cal_rate": link.calibration.rate_measured_bps / 1e9, "busy": host.result().busy_share,
                "late_mean": {k: s.late_mean_ns / 1e3 for k, s in stats.items()},
                "late_max": {k: periods.late_max.get(k, 0) / 1e3 for k in stats},
                "late_p99": {k: periods.quantile_us(k, 0.99) for k in stats},
                "late_p999": {k: periods.quantile_us(k, 0.999) for k in stats},
                "enobufs": {k: s.enobufs for k, s in stats.items()}, "minflt": minflt, "policies": policies,
                "per_packet": per_packet,
                "probe": prober, "engine_cpu": min(link.engine_cpus), "skip": set(watched.values()) | {os.getpid()},
                "drops": stats["forward"].bottleneck_drops, "loss_dropped": stats["forward"].loss_dropped,
                "app_busy": host.result().cpus_busy_share, "limits": limits,
                "limited_by": limited_by(limits, THRESHOLDS), "sched": sched, "wall": wall,
                "steal_ms": steal_ms(link.engine_cpus) - steal0,
                "stalls": {k: (periods.stalls.get(k, 0), periods.log.get(k, [])) for k in stats}}


def report_stalls(r: dict, show: int = 6) -> None:
    """Each engine's longest logged stalls with what the kernel's counters did meanwhile, and a tally
    of all logged stalls by what coincided with them (stall_probe.Probe.explain)."""
    probe = r["probe"]
    for d in ("forward", "reverse"):
        log = r["stalls"][d][1]
        tally = {"steal": 0, "other engine ran > half": 0, "foreign task ran > 0.5 ms (may run on the engine CPU)": 0,
                 "softirq/irq on engine CPU": 0, "none of these": 0}
        explained = []
        prev = None
        for e in log:
            kind, at, dur = e[0], e[1], e[2]
            # a delayd without the check on a passed target (native/delayd/delayd.c, "A sleep that overran")
            # logs a long 'w' a second time, as the next iteration's 's': count the 'w' only (a log of the
            # engine with the check has no such echo)
            echo = kind == "s" and prev is not None and prev[0] == "w" and abs(prev[1] - at) < 200_000
            prev = e
            if echo:
                continue
            x = probe.explain(at - dur, at, engine_cpu=r["engine_cpu"], skip=r["skip"])
            other = "delayd-reverse" if d == "forward" else "delayd-forward"
            causes = {"steal": max(x["steal_ms"]) > 0,
                      "other engine ran > half": x["tasks_us_run_wait"].get(other, (0, 0))[0] > 0.5 * x["window_ms"] * 1e3,
                      "foreign task ran > 0.5 ms (may run on the engine CPU)":
                          any(us > 500 and may for _, us, may in x["others_us"]),
                      "softirq/irq on engine CPU": x["engine_cpu_softirq_irq_ms"] > 0}
            for cause, present in causes.items():
                tally[cause] += present
            hit = any(causes.values())
            if not hit:
                tally["none of these"] += 1
            explained.append((dur, kind, at, x))
        print(f"        {d}: {len(explained)} logged stalls > 1 ms (echo 's' left out), coinciding with: {tally}")
        for dur, kind, at, x in sorted(explained, key=lambda t: t[0], reverse=True)[:show]:
            tasks = {k: f"{v[0]:.0f}/{v[1]:.0f}" for k, v in x["tasks_us_run_wait"].items() if v[0] or v[1]}
            print(f"          {kind} {dur / 1e6:.1f} ms at {at / 1e9:.3f}: window {x['window_ms']:.0f} ms, steal "
                  f"{x['steal_ms']} ms, engine CPU softirq+irq {x['engine_cpu_softirq_irq_ms']:.0f} ms idle "
                  f"{x['engine_cpu_idle_ms']:.0f} ms, softirqs {x['softirqs_engine_cpu']}, irqs {x['irqs_engine_cpu']}, "
                  f"psi {x['psi_ms']:.1f} ms; µs run/wait {tasks}; others ({x['others_window_ms']:.0f} ms) "
                  f"{x['others_us']}")


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
    ap.add_argument("--forward-policy", default="", metavar="fifo:P|other:N",
                    help="experiment: the forward engine's scheduling instead of the link's (SCHED_FIFO P, or "
                         "SCHED_OTHER at nice N with its autogroup at nice N)")
    ap.add_argument("--reverse-policy", default="", metavar="fifo:P|other:N", help="the same for the reverse engine")
    ap.add_argument("--probe", action="store_true",
                    help="sample the kernel's counters every 10 ms and explain each engine stall (stall_probe.py)")
    ap.add_argument("--pin-self", action="store_true",
                    help="experiment: pin this process (and so everything it starts) to the application CPUs")
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
    if args.pin_self:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(cpus[:-1]) or set(cpus))
    modes = args.modes.split(",")
    if loss[0] != "none" and "offload" in modes:
        ap.error("--loss needs --modes per-packet (loss acts per wire packet)")
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    for mode in modes:
        raw = float("nan") if args.no_raw else raw_veth(MODES[mode])
        print(f"\n{mode} (MTU {MTU}, offloads {MODES[mode]}, loss {args.loss}, buffer {args.buffer}, reverse engine "
              f"{args.reverse_policy or 'as the link sets it'}, forward {args.forward_policy or 'as the link sets it'}"
              f"{', this process pinned to the application CPUs' if args.pin_self else ''}): raw veth, "
              f"1 cubic stream, {RAW_SECONDS} s: {raw:.2f} Gbit/s (last half)")
        print(f"{'tau ms':>7} {'n':>2} {'ping -U':>8} {'minrtt':>8} {'whole':>6} {'last½':>6} {'÷10G':>5} "
              f"{'÷raw':>5} {'cal':>5} {'fwd cpu':>7} {'rev cpu':>7} {'fwd late µs mean/p99/p99.9/max':>32} "
              f"{'rev late µs mean/p99/p99.9/max':>32} {'drops':>6} {'lost':>5} {'busy':>5} {'app':>5} "
              f"{'limited by (rwnd/sndbuf % of busy, app_limited share)':>40}")
        for rtt in rtts:
            for n in streams:
                seconds = args.seconds or max(5, int(SECONDS.get(rtt, 20) * args.scale))
                r = emulated(rtt, MODES[mode], seconds, loss=loss, streams=n, buffer_bdp=args.buffer == "bdp",
                             forward_policy=args.forward_policy, reverse_policy=args.reverse_policy,
                             probe=args.probe)
                loaded = f"{r['loaded']:.3f}" if r["loaded"] is not None else "-"
                late = {d: f"{r['late_mean'][d]:.0f}/{r['late_p99'][d]:.0f}/{r['late_p999'][d]:.0f}/"
                           f"{r['late_max'][d]:.0f}" for d in ("forward", "reverse")}
                lim = r["limits"]
                why = (f"{r['limited_by']} ({100 * lim.rwnd_limited_s / max(lim.busy_s, 1e-3):.1f}/"
                       f"{100 * lim.sndbuf_limited_s / max(lim.busy_s, 1e-3):.1f}/{lim.app_limited_share:.2f})"
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
                pp = r["per_packet"]
                print("        engine CPU per packet, user/sys µs (sys includes the stack work after each verdict), "
                      "packets/s: " + "; ".join(f"{d} {u:.2f}/{y:.2f} at {n / 1e3:.0f} k/s" for d, (u, y, n) in pp.items()))
                print(f"        hypervisor steal on the engines' CPU during the run: {r['steal_ms']:.0f} ms; ENOBUFS "
                      f"{r['enobufs']}; minor faults {r['minflt']}; policy, nice {r['policies']}", flush=True)
                if r["probe"] is not None:
                    report_stalls(r)
    print("\nGbit/s of iperf3 goodput (the line rate's goodput ceiling at MTU 9000 is 9.94); ÷10G and ÷raw: last "
          "half over 10 Gbit/s and over raw veth in the same mode; cal: calibration's measured rate; cpu: share "
          "of one core; late: release lateness per direction (p99/p99.9: upper edges of delayd's log buckets); drops: "
          "the modelled buffer's, lost: the loss stage's; busy: host CPU busy share, app: the application CPUs' "
          "during the run")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
