"""pScheduler throughput results: the result object of its iperf3 and iperf2 tools, bare or inside the
run record that pScheduler's REST API (and `pscheduler result --format json`) gives for a run.

The result (pscheduler-test-throughput/throughput/validate.py, RESULT_SCHEMA): `succeeded`, `diags`,
`intervals[]` each with `streams[]` and `summary`, and `summary` with `streams[]` (per stream, whole
test) and `summary` (the whole test); each a throughput-data object: `stream-id`, `start`, `end` [s],
`throughput-bytes` [bytes in the interval], `throughput-bits` [bit/s, the sender's],
`receiver-throughput-bits` [bit/s, the receiver's, where the tool has it], `retransmits`,
`tcp-window-size` [bytes: the sender's cwnd], `rtt` [µs], `omitted`.
- iperf3 tool (pscheduler-tool-iperf3/iperf3/iperf3_parser.py, rename_json): iperf3's own numbers
  renamed (socket → stream-id, bytes → throughput-bytes, bits_per_second → throughput-bits, snd_cwnd →
  tcp-window-size, rtt and end.streams[].sender.mean_rtt → rtt); the summary is end.sum_sent.
- iperf2 tool (pscheduler-tool-iperf2/iperf2/iperf2_parser.py, parse_output): iperf2's text report,
  numbers as printed (3 significant digits: sums agree with their streams to 0.5 %), stream-id the
  transfer id or "SUM"; its intervals include the whole-test lines, and its summary is a list of the
  longest line group's entries rather than an object: both are read (_iperf2_split). Its byte counts
  come from iperf2's KByte/MByte (×1024) read with SI prefixes (pscheduler.si_as_number), so they are
  not kept for the run; its rate (bit/s, ×1000 in both) is the throughput. iperf2 reports no RTT.
The run record (pscheduler-server api-server runs; python-pscheduler batchprocessor.py reads
`result-merged`): `start-time`, `state`, `result-merged`, and `task` with `tool` and `test` {type:
"throughput", spec}; of the spec (validate.py, SPEC_SCHEMA) source, dest, parallel, window-size
[bytes], congestion, duration (ISO 8601), reverse are used.
"""

from __future__ import annotations

import datetime as dt
import re

from ...measure import iperf
from ...errors import IperfDocumentError, IperfError
from ...measure.iperf_json import MAX_RATE_BPS, MAX_RTT_US
from .base import Reader
from .common import ROUNDED_REL_TOL, build, count, number, sample, text_field

RECORD_KEYS = ("result-merged", "result")


def detect(doc) -> bool:
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("result-merged"), dict) or (isinstance(doc.get("result"), dict) and "task" in doc):
        return True
    return "summary" in doc and ("intervals" in doc or "succeeded" in doc)


def read(doc) -> list[iperf.Parsed]:
    prefix, spec, tool, started = "", {}, None, None
    key = next((k for k in RECORD_KEYS if isinstance(doc.get(k), dict)), None)
    if key and "summary" not in doc:
        prefix, spec, tool, started = f"{key}.", *_record(doc)
        doc = doc[key]
    if doc.get("succeeded") is False:
        raise IperfError(f"pScheduler: the run failed: {str(doc.get('error') or 'no error given')[:200]}")
    items = list(enumerate(_list(doc.get("intervals"), f"{prefix}intervals")))
    for k, it in items:
        if not isinstance(it, dict):
            raise IperfDocumentError(f"{prefix}intervals[{k}]", "not an object")
    if tool is None:
        ids = [s.get("stream-id") for _, it in items for s in (it.get("streams") or []) if isinstance(s, dict)]
        tool = "iperf2" if any(isinstance(i, str) for i in ids) else "iperf3"
    if tool == "iperf2":
        items, (total_where, total) = _iperf2_split(items, doc.get("summary"), prefix)
        per_stream = []
    else:
        total_where, total, per_stream = _summary(doc.get("summary"), f"{prefix}summary")
    intervals, n = _intervals(items, prefix)
    parallel = spec.get("parallel", 1)
    if "parallel" in spec and count("task.test.spec.parallel", parallel, "stream count") != n:
        raise IperfDocumentError("task.test.spec.parallel", f"{parallel}, but the intervals have {n} streams")
    if per_stream and len(per_stream) != n:
        raise IperfDocumentError(f"{prefix}summary.streams", f"{len(per_stream)} streams, but the test has {n}")
    receiver = total.get("receiver-throughput-bits")
    if receiver is not None:
        receiver = number(f"{total_where}.receiver-throughput-bits", receiver, "rate", MAX_RATE_BPS)
    run = _configuration(spec, doc, started)
    run["rtt_means_us"] = [count(f"{prefix}summary.streams[{i}].rtt", s["rtt"], "round-trip time in µs", MAX_RTT_US)
                           for i, s in enumerate(per_stream) if isinstance(s, dict) and s.get("rtt") is not None]
    reverse = bool(run["reverse"])
    flags = ["intervals_receiver_side" if reverse else "intervals_sender_bytes"]
    iperf2 = tool == "iperf2"
    return [build(intervals, (total_where, _sample(total_where, total)), streams=n, receiver_bps=receiver,
                  bytes_rel_tol=ROUNDED_REL_TOL if iperf2 else 0.0, run=run, flags=flags,
                  total_bytes="unreliable" if iperf2 else "exact")]


