"""Reads of the store that more than one command makes, written once (aliases: runs r, links l)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .grouping import BUFFER_SQL, DIMENSIONS, FLAGGED_SQL, NOTE_FLAGS
from ..errors import ValidationError
from .expressions import TAU_MS_SQL, TAU_S_SQL


def _con(con):
    """A Store or a DuckDB connection: the connection."""
    return getattr(con, "con", con)


def _dicts(con, sql: str, params: list | None = None) -> list[dict]:
    """The rows of a query as dicts keyed by column name (as Store.query)."""
    cur = _con(con).execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def flagged_ok_runs(con, campaign_ids: Sequence[str]) -> list[dict]:
    """The ok runs of these campaigns that the instrument flagged (grouping.FLAGGED_SQL): variant, streams,
    socket_buffer_bytes and `flags`, the run's and its link's flags without the notes (NOTE_FLAGS)."""
    rows = _con(con).execute(
        f"SELECT r.variant, r.streams, r.socket_buffer_bytes, coalesce(r.flags, '') || ',' || coalesce(l.flags, '') "
        f"FROM runs r LEFT JOIN links l ON r.link_id = l.link_id "
        f"WHERE r.status = 'ok' AND r.campaign_id IN (SELECT unnest(?)) AND {FLAGGED_SQL}",
        [list(campaign_ids)]).fetchall()
    return [{"variant": v, "streams": n, "socket_buffer_bytes": b,
             "flags": sorted({f for f in flags.split(",") if f and f not in NOTE_FLAGS})}
            for v, n, b, flags in rows]


# -- the models' fits (models/fit.py, model fit, the report, model validate) ---------------------------
# A flat table keeps τ in ms (docs/models.md) as the store does; the readers return τ in s (rtt_s).
_RUNS_FLAT = """SELECT variant, streams, socket_buffer_bytes, transfer_bytes, duration_s, rtt_ms / 1e3 AS rtt_s,
    rate_bps,
    CAST(buffer_bytes AS VARCHAR) AS buffer, buffer_bytes AS configured_buffer_bytes, throughput_bps, status,
    CAST(NULL AS DOUBLE) AS window_limit_bytes, false AS flagged, CAST(NULL AS DOUBLE) AS startup_rtts_run,
    {flat_extra} FROM runs{where}"""
# τ of a link that does not set it (a remote host) is its measured RTT (store.TAU_MS_SQL); C is the
# link's payload ceiling where calibration stored it (docs/models.md, "Fitting measured runs").
_CAPACITY_SQL = "coalesce(l.goodput_ceiling_bps, l.rate_bps)"
# The start-up lag d of one run from its first receiver interval (docs/models.md, "Fitting measured runs").
# Slow start is defined once, in models/framework.py (Vardoyan et al. Eq. (3) with the lag d: the time to send
# F bits is t_ss(F) = dτ + τ·log2(1 + F·ln 2/(n·w0)), w0 per flow); this is its inverse for d. The receiver's
# interval [0, e] holds the data sent in the sender's [0, e − τ], B bytes, so with the aggregate
# w0 = n·IW·MSS [bytes]: d = (e − τ)/τ − log2(1 + B·ln 2/w0). Used only where that interval holds ≥ 2 RTTs of
# sending and stays below the BDP (w0 + B·ln 2 ≤ C·τ: the window never reached the pipe, so slow start is
# all it saw), on links without external loss (a loss ends slow start early).
_STARTUP_SQL = f"""(SELECT CASE WHEN i.bytes > 0 AND i.end_s - {{tau}} >= 2 * {{tau}}
        AND coalesce(l.loss_rate, 0) = 0
        AND {{w0}} + i.bytes * ln(2) <= {_CAPACITY_SQL} * {{tau}} / 8
      THEN (i.end_s - {{tau}}) / ({{tau}}) - log2(1 + i.bytes * ln(2) / ({{w0}})) END
    FROM intervals i WHERE i.run_id = r.run_id AND i.stream IS NULL AND i.start_s = 0 LIMIT 1)""".format(
    tau=TAU_S_SQL, w0="r.streams * {initial_window} * coalesce(l.mtu - {tcp_ip_headers}, {default_mss})")
# The store keeps the link (τ, C, β) in `links`; each run names its link.
_RUNS_JOINED = f"""SELECT r.variant, r.streams, r.socket_buffer_bytes, r.transfer_bytes, r.duration_s,
    {TAU_S_SQL} AS rtt_s, l.rate_bps, {BUFFER_SQL} AS buffer,
    l.buffer_bytes AS configured_buffer_bytes, r.throughput_bps, r.status, {FLAGGED_SQL} AS flagged,
    CASE WHEN r.socket_buffer_bytes IS NULL THEN r.effective_socket_buffer_bytes END AS window_limit_bytes,
    r.duration_target_s, coalesce(l.loss_mode, 'none') AS loss_mode, coalesce(l.loss_rate, 0.0)::DOUBLE AS loss_rate,
    l.mtu, {_CAPACITY_SQL} AS capacity_bps, {_STARTUP_SQL} AS startup_rtts_run, {{delivered}} AS delivered
    FROM runs r JOIN links l ON r.link_id = l.link_id{{where}}"""
# 1.0 for a fixed-size run timed by its delivery (runs.size_delivered_s, schema v5; iperf.parse), else 0.0
_DELIVERED_SQL = "CAST(r.size_delivered_s IS NOT NULL AS DOUBLE)"
# optional columns of a flat table (plain tables written by other tools may lack them)
_FLAT_OPTIONAL = {"duration_target_s": "CAST(NULL AS DOUBLE)", "loss_mode": "'none'", "loss_rate": "CAST(0 AS DOUBLE)",
                  "mtu": "CAST(NULL AS INTEGER)", "capacity_bps": "rate_bps",
                  "delivered": "CAST(0 AS DOUBLE)"}

PROFILE_SQL = """
SELECT variant, streams, rtt_s, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s,
       loss_mode, loss_rate, mtu,
       coalesce(transfer_bytes, avg(throughput_bps * duration_s) / 8) AS size_bytes,
       avg(configured_buffer_bytes) AS configured_buffer_bytes, min(window_limit_bytes) AS window_limit_bytes,
       avg(throughput_bps) AS throughput_bps, stddev_samp(throughput_bps) AS std_bps, count(*) AS runs,
       avg(capacity_bps) AS capacity_bps, median(startup_rtts_run) AS startup_rtts,
       avg(delivered) AS delivered_share
