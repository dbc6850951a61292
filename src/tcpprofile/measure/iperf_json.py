"""Checked reading of iperf3 -J output: every value the project uses, validated once, then trusted.

`read(doc)` walks a decoded iperf3 document and returns frozen dataclasses (Document, Side, Interval,
Sample) holding only well-typed, finite, in-range values that agree with each other; anything else
raises IperfDocumentError naming its JSON path, e.g.
``end.sum_received.bits_per_second: NaN is not a rate``. iperf.parse turns a Document into store rows.

Ranges: rates 0..1e15 bit/s; byte, retransmit, window and RTT counts whole numbers 0..2^63−1 (the
store's BIGINT); times 0..1e7 s from the test's start; timestamps up to the year 9999; streams 1..128
(iperf3 -P's limit); ports 0..65535.

Coherence (iperf3 adds its sums up from the same integer counters, so counts must match exactly):
- each interval's sum: bytes (and retransmits, where all are given) = the sum over its streams;
- end.sum_sent / end.sum_received: bytes (and retransmits) = the sum over end.streams[*].sender / .receiver;
- every rate agrees with its bytes over its length t, end − start or iperf3's own `seconds`:
  |bps·t − 8·bytes| ≤ 10⁻³·8·bytes + bps·2 µs (0.1 %, plus what the µs rounding of two printed
  times can account for);
- start ≤ end in every sample; each interval starts where the previous one ended or later (±2 µs).
  With -O, iperf3 3.12 restarts its clock inside the first interval after the omitted ones, which
  then ends before its start: that interval is taken to start at max(0, end − seconds) on the new
  clock, and the check starts again there.
- num_streams = len(start.connected) = len(end.streams) = len(streams) of every interval, on both
  sides; an interval's streams are distinct connected sockets; min_rtt ≤ mean_rtt.

--bidir (iperf3 ≥ 3.7): one test, two directions at once over 2·num_streams connections. Each side
marks every stream `sender` (true where that side sends); `sum`, `end.sum_sent`/`sum_received` are the
client-to-server direction, `sum_bidir_reverse`, `end.*_bidir_reverse` the server-to-client one.
`directions(doc)` tells whether a document is one: ("forward", "reverse"), else (None,); `read(doc,
bidir=…)` then reads one direction as if it were a test of its own (the reverse one as -R), every
check above applied to that direction's streams and sums, with paths naming the original JSON. A
side's RTT and cwnd are taken only from streams it sends on (iperf3 also prints them for the socket
that receives, where they describe the ACKs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import IperfDocumentError, IperfError

MAX_RATE_BPS = 1e15              # a petabit per second: above any interface iperf3 can drive
MAX_COUNT = 2**63 - 1            # the store's BIGINT
MAX_TIME_S = 1e7                 # seconds from the test's start (iperf3 -t allows 86400)
MAX_TIMESECS = 253402300799      # 9999-12-31 23:59:59 UTC: the last second a timestamp can hold
MAX_STREAMS = 128                # iperf3 -P
MAX_RTT_US = 10**9               # 1000 s
RATE_REL_TOL = 1e-3
TIME_ROUNDING_S = 1e-6           # iperf3 prints times to the µs
_CC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,16}")  # TCP_CA_NAME_MAX = 16
_ABSENT = object()
BIDIR = ("forward", "reverse")
_BIDIR_SUFFIX = {None: "", "forward": "", "reverse": "_bidir_reverse"}


@dataclass(frozen=True)
class Sample:
    """One stream's (or the sum's) numbers over one interval or over the whole test."""
    start: float                  # s from the test's start
    end: float
    bytes: int
    bits_per_second: float
    retransmits: int | None = None
    snd_cwnd: int | None = None   # bytes
    rtt: int | None = None        # µs
    omitted: bool | None = None
    socket: int | None = None


@dataclass(frozen=True)
class Interval:
    streams: tuple[Sample, ...]
    sum: Sample


@dataclass(frozen=True)
class Conn:
    socket: int
    local_port: int
    remote_port: int


@dataclass(frozen=True)
class Side:
    """One end's output: the client's document, or the server's (--get-server-output)."""
    connected: tuple[Conn, ...]
    intervals: tuple[Interval, ...]
    sndbuf_actual: int | None
    rcvbuf_actual: int | None
    sender_rtts: tuple[tuple[int | None, int | None], ...]   # per stream (mean_rtt, min_rtt), µs


