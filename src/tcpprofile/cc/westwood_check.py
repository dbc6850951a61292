"""Westwood+'s bandwidth filter as the kernel computes it, replayed in user space over a cwnd trace.

Checks the BPF port bpf/westwood.bpf.c against Linux net/ipv4/tcp_westwood.c (v6.18) on the same
ACK and RTT events: a recorded tcp:tcp_probe trace gives, per ACK, its time, snd_una and srtt; the
harness runs the kernel file's arithmetic over them (32-bit unsigned like the kernel's u32 fields,
jiffies at HZ) and gives the ssthresh Westwood+ sets when a recovery ends (CA_EVENT_COMPLETE_CWR:
ssthresh = cwnd = bw_est × rtt_min / mss), to compare with the cwnd the port actually set.

    WestwoodFilter(hz=250)           the kernel's struct westwood and its functions, one ACK at a time
    replay(trace, hz=..., mss=...)   -> Replay: bw_est, rtt_min, the would-be ssthresh after every ACK
    recovery_exits(trace)            -> [Exit]: the ACKs that ended a recovery, what the port set there
    exit_brackets(trace, exits, ...) -> [(least, greatest)]: the kernel's value at each exit over what
                                        the trace leaves open

What a tcp_probe trace cannot give exactly (exit_brackets() spans the last three):
- the per-ACK RTT sample (ack_sample.rtt_us): the trace has the smoothed srtt (µs); the sample that
  moved it is recovered from tcp_rtt_estimator's EWMA (srtt_sample(); the estimator's sample is the
  oldest segment's RTT, Westwood's the newest's: they differ by the ACK's span, ~0.2 ms here);
- when tcp_westwood_init ran (init_time(), within a jiffy);
- the jiffies counter: jiffies = floor(t × HZ + phase) with an unknown phase in [0, 1);
- whether an ACK took the slow path (CA_ACK_SLOWPATH: SACK blocks, window updates): dupacks
  (snd_una unchanged) surely did; an advancing ACK inside a recovery may have.
tcp_probe fires at the start of tcp_rcv_established, before the ACK is processed: event j shows the
state left by ACK j-1, so ACK j's snd_una is event j+1's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

U32 = 0xFFFFFFFF
USEC_PER_SEC = 1_000_000


def _u32(x: int) -> int:
    return x & U32


def _s32(x: int) -> int:
    x &= U32
    return x - (1 << 32) if x & 0x80000000 else x


def usecs_to_jiffies(us: int, hz: int) -> int:
    """include/linux/jiffies.h _usecs_to_jiffies when HZ divides USEC_PER_SEC: rounds up [jiffies]."""
    per = USEC_PER_SEC // hz
    return (us + per - 1) // per


class WestwoodFilter:
    """struct westwood and the functions of net/ipv4/tcp_westwood.c, with u32 wrap-around.

    Units as in the kernel: rtt, rtt_min, window lengths in jiffies; bk in bytes; bw_ns_est and
    bw_est in bytes per jiffy.
    """

    def __init__(self, *, hz: int = 250, now: int = 0, snd_una: int = 0):
        if hz <= 0 or USEC_PER_SEC % hz:
            raise ValueError(f"hz: must divide 1000000 (100, 250, 1000; not 300), got {hz!r}")
        self.hz = hz
        self.rtt_min_window = hz // 20        # TCP_WESTWOOD_RTT_MIN (HZ/20): 50 ms [jiffies]
        # tcp_westwood_init()
        self.bk = 0
        self.bw_ns_est = 0
        self.bw_est = 0
        self.accounted = 0
        self.cumul_ack = 0
        self.reset_rtt_min = True
        self.rtt = self.rtt_min = 20 * hz      # TCP_WESTWOOD_INIT_RTT (20*HZ) [jiffies]
        self.rtt_win_sx = _u32(now)
        self.snd_una = _u32(snd_una)
        self.first_ack = True
        self.windows: list[tuple[int, int, int, int, int]] = []   # not in the kernel, for reports:
        # per filter update (jiffies at the window's end, delta [jiffies], bk/delta, bw_ns_est, bw_est)

    def _filter(self, delta: int, now: int) -> None:
        """westwood_filter(): first sample fills both; then two 7/8 EWMAs, (7a + b) >> 3."""
        sample = self.bk // delta              # bytes per jiffy over the window, u32 division
        if self.bw_ns_est == 0 and self.bw_est == 0:
            self.bw_ns_est = sample
            self.bw_est = sample
        else:
            self.bw_ns_est = _u32(7 * self.bw_ns_est + sample) >> 3     # westwood_do_filter
            self.bw_est = _u32(7 * self.bw_est + self.bw_ns_est) >> 3
        self.windows.append((now, delta, sample, self.bw_ns_est, self.bw_est))

    def pkts_acked(self, rtt_us: int) -> None:
        """tcp_westwood_pkts_acked(): the last RTT sample, in jiffies (rounded up)."""
        if rtt_us > 0:
            self.rtt = usecs_to_jiffies(rtt_us, self.hz)

    def _update_window(self, now: int, snd_una: int) -> None:
        """westwood_update_window(): close the window after max(rtt, 50 ms) and filter bk/delta."""
        delta = _s32(now - self.rtt_win_sx)
        if self.first_ack:
            self.snd_una = _u32(snd_una)
            self.first_ack = False
        # s32 delta compared with max_t(u32, ...): the comparison is unsigned in C
        if self.rtt and _u32(delta) > max(self.rtt, self.rtt_min_window):
            self._filter(_u32(delta), _u32(now))
            self.bk = 0
            self.rtt_win_sx = _u32(now)

    def _update_rtt_min(self) -> None:
        if self.reset_rtt_min:
            self.rtt_min = self.rtt
            self.reset_rtt_min = False
        else:
            self.rtt_min = min(self.rtt, self.rtt_min)

    def _acked_count(self, snd_una: int, mss: int) -> int:
        """westwood_acked_count(): dupacks count one mss; a cumulative ACK pays back what they counted."""
        self.cumul_ack = _u32(snd_una - self.snd_una)
        if not self.cumul_ack:
            self.accounted = _u32(self.accounted + mss)
            self.cumul_ack = mss
        if self.cumul_ack > mss:
            if self.accounted >= self.cumul_ack:
                self.accounted = _u32(self.accounted - self.cumul_ack)
                self.cumul_ack = mss
            else:
                self.cumul_ack = _u32(self.cumul_ack - self.accounted)
                self.accounted = 0
        self.snd_una = _u32(snd_una)
        return self.cumul_ack

    def in_ack_event(self, now: int, snd_una: int, mss: int, *, slowpath: bool) -> None:
        """tcp_westwood_ack(): slow path counts with westwood_acked_count, fast path snd_una's advance."""
        self._update_window(now, snd_una)
        if slowpath:
            self.bk = _u32(self.bk + self._acked_count(snd_una, mss))
        else:
            self.bk = _u32(self.bk + _u32(snd_una - self.snd_una))   # westwood_fast_bw
            self.snd_una = _u32(snd_una)
        self._update_rtt_min()

    def bw_rttmin(self, mss: int) -> int:
        """tcp_westwood_bw_rttmin(): bw_est × rtt_min / mss [packets], at least 2 (u32 product)."""
        return max(_u32(self.bw_est * self.rtt_min) // mss, 2)

    def loss(self) -> None:
        """CA_EVENT_LOSS (an RTO; the caller sets ssthresh = bw_rttmin): rtt_min restarts at the next ACK."""
        self.reset_rtt_min = True


@dataclass(frozen=True)
class Trace:
    """One sending socket's tcp_probe events, in time order (columns as in trace.COLUMNS)."""
    t: Sequence[float]          # CLOCK_MONOTONIC seconds
    snd_una: Sequence[int]      # state before this ACK was processed
    snd_nxt: Sequence[int]
    snd_cwnd: Sequence[int]     # packets, before this ACK
    ssthresh: Sequence[int]     # tcp_current_ssthresh, before this ACK
    srtt_us: Sequence[int]

    def __post_init__(self):
        n = len(self.t)
        for name in ("snd_una", "snd_nxt", "snd_cwnd", "ssthresh", "srtt_us"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name}: {len(getattr(self, name))} values for {n} events")


@dataclass(frozen=True)
class Replay:
    """After each ACK j (0 .. len-2): the filter's state and the ssthresh a COMPLETE_CWR would set."""
    bw_est: list[int]           # bytes per jiffy
    rtt: list[int]              # the last RTT sample, jiffies
    rtt_min: list[int]          # jiffies
    ssthresh: list[int]         # packets: bw_est × rtt_min / mss
    windows: list[int]          # filter updates so far
    filter: list[tuple[int, int, int, int, int]]   # WestwoodFilter.windows at the end


INFINITE_SSTHRESH = 0x7FFFFFFF   # TCP_INFINITE_SSTHRESH: the probe's field before the first reduction


def _seq_geq(a: int, b: int) -> bool:
    """!before(a, b) on 32-bit sequence numbers."""
    return _s32(a - b) >= 0


@dataclass(frozen=True)
class Exit:
    """A recovery that ended with Westwood+'s CA_EVENT_COMPLETE_CWR at ACK `ack`."""
    entry: int                  # the ACK that entered the recovery
    ack: int                    # the ACK whose processing ended it
    set_low: int                # what the port set (ssthresh = cwnd), packets: low..high
    set_high: int
    reentered: bool             # the same ACK entered a new recovery (Reno halved the value at once)


def recovery_exits(trace: Trace) -> list[Exit]:
    """The recoveries that ended with COMPLETE_CWR, and the ssthresh = cwnd the algorithm set there.

    The probe's field is tcp_current_ssthresh(): in Recovery, the snd_ssthresh set at its entry
    (Reno's cwnd/2); in Open, max(snd_ssthresh, 3/4 cwnd).  A recovery starts where the field changes
    to a value below cwnd that is not 3/4 cwnd, and ends on the first ACK at or past high_seq (snd_nxt at
    its entry; tcp_fastretrans_alert).  If that ACK left cwnd == field, Westwood+ set it (direct exit).
    If losses beyond high_seq made the same ACK enter a new recovery, the field is Reno's half of what
    Westwood+ had just set: the value was 2·field or 2·field + 1 (tcp_reno_ssthresh: max(cwnd >> 1, 2)).
    An exit by undo or RTO (neither) is not an exit here. The exit is judged on the first ACK at or past
    high_seq even when the field does not move (Westwood+'s value equal to Reno's half).
    """
    exits: list[Exit] = []
    entry, high_seq = None, 0
    for j in range(len(trace.t) - 1):
        a, b = j, j + 1
        fa, fb, cb = trace.ssthresh[a], trace.ssthresh[b], trace.snd_cwnd[b]
        enters = fa != fb and fb != INFINITE_SSTHRESH and fb < cb and fb != (cb >> 1) + (cb >> 2)
        if entry is None:
            if enters:
                entry, high_seq = j, trace.snd_nxt[a]
            continue
        # the ACK that ends the recovery, whether or not the field moves: Westwood+'s value may equal the
        # half Reno set at the entry (cwnd came down to it by PRR, and stays)
        if not _seq_geq(trace.snd_una[b], high_seq):
            continue
        if cb == fb:
            exits.append(Exit(entry, j, cb, cb, False))
            entry = None
        elif enters:
            exits.append(Exit(entry, j, 2 * fb, 2 * fb + 1, True))
            entry, high_seq = j, trace.snd_nxt[a]
        else:       # an undo (cwnd back to its value before) or an RTO: no COMPLETE_CWR to compare
            entry = None
    return exits


def srtt_sample(before_us: int, after_us: int) -> int:
    """The RTT sample m that moved srtt from `before` to `after` (µs, as tcp_probe prints srtt_us >> 3):
    tcp_rtt_estimator does srtt8 += m - srtt8 / 8, so m = 8·after - 7·before (± 7 µs from the truncation).
    Unchanged srtt gives m = srtt (a sample equal to it, or none: Westwood+ then keeps the last one)."""
    return 8 * after_us - 7 * before_us


RTT_SOURCES = ("srtt_sample", "srtt")


def init_time(trace: Trace) -> float:
    """When tcp_westwood_init ran: the SYN-ACK's arrival, one srtt before the probe's first event (the ACK
    of the first bytes sent after the handshake, iperf3's cookie; its srtt is the handshake's RTT)."""
    return trace.t[0] - trace.srtt_us[0] / USEC_PER_SEC


def replay(trace: Trace, *, hz: int, mss: int, phase: float = 0.0, slowpath_in_recovery: bool = False,
           init_s: float | None = None, rtt_from: str = "srtt_sample") -> Replay:
    """Run the kernel's arithmetic over the trace's ACKs (ACK j: time t[j], snd_una after it = snd_una[j+1],
    RTT sample srtt_sample(srtt[j], srtt[j+1]), or srtt[j+1] itself with rtt_from="srtt").
    jiffies = floor(t × hz + phase).  Dupacks take the slow path; with slowpath_in_recovery, so does
    every ACK of a recovery (recovery_exits(); SACK-bearing ACKs take the slow path in
    tcp_rcv_established).  The two settings bracket the kernel's accounting.

    init_s: when tcp_westwood_init ran (its rtt_win_sx starts the first window); init_time() by default.
    """
    if not 0.0 <= phase < 1.0:
        raise ValueError(f"phase: in [0, 1), got {phase!r}")
    if mss <= 0:
        raise ValueError(f"mss: a positive byte count, got {mss!r}")
    if rtt_from not in RTT_SOURCES:
        raise ValueError(f"rtt_from: one of {RTT_SOURCES}, got {rtt_from!r}")
    if len(trace.t) < 2:
        raise ValueError("trace: at least two events")

    def jiffies(t: float) -> int:
        return math.floor(t * hz + phase)

    if init_s is None:
        init_s = init_time(trace)
    w = WestwoodFilter(hz=hz, now=jiffies(init_s), snd_una=trace.snd_una[0])
    recovering = [False] * len(trace.t)
    if slowpath_in_recovery:
        for ex in recovery_exits(trace):
            recovering[ex.entry:ex.ack + 1] = [True] * (ex.ack + 1 - ex.entry)
    out = Replay([], [], [], [], [], w.windows)
    for j in range(len(trace.t) - 1):
        una = trace.snd_una[j + 1]
        srtt = trace.srtt_us
        w.pkts_acked(srtt_sample(srtt[j], srtt[j + 1]) if rtt_from == "srtt_sample" else srtt[j + 1])
        dup = una == w.snd_una and not w.first_ack
        w.in_ack_event(jiffies(trace.t[j]), una, mss, slowpath=dup or recovering[j])
        out.bw_est.append(w.bw_est)
        out.rtt.append(w.rtt)
        out.rtt_min.append(w.rtt_min)
        out.ssthresh.append(w.bw_rttmin(mss))
        out.windows.append(len(w.windows))
    return out


PHASES = (0.0, 0.25, 0.5, 0.75)


def exit_brackets(trace: Trace, exits: Sequence[Exit], *, hz: int, mss: int,
                  phases: Sequence[float] = PHASES, init_s: float | None = None) -> list[tuple[int, int]]:
    """(least, greatest) ssthresh the kernel's arithmetic gives at each exit over what the trace leaves
    open: the jiffies phase, fast or slow path for a recovery's advancing ACKs, and when init ran
    (init_s, init_time() by default, or up to a jiffy earlier if the first bytes left late)."""
    default_init = init_time(trace) if init_s is None else init_s
    values: list[list[int]] = [[] for _ in exits]
    for phase in phases:
        for slow in (False, True):
            for init_s in (default_init, default_init - 1 / hz):
                r = replay(trace, hz=hz, mss=mss, phase=phase, slowpath_in_recovery=slow, init_s=init_s)
                for k, ex in enumerate(exits):
                    values[k].append(r.ssthresh[ex.ack])
    return [(min(v), max(v)) for v in values]
