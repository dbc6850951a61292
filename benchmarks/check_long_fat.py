"""Must-show check: one CUBIC stream, 1 GB socket buffer, 20 GB over a 10 Gbit/s link at tau = 366 ms.

iperf3 3.12 refuses -w above 512 MiB, so the 1 GB buffer comes from autotuning: the link sets
tcp_rmem/tcp_wmem max (set_tcp_buffer_max, --tcp-buffer) and iperf3 runs without -w.

Prints whole-run and last-10-s throughput (iperf3 -J intervals), the engines' counters and CPU.
Usage (root): .venv/bin/python benchmarks/check_long_fat.py [--rtt 366ms] [--bytes 20G] [--buffer 200MB]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from tcpprofile import units
from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.testbed.netns import process_cpu_seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="10Gbit")
    ap.add_argument("--rtt", default="366ms")
    ap.add_argument("--buffer", default="457MB", help="bottleneck buffer (default: one BDP)")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--bytes", default="20G", help="iperf3 -n")
    ap.add_argument("--window", default="", help="iperf3 -w (3.12 allows at most 512M); default: autotuning")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--tcp-buffer", default="1GiB", help="tcp_rmem/tcp_wmem max (autotuning ceiling)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("check_long_fat: FAILED: cannot measure without root", file=sys.stderr)
        return 2
    cfg = LinkConfig.checked(rate_bps=args.rate, rtt_s=args.rtt, buffer_bytes=args.buffer, mtu=args.mtu)
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[:3]}")
    with EmulatedLink(cfg) as link:
        print("calibration:", link.calibration.summary())
        link.set_tcp_buffer_max(units.size_bytes("tcp_buffer", args.tcp_buffer))
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        t0 = time.monotonic()
        window = ["-w", args.window] if args.window else []
        proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", args.cc, *window,
                                   "-n", args.bytes], check=False, timeout=600)
        wall = time.monotonic() - t0
        cpu = {k: (process_cpu_seconds(p) - cpu0[k]) / wall * 100 for k, p in pids.items()}
        stats = link.engine_stats()
        link.stop_process(server)
        result = json.loads(proc.stdout)
        if "error" in result:
            print("iperf3 error:", result["error"])
            return 1
        iv = [i["sum"] for i in result["intervals"]]
        end = iv[-1]["end"]
        last = [i for i in iv if i["start"] >= end - 10 - 1e-6]
        last_gbps = sum(i["bytes"] for i in last) * 8 / sum(i["seconds"] for i in last) / 1e9
        total = result["end"]["sum_received"]
        print(f"whole run: {total['bits_per_second'] / 1e9:.3f} Gbit/s over {total['seconds']:.1f} s; "
              f"last 10 s: {last_gbps:.3f} Gbit/s; retransmits {result['end']['sum_sent'].get('retransmits')}; "
              f"goodput ceiling {cfg.goodput_ceiling_bps / 1e9:.3f}")
        print("per-second Gbit/s:", " ".join(f"{i['bits_per_second'] / 1e9:.2f}" for i in iv))
        print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")
        print("engine CPU % of one core:", {k: round(v, 1) for k, v in cpu.items()})
        for k, s in stats.items():
            print(f"engine {k}: packets {s.packets} max_held {s.max_held} lost {s.lost} enobufs {s.enobufs} "
                  f"late mean {s.late_mean_ns / 1e3:.1f} us")
        fwd = link.engine_stats()["forward"]
        print("bottleneck:", {"drops": fwd.bottleneck_drops, "overlimits": fwd.bottleneck_overlimits, "backlog_ns": fwd.backlog_ns})
        return 0 if last_gbps >= 9.0 else 1


if __name__ == "__main__":
    sys.exit(main())
