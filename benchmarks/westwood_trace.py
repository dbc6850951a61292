"""Westwood+ on the emulated link: record one run's per-ACK tcp_probe trace, then replay the kernel's
filter arithmetic over it (tcpprofile.cc.westwood_check) and compare the ssthresh it computes at each
recovery exit with the cwnd the BPF port set.

    record (root, under the exclusive lock):
        westwood_trace.py record --rtt 45.6ms --seconds 20 --out wt-45.6.json [--variant westwood]
    replay (no privileges):
        westwood_trace.py replay wt-45.6.json

Link by default: 10 Gbit/s, drop-tail buffer β = BDP, MTU 9000, one stream, iperf3 -w 512MiB (the
issue-19 conditions; --rate, --buffer, --mtu, --offloads, --no-window change them).  The port is
registered through tcpprofile.cc (held by this process, released on exit).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tcpprofile import cc, units
from tcpprofile.cc.westwood_check import Trace, exit_brackets, recovery_exits, replay
from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.measure.trace import CwndTracer, sender_streams, stream_series

PORT = 5297
HZ = 250          # CONFIG_HZ of the project's kernel (bpf/tp_common.h reads it at load time)


def record(args) -> int:
    if os.geteuid() != 0:
        print("westwood_trace: FAILED: record needs root (namespaces, tracefs, BPF)", file=sys.stderr)
        return 2
    rtt_s = units.seconds("rtt", args.rtt)
    rate = units.rate_bps("rate", args.rate)
    bdp = int(rate * rtt_s / 8)
    buffer = bdp if args.buffer == "BDP" else units.size_bytes("buffer", args.buffer)
    cfg = LinkConfig.checked(rate_bps=rate, rtt_s=rtt_s, buffer_bytes=buffer, mtu=args.mtu, offloads=args.offloads)
    cc.ensure_loaded([args.variant], hold=True)
    try:
        kname = cc.kernel_name(args.variant)
        with EmulatedLink(cfg) as link:
            print(link.calibration.summary())
            server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(PORT)])
            try:
                link.wait_listening("receiver", PORT)
                argv = ["iperf3", "-c", link.receiver_addr, "-p", str(PORT), "-J", "-C", kname,
                        "-t", str(args.seconds)] + (["-w", str(512 * 1024 * 1024)] if args.window else [])
                with CwndTracer(ports=[PORT]) as tracer:
                    t0 = time.monotonic()
                    proc = link.run("sender", argv, timeout=args.seconds + 60)
            finally:
                link.stop_process(server)
    finally:
        cc.release([args.variant])
    result = json.loads(proc.stdout)
    key = sender_streams(result)[0]
    series = stream_series(tracer.events, key)
    doc = {"variant": args.variant, "kernel_name": kname, "rtt_s": rtt_s, "rate_bps": rate,
           "bdp_bytes": bdp, "buffer_bytes": buffer, "hz": HZ, "mss": int(result["start"]["tcp_mss_default"]),
           "gbps": result["end"]["sum_received"]["bits_per_second"] / 1e9,
           "retransmits": result["end"]["sum_sent"].get("retransmits"),
           "lost_events": tracer.stats.lost_events + tracer.stats.overruns, "t0": t0,
           "trace": {k: series[k] for k in ("t", "snd_una", "snd_nxt", "snd_cwnd", "ssthresh", "srtt_us")}}
    with open(args.out, "w") as f:
        json.dump(doc, f)
    print(f"{args.variant} at {rtt_s * 1e3:g} ms: {doc['gbps']:.2f} Gbit/s, {len(series['t'])} events "
          f"({doc['lost_events']} lost), mss {doc['mss']}, retransmits {doc['retransmits']} -> {args.out}")
    return 0


def load(path: str) -> tuple[dict, Trace]:
    with open(path) as f:
        doc = json.load(f)
    tr = doc["trace"]
    return doc, Trace(t=tr["t"], snd_una=tr["snd_una"], snd_nxt=tr["snd_nxt"], snd_cwnd=tr["snd_cwnd"],
                      ssthresh=tr["ssthresh"], srtt_us=tr["srtt_us"])


def report(path: str) -> int:
    doc, trace = load(path)
    bdp_pkts = doc["bdp_bytes"] / doc["mss"]
    print(f"{doc['variant']} τ {doc['rtt_s'] * 1e3:g} ms: {doc['gbps']:.2f} Gbit/s, mss {doc['mss']}, "
          f"BDP {bdp_pkts:,.0f} packets, {len(trace.t)} events, lost {doc['lost_events']}")
    exits = recovery_exits(trace)
    peak = max(trace.snd_cwnd)
    print(f"largest cwnd {peak:,}; recoveries ended by COMPLETE_CWR: {len(exits)}")
    t0 = trace.t[0]
    base = replay(trace, hz=doc["hz"], mss=doc["mss"], slowpath_in_recovery=True)
    for ex, (low, high) in zip(exits[:6], exit_brackets(trace, exits[:6], hz=doc["hz"], mss=doc["mss"])):
        e = ex.ack
        bw_gbps = base.bw_est[e] * doc["hz"] * 8 / 1e9
        port = f"{ex.set_low:,}" + (f"-{ex.set_high:,} (re-entered)" if ex.reentered else "")
        inside = "inside" if low <= ex.set_high and ex.set_low <= high else "OUTSIDE"
        print(f"recovery {trace.t[ex.entry] - t0:6.3f}-{trace.t[e] - t0:6.3f} s: cwnd at entry "
              f"{trace.snd_cwnd[ex.entry]:,}; port set {port}; kernel arithmetic {low:,}-{high:,} ({inside}; "
              f"phase 0: bw_est {bw_gbps:.2f} Gbit/s, rtt_min {base.rtt_min[e]} jiffies, {base.windows[e]} windows)")
    gbps = 8 * doc["hz"] / 1e9           # bytes per jiffy -> Gbit/s
    print("filter windows (phase 0, slow path in recovery): end [ms after the first event], length [jiffies], "
          "sample bk/delta, bw_ns_est, bw_est [Gbit/s]")
    for now, delta, sample, ns, est in base.filter[:24]:
        print(f"  {(now / doc['hz'] - t0) * 1000:7.0f} {delta:4d} "
              f"{sample * gbps:7.2f} {ns * gbps:7.2f} {est * gbps:7.2f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--rtt", required=True)
    r.add_argument("--seconds", type=int, default=20)
    r.add_argument("--variant", default="westwood")
    r.add_argument("--rate", default="10Gbit")
    r.add_argument("--buffer", default="BDP", help="drop-tail buffer: BDP or a size")
    r.add_argument("--mtu", type=int, default=9000)
    r.add_argument("--offloads", default="auto")
    r.add_argument("--no-window", dest="window", action="store_false", help="no -w 512MiB (autotuning)")
    r.add_argument("--out", required=True)
    p = sub.add_parser("replay")
    p.add_argument("path")
    args = ap.parse_args()
    return record(args) if args.cmd == "record" else report(args.path)


if __name__ == "__main__":
    sys.exit(main())
