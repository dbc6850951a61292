"""The idle RTT to a host by iputils ping, and ping's summary line `rtt min/avg/max/mdev = a/b/c/d ms`.

Stamps are user to user (`ping -U`, iputils ping(8): "print full user-to-user latency"): by default ping
takes a reply's receive time from the kernel's socket timestamp (SO_TIMESTAMP, stamped when the packet
entered the stack), which can come before a delay that the receiving host itself applies: over this
project's emulated link plain ping read 22.98 ms at 45.6 ms (the reverse engine's hold was not seen),
`ping -U` 45.8. TCP's RTT samples are taken when the ACK is processed, after any such hold; -U is the
ping that measures what TCP does. Still ICMP: a remote path's RTT comes from TCP (min_rtt of the runs,
campaign/environments.py), ping is its cross-check and the value before the first run."""

from __future__ import annotations

import re
import subprocess

from ..errors import EnvironmentNotReady, TcpProfileError

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


def argv(host: str, *, count: int) -> list[str]:
    """The ping command: numeric, quiet (summary only), user-to-user stamps (-U), 0.2 s apart (the least
    interval iputils allows a non-root user), 2 s to wait for each reply."""
    return ["ping", "-n", "-q", "-U", "-c", str(count), "-i", "0.2", "-W", "2", host]


def rtt(host: str, *, count: int) -> dict:
    """{host, count, min_ms, avg_ms, max_ms, mdev_ms} of `count` pings 0.2 s apart from this namespace;
    TcpProfileError when the host does not answer, EnvironmentNotReady without ping. The caller has
    validated `host` (a name or address, never an option)."""
    cmd = argv(host, count=count)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10 + 3 * count)
    except FileNotFoundError as err:
        raise EnvironmentNotReady("ping not found (install iputils-ping)") from err
    except subprocess.TimeoutExpired as err:
        raise TcpProfileError(f"ping {host} timed out") from err
    if out.returncode != 0 and summary(out.stdout) is None:
        raise TcpProfileError(f"ping {host} failed: {(out.stderr or out.stdout).strip()}")
    return {"host": host, "count": count, **parse(out.stdout)}
