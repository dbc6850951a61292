"""Reads of the store that more than one command makes, written once (aliases: runs r, links l)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dimensions import BUFFER_SQL, FLAGGED_SQL, NOTE_FLAGS
from ..errors import ValidationError
from .expressions import TAU_MS_SQL


def flagged_ok_runs(con, campaign_ids: Sequence[str]) -> list[dict]:
    """The ok runs of these campaigns that the instrument flagged (dimensions.FLAGGED_SQL): variant, streams,
    socket_buffer_bytes and `flags`, the run's and its link's flags without the notes (NOTE_FLAGS)."""
    con = getattr(con, "con", con)
    rows = con.execute(
        f"SELECT r.variant, r.streams, r.socket_buffer_bytes, coalesce(r.flags, '') || ',' || coalesce(l.flags, '') "
        f"FROM runs r LEFT JOIN links l ON r.link_id = l.link_id "
        f"WHERE r.status = 'ok' AND r.campaign_id IN (SELECT unnest(?)) AND {FLAGGED_SQL}",
        [list(campaign_ids)]).fetchall()
    return [{"variant": v, "streams": n, "socket_buffer_bytes": b,
             "flags": sorted({f for f in flags.split(",") if f and f not in NOTE_FLAGS})}
            for v, n, b, flags in rows]


# -- the models' fits (models/fit.py, model fit, the report, model validate) ---------------------------
_RUNS_FLAT = """SELECT variant, streams, socket_buffer_bytes, transfer_bytes, duration_s, rtt_ms, rate_bps,
    CAST(buffer_bytes AS VARCHAR) AS buffer, buffer_bytes AS configured_buffer_bytes, throughput_bps, status,
    CAST(NULL AS DOUBLE) AS window_limit_bytes, false AS flagged, CAST(NULL AS DOUBLE) AS startup_rtts_run,
    {flat_extra} FROM runs{where}"""
# τ of a link that does not set it (a remote host) is its measured RTT (store.TAU_MS_SQL); C is the
# link's payload ceiling where calibration stored it (docs/models.md, "Fitting measured runs").
_CAPACITY_SQL = "coalesce(l.goodput_ceiling_bps, l.rate_bps)"
# The start-up lag d of one run from its first receiver interval (docs/models.md, "Fitting measured runs"): the
# receiver's interval [0, e] holds the data sent in the sender's [0, e − τ], B bytes; a slow start that
# doubles per RTT from w0 = n·IW·MSS after d RTTs has sent w0·(2^{(e−τ)/τ − d} − 1)/ln 2, so
# d = (e − τ)/τ − log2(1 + B·ln 2/w0). Used only where that interval holds ≥ 2 RTTs of sending and stays
# below the BDP (w0 + B·ln 2 ≤ C·τ: the window never reached the pipe, so slow start is all it saw), on
# links without external loss (a loss ends slow start early).
_STARTUP_SQL = f"""(SELECT CASE WHEN i.bytes > 0 AND i.end_s - {{tau}} >= 2 * {{tau}}
        AND coalesce(l.loss_rate, 0) = 0
        AND {{w0}} + i.bytes * ln(2) <= {_CAPACITY_SQL} * {{tau}} / 8
      THEN (i.end_s - {{tau}}) / ({{tau}}) - log2(1 + i.bytes * ln(2) / ({{w0}})) END
    FROM intervals i WHERE i.run_id = r.run_id AND i.stream IS NULL AND i.start_s = 0 LIMIT 1)""".format(
    tau=f"{TAU_MS_SQL} / 1e3", w0="r.streams * {initial_window} * coalesce(l.mtu - {tcp_ip_headers}, {default_mss})")
# The store keeps the link (τ, C, β) in `links`; each run names its link.
_RUNS_JOINED = f"""SELECT r.variant, r.streams, r.socket_buffer_bytes, r.transfer_bytes, r.duration_s,
    {TAU_MS_SQL} AS rtt_ms, l.rate_bps, {BUFFER_SQL} AS buffer,
    l.buffer_bytes AS configured_buffer_bytes, r.throughput_bps, r.status, {FLAGGED_SQL} AS flagged,
    CASE WHEN r.socket_buffer_bytes IS NULL THEN r.effective_socket_buffer_bytes END AS window_limit_bytes,
    r.duration_target_s, coalesce(l.loss_mode, 'none') AS loss_mode, coalesce(l.loss_rate, 0.0)::DOUBLE AS loss_rate,
    l.mtu, {_CAPACITY_SQL} AS capacity_bps, {_STARTUP_SQL} AS startup_rtts_run
    FROM runs r JOIN links l ON r.link_id = l.link_id{{where}}"""
# optional columns of a flat table (plain tables written by other tools may lack them)
_FLAT_OPTIONAL = {"duration_target_s": "CAST(NULL AS DOUBLE)", "loss_mode": "'none'", "loss_rate": "CAST(0 AS DOUBLE)",
                  "mtu": "CAST(NULL AS INTEGER)", "capacity_bps": "rate_bps"}

PROFILE_SQL = """
SELECT variant, streams, rtt_ms, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s,
       loss_mode, loss_rate, mtu,
       coalesce(transfer_bytes, avg(throughput_bps * duration_s) / 8) AS size_bytes,
       avg(configured_buffer_bytes) AS configured_buffer_bytes, min(window_limit_bytes) AS window_limit_bytes,
       avg(throughput_bps) AS throughput_bps, stddev_samp(throughput_bps) AS std_bps, count(*) AS runs,
       avg(capacity_bps) AS capacity_bps, median(startup_rtts_run) AS startup_rtts
