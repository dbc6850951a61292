"""Export store tables as JSON lines, CSV or Parquet.

The `runs` export is a stable contract: one object per run, the run's configuration joined with its
link's configured values (rtt_ms, rate_bps, buffer_bytes, loss; null where unknown, e.g. imported
files) and measured values (rtt_measured_ms, rate_measured_bps), and its results. raw_json and
sysctls_json stay in the store (query them there).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from typing import TYPE_CHECKING, TextIO

from ..errors import ValidationError

if TYPE_CHECKING:
    from .db import Store

WHAT = ("runs", "intervals", "links", "cwnd", "campaigns")
FORMATS = ("jsonl", "csv", "parquet")

RUN_COLUMNS = (
    "run_id", "campaign_id", "link_id", "seq", "variant", "cc_kernel_name", "cc_impl", "cc_object_sha256",
    "cc_reported", "streams", "socket_buffer_bytes", "effective_socket_buffer_bytes", "transfer_bytes",
    "duration_target_s", "duration_s", "reverse", "zerocopy", "repetition", "trace_cwnd",
    "l.kind AS link_kind", "l.rtt_ms", "l.rtt_measured_ms", "l.rate_bps", "l.rate_measured_bps",
    "l.buffer_bytes", "l.loss_mode", "l.loss_rate", "l.mtu", "l.source_host", "l.host", "l.port", "l.goodput_ceiling_bps",
    "l.calibration_ok", "throughput_bps", "size_delivered_s", "bytes_transferred", "retransmits", "rtt_loaded_mean_ms",
    "rtt_loaded_min_ms", "status", "failure_reason", "attempts", "r.flags", "kernel", "iperf3_version",
    "r.started_at", "r.finished_at", "source_file",
)

_QUERIES = {
    "runs": ("SELECT " + ", ".join(c if "." in c else f"r.{c}" for c in RUN_COLUMNS)
             + " FROM runs r LEFT JOIN links l USING (link_id) {where} ORDER BY r.campaign_id, r.seq, r.run_id"),
    "intervals": ("SELECT i.run_id, i.stream, i.start_s, i.end_s, i.bytes, i.bits_per_second, "
                  "i.snd_cwnd_bytes, i.rtt_us, i.retransmits, i.omitted FROM intervals i "
                  "JOIN runs r USING (run_id) {where} "
                  "ORDER BY i.run_id, i.stream NULLS LAST, i.start_s"),
    "cwnd": ("SELECT c.* FROM cwnd c JOIN runs r USING (run_id) {where} "
             "ORDER BY c.run_id, c.stream, c.t_s"),
    "links": "SELECT l.* FROM links l {where} ORDER BY l.campaign_id, l.created_at, l.link_id",
    "campaigns": "SELECT c.* FROM campaigns c {where} ORDER BY c.created_at, c.campaign_id",
}
_CAMPAIGN_COLUMN = {"runs": "r", "intervals": "r", "cwnd": "r", "links": "l", "campaigns": "c"}


def query(what: str, campaign_id: str | None = None) -> tuple[str, list]:
    if what not in WHAT:
        raise ValidationError("--what", f"{what!r}: one of {', '.join(WHAT)}")
    where, params = "", []
    if campaign_id:
        where, params = f"WHERE {_CAMPAIGN_COLUMN[what]}.campaign_id = ?", [campaign_id]
    return _QUERIES[what].format(where=where), params


def export(store: Store, what: str, fmt: str, out: TextIO | str | None,
           campaign_id: str | None = None) -> int:
    """Write the table; `out` is a text stream (jsonl, csv) or a path (any format). Returns rows written."""
    if fmt not in FORMATS:
        raise ValidationError("--format", f"{fmt!r}: one of {', '.join(FORMATS)}")
    sql, params = query(what, campaign_id)
    if what == "runs" and "size_delivered_s" not in store.columns("runs"):     # a store before schema v5
        sql = sql.replace("r.size_delivered_s", "CAST(NULL AS DOUBLE) AS size_delivered_s")
    if what == "runs" and "source_host" not in store.columns("links"):      # a store before schema v6
        sql = sql.replace("l.source_host", "CAST(NULL AS VARCHAR) AS source_host")
    if fmt == "parquet":
        if not isinstance(out, str):
            raise ValidationError("--out", "parquet needs an output file (--out FILE)")
        n = store.con.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]
        store.con.execute(f"COPY ({sql}) TO '{_quote(out)}' (FORMAT parquet)", params)
        return n
    if isinstance(out, str):
        with open(out, "w", newline="") as f:
            return _write_text(store, sql, params, fmt, f)
    return _write_text(store, sql, params, fmt, out)


def _write_text(store: Store, sql: str, params: list, fmt: str, f: TextIO) -> int:
    cur = store.con.execute(sql, params)
    names = [d[0] for d in cur.description]
    writer = None
    if fmt == "csv":
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(names)
    n = 0
    while batch := cur.fetchmany(10_000):
        for row in batch:
            if writer:
                writer.writerow(["" if v is None else _plain(v) for v in row])
            else:
                f.write(json.dumps(dict(zip(names, map(_plain, row)))) + "\n")
            n += 1
    return n


def _plain(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def _quote(path: str) -> str:
    return path.replace("'", "''")
