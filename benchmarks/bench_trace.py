"""Cost of kernel cwnd tracing (tcp:tcp_probe) on a 10 Gbit/s emulated link.

Alternates runs without and with a CwndTracer (one CUBIC stream, τ = 11.8 ms, MTU 9000) on one link
and prints the median throughput of each, their ratio (the baseline is the untraced run of the same
process), the reader's CPU share and the event rate. Needs root: without it, exits 2 (nothing measured).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.measure.trace import CwndTracer

PAIRS = 3
SECONDS = 6
PORT = 5299


def one_run(link, traced: bool) -> dict:
    server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(PORT)], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    link.wait_listening("receiver", PORT)
    argv = ["iperf3", "-c", link.receiver_addr, "-p", str(PORT), "-J", "-C", "cubic", "-t", str(SECONDS)]
    try:
        if traced:
            with CwndTracer(ports=[PORT]) as tracer:
                proc = link.run("sender", argv, timeout=SECONDS + 60)
            stats = tracer.stats
        else:
            proc = link.run("sender", argv, timeout=SECONDS + 60)
            stats = None
    finally:
        link.stop_process(server)
    gbps = json.loads(proc.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    row = {"gbps": gbps}
    if stats is not None:
        row |= {"events_per_s": stats.events / stats.wall_s, "reader_cpu": stats.reader_cpu_s / stats.wall_s,
                "lost": stats.lost_events + stats.overruns}
    return row


def main() -> int:
    if os.geteuid() != 0:
        print("bench_trace: FAILED: cannot measure without root (tracefs, namespaces)", file=sys.stderr)
        return 2
    cfg = LinkConfig.checked(rate_bps="10Gbit", rtt_s="11.8ms", buffer_bytes="15MB", mtu=9000)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    plain, traced = [], []
    with EmulatedLink(cfg) as link:
        print(link.calibration.summary())
        for _ in range(PAIRS):
            plain.append(one_run(link, traced=False))
            traced.append(one_run(link, traced=True))
    base = statistics.median(r["gbps"] for r in plain)
    with_trace = statistics.median(r["gbps"] for r in traced)
    print(f"{'':24}{'Gbit/s (median)':>16}{'ratio':>8}")
    print(f"{'without tracing':24}{base:16.3f}{1.0:8.3f}")
    print(f"{'with tcp_probe tracing':24}{with_trace:16.3f}{with_trace / base:8.3f}")
    print(f"events/s {statistics.median(r['events_per_s'] for r in traced):,.0f}; reader CPU "
          f"{100 * statistics.median(r['reader_cpu'] for r in traced):.1f} % of a core; "
          f"lost events {sum(r['lost'] for r in traced)}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
