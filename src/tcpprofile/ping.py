"""iputils ping output: the summary line `rtt min/avg/max/mdev = a/b/c/d ms`."""

from __future__ import annotations

import re

_SUMMARY = re.compile(r"=\s*([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+)\s*ms")


def summary(output: str) -> dict | None:
    """{min_ms, avg_ms, max_ms, mdev_ms} from ping's summary line (exact to 1 µs, unlike the per-reply
    times); None when ping printed none (no reply)."""
    m = _SUMMARY.search(output)
    if m is None:
        return None
    lo, avg, hi, mdev = (float(x) for x in m.groups())
    return {"min_ms": lo, "avg_ms": avg, "max_ms": hi, "mdev_ms": mdev}
