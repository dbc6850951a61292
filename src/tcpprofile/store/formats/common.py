"""What every reader produces: iperf.Parsed (the store's run row and 1 s interval rows), built from
checked samples.

A reader names where each number came from (``intervals[2].streams[0].throughput-bits``, ``line 14``)
and `sample()` checks it once: finite, 0 or more, below iperf_json's bounds, start ≤ end.
`build()` checks what holds between samples (each interval starts where the previous ended or later,
every interval has the run's streams, a sum agrees with its streams) and fills the run row with the
keys iperf.parse fills, plus three every reader gives:

- ``source_host``, ``dest_host``: the host pair (the client, the server it connected to), None where
  the file does not say;
- ``rtt_file_min_ms`` with ``rtt_file_min_what``: the smallest RTT the file holds and what it is
  (iperf3's min_rtt, iperf2's handshake irtt, or the smallest smoothed RTT sampled at an interval's
  end), for checking a given --rtt against (importer).
"""

from __future__ import annotations

import datetime as dt
import math

from ...measure import iperf
from ...errors import IperfDocumentError
from ...measure.iperf_json import (
    MAX_COUNT,
    MAX_RATE_BPS,
    MAX_RTT_US,
    MAX_STREAMS,
    MAX_TIME_S,
    TIME_ROUNDING_S,
    Sample,
)

ROUNDED_REL_TOL = 0.005     # three printed significant digits: half a unit of the third is ≤ 0.5 %


