"""Each BPF port reproduces its variant's defining rule, read from its kernel cwnd trace.

Link: sender -> router -> receiver namespaces, tbf on the router's egress (20 Mbit/s, small drop-tail
buffer), offloads off so the queue holds wire-size packets.  There is no propagation delay (this
kernel has no netem; the project's delay engine lives in tcpprofile.testbed, not merged here yet):
the RTT is the queueing delay, from ~0.1 ms empty to buffer/rate full.  Consequences, asserted as
such: H-TCP's RTTmin is one jiffy (<= 10 ms), so its β stays 0.5; Westwood+'s RTTmin is one jiffy
(4 ms at HZ=250), so it resets cwnd to bandwidth × 4 ms.
"""

from __future__ import annotations

import json
import secrets
import statistics
import subprocess
import time

import pytest

from tcpprofile import cc
from tcpprofile.cc import registry
from tcpprofile.trace import CwndTracer, sender_streams, ssthresh_changes, stream_series

pytestmark = pytest.mark.privileged

RATE_BPS = 20_000_000
MSS = 1448  # MTU 1500 with TCP timestamps


class LocalLink:
    """Minimal stand-in for tcpprofile.testbed.EmulatedLink (same popen/receiver_addr/ns_* names)."""

    ROLES = ("sender", "router", "receiver")

    def __init__(self, rate_bps: int, buffer_bytes: int):
        tag = secrets.token_hex(3)
        self.ns_sender, self.ns_router, self.ns_receiver = (f"tcpp-b{tag}-{s}" for s in "srd")
        self.rate_bps, self.buffer_bytes = rate_bps, buffer_bytes
        self.sender_addr, self.receiver_addr = "10.77.1.1", "10.77.2.1"

    def _ns(self, role: str) -> str:
        return {"sender": self.ns_sender, "router": self.ns_router, "receiver": self.ns_receiver}[role]

    def _sh(self, ns: str, argv: list[str]) -> None:
        subprocess.run(["ip", "netns", "exec", ns, *argv], check=True, capture_output=True)

    def __enter__(self) -> "LocalLink":
        try:
            for ns in (self.ns_sender, self.ns_router, self.ns_receiver):
                subprocess.run(["ip", "netns", "add", ns], check=True)
            s, r, d = self.ns_sender, self.ns_router, self.ns_receiver
            subprocess.run(["ip", "-n", s, "link", "add", "tcpp0", "type", "veth", "peer", "name", "tcpp1",
                            "netns", r], check=True)
            subprocess.run(["ip", "-n", r, "link", "add", "tcpp2", "type", "veth", "peer", "name", "tcpp3",
                            "netns", d], check=True)
            for ns, dev, addr in ((s, "tcpp0", "10.77.1.1"), (r, "tcpp1", "10.77.1.2"),
                                  (r, "tcpp2", "10.77.2.2"), (d, "tcpp3", "10.77.2.1")):
                subprocess.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev], check=True)
                subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
                self._sh(ns, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])
            for ns in (s, r, d):
                subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
            subprocess.run(["ip", "-n", s, "route", "add", "default", "via", "10.77.1.2"], check=True)
            subprocess.run(["ip", "-n", d, "route", "add", "default", "via", "10.77.2.2"], check=True)
            self._sh(r, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
            # the bottleneck: tbf on the router's egress towards the receiver (never on the sender)
            subprocess.run(["tc", "-n", r, "qdisc", "add", "dev", "tcpp2", "root", "tbf", "rate",
                            f"{self.rate_bps}bit", "burst", "6000", "limit", str(self.buffer_bytes)], check=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in (self.ns_sender, self.ns_router, self.ns_receiver):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)

    def popen(self, role: str, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self._ns(role), *argv], **kw)

    def wait_listening(self, role: str, port: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(["ip", "netns", "exec", self._ns(role), "ss", "-Htln", f"sport = :{port}"],
                                 capture_output=True, text=True).stdout
            if out.strip():
                return
            time.sleep(0.02)
        raise TimeoutError(f"nothing listens on {port} in {self._ns(role)}")


def traced_transfer(name: str, *, seconds: float, buffer_bytes: int, rate_bps: int = RATE_BPS):
    """Run one iperf3 flow with variant `name`; returns (series of the sending socket, iperf3 result)."""
    port = 20000 + secrets.randbelow(40000)
    with LocalLink(rate_bps, buffer_bytes) as link:
        server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            link.wait_listening("receiver", port)
            with CwndTracer(ports=[port], tag=f"c{secrets.token_hex(3)}") as tracer:
                client = link.popen("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(port), "-t",
                                               str(seconds), "-C", cc.kernel_name(name), "-J"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                out, err = client.communicate(timeout=seconds + 30)
            assert client.returncode == 0, err
        finally:
            server.kill()
            server.wait()
    result = json.loads(out)
    assert result["end"]["sender_tcp_congestion"] == cc.kernel_name(name)
    (key,) = sender_streams(result)
    assert tracer.stats.overruns == 0 and tracer.stats.lost_events == 0
    return stream_series(tracer.events, key), result


@pytest.fixture(scope="module", autouse=True)
def loaded():
    newly = cc.ensure_loaded(["all"])
    yield
    cc.unload(newly)


def hstcp_factor(w: int) -> float:
    """Expected HighSpeed decrease at cwnd w: 1 − md/256 of the first RFC 3649 row with w <= cwnd."""
    table = [(38, 128), (118, 112), (221, 104), (347, 98), (495, 93), (663, 89)]
    md = next((m for c, m in table if w <= c), table[-1][1])
    return 1 - md / 256


# variant -> (least, greatest) new ssthresh the original computes from cwnd w at the loss [packets]
DECREASE = {
    "scalable": lambda w: (w - (w >> 3),) * 2,          # 0.875: cwnd − cwnd/8
    "bic": lambda w: (w * 819 // 1024,) * 2,             # 0.8: 819/1024 above low_window 14
    "htcp": lambda w: ((w * 64) >> 7,) * 2,              # β = 0.5: RTTmin <= 10 ms here (module doc)
    "lp": lambda w: (w >> 1,) * 2,                       # Reno on loss
    "illinois": lambda w: (w - (w * 32 >> 6), w - (w * 8 >> 6)),  # 1 − β, β in [1/8, 1/2]
    "yeah": lambda w: (w - max(w >> 1, 2), w - (w >> 3)),         # cwnd − clamp(Q, cwnd/8, cwnd/2)
}


@pytest.mark.parametrize("name", sorted(DECREASE))
def test_decrease_factor(name):
    series, _ = traced_transfer(name, seconds=4, buffer_bytes=60_000)
    changes = [(w, s) for _, w, s in ssthresh_changes(series) if w >= 16 and s < 0x7fffffff]
    print(f"{name} decrease factors:", [round(s / w, 3) for w, s in changes])
    assert len(changes) >= 2, f"{name}: fewer than 2 loss reductions in the trace"
    for w, s in changes:  # ±1 packet: the probe shows cwnd one ACK before the ssthresh call
        lo, hi = DECREASE[name](w)
        assert lo - 1 <= s <= hi + 1, (name, w, s, lo, hi)


def test_highspeed_decrease_follows_table():
    series, _ = traced_transfer("highspeed", seconds=4, buffer_bytes=60_000)
    changes = [(w, s) for _, w, s in ssthresh_changes(series) if w >= 16 and s < 0x7fffffff]
    # the first loss ends slow start, where the original never updates its table index (ai = 0: 0.5)
    assert abs(changes[0][1] / changes[0][0] - 0.5) <= 0.03, changes[0]
    changes = changes[1:]
    print("highspeed (cwnd, ssthresh):", changes)
    assert len(changes) >= 2
    for w, s in changes:
        assert abs(s / w - hstcp_factor(w)) <= 0.03, (w, s, hstcp_factor(w))


def test_westwood_resets_to_bandwidth_times_rttmin():
    series, _ = traced_transfer("westwood", seconds=4, buffer_bytes=60_000)
    changes = [(t, w, s) for t, w, s in ssthresh_changes(series) if s < 0x7fffffff]
    # the value each reduction settles at (COMPLETE_CWR overwrites the Reno W/2 set on entry)
    settled = [s for (t, w, s), nxt in zip(changes, changes[1:] + [None]) if nxt is None or nxt[0] - t > 0.05]
    expected = RATE_BPS / 8 * 0.004 / MSS  # bandwidth × RTTmin (one jiffy, HZ=250) [packets] ≈ 6.9
    peaks = [w for _, w, _ in changes]
    assert len(settled) >= 2
    assert 0.5 * expected <= statistics.median(settled) <= 2 * expected, (settled, expected)
    assert statistics.median(settled) < 0.35 * max(peaks)  # far below Reno's W/2


def test_vegas_keeps_alpha_to_beta_packets_queued():
    series, result = traced_transfer("vegas", seconds=4, buffer_bytes=60_000)
    half = len(series["t"]) // 2
    cwnd, srtt = series["snd_cwnd"][half:], series["srtt_us"][half:]
    base = min(series["srtt_us"])
    queued = [w * (r - base) / r for w, r in zip(cwnd, srtt)]  # Diff = cwnd·(RTT − baseRTT)/RTT
    assert statistics.median(queued) <= 6, statistics.median(queued)  # beta = 4 (+ srtt smoothing)
    assert max(cwnd) < 20  # a loss-based variant fills the 40-packet buffer here
    bps = result["end"]["sum_received"]["bits_per_second"]
    assert bps > 0.7 * RATE_BPS


def per_rtt_increase(series, t_from: float, t_to: float) -> tuple[float, float]:
    """(cwnd increase per RTT, mean cwnd) over a window without reductions, by least squares."""
    ts, cw, rtt = series["t"], series["snd_cwnd"], series["srtt_us"]
    sel = [j for j in range(len(ts)) if t_from <= ts[j] <= t_to]
    assert len(sel) > 20
    x = [ts[j] for j in sel]
    y = [cw[j] for j in sel]
    slope = statistics.linear_regression(x, y).slope  # packets per second
    mean_rtt_s = statistics.fmean(rtt[j] for j in sel) / 1e6
    return slope * mean_rtt_s, statistics.fmean(y)


def longest_growth(series):
    """(start, end) times of the longest interval between two snd_ssthresh changes."""
    marks = [t for t, _, _ in ssthresh_changes(series)] + [series["t"][-1]]
    gaps = list(zip(marks, marks[1:]))
    return max(gaps, key=lambda g: g[1] - g[0])


def test_scalable_grows_one_percent_per_rtt():
    series, _ = traced_transfer("scalable", seconds=6, buffer_bytes=600_000)
    start, end = longest_growth(series)
    assert end - start > 1.5
    inc, mean = per_rtt_increase(series, recovery_end(series, start) + 0.1, end - 0.1)
    print(f"scalable: +{inc:.2f} packets per RTT at mean cwnd {mean:.0f} ({100 * inc / mean:.2f} %)")
    assert mean > 100  # the 1 % law applies from cwnd 100 (below: +1 per RTT)
    assert 0.005 <= inc / mean <= 0.015, (inc, mean)


def recovery_end(series, t_change: float) -> float:
    """First time after a reduction at t_change when cwnd has come down to ssthresh (recovery over)."""
    ts, cw, ss = series["t"], series["snd_cwnd"], series["ssthresh"]
    return next(ts[j] for j in range(len(ts)) if ts[j] > t_change and cw[j] <= ss[j])


def test_htcp_alpha_grows_after_one_second():
    series, _ = traced_transfer("htcp", seconds=9, buffer_bytes=600_000)
    start, end = longest_growth(series)
    t_open = recovery_end(series, start)  # H-TCP's Δ counts from here (last_cong reset on Open)
    assert end - t_open > 5.5, (t_open, end)
    early, _ = per_rtt_increase(series, t_open + 0.1, t_open + 0.9)   # Δ < Δ_L = 1 s: α = 1
    late, _ = per_rtt_increase(series, t_open + 4.5, t_open + 5.5)
    print(f"htcp increase per RTT: {early:.2f} at Δ < 1 s, {late:.2f} at Δ = 4.5-5.5 s")
    # α(Δ) = 1 + 10(Δ−1) + ((Δ−1)/2)^2, scaled by RTTmin/100 ms clamped to 1/10 here: ≈ 3.9-5 per RTT
    assert 0.5 <= early <= 1.6, early
    assert 2.5 <= late <= 7, late


def test_registry_has_an_object_for_every_port():
    for v in registry.VARIANTS.values():
        if v.bpf:
            assert registry.bpf_object(v).is_file(), v.name
