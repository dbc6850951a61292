"""Reads of the store that more than one command makes, written once (aliases: runs r, links l)."""

from __future__ import annotations

from collections.abc import Sequence

from ..dimensions import FLAGGED_SQL, NOTE_FLAGS


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
