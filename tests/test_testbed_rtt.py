"""Privileged: a link's RTT measured independently of its calibration, idle and under load.

Idle: `ping -U` (user to user: plain ping may be stamped before the receiver's delay) from the sender
namespace, SCHED_FIFO like the engines so that it measures the link rather than CPU contention, at τ
and again with both engines at zero delay, which is what ping, the stacks and the engines' pass-through
add by themselves.  The median reply at τ lies within max(1 %, 0.1 ms) of τ, plus that overhead above.

Under load: one CUBIC flow through a drop-tail buffer of β bytes drained at line rate C: every RTT TCP
measures lies between τ and τ + 8β/C + one frame's serialisation, within the same tolerance (the median
of the smoothed RTTs sampled by `ss`; their maximum and iperf3's own per-stream maximum may also carry
the delay engines' worst measured lateness, which on this shared 2-core machine reaches milliseconds);
TCP's base RTT (tcp_info min_rtt) lies within the tolerance of τ (or is one of the kernel's millisecond
timestamp samples, see below); and the queue was used (the largest smoothed RTT is above τ + 4β/C), so
the upper bound is not met by an idle link.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
import time

import pytest

from tcpprofile.testbed import EmulatedLink, LinkConfig
from vm_timing import MEASURED_AGAIN

pytestmark = pytest.mark.privileged

RATE_BPS = 200e6
QUEUE_S = 2e-3                          # the buffer holds 2 ms at line rate
BUFFER_BYTES = int(RATE_BPS * QUEUE_S / 8)
PINGS = 200
PORT = 5201
LOAD_S = 4


def tolerance_ms(tau_ms: float) -> float:
    """The issue's idle-RTT tolerance: max(1 %, 0.1 ms)."""
    return max(0.01 * tau_ms, 0.1)


def printed_resolution_ms(t_ms: float) -> float:
    """iputils ping truncates each reply's time to 3, 2, 1, 0 decimals below 1, 10, 100 ms and above."""
    return 0.001 if t_ms < 1 else 0.01 if t_ms < 10 else 0.1 if t_ms < 100 else 1.0


def ping_replies_ms(link, count: int = PINGS) -> list[float]:
    argv = ["chrt", "-f", "10", "ping", "-U", "-n", "-c", str(count), "-i", "0.01", "-W", "2", link.receiver_addr]
    out = link.run("sender", argv, check=False, timeout=60).stdout
    replies = [float(t) for t in re.findall(r"time=([0-9.]+) ms", out)]
    assert len(replies) >= 0.9 * count, out
    return replies


def ss_samples(link) -> list[tuple[float, float]]:
    """(smoothed RTT, min_rtt) [ms] of the sender's data connections (not iperf3's control one) now."""
    out = link.run("sender", ["ss", "-tinH", "state", "established", f"dport = :{PORT}"], check=False,
                   timeout=10).stdout
    samples = []
    for conn in out.split("\n\t"):    # ss -i prints each socket's info on an indented continuation line
        rtt, low, acked = (re.search(p, conn) for p in (r"\brtt:([0-9.]+)/", r"\bminrtt:([0-9.]+)",
                                                          r"\bbytes_acked:([0-9]+)"))
        if rtt and low and acked and int(acked.group(1)) >= 1 << 20:
            samples.append((float(rtt.group(1)), float(low.group(1))))
    return samples


@pytest.fixture(scope="module", params=[0.4, 2.0, 45.6], ids=lambda t: f"{t}ms")
def link(request):
    cfg = LinkConfig.checked(rate_bps=RATE_BPS, rtt_s=request.param / 1e3, buffer_bytes=BUFFER_BYTES)
    with EmulatedLink(cfg) as up:
        yield up