def _intervals(items: list, prefix: str) -> tuple[list, int]:
    """(the intervals as build() takes them, the number of streams): stream k is the k-th stream-id of
    the first interval, found by its id in the others (iperf2 lists them in any order)."""
    order: dict = {}
    intervals = []
    for k, it in items:
        where = f"{prefix}intervals[{k}]"
        streams = _list(it.get("streams"), f"{where}.streams")
        for s in streams:
            if not intervals and isinstance(s, dict) and s.get("stream-id") not in order:
                order[s.get("stream-id")] = len(order)
        parts: list = [None] * len(order)
        for i, s in enumerate(streams):
            sid = s.get("stream-id") if isinstance(s, dict) else None
            if sid not in order or parts[order[sid]] is not None:
                raise IperfDocumentError(f"{where}.streams[{i}].stream-id",
                                         f"{sid!r} is not one of the first interval's streams {list(order)} "
                                         f"(each once)")
            parts[order[sid]] = _sample(f"{where}.streams[{i}]", s)
        if None in parts:
            raise IperfDocumentError(f"{where}.streams", f"{sum(p is not None for p in parts)} streams, "
                                                         f"but the test has {len(order)}")
        summary = it.get("summary")
        if not summary and len(parts) != 1:
            raise IperfDocumentError(f"{where}.summary", "missing: an interval of several streams has a summary")
        intervals.append((where, parts, _sample(f"{where}.summary", summary) if summary else parts[0]))
    return intervals, len(order)


def _record(doc: dict) -> tuple[dict, str | None, dt.datetime | None]:
    task = doc.get("task") if isinstance(doc.get("task"), dict) else {}
    test = task.get("test") if isinstance(task.get("test"), dict) else {}
    if test.get("type", "throughput") != "throughput":
        raise IperfDocumentError("task.test.type", f"{test.get('type')!r}: only throughput runs are results "
                                                   f"of a transfer")
    state = doc.get("state")
    if state is not None and state != "finished":
        raise IperfDocumentError("state", f"{state!r}: the run did not finish")
    spec = test.get("spec") if isinstance(test.get("spec"), dict) else {}
    if spec.get("udp"):
        raise IperfDocumentError("task.test.spec.udp", "true: only TCP runs are supported")
    tool = task.get("tool") if task.get("tool") in ("iperf3", "iperf2") else None
    return spec, tool, _time("start-time", doc.get("start-time"))


def _configuration(spec: dict, result: dict, started) -> dict:
    window = spec.get("window-size")
    window = None if window is None else count("task.test.spec.window-size", window, "socket buffer size")
    granted = result.get("tcp-window-size")          # iperf2: what the kernel gave (TCP window size: …)
    congestion = spec.get("congestion")
    if congestion is not None and not (isinstance(congestion, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,16}",
                                                                                    congestion)):
        raise IperfDocumentError("task.test.spec.congestion", f"{congestion!r} is not a congestion-control name")
    duration = spec.get("duration")
    return {
        "cc_reported": congestion, "socket_buffer_bytes": window,
        "effective_socket_buffer_bytes": None if granted is None or window is None
        else count("tcp-window-size", granted, "socket buffer size"),
        "duration_target_s": None if duration is None else _iso_seconds("task.test.spec.duration", duration),
        "reverse": bool(spec.get("reverse", False)), "started_at": started,
        "source_host": text_field("task.test.spec.source", spec.get("source")),
        "dest_host": text_field("task.test.spec.dest", spec.get("dest")),
    }


