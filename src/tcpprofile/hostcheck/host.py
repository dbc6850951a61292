"""hostcheck's document: a live host or namespace (probe.py) against a path's targets (rules.py)."""

from __future__ import annotations

from . import probe, rules, transport
from ..units import to_ms


def examine(rtt_s: tuple[float, float], rate_bps: float, *, streams: int = 1, buffer_bytes: int | None = None,
            netns: str | None = None, dev: str | None = None) -> dict:
    """rtt_s: the operator's RTT range (lo, hi) [s]; the targets are sized to hi. The document gives it in ms."""
    lo, hi = rtt_s
    fq = probe.fq_available()
    wanted = rules.targets(hi, rate_bps, buffer_bytes=buffer_bytes, streams=streams, fq=fq)
    host_wide = {k for k, t in wanted.items() if t.host_wide}
    current = probe.read_values([*wanted, transport.CC_KEY], netns=netns, host_wide=host_wide)
    rows = rules.check(current, wanted)
    ifaces = probe.interfaces(netns=netns, only=dev)
    ccs = probe.congestion_controls()
    return {
        "scope": f"netns:{netns}" if netns else "host",
        "path": {"rate_bps": rate_bps, "rtt_ms": [to_ms(lo), to_ms(hi)], "streams": streams,
                 "buffer_bytes": buffer_bytes,
                 "bdp_bytes": [rules.bdp_bytes(rate_bps, lo), rules.bdp_bytes(rate_bps, hi)],
                 "buffer_target_bytes": rules.buffer_target(hi, rate_bps, buffer_bytes)},
        "sysctls": [r.to_json() for r in rows],
        "snippet": rules.snippet(rows, netns=netns),
        "changes": sum(r.status in ("raise", "set") for r in rows),
        "fq_available": fq,
        "interfaces": ifaces,
        "interface_advice": rules.interface_advice([i for i in ifaces if i["up"]]),
        "pacing": rules.pacing(rate_bps, streams, fq, [i["name"] for i in ifaces if i["up"]] or ["DEV"]),
        "congestion_control": {"default": current[transport.CC_KEY], "variants": ccs,
                               "lines": transport.inventory_lines(ccs, current[transport.CC_KEY])},
    }