FROM ({source}) AS runs
WHERE status = 'ok' AND throughput_bps > 0 AND rtt_s IS NOT NULL AND rate_bps IS NOT NULL{flagged}
GROUP BY variant, streams, rtt_s, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s,
         loss_mode, loss_rate, mtu
ORDER BY variant, rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s, loss_mode, loss_rate,
         mtu, streams, rtt_s
"""


# campaigns named (or whose id is) one of the patterns (SQL LIKE: % any text)
CAMPAIGN_WHERE = """ WHERE r.campaign_id IN (SELECT campaign_id FROM campaigns
    WHERE EXISTS (SELECT 1 FROM (SELECT unnest(?) AS pat) WHERE name LIKE pat OR campaign_id LIKE pat))"""


def fit_table(con, *, campaigns=None, exclude_flagged: bool = False, initial_window: int, tcp_ip_headers: int,
              default_mss: int) -> dict[str, np.ndarray]:
    """Mean measured throughput per configuration from a DuckDB connection: a flat ``runs`` table with
    rtt_ms [ms], rate_bps, buffer_bytes, or the store's ``runs`` joined with ``links`` (β grouped as the spec
    wrote it, see tcpprofile.store.grouping.BUFFER_SQL). campaigns: only runs of the campaigns whose name or
    id matches one of these SQL LIKE patterns (store only); exclude_flagged: leave out flagged runs
    (tcpprofile.store.grouping.FLAGGED_SQL). Rows need τ and C (a model does). Columns returned: the configuration
    (τ as rtt_s [s]), transfer_bytes (NULL for time-limited runs), size_bytes, configured_buffer_bytes,
    window_limit_bytes (autotuned runs: the kernel's socket-buffer limit, else NULL), throughput_bps (mean),
    std_bps, runs (count), delivered_share (the share of the runs timed by their delivery of F: iperf.parse)."""
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
                                       default_mss=default_mss,
                                       delivered=_DELIVERED_SQL if "size_delivered_s" in run_cols else "0.0"))
    cur = con.execute(PROFILE_SQL.format(source=source, flagged=" AND NOT flagged" if exclude_flagged else ""),
                      params)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return {name: np.asarray([row[i] for row in rows]) for i, name in enumerate(names)}


def run_interval_lists(con, *, campaigns=None, exclude_flagged: bool = False) -> list[tuple]:
    """Per ok run with a positive throughput and aggregate intervals (of the campaigns matching CAMPAIGN_WHERE's
    patterns, if given; without flagged runs if asked): its configuration as PROFILE_SQL groups it (variant,
    streams, rtt_s [s], rate_bps, buffer, socket_buffer_bytes, transfer_bytes, duration_target_s, loss_mode,
    loss_rate, mtu), then the list of its interval lengths [s] and the list of their bytes (by start), and its
    run_id. Empty for a table without intervals or links (a flat runs table)."""
    tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    if "intervals" not in tables or "links" not in tables:
        return []
    where = " AND NOT " + FLAGGED_SQL if exclude_flagged else ""
    campaign = CAMPAIGN_WHERE.replace(" WHERE ", " AND ", 1) if campaigns else ""
    sql = f"""SELECT r.variant, r.streams, {TAU_S_SQL} AS rtt_s, l.rate_bps, {BUFFER_SQL} AS buffer,
        r.socket_buffer_bytes, r.transfer_bytes, r.duration_target_s, coalesce(l.loss_mode, 'none'),
        coalesce(l.loss_rate, 0.0)::DOUBLE, l.mtu,
        list(i.end_s - i.start_s ORDER BY i.start_s), list(i.bytes ORDER BY i.start_s), r.run_id
        FROM runs r JOIN links l ON r.link_id = l.link_id JOIN intervals i ON i.run_id = r.run_id AND i.stream IS NULL
        WHERE r.status = 'ok' AND r.throughput_bps > 0{where}{campaign}
        GROUP BY ALL"""
    return con.execute(sql, [list(campaigns)] if campaigns else []).fetchall()


# -- analysis (analysis/runs.py) ------------------------------------------------------------------------
def analysed_runs(con) -> list[tuple]:
    """The ok runs with a throughput and a τ, in run_id order, one tuple each: run_id, τ [s] (TAU_S_SQL),
    throughput [bit/s], capacity [bit/s] (the link's goodput ceiling if measured, else its configured rate),
    flagged (FLAGGED_SQL), then the grouping dimensions in grouping.DIMENSIONS order."""
    dims = ", ".join(f"{sql} AS {name}" for name, sql in DIMENSIONS.items())
    return _con(con).execute(f"""
        SELECT r.run_id, {TAU_S_SQL}, r.throughput_bps, coalesce(l.goodput_ceiling_bps, l.rate_bps),
               {FLAGGED_SQL},
               {dims}
        FROM runs r JOIN links l USING (link_id)
        WHERE r.status = 'ok' AND {TAU_MS_SQL} IS NOT NULL AND r.throughput_bps IS NOT NULL
        ORDER BY r.run_id""").fetchall()


def interval_columns(con, run_ids: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The not-omitted iperf3 intervals (of these runs, or of all) as numpy columns run_id, stream (-1: the
    sum over the streams), start_s, end_s, bits_per_second, ordered by run, stream and start."""
    con = _con(con)
    where = "WHERE coalesce(omitted, false) = false"
    if run_ids is not None:
        con.register("_tcpp_analysis_ids", {"run_id": np.asarray(list(run_ids), dtype=object)})
        where += " AND run_id IN (SELECT run_id FROM _tcpp_analysis_ids)"
    try:
        return con.execute(f"""
            SELECT run_id, coalesce(stream, -1) AS stream, start_s, end_s, bits_per_second
            FROM intervals {where} ORDER BY run_id, stream, start_s""").fetchnumpy()
    finally:
        if run_ids is not None:
            con.unregister("_tcpp_analysis_ids")


# -- select and the report's profiles (select.py) ---------------------------------------------------------
PROFILE_RUNS_SQL = f"""
SELECT r.run_id, r.variant, coalesce(r.cc_impl, '') AS cc_impl, r.cc_kernel_name, r.streams,
       r.socket_buffer_bytes AS buffer_bytes, r.transfer_bytes, r.duration_target_s AS duration_s,
       coalesce(l.loss_mode, 'none') AS loss_mode, coalesce(l.loss_rate, 0.0) AS loss_rate,
       l.rate_bps, {BUFFER_SQL} AS link_buffer, coalesce(r.reverse, false) AS reverse, l.kind AS link_kind,
       {TAU_S_SQL} AS rtt_s, r.throughput_bps, {FLAGGED_SQL} AS flagged
FROM runs r JOIN links l USING (link_id)
WHERE r.status = 'ok' AND r.throughput_bps IS NOT NULL
  AND {TAU_MS_SQL} IS NOT NULL
ORDER BY r.run_id
"""


def profile_runs(con) -> list[dict]:
    """The ok runs with a throughput and a τ, in run_id order, as dicts: the configuration (variant, cc_impl,
    cc_kernel_name, streams, buffer_bytes: the socket buffer), the conditions (transfer_bytes, duration_s,
    loss_mode, loss_rate, rate_bps, link_buffer as the spec wrote it, reverse, link_kind), rtt_s [s] (TAU_S_SQL),
    throughput_bps and flagged (FLAGGED_SQL)."""
    return _dicts(con, PROFILE_RUNS_SQL)


# -- the report (report/data.py) -------------------------------------------------------------------------
# The host pair of a run that is not on an emulated link: iperf3's JSON (stored as raw_json) names the host that
# wrote it in start.system_info ("Linux HOSTNAME RELEASE ...", uname -a) and the peer in start.connecting_to.host
# (client side) or start.accepted_connection.host (server side) — iperf3's src/iperf_api.c, iperf_json_start().
RUN_CONTEXT_SQL = """
SELECT r.run_id, r.started_at, r.sysctls_json, l.kind AS link_kind, l.host AS link_host,
       CASE WHEN l.kind <> 'emulated' AND r.raw_json IS NOT NULL
            THEN nullif(split_part(json_extract_string(r.raw_json, '$.start.system_info'), ' ', 2), '') END
           AS local_host,
       CASE WHEN l.kind <> 'emulated' AND r.raw_json IS NOT NULL
            THEN coalesce(json_extract_string(r.raw_json, '$.start.connecting_to.host'),
                          json_extract_string(r.raw_json, '$.start.accepted_connection.host')) END AS peer_host
FROM runs r JOIN links l USING (link_id)
WHERE r.status = 'ok' AND r.run_id IN (SELECT unnest(?))
"""


def run_context(con, run_ids: Sequence[str]) -> dict[str, dict]:
    """Per run (of these): started_at, sysctls_json, link_kind, link_host (remote links' target) and, off
    emulated links, local_host and peer_host as iperf3's JSON names them (RUN_CONTEXT_SQL)."""
    if not run_ids:
        return {}
    return {r["run_id"]: r for r in _dicts(con, RUN_CONTEXT_SQL, [list(run_ids)])}


def runs_with_intervals(con, run_ids: Sequence[str]) -> set[str]:
    """Those of these runs that have interval rows."""
    if not run_ids:
        return set()
    rows = _con(con).execute(
        "SELECT DISTINCT run_id FROM intervals WHERE run_id IN (SELECT unnest(?))", [run_ids]).fetchall()
    return {r[0] for r in rows}


def cwnd_run_ids(con, limit: int, *, exclude_flagged: bool = False) -> list[str]:
    """The first `limit` ok runs (by run_id) with a cwnd trace; without flagged runs (FLAGGED_SQL) if asked."""
    unflagged = f"AND NOT {FLAGGED_SQL}" if exclude_flagged else ""
    rows = _con(con).execute(
        "SELECT c.run_id FROM cwnd c JOIN runs r USING (run_id) LEFT JOIN links l USING (link_id) "
        f"WHERE r.status = 'ok' {unflagged} GROUP BY c.run_id ORDER BY c.run_id LIMIT ?", [limit]).fetchall()
    return [r[0] for r in rows]


def cwnd_samples(con, run_id: str) -> list[tuple]:
    """A run's cwnd trace: (stream, t_s, snd_cwnd) rows ordered by stream and time."""
    return _con(con).execute(
        "SELECT stream, t_s, snd_cwnd FROM cwnd WHERE run_id = ? ORDER BY stream, t_s", [run_id]).fetchall()


def run_summary(con, run_id: str) -> dict:
    """One run's run_id, variant, streams, socket_buffer_bytes, throughput_bps, repetition and rtt_s [s]
    (TAU_S_SQL)."""
    return _dicts(
        con, "SELECT r.run_id, r.variant, r.streams, r.socket_buffer_bytes, r.throughput_bps, r.repetition, "
        f"{TAU_S_SQL} AS rtt_s FROM runs r LEFT JOIN links l USING (link_id) "
        "WHERE r.run_id = ?", [run_id])[0]


def links_with_run_counts(con) -> list[dict]:
    """Every link's row with ok_runs, flagged_runs (ok and FLAGGED_SQL) and failed_runs, ordered by kind,
    configured RTT and link_id."""
    return _dicts(
        con, "SELECT l.*, count(r.run_id) FILTER (WHERE r.status = 'ok') AS ok_runs, "
        f"count(r.run_id) FILTER (WHERE r.status = 'ok' AND {FLAGGED_SQL}) AS flagged_runs, "
        "count(r.run_id) FILTER (WHERE r.status = 'failed') AS failed_runs "
        "FROM links l LEFT JOIN runs r USING (link_id) GROUP BY ALL ORDER BY l.kind, l.rtt_ms, l.link_id")


# -- campaigns by name (reproduce, its report section) ----------------------------------------------------
def campaigns_named(con, pattern: str) -> list[tuple[str, str]]:
    """(name, campaign_id) of the campaigns whose name matches the SQL LIKE pattern (% any text), by name."""
    return [tuple(r) for r in _con(con).execute("SELECT name, campaign_id FROM campaigns WHERE name LIKE ? "
                                                 "ORDER BY name", [pattern]).fetchall()]


def campaign_ids_named(con, pattern: str) -> list[str]:
    """The ids of the campaigns whose name matches the SQL LIKE pattern (% any text), by name."""
    return [campaign_id for _, campaign_id in campaigns_named(con, pattern)]


def run_ids_of_campaigns(con, *, campaign_ids: Sequence[str] | None = None, named: str | None = None) -> list[str]:
    """The ids of every run (any status) of these campaigns, or of the campaigns whose name matches the SQL
    LIKE pattern `named`."""
    if campaign_ids is None:
        rows = _con(con).execute("SELECT run_id FROM runs r JOIN campaigns c USING (campaign_id) "
                                 "WHERE c.name LIKE ?", [named]).fetchall()
    else:
        rows = _con(con).execute("SELECT run_id FROM runs WHERE campaign_id IN (SELECT unnest(?))",
                                 [list(campaign_ids)]).fetchall()
    return [r[0] for r in rows]


def ok_run_durations(con) -> dict[str, float | None]:
    """run_id -> duration_s [s] of every ok run."""
    return dict(_con(con).execute("SELECT run_id, duration_s FROM runs WHERE status = 'ok'").fetchall())


def ok_seconds(con, campaign_id: str) -> float:
    """The measured transfer seconds (sum of duration_s) of a campaign's ok runs; 0 without any."""
    return _con(con).execute("SELECT coalesce(sum(duration_s), 0) FROM runs WHERE campaign_id = ? AND status = 'ok'",
                             [campaign_id]).fetchone()[0]


# -- one campaign (the run's summary, tune) ----------------------------------------------------------------
def campaign_counts(con, campaign_id: str) -> dict:
    """A campaign's ok, failed and flagged (ok and FLAGGED_SQL: as analyze, select and report count them) runs."""
    return _dicts(
        con, "SELECT count(*) FILTER (WHERE r.status = 'ok') AS ok, count(*) FILTER (WHERE r.status = 'failed') AS failed, "
        f"count(*) FILTER (WHERE r.status = 'ok' AND {FLAGGED_SQL}) AS flagged "
        "FROM runs r LEFT JOIN links l USING (link_id) WHERE r.campaign_id = ?", [campaign_id])[0]


def campaign_table(con, campaign_id: str) -> list[dict]:
    """A campaign's finished runs per link and configuration: the link (kind, host, rate_bps, rtt_ms,
    buffer_bytes, loss_mode, loss_rate), the configuration, runs, ok (with a throughput), mean_bps, sd_bps."""
    return _dicts(
        con, "SELECT l.kind, l.host, l.rate_bps, l.rtt_ms, l.buffer_bytes, l.loss_mode, l.loss_rate, r.variant, r.streams, "
        "r.socket_buffer_bytes, r.transfer_bytes, r.duration_target_s, count(*) AS runs, "
        "count(r.throughput_bps) AS ok, avg(r.throughput_bps) AS mean_bps, stddev_samp(r.throughput_bps) AS sd_bps "
        "FROM runs r JOIN links l USING (link_id) WHERE r.campaign_id = ? AND r.status <> 'running' "
        "GROUP BY ALL ORDER BY l.rtt_ms, l.rate_bps, l.buffer_bytes, l.loss_rate, r.variant, r.streams, "
        "r.socket_buffer_bytes NULLS FIRST, r.transfer_bytes, r.duration_target_s", [campaign_id])


def variant_kernel(con, campaign_id: str, variant: str) -> dict:
    """The kernel name (k) and implementation (i) a campaign's runs of a variant used (any one of them)."""
    return _dicts(con, "SELECT any_value(cc_kernel_name) AS k, any_value(cc_impl) AS i FROM runs "
                       "WHERE campaign_id = ? AND variant = ?", [campaign_id, variant])[0]


def mean_measured_rtt_s(con, campaign_id: str) -> float | None:
    """The mean measured RTT [s] of a campaign's links (links.rtt_measured_ms [ms]); None without one."""
    return _dicts(con, "SELECT avg(rtt_measured_ms) / 1e3 AS r FROM links WHERE campaign_id = ?", [campaign_id])[0]["r"]
