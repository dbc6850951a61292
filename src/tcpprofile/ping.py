"""The idle RTT to a host by iputils ping, and ping's summary line `rtt min/avg/max/mdev = a/b/c/d ms`."""

from __future__ import annotations

import re
import subprocess

from .errors import EnvironmentNotReady, TcpProfileError

_SUMMARY = re.compile(r"=\s*([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)\s*ms")


def summary(output: str) -> dict | None:
    """{min_ms, avg_ms, max_ms, mdev_ms} from ping's summary line (exact to 1 µs, unlike the per-reply
    times); None when ping printed none (no reply)."""
    m = _SUMMARY.search(output)
    if m is None:
        return None
    lo, avg, hi, mdev = (float(x) for x in m.groups())
    return {"min_ms": lo, "avg_ms": avg, "max_ms": hi, "mdev_ms": mdev}


def parse(output: str) -> dict:
    """summary(), or an error when ping printed none."""
    parsed = summary(output)
    if parsed is None:
        raise TcpProfileError("ping printed no RTT summary (host unreachable?)")
    return parsed


def rtt(host: str, *, count: int) -> dict:
    """{host, count, min_ms, avg_ms, max_ms, mdev_ms} of `count` pings 0.2 s apart from this namespace;
    TcpProfileError when the host does not answer, EnvironmentNotReady without ping. The caller has
    validated `host` (a name or address, never an option)."""
    cmd = ["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "2", host]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10 + 3 * count)
    except FileNotFoundError as err:
        raise EnvironmentNotReady("ping not found (install iputils-ping)") from err
    except subprocess.TimeoutExpired as err:
        raise TcpProfileError(f"ping {host} timed out") from err
    if out.returncode != 0 and summary(out.stdout) is None:
        raise TcpProfileError(f"ping {host} failed: {(out.stderr or out.stdout).strip()}")
    return {"host": host, "count": count, **parse(out.stdout)}
