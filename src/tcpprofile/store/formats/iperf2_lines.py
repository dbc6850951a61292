"""What iperf2's text and CSV client reports share: per-stream lines, [SUM] lines, a whole-test line
per stream at the end; assembled here into intervals and the test's total (formats/common.build).

iperf2 prints, per report interval (-i), one line per stream (its transfer id) and, with -P, a sum
line ([SUM] in text, transfer id -1 in CSV); after the test, one line per stream and one sum over the
whole test, starting at 0 (src/ReportOutputs.c, tcp_output_write / _enhanced / _csv; the sum's id -1:
tcp_output_write_enhanced_csv). Some versions print the whole-test line twice (0.0-10.0, then 0.0-10.1:
pscheduler-tool-iperf2 iperf2_parser.py's 'short on summary' example): the longest is the total.
Without -i a stream has its whole-test line only: the run has that one interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import IperfDocumentError
from ...measure.iperf_json import Sample
from .common import sample

SUM = "SUM"


@dataclass(frozen=True)
class Line:
    where: str          # 'line 14'
    sid: str            # the transfer id, or SUM
    s: Sample


def assemble(lines: list[Line], order: list[str]) -> tuple[list, tuple[str, Sample], int]:
    """(intervals as (where, stream samples by transfer id, sum), (where, the total), streams); `order`:
    the ids of the connection lines (a stream without data lines is an error of the report)."""
    by_id: dict[str, list[Line]] = {}
    for ln in lines:
        by_id.setdefault(ln.sid, []).append(ln)
    ids = sorted({i for i in [*order, *by_id] if i in by_id and i != SUM}, key=int)   # by transfer id
    if not ids:
        raise IperfDocumentError("report", "no stream's line (only [SUM] lines)")
    if silent := [i for i in order if i not in by_id]:
        raise IperfDocumentError("report", f"stream {silent[0]} connected but has no data line")
    steps, finals = {}, {}
    for sid in ids + ([SUM] if SUM in by_id else []):
        steps[sid], finals[sid] = _split(by_id[sid])
    keys = [(ln.s.start, ln.s.end) for ln in steps[ids[0]]]
    intervals = []
    for start, end in keys:
        parts = []
        for sid in ids:
            match = [ln for ln in steps[sid] if (ln.s.start, ln.s.end) == (start, end)]
            if len(match) != 1:
                raise IperfDocumentError(f"stream {sid}", f"{len(match)} lines for the interval {start:g}-{end:g} s "
                                                          f"(one per stream expected)")
            parts.append(match[0])
        total = [ln for ln in steps.get(SUM, []) if (ln.s.start, ln.s.end) == (start, end)]
        where = parts[0].where
        intervals.append((where, [p.s for p in parts], total[0].s if total else _added(where, [p.s for p in parts])))
    if SUM in finals:
        total = (finals[SUM].where, finals[SUM].s)
    elif len(ids) == 1:
        total = (finals[ids[0]].where, finals[ids[0]].s)
    else:
        total = ("report", _added("report", [finals[i].s for i in ids]))
    return intervals, total, len(ids)


def _split(lines: list[Line]) -> tuple[list[Line], Line]:
    """(a stream's interval lines, its whole-test line): the trailing lines that start at 0 are
    whole-test lines (the longest is the total); a stream with only those has that one interval."""
    k = len(lines)
    while k > 0 and lines[k - 1].s.start == 0:
        k -= 1
    finals = lines[k:] or lines[-1:]
    final = max(finals, key=lambda ln: ln.s.end)
    return (lines[:k] if k else [final]), final


def _added(where: str, parts: list[Sample]) -> Sample:
    """A sum iperf2 did not print: bytes and rates added, over the streams' span."""
    return sample(where, min(p.start for p in parts), max(p.end for p in parts), sum(p.bytes for p in parts),
                  sum(p.bits_per_second for p in parts),
                  retransmits=None if any(p.retransmits is None for p in parts) else sum(p.retransmits for p in parts))
