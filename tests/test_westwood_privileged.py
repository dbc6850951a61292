"""The BPF port of Westwood+ sets what the kernel file's arithmetic computes from the same ACKs.

One tp_westwood flow on an emulated link (20 Mbit/s; τ 22 ms = 5.5 jiffies, so rtt_min is 6 jiffies
away from a rounding edge; drop-tail 30 kB = 12 ms; offloads off: wire-size packets, frequent losses);
its tcp_probe trace is replayed through tcpprofile.cc.westwood_check (net/ipv4/tcp_westwood.c in user
space), and at every recovery that ended with CA_EVENT_COMPLETE_CWR the cwnd = ssthresh the port set
is compared with the harness's bracket over what the trace does not show (jiffies phase, init time
within a jiffy, fast/slow path inside a recovery; per-ACK RTT samples recovered from srtt: docs/cc.md).
The link, tracer and registration are removed at the end and checked.
"""

from __future__ import annotations

import json
import secrets
import subprocess

import pytest
from test_cc_variants import _netns, _tracefs_instances

from tcpprofile import cc
from tcpprofile.cc import bpf
from tcpprofile.cc.westwood_check import Trace, exit_brackets, recovery_exits
from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.measure.trace import CwndTracer, sender_streams, stream_series

pytestmark = pytest.mark.privileged

HZ = 250
TAG = f"ww{secrets.token_hex(2)}"


@pytest.fixture(scope="module")
def westwood_run():
    """(trace, iperf3 result) of one 8 s tp_westwood flow; everything made is removed and checked."""
    held = cc.ensure_loaded(["westwood"], hold=True)
    ours = {r.id for r in bpf.registrations().values() if r.name == cc.kernel_name("westwood")} if held else set()
    tracer_tag = f"{TAG}t"
    cfg = LinkConfig.checked(rate_bps="20Mbit", rtt_s="22ms", buffer_bytes=30_000, offloads="off")
    port = 20000 + secrets.randbelow(40000)
    try:
        with EmulatedLink(cfg, tag=TAG) as link:
            server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                link.wait_listening("receiver", port)
                with CwndTracer(ports=[port], tag=tracer_tag) as tracer:
                    proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(port), "-t", "8",
                                               "-C", cc.kernel_name("westwood"), "-J"], timeout=60)
            finally:
                link.stop_process(server)
    finally:
        cc.release(["westwood"])
    assert not ours & {m["id"] for m in bpf.struct_ops()}, "our struct_ops registration remains"
    assert not {ns for ns in _netns() if ns.startswith(f"tcpp-{TAG}-")}
    assert f"tcpp-{tracer_tag}" not in _tracefs_instances()
    result = json.loads(proc.stdout)
    assert result["end"]["sender_tcp_congestion"] == cc.kernel_name("westwood")
    assert tracer.stats.overruns == 0 and tracer.stats.lost_events == 0
    (key,) = sender_streams(result)
    s = stream_series(tracer.events, key)
    trace = Trace(t=s["t"], snd_una=s["snd_una"], snd_nxt=s["snd_nxt"], snd_cwnd=s["snd_cwnd"],
                  ssthresh=s["ssthresh"], srtt_us=s["srtt_us"])
    return trace, result


def test_port_sets_the_kernels_bandwidth_times_rttmin(westwood_run):
    trace, result = westwood_run
    mss = int(result["start"]["tcp_mss_default"])
    exits = recovery_exits(trace)
    rows = [(ex.set_low, ex.set_high, low, high)
            for ex, (low, high) in zip(exits, exit_brackets(trace, exits, hz=HZ, mss=mss))]
    print(f"exits (port set, kernel arithmetic): {rows}")
    assert len(exits) >= 5, f"too few recoveries to compare: {rows}"
    # the port's value lies in the harness's bracket (± one packet: the RTT samples are recovered from srtt)
    inside = [lo - 1 <= p_high and p_low <= hi + 1 for p_low, p_high, lo, hi in rows]
    assert sum(inside) >= 0.9 * len(rows), rows
