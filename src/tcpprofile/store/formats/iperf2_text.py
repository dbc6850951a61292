"""iperf2 client reports as text: plain, and -e (enhanced), single stream or -P with [SUM] lines.

Formats (iperf2 src/Locale.c; written by src/ReportOutputs.c):
- settings: `Client connecting to %s, %s port %d` (client_port; -e adds `with pid …`),
  `TCP window size: %s` then ` (default)` (no -w) or ` (WARNING: requested %s)` (granted ≠ asked;
  ReportOutputs.c output_window_size), `TCP congestion control … %s` (-e / -Z);
- connections: `[%3d] local %s port %u connected with %s port %u%s` (report_peer; -e appends
  `(icwnd/mss/irtt=14/1448/193)`: irtt, the handshake's RTT in µs, and `on 2021-01-05 10:12:51 (UTC)`);
- data: `[%3d] %4.1f-%4.1f sec  %ss  %ss/sec` (report_bw_format; 2.1 prints %4.4f times), the sum
  `[SUM] …` (report_sum_bw_format); -e appends `Write/Err  Rtry  Cwnd/RTT(var)  NetPwr`:
  `%d/%d %10d %8dK/%u(%u) us  %s` (report_bw_write_enhanced_format; newer versions print cwnd as
  `%dK(%u)` with its packets and may put InF(pkts)/ before it), the sum `… %d/%d %10d`.
Numbers: Transfer in Byte/KByte/MByte/GByte (×1024) and Bandwidth in bit/Kbit/Mbit/Gbit (×1000), three
significant digits (src/stdio.c byte_snprintf: 'A' and 'a' adaptive formats); cwnd in KByte (×1024),
RTT in µs (tcp_info's tcpi_rtt, smoothed): the run's bytes are not kept (3 digits; the rate is the
throughput, checked against them to 0.5 %). A client's report is the sender's: its throughput is what was
written into the sockets (flagged throughput_sender_side); iperf2 prints no receiver's throughput for
TCP. The loaded RTT: the mean and smallest of the -e intervals' RTTs. The RTT compared with a given
--rtt: the smallest irtt, else the smallest interval RTT.
Times of day are the client's local time as printed.
"""

from __future__ import annotations

import datetime as dt
import re

from ...measure import iperf
from ...errors import IperfDocumentError, IperfError
from .base import Reader
from .common import ROUNDED_REL_TOL, build, sample
from .iperf2_lines import SUM, Line, assemble

_BYTES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_NUM = r"(\d+(?:\.\d+)?)"
DATA = re.compile(r"\[\s*\*?(\d+|SUM(?:-\d+)?)\]\s+" + _NUM + r"\s*-\s*" + _NUM + r"\s+sec\s+" + _NUM
                  + r"\s+([KMGT]?)Bytes\s+" + _NUM + r"\s+([KMGTkmgt]?)bits/sec(.*)")
ENHANCED = re.compile(r"\s+(\d+)/(\d+)\s+(\d+)(?:\s+(\S+)\s+us)?")
PEER = re.compile(r"\[\s*\*?(\d+)\]\s+local\s+(\S+?)(?:%\S+)?\s+port\s+(\d+)\s+connected with\s+(\S+)"
                  r"\s+port\s+(\d+)(.*)")
CLIENT = re.compile(r"Client connecting to (\S+), (\S+) port (\d+)")
WINDOW = re.compile(r"TCP window size:\s*" + _NUM + r"\s*([KMGT]?)Bytes?\s*(\(default\)|\(WARNING: requested\s*"
                    + _NUM + r"\s*([KMGT]?)Bytes?\))?")