def number(where: str, v, what: str, hi: float) -> float:
    """A finite number 0..hi; anything else is an IperfDocumentError naming `where`."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise IperfDocumentError(where, f"{v!r} is not a {what}")
    if v < 0 or v > hi:
        raise IperfDocumentError(where, f"{v!r} is outside 0..{hi:g}: not a {what}")
    return float(v)


def count(where: str, v, what: str, hi: int = MAX_COUNT) -> int:
    """A whole number 0..hi (a float with no fraction, as JSON writers may print, is one)."""
    x = number(where, v, what, hi)
    if x != int(x):
        raise IperfDocumentError(where, f"{v!r} is not a {what} (a whole number)")
    return int(x)


def sample(where: str, start, end, nbytes, bps, *, retransmits=None, cwnd_bytes=None, rtt_us=None,
           omitted=None) -> Sample:
    """One checked stream (or sum) sample; `where` names its origin in the file."""
    s = Sample(number(f"{where}.start", start, "time", MAX_TIME_S),
               number(f"{where}.end", end, "time", MAX_TIME_S),
               round(number(f"{where}.bytes", nbytes, "byte count", MAX_COUNT)),
               number(f"{where}.bits_per_second", bps, "rate", MAX_RATE_BPS),
               retransmits=None if retransmits is None else count(f"{where}.retransmits", retransmits,
                                                                   "retransmit count"),
               snd_cwnd=None if cwnd_bytes is None else count(f"{where}.cwnd", cwnd_bytes, "window size in bytes"),
               rtt=None if rtt_us is None else count(f"{where}.rtt", rtt_us, "round-trip time in µs", MAX_RTT_US),
               omitted=omitted)
    if s.end < s.start:
        raise IperfDocumentError(f"{where}.end", f"{s.end:g} s is before its start ({s.start:g} s)")
    return s


def build(intervals: list[tuple[str, list[Sample], Sample]], total: tuple[str, Sample], *, streams: int,
          receiver_bps: float | None = None, bytes_rel_tol: float = 0.0, run: dict,
          flags: list[str] | None = None, total_bytes: str = "exact",
          duration_rounding_s: float | None = None) -> iperf.Parsed:
    """Parsed from checked samples: `intervals` as (where, stream samples in stream order, sum), `total`
    the whole test's sender-side sum (where, sample); `receiver_bps` the receiver's rate where the file
    has it (else the run is flagged throughput_sender_side). `bytes_rel_tol`: how far a sum's bytes may
    be from its streams' (0: exact counters; printed values rounded to 3 digits need 0.5 %). `run`:
    the configuration keys (cc_reported, socket_buffer_bytes, …, source_host, dest_host).

    The run's throughput is the file's rate; the store keeps bytes only where they agree with it to
    0.1 % (store/checks.py). `total_bytes`: "exact" (counters: kept), "printed" (three significant
    digits: the rate must agree with 8·bytes/duration to 0.5 %, the bytes are not kept), "unreliable"
    (not kept, not compared). `duration_rounding_s`: the duration is printed rounded to this (iperf2 -y C:
    0.05 s) while bytes and rate are exact counts: the duration is 8·bytes/rate [s], which must lie
    within the rounding of the printed one."""
    flags, run = list(flags or []), dict(run)
    if not intervals:
        raise IperfDocumentError("intervals", "empty: the file reports no interval")
    if not 1 <= streams <= MAX_STREAMS:
        raise IperfDocumentError("streams", f"{streams}: a test has 1 to {MAX_STREAMS} streams")
    previous_end = 0.0
    for where, parts, total_it in intervals:
        if len(parts) != streams:
            raise IperfDocumentError(where, f"{len(parts)} streams, but the test has {streams}")
        if total_it.start < previous_end - 2 * TIME_ROUNDING_S:
            raise IperfDocumentError(where, f"starts at {total_it.start:g} s, before the previous interval's "
                                            f"end ({previous_end:g} s)")
        previous_end = total_it.end
        _sum_agrees(where, total_it, parts, bytes_rel_tol)
    where, t = total
    if not t.end > t.start:
        raise IperfDocumentError(f"{where}.end", f"{t.end:g} s: the test must last longer than 0 s")
    if receiver_bps is None:
        flags.append("throughput_sender_side")
    rows = []
    for _, parts, total_it in intervals:
        rows.extend(iperf._interval(s, i) for i, s in enumerate(parts))
        rows.append(iperf._interval(total_it, None))
    # loaded RTT [µs]: the file's per-stream means (iperf3's mean_rtt), else the mean of the smoothed RTT
    # sampled at each interval's end; its smallest sample. The RTT a given --rtt is compared with: the
    # file's own smallest (rtt_min_us: iperf2's handshake irtt), else that smallest loaded sample.
    samples = [s.rtt for _, parts, _ in intervals for s in parts if s.rtt]
    means = [x for x in (run.pop("rtt_means_us", None) or []) if x] or samples
    loaded_min = min(samples) if samples else None
    lowest, what = run.pop("rtt_min_us", None), run.pop("rtt_min_what", None)
    if lowest is None and samples:
        lowest, what = loaded_min, "the smallest smoothed RTT sampled at an interval's end"
    duration, kept = t.end - t.start, t.bytes if receiver_bps is None else None
    if total_bytes == "printed":
        implied = 8 * t.bytes / duration
        if abs(implied - t.bits_per_second) > ROUNDED_REL_TOL * (implied + t.bits_per_second):
            raise IperfDocumentError(f"{where}.bits_per_second",
                                     f"{t.bits_per_second:.4g} bit/s disagrees with {t.bytes} bytes over "
                                     f"{duration:g} s (more than the 0.5 % of three printed digits)")
    if duration_rounding_s is not None:
        counted = 8 * t.bytes / t.bits_per_second if t.bits_per_second else math.inf
        if abs(counted - duration) > duration_rounding_s + TIME_ROUNDING_S:
            raise IperfDocumentError(f"{where}.bits_per_second",
                                     f"{t.bits_per_second:.6g} bit/s and {t.bytes} bytes make {counted:.4g} s, "
                                     f"not the printed {duration:g} s")
        duration = counted
    if total_bytes != "exact":
        kept = None
    started = run.get("started_at")
    row = {
        "cc_reported": None, "socket_buffer_bytes": None, "effective_socket_buffer_bytes": None,
        "transfer_bytes": None, "duration_target_s": None, "reverse": False, "kernel": None,
        "iperf3_version": None, "started_at": None, "source_host": None, "dest_host": None,
        **run,
        "streams": streams,
        "throughput_bps": receiver_bps if receiver_bps is not None else t.bits_per_second,
        "size_delivered_s": None,
        "bytes_transferred": kept,
        "duration_s": duration,
        "retransmits": t.retransmits,
        "rtt_loaded_mean_ms": sum(means) / len(means) / 1e3 if means else None,
        "rtt_loaded_min_ms": loaded_min / 1e3 if loaded_min else None,
        "finished_at": started + dt.timedelta(seconds=duration) if started is not None else None,
        "rtt_file_min_ms": lowest / 1e3 if lowest else None,
        "rtt_file_min_what": what if lowest else None,
    }
    if row["duration_target_s"] is None and row["transfer_bytes"] is None:
        # the client's -t, which iperf2 and a bare pScheduler result do not state: the whole-test line's span
        # (t.end − t.start [s]) rounded to the 0.1 s iperf2 prints, so runs of one -t share a condition group
        row["duration_target_s"] = round(t.end - t.start, 1)
    return iperf.Parsed(row, rows, flags)


def _sum_agrees(where: str, total: Sample, parts: list[Sample], rel_tol: float) -> None:
    """A sum's bytes equal its streams' (to rel_tol of their size, for rounded printed values)."""
    if len(parts) < 2:
        return
    added = sum(p.bytes for p in parts)
    if abs(total.bytes - added) > rel_tol * (total.bytes + added):
        raise IperfDocumentError(f"{where}.bytes", f"{total.bytes} is not the sum over its streams ({added})"
                                 + (f" to {rel_tol:.1%}" if rel_tol else ""))


def text_field(where: str, v) -> str | None:
    """A host name or address: a short string without spaces, or None when absent."""
    if v is None:
        return None
    if not isinstance(v, str) or not v or len(v) > 255 or any(c.isspace() for c in v):
        raise IperfDocumentError(where, f"{v!r} is not a host name or address")
    return v
