"""iperf2 client reports as CSV (-y C), plain and with -e, single stream or -P.

Formats (iperf2 src/Locale.c, written by src/ReportOutputs.c):
- plain, reportCSV_bw_format: `time,srcaddress,srcport,dstaddress,dstport,transferid,istart-iend,bytes,
  speed` (`%s,%s,%d,%.1f-%.1f,%d,%d`; the peer by reportCSV_peer `%s,%u,%s,%u`);
- -e, reportCSV_bw_tcp_write_enhanced_format, after its header line `time,srcaddress,srcport,dstaddr,
  dstport,transferid,istart,iend,bytes,speed,writecnt,writeerr,tcpretry,tcpcwnd,tcppcwnd,tcprtt,
  tcprttvar`: tcpcwnd in KByte (as the text report's `%dK`), tcprtt in µs (tcp_output_write_enhanced_csv);
- time: the client's local time, `%Y%m%d%H%M%S` (2.1 adds `.%03d` ms);
- the sum over -P streams has transfer id -1 (tcp_output_write_enhanced_csv: `transferID == -1`
  /* Sums */; its cwnd and RTT are 0).
Bytes and speed are whole numbers (exact counters): a sum's bytes equal its streams', and the run's
duration is 8·bytes/speed (the printed one is rounded to 0.1 s; with -P and no sum line, bytes and
speeds of the streams' whole-test lines added up). The client's
report is the sender's (flagged throughput_sender_side). The RTT compared with a given --rtt: the
smallest interval tcprtt (smoothed, sampled at each interval's end).
"""

from __future__ import annotations

import datetime as dt
import re

from ...measure import iperf
from ...errors import IperfDocumentError
from .base import Reader
from .common import build, sample
from .iperf2_lines import SUM, Line, assemble

ENHANCED_HEADER = "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,writecnt"
DURATION_ROUNDING_S = 0.05     # times printed %.1f
ROW = re.compile(r"\d{14}(?:\.\d+)?,[^,]+,\d+,[^,]+,\d+,-?\d+,")


def detect(text) -> bool:
    return isinstance(text, str) and (text.lstrip().startswith(ENHANCED_HEADER) or any(
        ROW.match(ln.strip()) for ln in text.splitlines()[:5]))


def read(text: str) -> list[iperf.Parsed]:
    lines, order, run = [], [], {}
    for no, raw in enumerate(text.splitlines(), 1):
        ln, where = raw.strip(), f"line {no}"
        if not ln or ln.startswith("time,"):
            continue
        f = ln.split(",")
        if len(f) == 9 and "-" in f[6]:
            istart, iend = f[6].split("-", 1)
            rest = f[7:9]
            retry = cwnd = rtt = None
        elif len(f) == 17:
            istart, iend, rest = f[6], f[7], f[8:10]
            retry, cwnd, rtt = _int(where, f[12]), _int(where, f[13]) * 1024, _int(where, f[15])
        else:
            raise IperfDocumentError(where, f"{len(f)} fields: an iperf2 -y C client line has 9 (plain) or "
                                            f"17 (with -e)")
        if not ROW.match(ln):
            raise IperfDocumentError(where, "not time,srcaddress,srcport,dstaddress,dstport,transferid,…")
        tid = _int(where, f[5], signed=True)
        sid = SUM if tid < 0 else str(tid)
        if sid != SUM:
            if sid not in order:
                order.append(sid)
            run.setdefault("source_host", f[1])
            run.setdefault("dest_host", f[3])
            run.setdefault("started_at", _when(where, f[0]))
        s = sample(where, _float(where, istart), _float(where, iend), _int(where, rest[0]), _int(where, rest[1]),
                   retransmits=retry, cwnd_bytes=cwnd or None, rtt_us=rtt or None)
        lines.append(Line(where, sid, s))
    if not lines:
        raise IperfDocumentError("report", "no data line: the test did not run")
    intervals, total, n = assemble(lines, order)
    return [build(intervals, total, streams=n, run=run, flags=["intervals_sender_bytes"],
                  duration_rounding_s=DURATION_ROUNDING_S)]


def _int(where: str, v: str, signed: bool = False) -> int:
    if not re.fullmatch(r"-?\d+" if signed else r"\d+", v.strip()):
        raise IperfDocumentError(where, f"{v!r} is not a whole number 0 or more")
    return int(v)


def _float(where: str, v: str) -> float:
    if not re.fullmatch(r"\d+(?:\.\d+)?", v.strip()):
        raise IperfDocumentError(where, f"{v!r} is not a time in seconds")
    return float(v)


def _when(where: str, v: str) -> dt.datetime:
    try:
        return dt.datetime.strptime(v.split(".")[0], "%Y%m%d%H%M%S")
    except ValueError:
        raise IperfDocumentError(where, f"{v!r} is not a time (%Y%m%d%H%M%S)") from None


READER = Reader("iperf2 -y C", "lines time,srcaddress,srcport,dstaddress,dstport,transferid,… (iperf2 -y C)",
                False, detect, read)
