"""Calibration of an emulated link: idle RTT and rate, measured end to end with the loss stage off.

RTT: the idle RTT as TCP measures it, tcp_info min_rtt of a sparse iperf3 flow (kernel timestamps at
both ends), the same measure as each run's base RTT under load (measure/fidelity/); `ping -U` (user to
user; plain ping is stamped before the reverse delay and misses it) is recorded beside it, and reads
higher by ping's own wake-ups (0.05-0.15 ms here). ping runs SCHED_FIFO so that it measures the link
rather than CPU contention. No compensation: the engines take arrival times from the kernel and aim
their timers early by their own measured wake-up lateness, so each direction is held tau/2; earlier
versions lowered the delays until ping -U read tau, which put TCP's base RTT under load 0.1-0.3 ms
below tau.

Rate: a short multi-stream TCP iperf3 through the whole link (both engines in the path, the forward
one modelling the bottleneck) with both engines temporarily at zero delay. With tau ~ 0 the streams
fill the pipe within milliseconds at every configured tau, so 2.5 s suffice; -w caps each stream's
window so the probe cannot flood a large drop-tail buffer. The measured goodput G is converted to the
line rate it implies, G·(MTU+38)/MSS, to compare like with like with C.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field

from ..measure import ping
from ..errors import TcpProfileError
from ..same_rtt import rtt_tolerance_s
from ..packet_overhead import line_rate_bps
from ..units import to_ms
from .config import LinkConfig

PINGS = 80
PING_INTERVAL_S = 0.01
PING_DISCARD = 2              # first replies may include neighbour resolution
PING_RT_PRIORITY = 10         # SCHED_FIFO like the engines: measure the link, not CPU contention
TRIM_FRACTION = 0.05          # highest replies left out of the measured RTT (scheduling outliers)
RATE_LOW_FRACTION = 0.95
PROBE_STREAMS = 4
PROBE_SECONDS = 2.5
PROBE_SKIP_S = 0.5            # intervals before this are ramp-up
PROBE_WINDOW = "16M"
PROBE_CC = "cubic"
IPERF_PORT = 5201


def rtt_within(measured_s: float, cfg: LinkConfig) -> bool:
    """A measured base RTT is the configured one: within [tau - tol, tau + frame + tol]. A data frame's
    serialisation at C is part of the wire (the engine releases a packet tau/2 after its last bit left
    the modelled wire): 72 us at 1 Gbit/s, MTU 9000, where 5.108 ms was measured at 5 ms."""
    tol = rtt_tolerance_s(cfg.rtt_s)
    return cfg.rtt_s - tol <= measured_s <= cfg.rtt_s + cfg.frame_time_s + tol


@dataclass(frozen=True)
class RttSample:
    """Idle RTT summary [ms]: `trimmed_ms` is the mean without the first PING_DISCARD replies and the
    highest TRIM_FRACTION of the rest (scheduling outliers)."""

    trimmed_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    mdev_ms: float
    count: int


@dataclass(frozen=True)
class Calibration:
    """Result of calibrating one link. rtt_measured_ms is the idle RTT as TCP measures it (tcp_info
    min_rtt of a sparse flow; rtt_source says if ping had to stand in); rtt_ping_ms the mean of `pings`
    ping -U replies without the highest 5 % (rtt_mean_ms keeps them), which adds ping's own wake-ups;
    each direction is held delay_per_direction_ms = τ/2 as configured (stores written before this
    version also carry compensation_ms and iterations: how much, and in how many steps, earlier
    versions lowered it). Rates in bit/s: rate_measured_bps is
    the line rate implied by the measured goodput; ok is False when flags name a problem (rtt_off:
    |measured − target| > max(1 %, 0.1 ms); rate_low: measured < 95 % of target)."""

    rtt_target_ms: float
    rtt_measured_ms: float
    rtt_ping_ms: float
    rtt_source: str
    rtt_mean_ms: float
    rtt_min_ms: float
    rtt_max_ms: float
    rtt_mdev_ms: float
    pings: int
    delay_per_direction_ms: float
    rate_target_bps: float
    rate_measured_bps: float
    goodput_measured_bps: float
    goodput_ceiling_bps: float
    ok: bool
    flags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (f"RTT target {self.rtt_target_ms:.3f} ms, measured {self.rtt_measured_ms:.3f} ms ({self.rtt_source}; "
                f"ping -U {self.rtt_ping_ms:.3f}) "
                f"(min {self.rtt_min_ms:.3f}, max {self.rtt_max_ms:.3f}, mdev {self.rtt_mdev_ms:.3f}, "
                f"{self.pings} pings, {self.delay_per_direction_ms:.3f} ms per direction); "
                f"rate target {self.rate_target_bps / 1e9:.3f} Gbit/s, measured {self.rate_measured_bps / 1e9:.3f} "
                f"(goodput {self.goodput_measured_bps / 1e9:.3f}, ceiling {self.goodput_ceiling_bps / 1e9:.3f}); "
                f"{'ok' if self.ok else 'NOT OK: ' + ', '.join(self.flags)}")


def parse_ping(output: str) -> tuple[list[float], int, float]:
    """(per-reply RTTs [ms] as printed, number of replies, exact mean [ms]) from ping's output.

    ping prints each reply with 3 decimals below 1 ms but only 2, 1 and 0 decimals from 1, 10 and
    100 ms on; the summary's average is exact (1 us), so exact means are built from it."""
    times = [float(m) for m in re.findall(r"time=([0-9.]+) ms", output)]
    parsed = ping.summary(output)
    if parsed is None:
        return times, 0, float("nan")
    return times, len(times), parsed["avg_ms"]


