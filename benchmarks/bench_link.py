"""Emulated 10 Gbit/s link vs raw veth: sustained throughput of one CUBIC stream and delay-engine CPU.

For tau in {0.4, 45.6, 366} ms: whole-run and last-half throughput (iperf3 -J intervals), the
last-half ratio to a raw veth pair (two namespaces, one veth, no shaping) measured in the same run,
and each delay engine's CPU share (/proc/PID/stat utime+stime over the run, % of one core).
Needs root: without it, exits 2 (nothing measured). Other processes on the machine depress the figures: the
load average is printed before and after.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

from tcpprofile.testbed import EmulatedLink, LinkConfig, netns
from tcpprofile.testbed.netns import process_cpu_seconds

RTTS_MS = (0.4, 45.6, 366.0)
SECONDS = {0.4: 10, 45.6: 15, 366.0: 40}   # long enough for slow start to end at 366 ms
RAW_SECONDS = 10


def throughput(result: dict) -> tuple[float, float]:
    """(whole-run, last-half) receiver throughput [Gbit/s] from iperf3 -J output."""
    iv = [i["sum"] for i in result["intervals"]]
    end = iv[-1]["end"]
    half = [i for i in iv if i["start"] >= end / 2 - 1e-6]
    last = sum(i["bytes"] for i in half) * 8 / sum(i["seconds"] for i in half)
    return result["end"]["sum_received"]["bits_per_second"] / 1e9, last / 1e9


def iperf_json(client_argv: list[str]) -> dict:
    proc = subprocess.run(client_argv, capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def raw_veth() -> tuple[float, float]:
    tag = secrets.token_hex(3)
    a, b = f"tcpp-b{tag}-a", f"tcpp-b{tag}-b"
    try:
        for ns in (a, b):
            netns.sh(["ip", "netns", "add", ns])
            netns.sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        netns.sh(["ip", "link", "add", f"tcppb{tag}a", "netns", a, "type", "veth", "peer", "name", f"tcppb{tag}b",
                  "netns", b])
        for ns, dev, addr in ((a, f"tcppb{tag}a", "10.78.0.1"), (b, f"tcppb{tag}b", "10.78.0.2")):
            netns.sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            netns.sh(["ip", "-n", ns, "link", "set", dev, "up"])
        server = subprocess.Popen(netns.in_ns(b, ["iperf3", "-s", "-1"]), stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not netns.sh(netns.in_ns(b, ["ss", "-Hltn", "sport = :5201"])).stdout.strip():
                if time.monotonic() > deadline:
                    raise RuntimeError("iperf3 server did not start")
                time.sleep(0.02)
            return throughput(iperf_json(netns.in_ns(a, ["iperf3", "-c", "10.78.0.2", "-J", "-C", "cubic",
                                                         "-t", str(RAW_SECONDS)])))
        finally:
            server.kill()
            server.wait()
    finally:
        for ns in (a, b):
            netns.sh(["ip", "netns", "del", ns], check=False)


def emulated(rtt_ms: float) -> dict:
    bdp = int(10e9 * rtt_ms / 1e3 / 8)
    cfg = LinkConfig.checked(rate_bps="10Gbit", rtt_s=rtt_ms / 1e3, buffer_bytes=max(bdp, 4 << 20))
    with EmulatedLink(cfg) as link:
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        t0 = time.monotonic()
        proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", "cubic",
                                   "-t", str(SECONDS[rtt_ms])], check=False, timeout=300)
        wall = time.monotonic() - t0
        cpu = {k: (process_cpu_seconds(p) - cpu0[k]) / wall * 100 for k, p in pids.items()}
        link.stop_process(server)
        result = json.loads(proc.stdout)
        whole, last = throughput(result)
        stats = link.engine_stats()
        return {"whole": whole, "last": last, "ceiling": cfg.goodput_ceiling_bps / 1e9, "cpu": cpu,
                "retr": result["end"]["sum_sent"].get("retransmits"),
                "rtt_idle": link.calibration.rtt_measured_ms,
                "lost": sum(s.lost for s in stats.values()), "late_us": stats["forward"].late_mean_ns / 1e3}


def main() -> int:
    if os.geteuid() != 0:
        print("bench_link: FAILED: cannot measure without root (namespaces, tc, iptables)", file=sys.stderr)
        return 2
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    raw_whole, raw_last = raw_veth()
    print(f"raw veth, 1 cubic stream, {RAW_SECONDS} s: {raw_whole:.2f} Gbit/s (last half {raw_last:.2f})")
    print(f"{'tau ms':>7} {'idle RTT':>9} {'whole':>7} {'last½':>7} {'÷raw':>6} {'÷ceil':>6} {'fwd CPU%':>9} "
          f"{'rev CPU%':>9} {'retr':>6} {'lost':>5} {'late us':>8}")
    for rtt in RTTS_MS:
        r = emulated(rtt)
        print(f"{rtt:>7} {r['rtt_idle']:>9.3f} {r['whole']:>7.2f} {r['last']:>7.2f} {r['last'] / raw_last:>6.2f} "
              f"{r['last'] / r['ceiling']:>6.2f} {r['cpu']['forward']:>9.1f} {r['cpu']['reverse']:>9.1f} "
              f"{r['retr']!s:>6} {r['lost']:>5} "
              f"{r['late_us']:>8.1f}", flush=True)
    print("Gbit/s of iperf3 goodput; ÷ceil: last half over the goodput ceiling of the 10 Gbit/s line rate at "
          "MTU 1500 (9.415); buffer = one BDP (at least 4 MB); retr: segments (a tail drop loses a whole GSO packet)")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