@dataclass(frozen=True)
class Document:
    client: Side
    server: Side | None
    num_streams: int
    reverse: bool
    test_bytes: int | None        # -n; None in duration mode
    test_duration: float | None   # -t
    sock_bufsize: int | None      # -w; None: autotuning
    version: str | None
    system_info: str | None
    timesecs: float | None
    sum_sent: Sample | None
    sum_received: Sample | None
    sender_tcp_congestion: str | None


def show(v) -> str:
    """A short JSON-like rendering of a value for a rejection reason."""
    if v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, int):
        return str(v) if v.bit_length() <= 128 else f"an integer of {v.bit_length()} bits"
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return repr(v[:40]) + ("…" if len(v) > 40 else "")
    return {dict: "an object", list: "a list"}.get(type(v), type(v).__name__)


class _Obj:
    """A JSON object and its path; the getters return validated values (None when optional and absent)."""

    def __init__(self, value, path: str):
        if not isinstance(value, dict):
            raise IperfDocumentError(path, f"{show(value)} is not an object")
        self.v, self.path = value, path

    def at(self, key) -> str:
        return f"{self.path}.{key}" if self.path else str(key)

    def _get(self, key, required: bool):
        if key in self.v:
            return self.v[key]
        if required:
            raise IperfDocumentError(self.at(key), "missing")
        return _ABSENT

    def obj(self, key, required: bool = True) -> _Obj | None:
        v = self._get(key, required)
        return None if v is _ABSENT else _Obj(v, self.at(key))

    def objs(self, key, required: bool = True) -> list[_Obj]:
        v = self._get(key, required)
        if v is _ABSENT:
            return []
        if not isinstance(v, list):
            raise IperfDocumentError(self.at(key), f"{show(v)} is not a list")
        return [_Obj(x, f"{self.at(key)}[{i}]") for i, x in enumerate(v)]

    def num(self, key, what: str, hi: float, required: bool = True) -> float | None:
        v = self._get(key, required)
        if v is _ABSENT:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise IperfDocumentError(self.at(key), f"{show(v)} is not a {what}")
        _in_range(self.at(key), v, what, hi)
        return float(v)

    def count(self, key, what: str, hi: int = MAX_COUNT, required: bool = True) -> int | None:
        v = self._get(key, required)
        if v is _ABSENT:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise IperfDocumentError(self.at(key), f"{show(v)} is not a {what} (a whole number)")
        _in_range(self.at(key), v, what, hi)
        return v

    def text(self, key) -> str | None:
        v = self._get(key, False)
        if v is _ABSENT:
            return None
        if not isinstance(v, str):
            raise IperfDocumentError(self.at(key), f"{show(v)} is not a string")
        return v

    def flag(self, key) -> bool | None:
        """true/false, or iperf3's 0/1."""
        v = self._get(key, False)
        if v is _ABSENT:
            return None
        if v not in (0, 1) or not isinstance(v, (bool, int)):
            raise IperfDocumentError(self.at(key), f"{show(v)} is not true/false or 0/1")
        return bool(v)


def _in_range(path: str, v, what: str, hi) -> None:
    if v < 0:
        raise IperfDocumentError(path, f"{show(v)} is negative: not a {what}")
    if v > hi:
        raise IperfDocumentError(path, f"{show(v)} is above {hi:g}: not a {what} iperf3 reports")


# -- the document ---------------------------------------------------------------------------------
def directions(doc) -> tuple[str | None, ...]:
    """("forward", "reverse") for a --bidir result (it has end.sum_sent_bidir_reverse or
    end.sum_received_bidir_reverse), (None,) for any other document: the values to pass to read()."""
    end = doc.get("end") if isinstance(doc, dict) else None
    if isinstance(end, dict) and any(f"{k}_bidir_reverse" in end for k in ("sum_sent", "sum_received")):
        return BIDIR
    return (None,)


