"""Command-line options more than one command takes, turned into values: --rtt (`select`, `hostcheck`) and
--cluster (`run`, `tune`, `reproduce`). Not a command itself: it declares no NAME (commands/__init__.py)."""

from __future__ import annotations

from .. import units
from ..errors import TcpProfileError


def parse_rtt_s(value: str) -> float:
    """--rtt with a unit (e.g. 45ms; range units.RTT_S) -> the RTT [s]."""
    return units.seconds("--rtt", value, units.RTT_S)


def cluster_executor(s, address: str | None):
    """The Ray executor for --cluster (Ray is imported only then), else None: this machine."""
    if address is None:
        return None
    try:
        from ..campaign.cluster import RayExecutor
    except ModuleNotFoundError as err:
        if err.name != "ray":
            raise
        raise TcpProfileError("--cluster needs Ray: pip install 'tcpprofile[cluster]' (scripts/bootstrap does)") from None
    return RayExecutor.for_spec(s, address)
