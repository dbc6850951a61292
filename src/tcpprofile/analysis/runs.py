"""Reading the store for analysis: successful runs with their link configuration, and 1 s traces.

Only runs with status = 'ok' and a link with an RTT τ (configured, else measured: store.TAU_MS_SQL, the
definition every reader shares) are analysed. τ is in seconds (tau_s), as the reader gives it, in every analysis
(profiles, sigmoid fits, τ_T, regions); their rows print it in ms (units.to_ms: the store's digits).
A run is *flagged* when its link failed calibration (calibration_ok false or link flags set) or the run
carries flags other than the trace-assembly notes (grouping.NOTE_FLAGS); flagged runs are included and
counted (ProfileStats.n_flagged) unless exclude_flagged=True. grouping.FLAGGED_SQL is that definition, the one
`analyze`, `select`, `report` and the campaign summary share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..store.grouping import DIMENSIONS, check_by
from ..store import reads


@dataclass(frozen=True)
class Runs:
    """Columns of the analysable runs (one entry per run); dims holds the grouping dimensions."""
    run_id: np.ndarray          # object (str)
    tau_s: np.ndarray           # the link's RTT τ [s] (store.TAU_S_SQL)
    throughput_bps: np.ndarray
    capacity_bps: np.ndarray    # goodput ceiling if measured, else configured rate, else nan
    flagged: np.ndarray         # bool
    dims: dict[str, np.ndarray]  # object arrays (None for NULL)

    def __len__(self) -> int:
        return self.run_id.size

    def groups(self, by: Sequence[str]) -> list[tuple[dict, np.ndarray]]:
        """(key, indices) per distinct combination of `by`, in sorted key order (None first)."""
        by = check_by(by)
        index: dict[tuple, list[int]] = {}
        for i, k in enumerate(zip(*(self.dims[d] for d in by)) if by else ((),) * len(self)):
            index.setdefault(k, []).append(i)
        order = sorted(index, key=lambda k: tuple((v is not None, v) for v in k))
        return [(dict(zip(by, k)), np.asarray(index[k])) for k in order]


def load_runs(con, *, exclude_flagged: bool = False) -> Runs:
    rows = reads.analysed_runs(con)
    if exclude_flagged:
        rows = [r for r in rows if not r[4]]
    cols = list(zip(*rows)) if rows else [()] * (5 + len(DIMENSIONS))

    def obj(c):
        a = np.empty(len(c), dtype=object)
        a[:] = list(c)
        return a

    return Runs(run_id=obj(cols[0]), tau_s=np.asarray(cols[1], float),
                throughput_bps=np.asarray(cols[2], float),
                capacity_bps=np.array([np.nan if v is None else v for v in cols[3]], float),
                flagged=np.asarray(cols[4], bool),
                dims={name: obj(cols[5 + i]) for i, name in enumerate(DIMENSIONS)})


@dataclass(frozen=True)
class Trace:
    """A 1 s throughput trace: interval bounds (s, since the run's start) and rate (bit/s)."""
    start_s: np.ndarray
    end_s: np.ndarray
    bps: np.ndarray


def load_traces(con, run_ids: Sequence[str] | None = None, *, per_stream: bool = False
                ) -> dict[tuple[str, int | None], Trace]:
    """Traces keyed by (run_id, stream); stream None is the aggregate (iperf3's sum, or the sum of the
    streams when the sum rows are absent). Omitted (warm-up) intervals are skipped."""
    data = reads.interval_columns(con, run_ids)
    rid = np.asarray(data["run_id"], dtype=object)
    stream = np.asarray(data["stream"], dtype=np.int64)
    start, end = np.asarray(data["start_s"], float), np.asarray(data["end_s"], float)
    bps = np.ma.filled(np.ma.asarray(data["bits_per_second"], dtype=float), np.nan)
    out: dict[tuple[str, int | None], Trace] = {}
    if rid.size == 0:
        return out
    cut = np.flatnonzero((rid[1:] != rid[:-1]) | (stream[1:] != stream[:-1])) + 1
    for a, b in zip(np.r_[0, cut], np.r_[cut, rid.size]):
        s = int(stream[a])
        if s >= 0 and not per_stream and (rid[a], None) in out:
            continue
        out[(rid[a], None if s < 0 else s)] = Trace(start[a:b], end[a:b], bps[a:b])
    for r in {k[0] for k in out}:  # aggregate from the streams where iperf3's sum is missing
        if (r, None) not in out:
            parts = [t for (q, s), t in out.items() if q == r and s is not None]
            if parts and all(p.bps.size == parts[0].bps.size for p in parts):
                out[(r, None)] = Trace(parts[0].start_s, parts[0].end_s, np.sum([p.bps for p in parts], axis=0))
    if not per_stream:
        out = {k: v for k, v in out.items() if k[1] is None}
    return out
