"""One iperf3 run: the real iperf3 binary, its JSON output parsed into store rows.

`run(...)` starts a one-off server (`iperf3 -s -1 -J`) where one is needed, waits until it listens
(polling `ss` in the server's namespace, never a sleep), runs the client, kills whatever is left on a
timeout or an interrupt and returns the raw JSON with its parse. `parse(doc)` is shared with the importer.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .. import interrupts
from . import iperf_json
from ..errors import IperfDocumentError, IperfError

SYSCTLS = (
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem", "net.core.rmem_max",
    "net.core.wmem_max", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_sack",
    "net.ipv4.tcp_moderate_rcvbuf", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_adv_win_scale", "net.ipv4.tcp_shrink_window", "net.core.default_qdisc",
)


class Host(Protocol):
    """Where processes run: EmulatedLink (roles sender/router/receiver) or LocalHost."""

    def popen(self, ns_role: str, argv: list[str], **kw) -> subprocess.Popen: ...

    def run(self, ns_role: str, argv: list[str], *, check: bool = True,
            timeout: float | None = None) -> subprocess.CompletedProcess: ...

    def stop_process(self, proc: subprocess.Popen) -> None: ...


class LocalHost:
    """The caller's own network namespace (remote mode): every role runs here."""

    def popen(self, ns_role: str, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(argv, **kw)

    def run(self, ns_role: str, argv: list[str], *, check: bool = True,
            timeout: float | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(argv, check=check, timeout=timeout, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)

    def stop_process(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@dataclass
class Parsed:
    """What one iperf3 JSON document says, keyed by store column names."""
    run: dict
    intervals: list[dict]
    flags: list[str] = field(default_factory=list)


# -- parsing ------------------------------------------------------------------------------------
def parse(doc, bidir: str | None = None, *, size_bytes: int | None = None,
          interval_s: float | None = None) -> Parsed:
    """Store rows from iperf3 -J output (client side, optionally with --get-server-output); of a
    --bidir result, one direction (iperf_json.directions). Raises IperfError; IperfDocumentError (its
    JSON path named) when a value is not a coherent iperf3 result: every value used is checked once,
    by iperf_json.read.

    A fixed-size transfer (-n) is timed by its delivery (`delivered_at`): the throughput is F over the
    time the receiver had read F bytes (size_bytes, default -n's), on the receiver's intervals; a
    transfer whose receiver never read F is flagged `size_undelivered` and keeps iperf3's own rate.
    interval_s: the intervals are summed into bins of this length (the 1 s traces the analyses read,
    from the finer intervals a delivery time needs)."""
    d = iperf_json.read(doc, bidir)
    flags: list[str] = []
    total, which = d.sum_received, "end.sum_received"
    if total is None or not total.bytes:
        if d.sum_sent is None:
            raise IperfDocumentError("end.sum_sent", "missing, and end.sum_received counts no bytes")
        total, which = d.sum_sent, "end.sum_sent"
        flags.append("throughput_sender_side")
    if not total.end > total.start:
        raise IperfDocumentError(f"{which}.end", f"{total.end:g} s: the test must last longer than 0 s")
    throughput, delivered_s = total.bits_per_second, None
    size = size_bytes if size_bytes is not None else d.test_bytes
    if size:
        receiving = (d.client if d.reverse else d.server) if bidir is None else None
        delivered_s = delivered_at(receiving.intervals if receiving else (), size)
        if delivered_s is not None:
            throughput = 8 * size / delivered_s
        elif which == "end.sum_sent" or total.bytes < size:
            flags.append("size_undelivered")

    # loaded RTT: the sender's smoothed RTT per stream (µs); in reverse mode the sender is the server
    rtts = d.client.sender_rtts
    if not any(mean for mean, _ in rtts) and d.server:
        rtts = d.server.sender_rtts
    means = [mean for mean, _ in rtts if mean]
    mins = [low for _, low in rtts if low]

    effective = None
    if d.sock_bufsize:
        granted = [d.client.sndbuf_actual, d.client.rcvbuf_actual]
        if d.server:
            granted += [d.server.sndbuf_actual, d.server.rcvbuf_actual]
        granted = [g for g in granted if g]
        effective = min(granted) if granted else None

    # 1 s traces: bytes as the receiver counted them (the sender's count bytes written into socket
    # buffers, which run ahead of the link by up to the buffer), cwnd/RTT/retransmits from the sender.
    other = d.server if d.server and d.server.intervals else None
    sender, receiver = (other, d.client) if d.reverse else (d.client, other)
    if sender is None:
        intervals = _intervals(receiver.intervals)
        flags.append("intervals_receiver_side")
    elif receiver is None:
        intervals = _intervals(sender.intervals)
        flags.append("intervals_sender_bytes")
    else:
        intervals = _merged_intervals(sender, receiver, flags)
    if interval_s is not None:
        intervals = coarsened(intervals, interval_s)

    system = (d.system_info or "").split()
    duration = total.end - total.start
    run = {
        "cc_reported": d.sender_tcp_congestion,
        "streams": d.num_streams,
        "socket_buffer_bytes": d.sock_bufsize,
        "effective_socket_buffer_bytes": effective,
        "transfer_bytes": d.test_bytes,
        "duration_target_s": d.test_duration if not d.test_bytes else None,
        "reverse": d.reverse,
        "throughput_bps": throughput,
        "size_delivered_s": delivered_s,
        "bytes_transferred": total.bytes,
        "duration_s": duration,
        "retransmits": d.sum_sent.retransmits if d.sum_sent else None,
        "rtt_loaded_mean_ms": sum(means) / len(means) / 1e3 if means else None,
        "rtt_loaded_min_ms": min(mins) / 1e3 if mins else None,
        "kernel": system[2] if len(system) > 2 else None,
        "iperf3_version": d.version.split()[-1] if d.version and d.version.split() else None,
        "started_at": _ts(d.timesecs),
        "finished_at": _ts(d.timesecs + duration) if d.timesecs is not None else None,
    }
    return Parsed(run, intervals, flags)


def delivered_at(intervals: tuple[iperf_json.Interval, ...], size: int) -> float | None:
    """When the receiver had read `size` bytes [s, on its intervals' clock, which starts when it sends
    TEST_START]: the interval in which its count reaches size, at a constant rate inside that interval
    (iperf3 -i 0.1: at 10 Gbit/s one interval is 125 MB). None when the count never reaches size."""
    done = 0
    for it in intervals:
        if done + it.sum.bytes >= size and it.sum.bytes > 0:
            return it.sum.start + (size - done) / it.sum.bytes * (it.sum.end - it.sum.start)
        done += it.sum.bytes
    return None


def coarsened(rows: list[dict], interval_s: float) -> list[dict]:
    """Interval rows summed per stream into bins of interval_s (an interval belongs to the bin its end
    falls in, the last bin ends with the test): bytes and retransmits add up, the rate is over the bin,
    cwnd and RTT are the last interval's (iperf3 samples them at each interval's end)."""
    bins: dict[tuple, dict] = {}
    for r in rows:
        key = (r["stream"], math.ceil(r["end_s"] / interval_s - 1e-6))
        b = bins.get(key)
        if b is None:
            bins[key] = dict(r)
            continue
        b["end_s"] = r["end_s"]
        b["bytes"] += r["bytes"]
        b["snd_cwnd_bytes"], b["rtt_us"] = r["snd_cwnd_bytes"], r["rtt_us"]
        if r["retransmits"] is not None:
            b["retransmits"] = (b["retransmits"] or 0) + r["retransmits"]
        b["omitted"] = bool(b["omitted"]) or bool(r["omitted"])
    out = list(bins.values())
    for b in out:
        span = b["end_s"] - b["start_s"]
        b["bits_per_second"] = 8 * b["bytes"] / span if span > 0 else b["bits_per_second"]
    return out


def _ts(secs: float | None):
    if secs is None:
        return None
    return dt.datetime.fromtimestamp(secs, dt.timezone.utc).replace(tzinfo=None)


def _intervals(items: tuple[iperf_json.Interval, ...]) -> list[dict]:
    rows = []
    for it in items:
        rows.extend(_interval(s, i) for i, s in enumerate(it.streams))
        rows.append(_interval(it.sum, None))
    return rows


def _merged_intervals(sender: iperf_json.Side, receiver: iperf_json.Side, flags: list[str]) -> list[dict]:
    """Rows on the receiver's interval grid: bytes and rate received; the sender's cwnd and RTT at the
    end of its interval ending nearest, and its retransmits summed over its intervals inside. Streams
    are matched by their port pairs (by position, flagged, where they do not pair up: a NAT between)
    and numbered in the sender's order."""
    s_index = {c.socket: i for i, c in enumerate(sender.connected)}
    s_socket = {(c.local_port, c.remote_port): c.socket for c in sender.connected}
    to_sender = {c.socket: s_socket.get((c.remote_port, c.local_port)) for c in receiver.connected}
    if None in to_sender.values() or len(set(to_sender.values())) != len(to_sender):
        to_sender = {r.socket: s.socket for r, s in zip(receiver.connected, sender.connected)}
        flags.append("streams_matched_by_order")
    # each sender interval belongs to exactly one receiver interval: the first ending at or after it
    # (the two clocks start a few ms apart: a sender interval may end just past the receiver's)
    r_ends = [it.sum.end for it in receiver.intervals]
    owner = []
    for it in sender.intervals:
        width = it.sum.end - it.sum.start
        owner.append(next((k for k, e in enumerate(r_ends) if e >= it.sum.end - 0.05 * width), len(r_ends) - 1))
    rows = []
    for k, r_item in enumerate(receiver.intervals):
        b = r_ends[k]
        inside = [it for it, o in zip(sender.intervals, owner) if o == k]
        nearest = min(sender.intervals, key=lambda it: abs(it.sum.end - b))

        def merged(received: iperf_json.Sample, stream: int | None, pick) -> dict:
            row = _interval(received, stream)
            snap = pick(nearest)
            row["snd_cwnd_bytes"], row["rtt_us"] = (snap.snd_cwnd, snap.rtt) if snap else (None, None)
            counts = [x.retransmits for x in map(pick, inside) if x and x.retransmits is not None]
            row["retransmits"] = sum(counts) if counts else None
            return row

        for r_stream in r_item.streams:
            sock = to_sender[r_stream.socket]
            by_socket = lambda it, sock=sock: next((x for x in it.streams if x.socket == sock), None)
            rows.append(merged(r_stream, s_index[sock], by_socket))
        rows.append(merged(r_item.sum, None, lambda it: it.sum))
    return rows


def _interval(s: iperf_json.Sample, stream: int | None) -> dict:
    return {
        "stream": stream, "start_s": s.start, "end_s": s.end,
        "bytes": s.bytes, "bits_per_second": s.bits_per_second,
        "snd_cwnd_bytes": s.snd_cwnd, "rtt_us": s.rtt,
        "retransmits": s.retransmits, "omitted": s.omitted,
    }


# -- running ------------------------------------------------------------------------------------
@dataclass
class Outcome:
    raw_json: str | None          # the client's -J output as produced (None if it printed nothing)
    parsed: Parsed | None
    failure_reason: str | None
    argv: list[str]


SIZE_INTERVAL_S = 0.1   # iperf3's smallest -i: the grid a fixed-size transfer's delivery is timed on
TRACE_INTERVAL_S = 1    # the stored intervals: the 1 s traces the analyses read (HPDC'17 §4)


def report_interval_s(transfer_bytes: int | None) -> float:
    """iperf3's -i for a run: the trace's grid, or SIZE_INTERVAL_S for a fixed-size transfer."""
    return TRACE_INTERVAL_S if transfer_bytes is None else SIZE_INTERVAL_S


def stored_interval_s(transfer_bytes: int | None) -> float | None:
    """The bins parse() sums a run's intervals into: None when iperf3 already reports on the trace's grid."""
    return None if report_interval_s(transfer_bytes) == TRACE_INTERVAL_S else TRACE_INTERVAL_S


# What an autotuned send buffer can hold (tcp_sndbuf_expand, net/ipv4/tcp_input.c): sk_sndbuf =
# min(tcp_wmem[2], SNDBUF_EXPAND · max(TCP_INIT_CWND, cwnd) · per_mss), per_mss = roundup_pow_of_two(mss +
# MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(skb_shared_info))) + SKB_DATA_ALIGN(sizeof(sk_buff)); x86-64 sizes.
SNDBUF_EXPAND = 2            # "Cubic needs 1.7 factor, rounded to 2" (no variant here sets ca_ops->sndbuf_expand)
TCP_INIT_CWND = 10           # segments (include/net/tcp.h)
MAX_TCP_HEADER = 320         # bytes: L1_CACHE_ALIGN(128 + MAX_HEADER)
SKB_SHARED_INFO = 320        # bytes: SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
SK_BUFF = 256                # bytes: SKB_DATA_ALIGN(sizeof(struct sk_buff))
SLOW_START_OVERSHOOT = 2     # the largest window: slow start doubles past the link's C·τ + β before a loss is seen


def autotuned_send_buffers_bytes(window_bytes: float, mss: int, streams: int) -> int:
    """The most payload the autotuned send buffers of `streams` flows hold on a link whose largest window (all
    flows) is C·τ + β = window_bytes: each buffer grows to SNDBUF_EXPAND · cwnd · per_mss (tcp_sndbuf_expand),
    and never shrinks; the flows' windows sum to at most SLOW_START_OVERSHOOT · window_bytes (slow start's last
    doubling), each at least TCP_INIT_CWND segments. A socket's queued payload is at most its sk_sndbuf
    (sk_wmem_queued counts each skb's truesize ≥ its payload). At MTU 9000: 7.44·(C·τ + β)."""
    per_mss = (1 << math.ceil(math.log2(mss + MAX_TCP_HEADER + SKB_SHARED_INFO))) + SK_BUFF      # bytes
    segments = max(streams * TCP_INIT_CWND, math.ceil(SLOW_START_OVERSHOOT * window_bytes / mss))
    return SNDBUF_EXPAND * segments * per_mss


def size_request_bytes(transfer_bytes: int, streams: int, socket_buffer: int | None,
                       autotuned_bytes: int | None = None) -> int:
    """What to ask iperf3 -n for so that the receiver reads transfer_bytes F before the test ends.
    iperf3 -n ends when the client has WRITTEN F into its sockets (iperf_client_api.c: bytes_sent >=
    settings->bytes → TEST_END), and the server then closes its sockets (iperf_server_api.c, TEST_END):
    whatever the send buffers still held never arrives — with 10 streams of 256 MiB buffers, 2.5 GiB,
    more than a 1 GB transfer (measured: the receiver read 3.2 MB of 1 GB at 366 ms). A socket's
    unacknowledged and unsent bytes fit in its send buffer, granted at twice the -w request
    (net/core/sock.c: sk_sndbuf = max(val * 2, SOCK_MIN_SNDBUF)), so after F + n·2w written at least F
    are acknowledged; acknowledged bytes the server has not read yet sit in its receive buffer, which -w
    sets too (iperf_tcp.c: SO_RCVBUF on both ends; sk_rcvbuf = 2·w) and which the server drops unread at
    TEST_END (seen: 53 KB of 300 MB short with 2 streams of 100 KB). After F + n·(2w + 2w) written the
    server has read at least F. Autotuned buffers (no -w): F + `autotuned_bytes`, what the send buffers can
    hold on the link (autotuned_send_buffers_bytes; an emulated link, where C, τ and β are known: the
    receiver's unread bytes have no such bound, and a transfer whose receiver did not read F is still
    flagged, parse); None (a remote link): F is asked for."""
    if socket_buffer:
        return transfer_bytes + streams * (2 + 2) * socket_buffer      # send + receive buffer
    return transfer_bytes + (autotuned_bytes or 0)


def client_argv(addr: str, port: int, *, cc: str, streams: int, socket_buffer: int | None,
                transfer_bytes: int | None, duration_s: int | None, reverse: bool,
                zerocopy: bool = False, autotuned_bytes: int | None = None) -> list[str]:
    """The client's command line; a fixed-size transfer asks for more than F (size_request_bytes) and
    reports every SIZE_INTERVAL_S, so that its delivery of F can be timed (parse)."""
    interval = str(report_interval_s(transfer_bytes))
    argv = ["iperf3", "-c", addr, "-p", str(port), "-C", cc, "-P", str(streams), "-i", interval, "-J",
            "--get-server-output"]
    if socket_buffer is not None:
        argv += ["-w", str(socket_buffer)]
    argv += (["-n", str(size_request_bytes(transfer_bytes, streams, socket_buffer, autotuned_bytes))]
             if transfer_bytes is not None
             else ["-t", str(duration_s)])
    if reverse:
        argv.append("-R")
    if zerocopy:      # iperf3 -Z: the sender writes with sendfile(2) from a mapped file, no copy into the socket
        argv.append("-Z")
    return argv


WATCH_INTERVAL_S = 0.25   # how often a running test checks `watch` (the link's parts)


def run(host: Host, addr: str, port: int, client: list[str], *, timeout_s: float,
        start_server: bool = True, ready_timeout_s: float = 20.0,
        watch: Callable[[], str | None] | None = None, size_bytes: int | None = None,
        interval_s: float | None = None) -> Outcome:
    """Run one iperf3 test. A failure (timeout, iperf3 error, bad output, a killed client or server, a
    taken server port) is reported with a reason naming the part that failed, not raised;
    KeyboardInterrupt propagates after both processes are killed.  `watch`, polled while the client
    runs, names a failed part of the path (e.g. a dead delay engine): the test is stopped at once."""
    srv = cli = None
    try:
        if start_server:
            # -J: its JSON reaches the client (--get-server-output), so its own stdout is not needed
            with interrupts.held():   # a Ctrl-C inside Popen would lose the server: finally could not stop it
                srv = host.popen("receiver", ["iperf3", "-s", "-1", "-J", "-p", str(port)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                wait_listening(host, "receiver", port, srv, ready_timeout_s)
            except IperfError as e:
                return Outcome(None, None, str(e), client)
        with interrupts.held():
            cli = host.popen("sender", client, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                out, err = cli.communicate(timeout=max(0.0, min(WATCH_INTERVAL_S, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                broken = watch() if watch is not None else None
                if broken or time.monotonic() >= deadline:
                    host.stop_process(cli)
                    return Outcome(None, None, broken or f"timeout: iperf3 did not finish within {timeout_s:.0f} s",
                                   client)
        server_death = _killed("iperf3 server", srv)
        raw = out.strip() or None
        if raw is None:
            reason = _killed("iperf3 client", cli) or f"iperf3 client exited {cli.returncode} without output: " \
                                                      f"{_one_line(err)}"
            return Outcome(None, None, f"{server_death}; {reason}" if server_death else reason, client)
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            return Outcome(raw, None, f"iperf3 output is not JSON ({e.msg})", client)
        try:
            return Outcome(raw, parse(doc, size_bytes=size_bytes, interval_s=interval_s), None, client)
        except IperfError as e:
            return Outcome(raw, None, f"{server_death}; {e}" if server_death else str(e), client)
    finally:
        for p in (cli, srv):
            if p is not None:
                host.stop_process(p)


def _killed(part: str, proc: subprocess.Popen | None) -> str | None:
    """'iperf3 server killed by SIGKILL' when proc has ended by a signal we did not send."""
    code = proc.poll() if proc is not None else None
    if code is None or code >= 0:
        return None
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{part} killed by {name}"


def wait_listening(host: Host, role: str, port: int, server: subprocess.Popen, timeout_s: float) -> None:
    """Poll `ss` in the server's namespace until OUR server listens on the port (another process
    listening there does not count); fail if the server exits first (with -J its reason, e.g. the
    port in use, is in its JSON, not on stderr: the caller looks at the port, see campaign.port_taken)."""
    deadline = time.monotonic() + timeout_s
    while f"pid={server.pid}," not in host.run(role, ["ss", "-Hltnp", f"sport = :{port}"], check=False,
                                                 timeout=10).stdout:
        if server.poll() is not None:
            err = _one_line(server.stderr.read() if server.stderr else "")
            raise IperfError(f"iperf3 server on port {port} exited {server.returncode}: {err}")
        if time.monotonic() > deadline:
            raise IperfError(f"iperf3 server not listening on port {port} after {timeout_s:.0f} s")
        try:
            server.wait(timeout=0.02)  # bounded poll interval; returns at once if the server dies
        except subprocess.TimeoutExpired:
            pass


def _one_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "(no message)"


# -- host metadata -------------------------------------------------------------------------------
def read_sysctls(host: Host, role: str) -> dict[str, str]:
    """The TCP-relevant sysctls as seen inside `role`'s namespace (missing keys are left out)."""
    out = host.run(role, ["sysctl", "-e", *SYSCTLS], check=False, timeout=10).stdout
    values = {}
    for line in out.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            values[key.strip()] = re.sub(r"\s+", " ", value.strip())
    return values


def autotuning_ceiling(sender: dict, receiver: dict) -> int | None:
    """Without -w the kernel autotunes up to tcp_wmem[2] (sender) and tcp_rmem[2] (receiver)."""
    try:
        return min(int(sender["net.ipv4.tcp_wmem"].split()[2]), int(receiver["net.ipv4.tcp_rmem"].split()[2]))
    except (KeyError, IndexError, ValueError):
        return None


def iperf3_version() -> str:
    out = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"iperf\s+(\S+)", out)
    return m.group(1) if m else "unknown"


def kernel_release() -> str:
    return os.uname().release