def test_idle_rtt_by_an_independent_ping(link):
    tau_ms = link.config.rtt_s * 1e3
    at_tau = statistics.median(ping_replies_ms(link))
    link.set_delay_ns(0)
    try:
        overhead = statistics.median(ping_replies_ms(link))
    finally:
        link.set_delay_ns(round(link.config.rtt_s / 2 * 1e9))
    again = statistics.median(ping_replies_ms(link))     # the delay is back: the link is as it was
    tol = tolerance_ms(tau_ms)
    print(f"\nτ {tau_ms} ms: ping -U median {at_tau:.3f} ms, at zero delay {overhead:.3f} ms, "
          f"after restoring {again:.3f} ms; calibration {link.calibration.rtt_measured_ms:.3f} ms "
          f"({link.calibration.rtt_source}); tolerance {tol:.3f} ms")
    for median in (at_tau, again):
        assert median + printed_resolution_ms(median) >= tau_ms - tol      # the delay is there
        assert median <= tau_ms + tol + overhead                              # and nothing else


@MEASURED_AGAIN   # one transfer's RTTs: a late release of the engines lifts its base RTT (CI: 0.506 ms at 0.4)
def test_rtt_under_load_lies_between_tau_and_tau_plus_the_buffer(link):
    cfg = link.config
    tau_ms, tol = cfg.rtt_s * 1e3, tolerance_ms(cfg.rtt_s * 1e3)
    queue_ms = 8 * cfg.buffer_bytes / cfg.rate_bps * 1e3
    frame_ms = 8 * cfg.frame_bytes / cfg.rate_bps * 1e3
    upper = tau_ms + queue_ms + frame_ms + tol
    server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(PORT)], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    samples = []
    try:
        link.wait_listening("receiver", PORT)
        link.engine_stats(period=True)       # lateness extremes from here on
        client = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(PORT), "-J", "-C", "cubic",
                                       "-t", str(LOAD_S)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while client.poll() is None:
            samples += ss_samples(link)
            time.sleep(0.05)   # sampling interval of the smoothed RTT while the flow runs
        out, err = client.communicate(timeout=30)
        engines = link.engine_stats(period=True)
    finally:
        link.stop_process(server)
    assert client.returncode == 0, err
    stream = json.loads(out)["end"]["streams"][0]["sender"]
    assert len(samples) >= 10, samples
    srtts, base = sorted(s for s, _ in samples), min(m for _, m in samples)
    # the engines' own worst release lateness in the load (kernel arrival stamps to release): on this
    # shared 2-core machine a delay engine is sometimes scheduled milliseconds late
    late_ms = sum(max(e.period_late_max_ns, 0) for e in engines.values()) / 1e6
    print(f"\nτ {tau_ms} ms, buffer {queue_ms:.1f} ms: base RTT {base:.3f} ms, smoothed RTT min/median/max "
          f"{srtts[0]:.3f}/{statistics.median(srtts):.3f}/{srtts[-1]:.3f} ms ({len(srtts)} samples), iperf3 "
          f"min/mean/max {stream['min_rtt'] / 1e3:.3f}/{stream['mean_rtt'] / 1e3:.3f}/{stream['max_rtt'] / 1e3:.3f} ms, "
          f"bound {upper:.3f} ms (+ engines' worst lateness {late_ms:.3f} ms), {stream['retransmits']} retransmits")
    # TCP's base RTT is τ.  Below: the kernel also takes RTT samples from the timestamp option when every
    # segment an ACK covers was retransmitted (tcp_ack_update_rtt -> tcp_rtt_tsopt_us): millisecond
    # clocks, so such a sample reads floor(τ) ms or more (45.0 at τ = 45.6 ms, measured here).
    assert base <= tau_ms + tol
    assert base >= tau_ms - tol or base == math.floor(tau_ms), base
    assert tau_ms - tol <= srtts[0] and tau_ms - tol <= stream["min_rtt"] / 1e3
    assert statistics.median(srtts) <= upper                            # typically at most a full buffer
    assert srtts[-1] <= upper + late_ms and stream["max_rtt"] / 1e3 <= upper + late_ms   # always, but for
    assert srtts[-1] >= tau_ms + queue_ms / 2                           # the engines' lateness; the buffer
    assert stream["retransmits"] > 0                                     # did fill, and overflowed