def summarize_ping(output: str, *, discard: int = PING_DISCARD, trim: float = TRIM_FRACTION) -> RttSample:
    """Summary of ping replies without the first `discard`; trimmed_ms also leaves out the highest
    `trim` fraction. Means are the exact summary total minus the (printed) left-out replies."""
    times, n, avg = parse_ping(output)
    kept = times[discard:]
    if n - discard < 2:
        raise ValueError(f"only {max(n - discard, 0)} usable ping replies")
    total = avg * n - sum(times[:discard])
    k = int(len(kept) * trim)
    top = sorted(kept)[len(kept) - k:] if k else []
    mean = total / len(kept)
    return RttSample(trimmed_ms=(total - sum(top)) / (len(kept) - k), mean_ms=mean, min_ms=min(kept),
                     max_ms=max(kept), mdev_ms=statistics.pstdev(kept, mean), count=len(kept))


def measure_rtt(link, *, count: int = PINGS) -> RttSample:
    """Idle RTT sender -> receiver by ping -U."""
    tau = link.config.rtt_s
    argv = ["chrt", "-f", str(PING_RT_PRIORITY), "ping", "-U", "-n", "-c", str(count + PING_DISCARD),
            "-i", str(PING_INTERVAL_S), "-W", str(max(1, int(4 * tau) + 1)), link.receiver_addr]
    proc = link.run("sender", argv, check=False, timeout=30 + 4 * tau)
    try:
        sample = summarize_ping(proc.stdout)
    except ValueError as err:
        raise TcpProfileError(f"link {link.tag}: {err}:\n{proc.stdout}{proc.stderr}") from None
    if sample.count < count // 2:
        raise TcpProfileError(f"link {link.tag}: only {sample.count} of {count} pings answered")
    return sample


def measure_goodput(link) -> float:
    """Goodput [bit/s] of PROBE_STREAMS TCP streams over the link, as received, after PROBE_SKIP_S."""
    server = link.popen("receiver", ["iperf3", "-s", "-1", "-J", "-i", "0.25", "-p", str(IPERF_PORT)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        link.wait_listening("receiver", IPERF_PORT)
        proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(IPERF_PORT), "-J",
                                   "-C", PROBE_CC, "-P", str(PROBE_STREAMS), "-t", str(PROBE_SECONDS), "-i", "0.25",
                                   "-w", PROBE_WINDOW, "--get-server-output"],
                        check=False, timeout=PROBE_SECONDS + 30)
    finally:
        link.stop_process(server)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        detail = proc.stderr.strip() or proc.stdout[:300]
        raise TcpProfileError(f"link {link.tag}: rate probe failed: {detail}") from None
    if "error" in result:
        raise TcpProfileError(f"link {link.tag}: rate probe failed: {result['error']}")
    # The receiver's intervals: the sender's count bytes written into its socket buffers, which at low
    # rates run seconds ahead of what crosses the link.
    received = result.get("server_output_json", {}).get("intervals") or []
    steady = [iv["sum"] for iv in received if iv["sum"]["start"] >= PROBE_SKIP_S - 1e-6]
    if not steady:
        raise TcpProfileError(f"link {link.tag}: rate probe: the receiver reported no intervals")
    seconds = sum(s["seconds"] for s in steady)
    return sum(s["bytes"] for s in steady) * 8 / seconds