FROM ({source}) AS runs
WHERE status = 'ok' AND throughput_bps > 0 AND rtt_ms IS NOT NULL AND rate_bps IS NOT NULL{flagged}
GROUP BY variant, streams, rtt_ms, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s,
         loss_mode, loss_rate, mtu
ORDER BY variant, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s, loss_mode, loss_rate,
         mtu, streams, rtt_ms
"""


# campaigns named (or whose id is) one of the patterns (SQL LIKE: % any text)
CAMPAIGN_WHERE = """ WHERE r.campaign_id IN (SELECT campaign_id FROM campaigns
    WHERE EXISTS (SELECT 1 FROM (SELECT unnest(?) AS pat) WHERE name LIKE pat OR campaign_id LIKE pat))"""


def fit_table(con, *, campaigns=None, exclude_flagged: bool = False, initial_window: int, tcp_ip_headers: int,
              default_mss: int) -> dict[str, np.ndarray]:
    """Mean measured throughput per configuration from a DuckDB connection: a flat ``runs`` table with
    rtt_ms, rate_bps, buffer_bytes, or the store's ``runs`` joined with ``links`` (β grouped as the spec
    wrote it, see tcpprofile.dimensions.BUFFER_SQL). campaigns: only runs of the campaigns whose name or
    id matches one of these SQL LIKE patterns (store only); exclude_flagged: leave out flagged runs
    (tcpprofile.dimensions.FLAGGED_SQL). Rows need τ and C (a model does). Columns returned: the configuration,
    transfer_bytes (NULL for time-limited runs), size_bytes, configured_buffer_bytes, window_limit_bytes
    (autotuned runs: the kernel's socket-buffer limit, else NULL), throughput_bps (mean), std_bps, runs (count)."""
    run_cols = {row[0] for row in con.execute("DESCRIBE runs").fetchall()}
    flat = "rtt_ms" in run_cols
    params: list = []
    where = ""
    if campaigns:
        if flat or "campaign_id" not in run_cols:
            raise ValidationError("campaigns", "this table has no campaigns (a flat runs table); drop the filter")
        where, params = CAMPAIGN_WHERE, [list(campaigns)]
    flat_extra = ", ".join(f"{name}" if name in run_cols else f"{sql} AS {name}" for name, sql in _FLAT_OPTIONAL.items())
    source = (_RUNS_FLAT.format(flat_extra=flat_extra, where=where) if flat
              else _RUNS_JOINED.format(where=where, initial_window=initial_window, tcp_ip_headers=tcp_ip_headers,
                                       default_mss=default_mss))
    cur = con.execute(PROFILE_SQL.format(source=source, flagged=" AND NOT flagged" if exclude_flagged else ""),
                      params)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return {name: np.asarray([row[i] for row in rows]) for i, name in enumerate(names)}
