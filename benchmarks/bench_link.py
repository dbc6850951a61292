"""The emulated 10 Gbit/s link against its targets and against raw veth, both packet modes, one run.

For each mode — per packet (offloads off, MTU 9000: what every lossy link uses) and offloads on
(MTU 9000, GSO/BIG TCP) — and tau in {0.4, 11.8, 45.6, 91.6, 183, 366} ms: one CUBIC stream's
sustained throughput (last half of the run, iperf3 -J intervals) as a ratio to 10 Gbit/s and to a raw
veth pair in the same mode measured in this same process; the idle RTT by an independent `ping -U`
(not the calibration's own figure) and the smallest RTT TCP saw under load (tcp_info min_rtt); each
delay engine's CPU share and lateness; the host's CPU busy share. Goals (issue 9): per packet >= 9.5
Gbit/s at 11.8-366 ms, >= 9.3 at 0.4 ms in both modes; idle RTT within max(1 %, 0.1 ms).

Needs root: without it (or without the testbed's tools) it exits 2, because it measured nothing.
    .venv/bin/python benchmarks/bench_link.py [--rtts 0.4,45.6] [--modes per-packet,offload] [--scale 1]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time

from tcpprofile import ping
from tcpprofile.fidelity import HostSampler, min_rtt_ms
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


def emulated(rtt_ms: float, offloads: str, seconds: int) -> dict:
    bdp = int(RATE * rtt_ms / 1e3 / 8)
    cfg = LinkConfig.checked(rate_bps=RATE, rtt_s=rtt_ms / 1e3, buffer_bytes=max(bdp, 4 << 20), mtu=MTU,
                             offloads=offloads)
    with EmulatedLink(cfg) as link:
        idle = independent_ping_ms(link)
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        link.engine_stats(period=True)
        proc = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", "cubic", "-t", str(seconds)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        loaded = []
        with HostSampler() as host:
            while proc.poll() is None:
                m = min_rtt_ms(link, "sender", 5201)
                if m is not None:
                    loaded.append(m)
                time.sleep(1.0)
            out, _ = proc.communicate()
        wall = time.monotonic() - t0
        cpu = {k: (process_cpu_seconds(p) - cpu0[k]) / wall for k, p in pids.items()}
        stats = link.engine_stats(period=True)
        link.stop_process(server)
        whole, last = throughput(json.loads(out))
        return {"whole": whole, "last": last, "cpu": cpu, "idle": idle, "loaded": min(loaded) if loaded else None,
                "cal_rate": link.calibration.rate_measured_bps / 1e9, "busy": host.result().busy_share,
                "late_mean": {k: s.late_mean_ns / 1e3 for k, s in stats.items()},
                "late_max": {k: s.period_late_max_ns / 1e3 for k, s in stats.items()},
                "drops": stats["forward"].bottleneck_drops}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtts", default=",".join(map(str, RTTS_MS)))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply run lengths")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_link: FAILED: needs root (network namespaces); nothing was measured", file=sys.stderr)
        return 2
    rtts = [float(x) for x in args.rtts.split(",")]
    modes = args.modes.split(",")
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    for mode in modes:
        raw = raw_veth(MODES[mode])
        print(f"\n{mode} (MTU {MTU}, offloads {MODES[mode]}): raw veth, 1 cubic stream, {RAW_SECONDS} s: "
              f"{raw:.2f} Gbit/s (last half)")
        print(f"{'tau ms':>7} {'ping -U':>8} {'minrtt':>8} {'whole':>6} {'last½':>6} {'÷10G':>5} {'÷raw':>5} "
              f"{'cal':>5} {'fwd cpu':>7} {'rev cpu':>7} {'late µs fwd/rev (max)':>24} {'drops':>6} {'busy':>5}")
        for rtt in rtts:
            r = emulated(rtt, MODES[mode], max(5, int(SECONDS.get(rtt, 20) * args.scale)))
            loaded = f"{r['loaded']:.3f}" if r["loaded"] is not None else "-"
            late = (f"{r['late_mean']['forward']:.0f}/{r['late_mean']['reverse']:.0f} "
                    f"({r['late_max']['forward']:.0f}/{r['late_max']['reverse']:.0f})")
            print(f"{rtt:>7} {r['idle']:>8.3f} {loaded:>8} {r['whole']:>6.2f} {r['last']:>6.2f} "
                  f"{r['last'] * 1e9 / RATE:>5.2f} {r['last'] / raw:>5.2f} {r['cal_rate']:>5.2f} "
                  f"{r['cpu']['forward']:>7.0%} {r['cpu']['reverse']:>7.0%} {late:>24} {r['drops']:>6} "
                  f"{r['busy']:>5.0%}", flush=True)
    print("\nGbit/s of iperf3 goodput (the line rate's goodput ceiling at MTU 9000 is 9.94); ÷10G and ÷raw: last "
          "half over 10 Gbit/s and over raw veth in the same mode; cal: calibration's measured rate; cpu: share "
          "of one core; late: mean (max) release lateness per direction; busy: host CPU busy share during the run")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