def read(doc, bidir: str | None = None) -> Document:
    """Validate an iperf3 -J document (client side, optionally with --get-server-output); of a --bidir
    result, the direction `bidir` ("forward": client to server, "reverse": server to client)."""
    if bidir not in _BIDIR_SUFFIX:
        raise ValueError(f"bidir={bidir!r}: one of None, {', '.join(map(repr, BIDIR))}")
    if not isinstance(doc, dict):
        raise IperfDocumentError("document", f"{show(doc)}, not an iperf3 JSON object")
    if doc.get("error"):
        err = doc["error"]
        raise IperfError(f"iperf3 error: {err if isinstance(err, str) else show(err)}")
    for key in ("start", "intervals", "end"):
        if key not in doc:
            raise IperfDocumentError(key, "no such section (iperf3 did not finish)")
    if directions(doc) != (None,) and bidir is None:
        raise IperfDocumentError("end.sum_sent_bidir_reverse", "a --bidir result holds two directions: "
                                                               "read each on its own (iperf_json.directions)")
    if directions(doc) == (None,) and bidir is not None:
        raise IperfDocumentError("end", f"not a --bidir result: it has no {bidir} direction of its own")
    suffix = _BIDIR_SUFFIX[bidir]
    top = _Obj(doc, "")
    start, end = top.obj("start"), top.obj("end")
    ts = start.obj("test_start")
    protocol = ts.text("protocol") or "TCP"
    if protocol != "TCP":
        raise IperfDocumentError(ts.at("protocol"), f"{protocol!r}: only TCP runs are supported")
    if bidir and ts.flag("reverse"):
        raise IperfDocumentError(ts.at("reverse"), "true in a --bidir result: iperf3 runs -R or --bidir, not both")
    n_connected = len(start.objs("connected"))
    n = ts.count("num_streams", "stream count", MAX_STREAMS, required=False)
    n = (n_connected // (2 if bidir else 1)) if n is None else n
    if n < 1:
        raise IperfDocumentError(ts.at("num_streams"), f"{n}: a test has 1 to {MAX_STREAMS} streams")

    client = _side(top, n, server=False, bidir=bidir)
    server = None
    if "server_output_json" in doc:
        server = _side(top.obj("server_output_json"), n, server=True, bidir=bidir)

    sum_sent, sum_received = end.obj("sum_sent" + suffix, False), end.obj("sum_received" + suffix, False)
    if sum_sent is None and sum_received is None:
        raise IperfDocumentError("end", f"no sum_received{suffix} or sum_sent{suffix} (truncated output)")
    streams = [s for _, s in _direction(end.objs("streams"), _sends(False, bidir), lambda s: s.obj("sender"))]
    totals = {}
    for role, total in (("sender", sum_sent), ("receiver", sum_received)):
        if total is not None:
            totals[role] = _sample(total)
            parts = [_sample(s.obj(role)) for s in streams]
            _sums_match(total, totals[role], parts, "end.streams[*]." + role + (f" ({bidir})" if bidir else ""))
    cc = end.text("sender_tcp_congestion") or None
    if cc is not None and not _CC_NAME.fullmatch(cc):
        raise IperfDocumentError(end.at("sender_tcp_congestion"), f"{show(cc)} is not a congestion-control name")
    timestamp = start.obj("timestamp", False)
    return Document(
        client=client, server=server, num_streams=n,
        reverse=bidir == "reverse" if bidir else bool(ts.flag("reverse")),
        test_bytes=ts.count("bytes", "byte count", required=False) or None,
        test_duration=ts.num("duration", "duration", MAX_TIME_S, required=False) or None,
        sock_bufsize=start.count("sock_bufsize", "socket buffer size", required=False) or None,
        version=start.text("version"), system_info=start.text("system_info"),
        timesecs=timestamp.num("timesecs", "timestamp", MAX_TIMESECS, required=False) if timestamp else None,
        sum_sent=totals.get("sender"), sum_received=totals.get("receiver"),
        sender_tcp_congestion=cc)


def _sends(server: bool, bidir: str | None) -> bool | None:
    """Whether this side's streams of the direction carry `sender: true` (None: not --bidir)."""
    return None if bidir is None else server == (bidir == "reverse")


def _direction(items: list[_Obj], sends: bool | None, marked) -> list[tuple[int, _Obj]]:
    """(index, item) of the items of one --bidir direction: those whose `marked(item)` says `sender`
    = sends; all items when sends is None."""
    if sends is None:
        return list(enumerate(items))
    kept = []
    for i, item in enumerate(items):
        flag = marked(item).flag("sender")
        if flag is None:
            raise IperfDocumentError(marked(item).at("sender"), "missing: a --bidir stream says which side sends")
        if flag == sends:
            kept.append((i, item))
    return kept


def _side(o: _Obj, n: int, *, server: bool, bidir: str | None = None) -> Side:
    """One end's connections, intervals, granted buffers and per-stream sender RTTs (of one --bidir
    direction: `bidir`). The client's intervals and end.streams are required; the server's are used
    where present."""
    start = o.obj("start")
    connected = tuple(_conn(c) for c in start.objs("connected"))
    items = o.objs("intervals", required=not server)
    if not server and not items:
        raise IperfDocumentError(o.at("intervals"), "empty: iperf3 reported no interval")
    both = 2 if bidir else 1
    if (items or not server) and len(connected) != both * n:
        raise IperfDocumentError(start.at("connected"), f"{len(connected)} connections for {n} streams"
                                                        + (" in each direction (--bidir)" if bidir else ""))
    if len({c.socket for c in connected}) != len(connected):
        raise IperfDocumentError(start.at("connected"), "a socket is listed twice")
    sockets = {c.socket for c in connected}
    sends = _sends(server, bidir)
    if sends is not None and items:
        # the direction's sockets: those the first interval marks `sender` = sends; later intervals
        # must list the same ones (checked in _interval), the other direction's never
        first = items[0].objs("streams")
        for i, s in enumerate(first):
            if s.count("socket", "socket number", 2**31 - 1) not in sockets:
                raise IperfDocumentError(f"{items[0].at('streams')}[{i}].socket", "not a connected socket")
        sockets = {s.count("socket", "socket number", 2**31 - 1) for _, s in _direction(first, sends, lambda s: s)}
        connected = tuple(c for c in connected if c.socket in sockets)
    suffix = _BIDIR_SUFFIX[bidir]
    intervals, previous_end, restarted = [], 0.0, False
    for it in items:
        interval = _interval(it, n, sockets, restarted, sends, suffix)
        if interval.sum.start < previous_end - 2 * TIME_ROUNDING_S:
            raise IperfDocumentError(it.at("sum.start"), f"{interval.sum.start:g} s is before the previous "
                                                        f"interval's end ({previous_end:g} s)")
        restarted = bool(interval.sum.omitted)       # -O: the clock restarts in the next interval
        previous_end = 0.0 if restarted else interval.sum.end
        intervals.append(interval)
    end = o.obj("end", required=not server)
    streams = end.objs("streams", required=not server) if end else []
    if (streams or not server) and len(streams) != both * n:
        raise IperfDocumentError(end.at("streams"), f"{len(streams)} streams, but the test has {both * n}")
    rtts = []
    for _, s in _direction(streams, sends, lambda s: s.obj("sender")):
        snd = s.obj("sender")
        mean = snd.count("mean_rtt", "round-trip time in µs", MAX_RTT_US, required=False)
        low = snd.count("min_rtt", "round-trip time in µs", MAX_RTT_US, required=False)
        if mean and low and low > mean:
            raise IperfDocumentError(snd.at("min_rtt"), f"{low} µs is above mean_rtt ({mean} µs)")
        # --bidir: the RTT of a socket this side only receives on is its ACKs' (microseconds on any path)
        rtts.append((mean, low) if sends is None or snd.flag("sender") else (None, None))
    return Side(connected, tuple(intervals),
                start.count("sndbuf_actual", "socket buffer size", required=False),
                start.count("rcvbuf_actual", "socket buffer size", required=False), tuple(rtts))


def _conn(c: _Obj) -> Conn:
    return Conn(c.count("socket", "socket number", 2**31 - 1), c.count("local_port", "port", 65535),
                c.count("remote_port", "port", 65535))


def _interval(o: _Obj, n: int, sockets: set[int], restarted: bool, sends: bool | None = None,
              suffix: str = "") -> Interval:
    """One interval's streams (of one --bidir direction: those marked `sender` = sends) and its sum
    (`sum` + suffix)."""
    chosen = _direction(o.objs("streams"), sends, lambda s: s)
    streams = tuple(_sample(s, socket=True, restarted=restarted) for _, s in chosen)
    total = _sample(o.obj("sum" + suffix), restarted=restarted)
    if len(streams) != n:
        raise IperfDocumentError(o.at("streams"), f"{len(streams)} streams, but the test has {n}"
                                                  + (" in each direction (--bidir)" if sends is not None else ""))
    seen = set()
    for (i, _), s in zip(chosen, streams):
        if s.socket not in sockets or s.socket in seen:
            raise IperfDocumentError(f"{o.at('streams')}[{i}].socket",
                                     f"{s.socket} is not one of the connected sockets {sorted(sockets)} "
                                     f"(each once)")
        seen.add(s.socket)
    _sums_match(o.obj("sum" + suffix), total, streams, o.at("streams"))
    return Interval(streams, total)


def _sample(o: _Obj, socket: bool = False, restarted: bool = False) -> Sample:
    start = o.num("start", "time", MAX_TIME_S)
    end = o.num("end", "time", MAX_TIME_S)
    seconds = o.num("seconds", "duration", MAX_TIME_S, required=False)
    count = o.count("bytes", "byte count")
    bps = o.num("bits_per_second", "rate", MAX_RATE_BPS)
    lengths = [end - start] if seconds is None else [end - start, seconds]
    # bps = 8·bytes / t [bit/s], to 0.1 % and the µs rounding of both printed times
    if not any(abs(bps * t - 8 * count) <= RATE_REL_TOL * 8 * count + bps * 2 * TIME_ROUNDING_S for t in lengths):
        raise IperfDocumentError(o.at("bits_per_second"),
                                 f"{bps:.6g} bit/s disagrees with {count} bytes over {lengths[-1]:.6g} s "
                                 f"(more than 0.1 %)")
    if end < start:
        if not (restarted and seconds is not None):
            raise IperfDocumentError(o.at("end"), f"{end:g} s is before its start ({start:g} s)")
        start = max(0.0, end - seconds)          # iperf3 -O: began before the restarted clock's zero
    return Sample(start, end, count, bps,
                  retransmits=o.count("retransmits", "retransmit count", required=False),
                  snd_cwnd=o.count("snd_cwnd", "window size in bytes", required=False),
                  rtt=o.count("rtt", "round-trip time in µs", MAX_RTT_US, required=False),
                  omitted=o.flag("omitted"),
                  socket=o.count("socket", "socket number", 2**31 - 1) if socket else None)


def _sums_match(o: _Obj, total: Sample, parts: tuple[Sample, ...] | list[Sample], what: str) -> None:
    """A total's bytes (and retransmits, where every part gives them) equal the sum over its parts."""
    if total.bytes != sum(p.bytes for p in parts):
        raise IperfDocumentError(o.at("bytes"), f"{total.bytes} is not the sum over {what} "
                                                f"({sum(p.bytes for p in parts)})")
    counts = [p.retransmits for p in parts]
    if total.retransmits is not None and parts and None not in counts and total.retransmits != sum(counts):
        raise IperfDocumentError(o.at("retransmits"), f"{total.retransmits} is not the sum over {what} "
                                                      f"({sum(counts)})")
