"""What may land in runs, intervals and cwnd through put_run (the insert path of campaigns and the
importer): the rules of the importer's checked parse (iperf_json), applied once more at the store, so
a NaN, infinite or negative measurement is never stored, least of all as an 'ok' run.

- every number is finite (NULL, not NaN, says "unknown") and every integer fits a BIGINT;
- counts, sizes, rates, durations and RTTs (the columns in NON_NEGATIVE) are ≥ 0;
- status is 'ok', 'failed' or 'running'; an 'ok' run has a throughput, at most 1e15 bit/s;
- where a run gives throughput, bytes and duration, they agree as iperf3's own totals do:
  |bps·duration − 8·bytes| ≤ 10⁻³·8·bytes + bps·2 µs;
- an interval ends at or after its start (its rate is iperf3's over iperf3's own interval length,
  which the parse has checked; after -O that length is not end_s − start_s).
A violation raises ValidationError naming table.column and the run.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ValidationError
from ..measure.iperf_json import MAX_COUNT, MAX_RATE_BPS, RATE_REL_TOL, TIME_ROUNDING_S, show

STATUSES = ("ok", "failed", "running")
NON_NEGATIVE = {
    "runs": {"streams", "socket_buffer_bytes", "effective_socket_buffer_bytes", "transfer_bytes",
             "duration_target_s", "repetition", "attempts", "throughput_bps", "bytes_transferred", "duration_s",
             "size_delivered_s", "retransmits", "rtt_loaded_mean_ms", "rtt_loaded_min_ms", "rtt_base_ms",
             "stall_effect_bound"},
    "intervals": {"start_s", "end_s", "bytes", "bits_per_second", "snd_cwnd_bytes", "rtt_us", "retransmits"},
    "cwnd": {"snd_cwnd", "ssthresh", "srtt_us", "snd_wnd", "rcv_wnd", "length"},
}


def check_columns(table: str, columns: Mapping[str, Sequence]) -> None:
    """check_row over many rows given as equal-length columns (a run's intervals or cwnd samples, up
    to ~10⁵): a vectorised pass, and row by row only to name the first offending value."""
    if _columns_ok(table, columns):
        return
    names = list(columns)
    for values in zip(*columns.values()):
        check_row(table, dict(zip(names, values)))


def _columns_ok(table: str, columns: Mapping[str, Sequence]) -> bool:
    """True when no value breaks check_row's rules (False: look row by row)."""
    with np.errstate(invalid="ignore"):      # NaN compared below: isfinite finds it
        try:
            for column, values in columns.items():
                if column in ("run_id", "omitted"):
                    continue
                a = np.asarray(values, dtype=object)
                a = a[np.not_equal(a, None)]
                if ((a > MAX_COUNT) | (a < -MAX_COUNT - 1)).any():
                    return False
                x = a.astype(float)
                if not np.isfinite(x).all() or (column in NON_NEGATIVE[table] and (x < 0).any()):
                    return False
            if table == "intervals" and {"start_s", "end_s"} <= set(columns):
                start, end = (np.asarray(columns[c], dtype=object) for c in ("start_s", "end_s"))
                both = np.not_equal(start, None) & np.not_equal(end, None)
                return bool((end[both].astype(float) >= start[both].astype(float)).all())
        except (TypeError, ValueError, OverflowError):
            return False
    return True


def check_row(table: str, row: Mapping) -> None:
    """Raise ValidationError unless `row` may be stored in `table` (runs, intervals or cwnd)."""
    where = f" (run {row.get('run_id')})"
    for column, v in row.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            continue
        v = int(v) if isinstance(v, numbers.Integral) else float(v)   # numpy scalars too
        if isinstance(v, float) and not math.isfinite(v):
            raise ValidationError(f"{table}.{column}", f"{show(v)} is not a number that can be stored{where}")
        if isinstance(v, int) and not -MAX_COUNT - 1 <= v <= MAX_COUNT:
            raise ValidationError(f"{table}.{column}", f"{show(v)} does not fit a BIGINT{where}")
        if v < 0 and column in NON_NEGATIVE.get(table, ()):
            raise ValidationError(f"{table}.{column}", f"{show(v)} is negative{where}")
    if table == "runs":
        _check_run(row, where)
    elif table == "intervals":
        _ordered(row, where)


def _check_run(row: Mapping, where: str) -> None:
    status = row.get("status")
    if status not in STATUSES:
        raise ValidationError("runs.status", f"{show(status)}: one of {', '.join(STATUSES)}{where}")
    bps = row.get("throughput_bps")
    if status == "ok" and bps is None:
        raise ValidationError("runs.throughput_bps", f"an 'ok' run needs its throughput{where}")
    if bps is not None and bps > MAX_RATE_BPS:
        raise ValidationError("runs.throughput_bps", f"{show(bps)} bit/s is above {MAX_RATE_BPS:g}{where}")
    if row.get("size_delivered_s") is not None:    # a fixed-size transfer timed by its delivery (iperf.parse)
        _agree("runs", bps, row.get("transfer_bytes"), row.get("size_delivered_s"), where, "throughput_bps")
    else:
        _agree("runs", bps, row.get("bytes_transferred"), row.get("duration_s"), where, "throughput_bps")


def _ordered(row: Mapping, where: str) -> None:
    start, end = row.get("start_s"), row.get("end_s")
    if start is not None and end is not None and end < start:
        raise ValidationError("intervals.end_s", f"{end!r} s is before start_s ({start!r} s){where}")


def _agree(table: str, bps, count, seconds, where: str, column: str) -> None:
    """bps = 8·bytes / seconds [bit/s], to 0.1 % and the µs rounding of two printed times."""
    if None in (bps, count, seconds):
        return
    bps, count, seconds = float(bps), int(count), float(seconds)
    if abs(bps * seconds - 8 * count) > RATE_REL_TOL * 8 * count + bps * 2 * TIME_ROUNDING_S:
        raise ValidationError(f"{table}.{column}", f"{bps:.6g} bit/s disagrees with {count} bytes over "
                                                   f"{seconds:.6g} s (more than 0.1 %){where}")