TCP_PROBE_RATE = "2M"          # a sparse flow: every segment an idle RTT sample
TCP_PROBE_SECONDS = 2


def measure_tcp_rtt(link) -> float | None:
    """The idle RTT as TCP measures it [s]: tcp_info min_rtt of a sparse iperf3 flow (kernel
    timestamps at both ends, no user-space wake-ups: the same measure as a run's base RTT)."""
    from ..measure.fidelity.connections import min_rtt_s
    server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    best = None
    try:
        link.wait_listening("receiver", IPERF_PORT)
        client = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(IPERF_PORT), "-b", TCP_PROBE_RATE,
                                       "-t", str(TCP_PROBE_SECONDS), "-C", PROBE_CC],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TCP_PROBE_SECONDS + 30 + 4 * link.config.rtt_s
        while client.poll() is None and time.monotonic() < deadline:
            m = min_rtt_s(link, "sender", IPERF_PORT, min_bytes=64 << 10)
            if m is not None:
                best = m if best is None else min(best, m)
            time.sleep(0.2)
        link.stop_process(client)
    finally:
        link.stop_process(server)
    return best


def calibrate(link) -> Calibration:
    """Measure rate (engines at zero delay), then the idle RTT with each direction held τ/2."""
    cfg = link.config
    link.set_delay_ns(0)
    goodput = measure_goodput(link)
    link.wait_drained()

    # No compensation: the engines stamp arrivals in the kernel and aim their timers early by their
    # own measured wake-up lateness, so each direction is held tau/2 as configured; what ping -U adds
    # beyond that (its own wake-ups, the stacks) is not part of the link. Lowering the delays to make
    # the idle ping read tau (as earlier versions did) put TCP's base RTT under load below tau.
    delay_ns = int(round(cfg.rtt_s / 2 * 1e9))
    link.set_delay_ns(delay_ns)
    sample = measure_rtt(link)
    tcp_rtt_s = measure_tcp_rtt(link)
    # The record keeps ms (Calibration's fields are the stored JSON): ping's summary is in ms as ping prints it
    measured_ms = to_ms(tcp_rtt_s) if tcp_rtt_s is not None else sample.trimmed_ms
    measured_s = tcp_rtt_s if tcp_rtt_s is not None else sample.trimmed_ms / 1e3
    rate_measured = line_rate_bps(goodput, cfg.mtu)
    flags = []
    if not rtt_within(measured_s, cfg):
        flags.append("rtt_off")
    if rate_measured < RATE_LOW_FRACTION * cfg.rate_bps:
        flags.append("rate_low")
    return Calibration(
        rtt_target_ms=cfg.rtt_s * 1e3, rtt_measured_ms=measured_ms, rtt_ping_ms=sample.trimmed_ms,
        rtt_source="tcp_info min_rtt" if tcp_rtt_s is not None else "ping -U", rtt_mean_ms=sample.mean_ms,
        rtt_min_ms=sample.min_ms, rtt_max_ms=sample.max_ms, rtt_mdev_ms=sample.mdev_ms, pings=sample.count,
        delay_per_direction_ms=delay_ns / 1e6, rate_target_bps=cfg.rate_bps, rate_measured_bps=rate_measured,
        goodput_measured_bps=goodput, goodput_ceiling_bps=cfg.goodput_ceiling_bps, ok=not flags, flags=flags)


def wait_until(predicate, *, timeout: float, what: str, poll_s: float = 0.02) -> None:
    """Poll predicate until true (a readiness check, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TcpProfileError(f"timed out waiting for {what}")
        time.sleep(poll_s)