CONGESTION = re.compile(r"TCP congestion control.*?\b(?:using|default|set to)\s+([A-Za-z0-9_.-]{1,16})\s*$")
IRTT = re.compile(r"icwnd/mss/irtt=\d+/\d+/(\d+)")
WHEN = re.compile(r"\bon (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def detect(text) -> bool:
    """A client's report: its 'Client connecting to' line or a data line after an '[ ID] Interval' header."""
    return isinstance(text, str) and ("Client connecting to" in text or (
        "[ ID] Interval" in text and any(DATA.match(ln.strip()) for ln in text.splitlines()[:400])))


def read(text: str) -> list[iperf.Parsed]:
    if "Server listening on" in text and "Client connecting to" not in text:
        raise IperfError("an iperf2 server's report: import the client's (it names the run's settings)")
    run: dict = {"source_host": None, "dest_host": None}
    order, lines, irtts, enhanced = [], [], [], False
    for no, raw in enumerate(text.splitlines(), 1):
        ln, where = raw.strip(), f"line {no}"
        if m := CLIENT.match(ln):
            if m.group(2) != "TCP":
                raise IperfDocumentError(where, f"a {m.group(2)} test: only TCP runs are supported")
            run["dest_host"] = m.group(1)
        elif m := WINDOW.match(ln):
            granted = _size(m.group(1), m.group(2), _BYTES)
            if m.group(3) == "(default)":
                run["socket_buffer_bytes"] = None
            else:
                asked = _size(m.group(4), m.group(5), _BYTES) if m.group(4) else granted
                run["socket_buffer_bytes"], run["effective_socket_buffer_bytes"] = asked, granted
        elif m := CONGESTION.search(ln):
            run["cc_reported"] = m.group(1)
        elif m := PEER.match(ln):
            order.append(m.group(1))
            run["source_host"] = run["source_host"] or m.group(2)
            run["dest_host"] = run["dest_host"] or m.group(4)
            if irtt := IRTT.search(m.group(6)):
                irtts.append(int(irtt.group(1)))
            if (when := WHEN.search(m.group(6))) and "started_at" not in run:
                run["started_at"] = dt.datetime.strptime(when.group(1), "%Y-%m-%d %H:%M:%S")
            if "(reverse)" in m.group(6):
                raise IperfDocumentError(where, "a reverse (-R) test: the client's report is the receiver's; "
                                                "not supported yet")
        elif m := DATA.match(ln):
            sid = SUM if m.group(1).startswith(SUM) else m.group(1)
            extra = ENHANCED.match(m.group(8))
            enhanced = enhanced or extra is not None
            lines.append(Line(where, sid, _sample(where, m, extra)))
    if not lines:
        raise IperfDocumentError("report", "no data line ([ ID] … sec … Bytes … bits/sec): the test did not run")
    intervals, total, n = assemble(lines, order)
    if irtts:
        run["rtt_min_us"], run["rtt_min_what"] = min(irtts), "iperf2 irtt, the handshake's RTT"
    flags = ["intervals_sender_bytes"]
    return [build(intervals, total, streams=n, bytes_rel_tol=ROUNDED_REL_TOL, run=run, flags=flags,
                  total_bytes="printed")]


def _sample(where: str, m: re.Match, extra: re.Match | None):
    nbytes = _size(m.group(4), m.group(5), _BYTES)
    bps = float(m.group(6)) * _BITS[m.group(7)]
    retry = cwnd = rtt = None
    if extra:
        retry = int(extra.group(3))
        tail = (extra.group(4) or "").split("/")          # [InF…/]cwndK[(pkts)]/rtt(var)
        rtt_m = re.fullmatch(r"(\d+)\((\d+)\)", tail[-1]) if len(tail) >= 2 else None
        cwnd_m = re.fullmatch(r"(\d+)K(?:\(\d+\))?", tail[-2]) if len(tail) >= 2 else None
        rtt = int(rtt_m.group(1)) if rtt_m else None
        cwnd = int(cwnd_m.group(1)) * 1024 if cwnd_m else None
    return sample(where, float(m.group(2)), float(m.group(3)), nbytes, bps, retransmits=retry,
                  cwnd_bytes=cwnd, rtt_us=rtt or None)


def _size(value: str, prefix: str, table: dict) -> int:
    return round(float(value) * table[prefix])


READER = Reader("iperf2", "'Client connecting to' or '[ ID] Interval' with data lines (an iperf2 client's "
                "report)", False, detect, read)
