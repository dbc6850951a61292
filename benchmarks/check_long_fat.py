"""Must-show check: one CUBIC stream, -w 1G, 20 GB over a 10 Gbit/s link at tau = 366 ms.

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

from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.testbed.netns import process_cpu_seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="10Gbit")
    ap.add_argument("--rtt", default="366ms")
    ap.add_argument("--buffer", default="200MB")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--bytes", default="20G", help="iperf3 -n")
    ap.add_argument("--window", default="1G", help="iperf3 -w")
    ap.add_argument("--cc", default="cubic")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("skipped: needs root")
        return 0
    cfg = LinkConfig.checked(rate_bps=args.rate, rtt_s=args.rtt, buffer_bytes=args.buffer, mtu=args.mtu)
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[:3]}")
    with EmulatedLink(cfg) as link:
        print("calibration:", link.calibration.summary())
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        pids = link.engine_pids()
        cpu0 = {k: process_cpu_seconds(p) for k, p in pids.items()}
        t0 = time.monotonic()
        proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", args.cc, "-w", args.window,
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
        print("engine CPU % of one core:", {k: round(v, 1) for k, v in cpu.items()})
        for k, s in stats.items():
            print(f"engine {k}: packets {s.packets} max_held {s.max_held} lost {s.lost} enobufs {s.enobufs} "
                  f"late mean {s.late_mean_ns / 1e3:.1f} us")
        print("tbf:", {k: link.tbf_stats()[k] for k in ("drops", "overlimits", "backlog")})
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