def _summary(summary, where: str) -> tuple[str, dict, list]:
    """(where, the whole test's entry, per-stream entries): an object {streams, summary}, or the iperf2
    tool's list of the longest line group's entries (its SUM, or its one stream)."""
    if isinstance(summary, dict) and isinstance(summary.get("summary"), dict):
        streams = summary.get("streams") or []
        return f"{where}.summary", summary["summary"], _list(streams, f"{where}.streams")
    if isinstance(summary, list) and summary and all(isinstance(s, dict) for s in summary):
        sums = [i for i, s in enumerate(summary) if s.get("stream-id") == "SUM"]
        k = sums[0] if sums else 0 if len(summary) == 1 else None
        if k is None:
            raise IperfDocumentError(where, "several streams and no SUM entry")
        return f"{where}[{k}]", summary[k], [s for i, s in enumerate(summary) if i != k]
    raise IperfDocumentError(f"{where}.summary", "missing: a throughput result has summary.summary")


def _iperf2_split(items: list, summary, prefix: str) -> tuple[list, tuple[str, dict]]:
    """(the report intervals, sorted by start; (where, the whole test's entry)) of the iperf2 tool's
    result. Its intervals are the report's lines grouped by their printed span, the whole-test lines
    included: those start at 0 and end after the first interval (iperf 2.1 prints one per stream, each
    with its own end, and the [SUM] with another). The total: the whole-test [SUM], else the one
    stream's whole-test line; without -i the whole-test lines are the only interval."""
    spans = [(k, it, _span(it.get("summary") or (it.get("streams") or [None])[0])) for k, it in items]
    starts_at_0 = [span[1] for _, _, span in spans if span[0] == 0 and span[1] is not None]
    first_end = min(starts_at_0, default=None)
    whole = [(k, it) for k, it, span in spans if first_end is not None and span[0] == 0 and span[1] > first_end]
    regular = [(k, it) for k, it, span in spans if (k, it) not in whole]
    sums = [(k, it) for k, it in whole + regular if isinstance(it.get("summary"), dict)
            and it["summary"].get("stream-id") == "SUM" and _span(it["summary"])[0] == 0]
    if sums:
        k, it = max(sums, key=lambda e: _span(e[1]["summary"])[1])
        total = (f"{prefix}intervals[{k}].summary", it["summary"])
    else:
        total_where, entry, _ = _summary(summary, f"{prefix}summary")
        total = (total_where, entry)
    if not regular:                           # no -i: the whole test is the one interval
        regular = [(k, it) for k, it in whole if it.get("summary") is total[1]] or whole[:1]
    return sorted(regular, key=lambda e: _span(e[1].get("summary") or e[1]["streams"][0])[0]), total


def _sample(where: str, s):
    if not isinstance(s, dict):
        raise IperfDocumentError(where, "not an object")
    for key in ("start", "end", "throughput-bytes", "throughput-bits"):
        if s.get(key) is None:
            raise IperfDocumentError(f"{where}.{key}", "missing")
    return sample(where, s["start"], s["end"], s["throughput-bytes"], s["throughput-bits"],
                  retransmits=s.get("retransmits"), cwnd_bytes=s.get("tcp-window-size"), rtt_us=s.get("rtt"),
                  omitted=bool(s["omitted"]) if s.get("omitted") is not None else None)


def _span(s) -> tuple:
    return (s.get("start"), s.get("end")) if isinstance(s, dict) else (None, None)


def _list(v, where: str) -> list:
    if not isinstance(v, list):
        raise IperfDocumentError(where, "missing" if v is None else f"{type(v).__name__}, not a list")
    return v


_ISO = re.compile(r"P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def _iso_seconds(where: str, v) -> float:
    """An ISO 8601 duration (pScheduler's Duration: 'PT30S', 'PT1M30S') in seconds."""
    m = _ISO.fullmatch(v) if isinstance(v, str) else None
    if not m or v in ("P", "PT"):
        raise IperfDocumentError(where, f"{v!r} is not an ISO 8601 duration (e.g. PT30S)")
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _time(where: str, v) -> dt.datetime | None:
    """An ISO 8601 time with its offset, as UTC without a zone (the store's timestamps)."""
    if v is None:
        return None
    try:
        t = dt.datetime.fromisoformat(v) if isinstance(v, str) else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        raise IperfDocumentError(where, f"{v!r} is not an ISO 8601 time with its UTC offset")
    return t.astimezone(dt.timezone.utc).replace(tzinfo=None)


READER = Reader("pScheduler throughput", "an object with intervals/summary (a pScheduler throughput result) "
                "or result-merged (a pScheduler run record)", True, detect, read)
