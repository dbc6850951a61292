"""Each BPF port reproduces its variant's defining rule, read from its kernel cwnd trace.

Links are the project's emulated links (tcpprofile.testbed.EmulatedLink: tbf bottleneck on the
router's egress, drop-tail buffer, propagation delay τ from the delay engine), 20 Mbit/s line rate,
offloads off so that the sender emits, and the buffer drops, wire-size packets.  One link per
configuration, built on first use and shared by the tests of this module (set-up calibrates, ~5 s).

Assertions are on rules read from the traces (ratios, laws, bounds), never on timing.  H-TCP and
Westwood+ keep RTTs in jiffies (4 ms at HZ=250, usecs_to_jiffies rounds up): their expectations
are computed from the trace's srtt with one jiffy of slack on each side.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
import statistics
import subprocess
from pathlib import Path

import pytest

from vm_timing import MEASURED_AGAIN
from tcpprofile import cc
from tcpprofile.cc import bpf, registry
from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.measure.trace import CwndTracer, sender_streams, ssthresh_changes, stream_series

pytestmark = pytest.mark.privileged

HZ = 250
JIFFY_MS = 1000 / HZ
TAG = f"cv{secrets.token_hex(2)}"  # our links are tcpp-<TAG><n>-*, our tracefs instances tcpp-<TAG>t*

# name -> (line rate, τ, drop-tail buffer [bytes])
LINKS = {
    "short": ("20Mbit", "20ms", 30_000),     # buffer 12 ms: frequent losses, W ≈ 55 packets
    "long": ("10Mbit", "40ms", 6_250),       # buffer 5 ms: RTTmax/RTTmin ≈ 45/40, W ≈ 38 packets
    # buffer 5 ms at τ = 120 ms: RTTmin/RTTmax = 31/32 jiffies, above H-TCP's 0.8 clamp through a stall of
    # up to ~20 ms (31/(32 + 5)); at 40 ms a 8-16 ms stall of this VM lifted RTTmax 11 -> 14-16 jiffies (0.69-0.79)
    "htcp-long": ("10Mbit", "120ms", 6_250),
    "deep30": ("20Mbit", "20ms", 75_000),    # buffer 30 ms: RTTmax/RTTmin ≈ 50/20
    "mid": ("20Mbit", "20ms", 250_000),      # buffer 100 ms: W ≈ 200 packets, growth from > 100
    "deep": ("20Mbit", "20ms", 800_000),     # buffer 320 ms: several seconds of growth without loss
    # buffer 30 ms, and 0.2 % uniform loss: the window (Mathis ≈ 27 packets) stays below the BDP
    # (33 packets), so most losses come with an empty queue, after slow start once filled the buffer
    "lossy": ("20Mbit", "20ms", 75_000, 0.002),
}


class Env:
    """Links built on first use; everything created is recorded for the final check."""

    def __init__(self, stack: contextlib.ExitStack):
        self._stack = stack
        self._links: dict[str, EmulatedLink] = {}
        self.link_tags: list[str] = []
        self.tracer_names: list[str] = []

    def link(self, kind: str) -> EmulatedLink:
        if kind not in self._links:
            rate, rtt, buf, *loss = LINKS[kind]
            cfg = LinkConfig.checked(rate_bps=rate, rtt_s=rtt, buffer_bytes=buf, offloads="off",
                                     **({"loss_mode": "uniform", "loss_rate": loss[0]} if loss else {}))
            tag = f"{TAG}{len(self._links)}"
            self.link_tags.append(tag)
            self._links[kind] = self._stack.enter_context(EmulatedLink(cfg, tag=tag))
        return self._links[kind]


def _tracefs_instances() -> set[str]:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "tracefs":
            return {p.name for p in (Path(parts[1]) / "instances").iterdir()}
    return set()


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def env():
    """Registers the BPF ports, yields the link factory; at the end removes what it made and
    checks that none of it remains (struct_ops ids, tcpp-<TAG>* namespaces, tracefs instances)."""
    newly = cc.ensure_loaded(["all"])
    ours = {r.id for r in bpf.registrations().values() if r.name in {cc.kernel_name(n) for n in newly}}
    stack = contextlib.ExitStack()
    e = Env(stack)
    try:
        yield e
    finally:
        stack.close()
        if newly:
            cc.unload(newly)
    assert not ours & {m["id"] for m in bpf.struct_ops()}, "our struct_ops registrations remain"
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert not {cc.kernel_name(n) for n in newly} & set(available)
    assert not {ns for ns in _netns() if any(ns.startswith(f"tcpp-{t}-") for t in e.link_tags)}
    assert not set(e.tracer_names) & _tracefs_instances()


def traced_transfer(env: Env, kind: str, name: str, *, seconds: float):
    """One iperf3 flow with variant `name` over link `kind`; (series of the sending socket, iperf3 result)."""
    link = env.link(kind)
    port = 20000 + secrets.randbelow(40000)
    tag = f"{TAG}t{secrets.token_hex(3)}"
    env.tracer_names.append(f"tcpp-{tag}")
    server = link.popen("receiver", ["iperf3", "-s", "-1", "-p", str(port)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        link.wait_listening("receiver", port)
        with CwndTracer(ports=[port], tag=tag) as tracer:
            proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-p", str(port), "-t", str(seconds),
                                       "-C", cc.kernel_name(name), "-J"], check=False, timeout=seconds + 30)
    finally:
        link.stop_process(server)
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr
    link.wait_drained()  # the next flow on this link starts with an empty queue
    result = json.loads(proc.stdout)
    assert "error" not in result, result["error"]
    assert result["end"]["sender_tcp_congestion"] == cc.kernel_name(name)
    (key,) = sender_streams(result)
    assert tracer.stats.overruns == 0 and tracer.stats.lost_events == 0
    return stream_series(tracer.events, key), result


def packets(link: EmulatedLink, seconds: float) -> float:
    """Goodput ceiling × seconds in MSS-size packets."""
    return link.config.goodput_ceiling_bps / 8 * seconds / link.config.mss_bytes


def jiffies(ms: float) -> int:
    """usecs_to_jiffies(): rounds up."""
    return max(1, math.ceil(ms / JIFFY_MS - 1e-9))


YEAH_EPSILON = 5   # tcp_yeah.c TCP_YEAH_EPSILON: the precautionary decongestion takes at most cwnd >> 5


def reductions(series) -> list[tuple[float, int, int]]:
    """(t, cwnd at the loss, new snd_ssthresh) of every loss reduction from cwnd >= 16.

    cwnd only falls in CWR/Recovery/Loss, where the probe's ssthresh field is snd_ssthresh itself
    (elsewhere it is max(snd_ssthresh, 3/4 cwnd)): a reduction is the first fall of cwnd after the
    previous reduction's recovery ended (cwnd came down to its ssthresh); falls within one loss
    episode are not new reductions (the cwnd the hook saw is not on the trace), nor is a cut of cwnd
    alone (ssthresh field unchanged and above the new cwnd: TCP-LP's early halving, or PRR below
    ssthresh late in a recovery), nor YeAH's precautionary decongestion in Open (tcp_yeah.c: cwnd −=
    min(Q/γ, cwnd >> TCP_YEAH_EPSILON), then ssthresh = cwnd: a fall of at most cwnd/32 to ssthresh = cwnd;
    seen as 81 → 80, ssthresh 80, where a loss takes at least cwnd/8).
    Repeated equal ssthresh values are found too (unlike ssthresh_changes).
    """
    cw, ss, ts = series["snd_cwnd"], series["ssthresh"], series["t"]
    out, s_prev, w_prev, recovered = [], 0, 0, True
    for j in range(1, len(ts)):
        if not recovered:
            recovered = cw[j] <= s_prev or cw[j] > w_prev  # PRR done, or an undo restored cwnd
            continue
        fell = cw[j] < cw[j - 1] and ss[j] != (cw[j] >> 1) + (cw[j] >> 2)
        open_cut = ss[j] == s_prev and cw[j] < ss[j]  # cwnd cut in Open (TCP-LP's early halving)
        decongest = ss[j] == cw[j] and cw[j - 1] - cw[j] <= max(1, cw[j - 1] >> YEAH_EPSILON)   # YeAH, in Open
        if fell and not open_cut and not decongest and ss[j] < cw[j - 1]:  # a reduction sets ssthresh below cwnd
            if cw[j - 1] >= 16:
                out.append((ts[j], cw[j - 1], ss[j]))
            s_prev, w_prev, recovered = ss[j], cw[j - 1], False
    return out


def growth_periods(series) -> list[tuple[float, float, int, int]]:
    """(t_open, t_end, cwnd at the loss, ssthresh) for each reduction: from the first growth of cwnd
    above the new ssthresh after recovery (≤ one RTT after Open) to the next reduction or the end."""
    cw, ts = series["snd_cwnd"], series["t"]
    red = reductions(series)
    ends = [t for t, _, _ in red[1:]] + [ts[-1]]
    out = []
    for (t, w, s), end in zip(red, ends):
        sel = [j for j in range(len(ts)) if t < ts[j] < end]
        low = next((k for k, j in enumerate(sel) if cw[j] <= s), None)
        if low is None:
            continue
        t_open = next((ts[j] for j in sel[low:] if cw[j] > s), None)
        if t_open is not None:
            out.append((t_open, end, w, s))
    return out


# Decrease factors --------------------------------------------------------------------------------

def hstcp_factor(w: int) -> float:
    """Expected HighSpeed decrease at cwnd w: 1 − md/256 of the first RFC 3649 row with w <= cwnd."""
    table = [(38, 128), (118, 112), (221, 104), (347, 98), (495, 93), (663, 89)]
    md = next((m for c, m in table if w <= c), table[-1][1])
    return 1 - md / 256


# variant -> (least, greatest) new ssthresh the original computes from cwnd w at the loss [packets]
DECREASE = {
    "reno": lambda w: (w >> 1,) * 2,                     # 0.5
    "scalable": lambda w: (w - (w >> 3),) * 2,          # 0.875: cwnd − cwnd/8
    "bic": lambda w: (w * 819 // 1024,) * 2,             # 0.8: 819/1024 above low_window 14
    "lp": lambda w: (w >> 1,) * 2,                       # Reno on loss
}


def window_before(series, t: float, rtts: float) -> list[int]:
    """Indices of the samples in the `rtts` round trips (by srtt) before t."""
    ts, srtt = series["t"], series["srtt_us"]
    j = max(k for k in range(len(ts)) if ts[k] <= t)
    return [k for k in range(len(ts)) if t - rtts * srtt[j] / 1e6 <= ts[k] <= t]


def illinois_beta64(da: float, dm: float) -> int:
    """β·64 from the average and maximum queueing delay (Liu, Başar, Srikant 2008, §III; the kernel's
    beta(): 1/8 while da <= dm/10, 1/2 from da >= 0.8·dm, linear in between)."""
    d2, d3 = dm / 10, 8 * dm / 10
    if da <= d2:
        return 8
    if da >= d3 or d3 <= d2:
        return 32
    return int((8 * d3 - 32 * d2 + 24 * da) / (d3 - d2))


def illinois_expected(series, t: float, w: int) -> tuple[int, int]:
    """Range of ssthresh = w − w·β for the delays the trace shows before the loss at t: base and
    max over the flow so far, the average over the last one to four RTTs (the RTT β was computed
    in; srtt stands in for the per-ACK samples, with ±0.1·dm of slack)."""
    if w < 15:                                             # below win_thresh β is 1/2
        return (w - (w * 32 >> 6),) * 2
    srtt, ts = series["srtt_us"], series["t"]
    seen = [srtt[k] for k in range(len(ts)) if ts[k] <= t]
    base, dm = min(seen), max(seen) - min(seen)
    window = window_before(series, t, 4)
    betas = [illinois_beta64(srtt[k] - base + e * dm, dm) for k in window for e in (-0.1, 0.1)]
    return w - (w * max(betas) >> 6), w - (w * min(betas) >> 6)


def yeah_expected(series, t: float, w: int) -> tuple[int, int]:
    """Range of ssthresh = w − reduction for the state before the loss at t (Baiocchi et al. 2007;
    the kernel's yeah_ssthresh) in fast mode: it removes the queue Q = cwnd·(RTT − base)/RTT, clamped
    to [cwnd/8, cwnd/2], as last measured (within four RTTs before the loss; srtt stands in for the
    per-RTT minimum).  After 16 RTTs in Reno mode it halves instead: whether it was in Reno mode
    depends on per-ACK RTTs the trace does not have, so halving is accepted too (see the test)."""
    srtt, cw, ts = series["srtt_us"], series["snd_cwnd"], series["t"]
    base = min(srtt[k] for k in range(len(ts)) if ts[k] <= t)
    window = window_before(series, t, 4)
    queues = [cw[k] * (srtt[k] - base) / srtt[k] for k in window]
    half = max(w >> 1, 2)
    # srtt lags the queue while it changes fast (after slow start): half the smallest estimate as slack
    lo, hi = (min(max(int(q), w >> 3), half) for q in (0.5 * min(queues), max(queues)))
    return w - hi, w - lo


def hook_cwnd_range(series, t: float, w: int) -> tuple[int, int]:
    """The cwnd the ssthresh hook can have seen at the reduction at t, given w on the trace before it.

    The probe fires before an ACK is processed, so the hook sees w plus the growth of the ACK after
    it: up to one packet in congestion avoidance, up to the packets one (stretch) ACK covers in slow
    start (the largest step in the round trip before). And when the sample before shows cwnd below
    ssthresh (a reduction still running), the ACK that detects the new loss can first end that
    recovery, which sets cwnd = ssthresh: seen for Reno and TCP-LP, 49 on the trace below ssthresh 52,
    then ssthresh 26 = 52/2."""
    ts, cw, ss = series["t"], series["snd_cwnd"], series["ssthresh"]
    j = max(k for k in range(len(ts)) if ts[k] < t)
    window = window_before(series, ts[j], 1)
    g = max([0] + [cw[k] - cw[k - 1] for k in window if k > 0])
    return w, max(w + g, ss[j] if cw[j] < ss[j] else 0)


@MEASURED_AGAIN
@pytest.mark.parametrize("name", sorted(DECREASE))
def test_decrease_factor(env, name):
    series, _ = traced_transfer(env, "short", name, seconds=4)
    changes = reductions(series)
    print(f"{name} decrease factors:", [round(s / w, 3) for _, w, s in changes])
    assert len(changes) >= 2, f"{name}: fewer than 2 loss reductions in the trace"
    unseen = []   # cuts from a cwnd the trace does not show
    for t, w, s in changes:  # the hook saw a cwnd in [w_lo, w_hi] (±1: rounding)
        w_lo, w_hi = hook_cwnd_range(series, t, w)
        lo, hi = DECREASE[name](w_lo)[0], DECREASE[name](w_hi)[1]
        if not lo - 1 <= s <= hi + 1:
            unseen.append((w, w_hi, s, lo, hi))
    # At most one cut per trace may come from a cwnd the probe never showed (the ACK that detected the
    # loss first ended a recovery or TCP-LP's inference: seen once in CI for Reno and TCP-LP, 49 on the
    # trace, ssthresh 26), and only within 10 % of the rule; a port with another factor fails every cut.
    assert len(unseen) <= 1, (name, unseen)
    for w, w_hi, s, lo, hi in unseen:
        assert 0.9 * (lo - 1) <= s <= 1.1 * (hi + 1), (name, w, w_hi, s, lo, hi)


@MEASURED_AGAIN     # one traced transfer: a stall of this VM's delay engine can take the loss episodes it needs
@pytest.mark.parametrize("name, expected, halving", [("illinois", illinois_expected, False),
                                                     ("yeah", yeah_expected, True)])
def test_delay_based_decrease_follows_the_measured_state(env, name, expected, halving):
    """Illinois and YeAH cut by an amount set by the queueing delay they measured: on a lossy link
    whose queue is often short at a loss, some cuts must be well below half, each as the measured
    state says (a port that simply halves fails)."""
    series, _ = traced_transfer(env, "lossy", name, seconds=8)
    red = reductions(series)
    # losses at least 8 RTTs after the previous reduction: the state estimated from srtt has settled
    # (srtt lags a recovery; YeAH's queue estimate is not updated during one)
    srtt_s = statistics.median(series["srtt_us"]) / 1e6
    changes = [c for k, c in enumerate(red) if k == 0 or c[0] - red[k - 1][0] >= 8 * srtt_s]
    ranges = [expected(series, t, w) for t, w, _ in changes]
    print(f"{name}:", [(w, s, lo, hi) for (_, w, s), (lo, hi) in zip(changes, ranges)])
    assert len(changes) >= 5, f"{name}: fewer than 5 loss reductions in the trace"
    halved = [abs(s - (w >> 1)) <= 1 for _, w, s in changes]
    for (_, w, s), (lo, hi), half in zip(changes, ranges, halved):   # ±1: the probe shows cwnd one ACK early
        assert lo - 1 <= s <= hi + 1 or (halving and half), (name, w, s, lo, hi)
    below_half = [(w, s) for (_, w, s), (lo, hi), half in zip(changes, ranges, halved)
                  if not half and not lo - 1 <= w >> 1 <= hi + 1]
    assert below_half, f"{name}: no cut that rules out halving"


def test_highspeed_decrease_follows_table(env):
    series, _ = traced_transfer(env, "short", "highspeed", seconds=4)
    changes = [(w, s) for _, w, s in reductions(series)]
    # the first loss ends slow start, where the original never updates its table index (ai = 0: 0.5)
    assert abs(changes[0][1] / changes[0][0] - 0.5) <= 0.03, changes[0]
    changes = changes[1:]
    print("highspeed (cwnd, ssthresh, table):", [(w, s, round(hstcp_factor(w), 3)) for w, s in changes])
    assert len(changes) >= 2
    # the table row (ai) moves one step per ACK in congestion avoidance: a loss right after recovery,
    # before any such ACK, still uses the previous reduction's row
    # (±1 segment: the probe shows cwnd one ACK early, as for the delay-based cuts above; at w = 49 one segment
    # is 0.02 of the ratio: a measured cut (49, 26) is 0.5 of w = 51, hence 0.03·w + 1)
    for f0, (w, s) in zip([0.5] + [hstcp_factor(w) for w, _ in changes], changes):
        assert min(abs(s - f * w) for f in (hstcp_factor(w), f0)) <= 0.03 * w + 1, (w, s, hstcp_factor(w))


# H-TCP adaptive β = RTTmin/RTTmax clamped to [0.5, 0.8] -------------------------------------------

def beta128(min_rtt_j: int, max_rtt_j: int) -> int:
    """H-TCP's β << 7 = RTTmin/RTTmax clamped to [0.5, 0.8] (64..102)."""
    return min(max((min_rtt_j << 7) // max(max_rtt_j, 1), 64), 102)


def near(w: int, s: int, b128: int) -> bool:
    """s is (w·β) >> 7 within one packet (the probe shows cwnd one ACK before the ssthresh call)."""
    return abs(s - ((w * b128) >> 7)) <= 1


@MEASURED_AGAIN
# seconds: the first two cuts after slow start take β = 0.5 (htcp_beta_update: no earlier bandwidth to compare,
# then modeswitch 0), and a cut at 120 ms comes every ~2.2 s: 14 s leave 2-3 cuts at the clamp (measured 4-5 in 16 s)
@pytest.mark.parametrize("kind, clamped, seconds", [("htcp-long", 102, 14), ("deep30", 64, 8)])
def test_htcp_beta_is_rttmin_over_rttmax(env, kind, clamped, seconds):
    series, _ = traced_transfer(env, kind, "htcp", seconds=seconds)
    ts, srtt = series["t"], series["srtt_us"]
    rows = []
    for t, w, s in reductions(series)[1:]:  # the first loss ends slow start: modeswitch is 0 there, β = 0.5
        past = [srtt[j] / 1e3 for j in range(len(ts)) if ts[j] < t]
        m, big = jiffies(min(past)), jiffies(max(past))   # RTTmin, RTTmax [jiffies] as H-TCP keeps them
        rows.append((w, s, m, big))
    print(f"htcp on {kind}: (cwnd, ssthresh, β, RTTmin_j, RTTmax_j, β expected):",
          [(w, s, round(s / w, 3), m, big, round(beta128(m, big) / 128, 3)) for w, s, m, big in rows])
    assert len(rows) >= 2
    for w, s, m, big in rows:
        # β within one jiffy of the trace's RTTmin/RTTmax, or the bandwidth-switch reset to 0.5; H-TCP's
        # RTTmax is the largest raw sample, which srtt (1/8 smoothing) understates: 2 jiffies above
        lo, hi = beta128(m - 1, big + 2), beta128(m + 1, big - 1)
        assert ((w * lo) >> 7) - 1 <= s <= ((w * hi) >> 7) + 1 or near(w, s, 64), (w, s, m, big)
    if clamped == 102:
        # the upper clamp exercised: a cut where even the lowest RTTmin/RTTmax the trace allows is above 0.8,
        # and that cut's β is the clamped 102/128, not the bandwidth switch's 0.5 (31/32 jiffies unclamped: 0.97)
        assert any(beta128(m - 1, big + 2) == 102 and near(w, s, 102) for w, s, m, big in rows), rows
    else:
        assert all(m / big < 0.5 for _, _, m, big in rows)   # below the lower clamp
        assert all(near(w, s, 64) for w, s, _, _ in rows), rows


# Westwood+: cwnd after a loss = bandwidth estimate × RTTmin ------------------------------------------

@MEASURED_AGAIN
def test_westwood_resets_to_bandwidth_times_rttmin(env):
    link = env.link("long")
    series, _ = traced_transfer(env, "long", "westwood", seconds=5)
    changes = [(t, w, s) for t, w, s in ssthresh_changes(series) if s < 0x7fffffff]
    # the value each reduction settles at: Reno's W/2 is set on entry, COMPLETE_CWR overwrites it
    # about one RTT later with bw × RTTmin; losses are many RTTs apart
    gap = 4 * link.config.rtt_s
    settled = [(w, s) for (t, w, s), (t_next, _, _) in zip(changes, changes[1:]) if t_next - t > gap]
    tau_ms = link.config.rtt_s * 1e3
    expected = packets(link, tau_ms / 1e3)                       # rate × τ / MSS ≈ 32.5
    with_jiffy = packets(link, jiffies(tau_ms + 0.01) * JIFFY_MS / 1e3)  # RTTmin rounded up to jiffies
    peaks = [w for _, w, _ in changes]
    later = [s for _, s in settled[1:]]
    med = statistics.median(later[len(later) // 2:])  # once the bandwidth filter (7/8 EWMA, twice) settled
    print(f"westwood: settled {[s for _, s in settled]}, rate×τ/MSS {expected:.1f} "
          f"(RTTmin in jiffies: {with_jiffy:.1f}), peaks {peaks}")
    assert len(settled) >= 3
    assert 0.8 * expected <= med <= 1.1 * with_jiffy, (settled, expected, with_jiffy)
    assert med > 0.7 * statistics.median(peaks)  # far above Reno's W/2


# Vegas: α..β packets queued ----------------------------------------------------------------------

@MEASURED_AGAIN
def test_vegas_keeps_alpha_to_beta_packets_queued(env):
    link = env.link("short")
    before = link.engine_stats()
    series, result = traced_transfer(env, "short", "vegas", seconds=4)
    after = link.engine_stats()
    # what the engines add to every RTT: their mean release lateness, forward (data) plus reverse (ACKs) [µs];
    # Vegas sees it as queueing delay the bottleneck does not hold (a busy host read 6.1-7.3 packets without it)
    late_us = sum((after[d].late_sum_ns - before[d].late_sum_ns) / max(after[d].released - before[d].released, 1)
                  for d in ("forward", "reverse")) / 1e3
    half = len(series["t"]) // 2
    cwnd, srtt = series["snd_cwnd"][half:], series["srtt_us"][half:]
    base = min(series["srtt_us"])
    queued = [w * max(r - base - late_us, 0) / r for w, r in zip(cwnd, srtt)]  # Diff = cwnd·(RTT − baseRTT)/RTT
    bdp = packets(link, link.config.rtt_s)
    buffer_pkts = link.config.buffer_bytes / link.config.frame_bytes
    print(f"vegas: median queued {statistics.median(queued):.2f}, cwnd {min(cwnd)}..{max(cwnd)}, "
          f"BDP {bdp:.1f}, buffer {buffer_pkts:.1f} packets, engines' mean lateness {late_us:.0f} µs")
    assert 1 <= statistics.median(queued) <= 6, statistics.median(queued)  # α = 2, β = 4 (+ srtt smoothing)
    assert max(cwnd) < bdp + buffer_pkts / 2  # a loss-based variant fills BDP + buffer
    assert result["end"]["sum_received"]["bits_per_second"] > 0.7 * link.config.goodput_ceiling_bps


# Increase laws -------------------------------------------------------------------------------------

def rtt_clock(series) -> list[float]:
    """Time in round trips: u(t) = ∫ dt / srtt."""
    ts, rtt = series["t"], series["srtt_us"]
    u = [0.0]
    for j in range(1, len(ts)):
        u.append(u[-1] + (ts[j] - ts[j - 1]) / (rtt[j - 1] / 1e6))
    return u


def per_rtt_slope(series, t_from: float, t_to: float, *, log: bool = False) -> float:
    """Least-squares slope of cwnd (or ln cwnd) against the RTT clock over [t_from, t_to]."""
    u, ts, cw = rtt_clock(series), series["t"], series["snd_cwnd"]
    sel = [j for j in range(len(ts)) if t_from <= ts[j] <= t_to]
    assert len(sel) > 20
    y = [math.log(cw[j]) if log else cw[j] for j in sel]
    return statistics.linear_regression([u[j] for j in sel], y).slope


def longest_growth(series) -> tuple[float, float, int, int]:
    return max(growth_periods(series), key=lambda g: g[1] - g[0])


def test_scalable_grows_one_percent_per_rtt(env):
    series, _ = traced_transfer(env, "mid", "scalable", seconds=6)
    t0, end, _, _ = longest_growth(series)
    rate = math.exp(per_rtt_slope(series, t0, end - 0.05, log=True)) - 1
    cw = [w for t, w in zip(series["t"], series["snd_cwnd"]) if t0 <= t <= end]
    print(f"scalable: {100 * rate:.2f} % per RTT over {end - t0:.2f} s at cwnd {min(cw)}..{max(cw)}")
    assert min(cw) >= 100  # the 1 % law applies from cwnd 100 (below: +1 per RTT)
    assert 0.006 <= rate <= 0.014, rate


def htcp_alpha(delta_s: float, min_rtt_j: int, beta128: int) -> float:
    """H-TCP's increase per RTT [packets] Δ seconds after the last congestion event (original code)."""
    diff, factor = int(delta_s * HZ), 1
    if diff > HZ:  # α(Δ) = 1 + 10(Δ−Δ_L) + ((Δ−Δ_L)/2)^2, Δ_L = 1 s
        diff -= HZ
        factor = 1 + (10 * diff + ((diff // 2) * (diff // 2) // HZ)) // HZ
    scale = min(max((HZ << 3) // (10 * min_rtt_j), 4), 80)  # RTT scaling: × RTTmin/100 ms, in [1/10, 2]
    factor = max((factor << 3) // scale, 1)
    return 2 * factor * (128 - beta128) / 128  # α = 2·factor·(1 − β)


@MEASURED_AGAIN   # w and ssthresh are read from the trace around the loss: a late release moves the samples (CI: 286/548 once)
def test_htcp_alpha_grows_after_one_second(env):
    series, _ = traced_transfer(env, "deep", "htcp", seconds=9)
    t_open, end, w, s = longest_growth(series)  # H-TCP's Δ counts from Open, ≤ 1 RTT before t_open
    assert abs(s / w - 0.5) <= 0.02, (w, s)  # β = 0.5: RTTmax ≫ RTTmin on this link
    assert end - t_open > 5.6, (t_open, end)
    m = jiffies(min(series["srtt_us"]) / 1e3)
    ts = series["t"]
    rows = []
    for a, b in ((0.1, 0.9), (4.5, 5.5)):
        got = per_rtt_slope(series, t_open + a, t_open + b)
        mid = [ts[j] - t_open for j in range(len(ts)) if a <= ts[j] - t_open <= b]
        want = [statistics.fmean(htcp_alpha(d, mm, 64) for d in mid) for mm in (max(m - 1, 1), m)]
        rows.append((a, b, got, min(want), max(want)))
    print("htcp increase per RTT (Δ window, measured, expected range):",
          [(f"{a}-{b} s", round(g, 2), round(lo, 2), round(hi, 2)) for a, b, g, lo, hi in rows])
    (_, _, early, elo, ehi), (_, _, late, llo, lhi) = rows
    assert elo == ehi == 1.0  # Δ < Δ_L: α = 1
    assert 0.6 <= early <= 1.4, early
    assert llo >= 5 and 0.7 * llo <= late <= 1.3 * lhi, (late, llo, lhi)


def test_registry_has_an_object_for_every_port():
    for v in registry.VARIANTS.values():
        if v.bpf:
            assert registry.bpf_object(v).is_file(), v.name
