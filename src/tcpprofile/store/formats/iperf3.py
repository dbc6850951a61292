"""iperf3 -J output (client side, optionally with --get-server-output): read by iperf.parse, which
checks every value once (iperf_json.read). A --bidir result holds two directions measured at once: one
parsed run each, flagged `bidir` (the importer stores them together or not at all).

The host pair: the client's address (start.connected[0].local_host) and the server it was told to
connect to (start.connecting_to.host, else the connection's remote_host). The RTT compared with a given
--rtt is iperf3's min_rtt (tcp_info's smallest RTT sample, per stream; iperf_api.c fills it from
tcpi_min_rtt where the kernel has it)."""

from __future__ import annotations

from ...measure import iperf, iperf_json
from .base import Reader
from .common import text_field

BIDIR_FLAG = "bidir"      # a run measured while the opposite direction ran too (iperf3 --bidir)
SECTIONS = ("start", "intervals", "end")


def detect(doc) -> bool:
    """An object with one of iperf3's sections, or iperf3's bare error object."""
    return isinstance(doc, dict) and (any(k in doc for k in SECTIONS) or set(doc) == {"error"})


def read(doc) -> list[iperf.Parsed]:
    runs = []
    hosts = _hosts(doc)
    for bidir in iperf_json.directions(doc):
        try:
            run = iperf.parse(doc, bidir)
        except iperf.IperfError as err:
            raise iperf.IperfError(f"{err} (--bidir, {bidir} direction)") if bidir else err
        if bidir:
            run.flags.append(BIDIR_FLAG)
        low = run.run["rtt_loaded_min_ms"]
        run.run.update(hosts, rtt_file_min_ms=low, rtt_file_min_what="iperf3 min_rtt" if low else None)
        runs.append(run)
    return runs


def _hosts(doc) -> dict:
    start = doc.get("start") if isinstance(doc, dict) else None
    start = start if isinstance(start, dict) else {}
    connected = start.get("connected")
    first = connected[0] if isinstance(connected, list) and connected and isinstance(connected[0], dict) else {}
    target = start.get("connecting_to") if isinstance(start.get("connecting_to"), dict) else {}
    return {"source_host": text_field("start.connected[0].local_host", first.get("local_host")),
            "dest_host": text_field("start.connecting_to.host", target.get("host"))
            or text_field("start.connected[0].remote_host", first.get("remote_host"))}


READER = Reader("iperf3 -J", "an object with start/intervals/end (iperf3 -J)", True, detect, read)
