"""Fasterdata's Linux host-tuning rules as pure functions: targets for a path, then (current, target) -> rows
that only ever raise a value.

Sources (the numbers below cite them on the line that uses them):
- ESnet fasterdata, Linux host tuning, https://fasterdata.es.net/host-tuning/linux/ : net.core.rmem_max/wmem_max
  and the third field of tcp_rmem/tcp_wmem at least the BDP with headroom (2 GiB maxima for 100G paths),
  tcp_mtu_probing=1 with jumbo frames, htcp/bbr as the congestion control.
- perfSONAR's own copy of those settings, perfsonar/toolkit scripts/configure_sysctl: tcp_no_metrics_save = 1,
  tcp_congestion_control = htcp, default_qdisc = fq ("needed ... for kernel level pacing").
- fasterdata packet pacing, https://fasterdata.es.net/host-tuning/packet-pacing and DTN tuning,
  https://fasterdata.es.net/DTN/tuning/ : `tc qdisc add dev ethN root fq maxrate R`, R per flow at 80-90 % of
  the NIC speed over the streams (10G NIC, 4 streams: 2gbit); iperf2/iperf3 `--fq-rate`.
- Linux Documentation/networking/ip-sysctl.rst: tcp_rmem/tcp_wmem are `min default max` bytes (defaults
  4096 131072 / 4096 16384); tcp_mem is `min pressure max` in pages, host-wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..units import to_ms

MIB = 1 << 20
INT_MAX = 2**31 - 1        # rmem_max, tcp_rmem[2] are C ints (proc_dointvec_minmax): fasterdata's 100G value
PAGE = 4096                # bytes per page on x86-64 and arm64 (4K pages): tcp_mem's unit
MIN_BUFFER = 4 * MIB       # below this the kernel's own tcp_rmem[2] default (6 MiB) already suffices
HEADROOM = 2               # fasterdata: maxima at 2 x BDP (the window is about half the buffer, ip-sysctl.rst)
PACING_SHARE = 0.8         # fasterdata DTN tuning: pace to 80-90 % of the NIC speed, shared by the streams
TRIPLE_DEFAULTS = {"net.ipv4.tcp_rmem": (4096, 131072), "net.ipv4.tcp_wmem": (4096, 16384)}  # ip-sysctl.rst
FASTERDATA = "fasterdata host tuning"


@dataclass(frozen=True)
class Target:
    """What a key must be at least: one minimum per field (0: no requirement on that field), or, for a
    setting that is a name (default_qdisc, tcp_congestion_control), the name itself."""
    key: str
    minimum: tuple[int, ...] | str
    reason: str
    host_wide: bool = False       # one value for the whole kernel: not writable inside a network namespace

    def text(self) -> str:
        return self.minimum if isinstance(self.minimum, str) else " ".join(map(str, self.minimum))


@dataclass(frozen=True)
class Row:
    """One key compared: status 'ok' (at or above the target: left alone), 'raise' (fields below the target
    raised, the others kept), 'set' (a name to set), 'unknown' (the current value could not be read and the
    target alone does not give every field)."""
    key: str
    current: str | None
    target: str
    value: str | None             # what to write; None unless status is 'raise' or 'set'
    status: str
    reason: str
    host_wide: bool

    def to_json(self) -> dict:
        return {"key": self.key, "current": self.current, "target": self.target, "value": self.value,
                "status": self.status, "reason": self.reason, "host_wide": self.host_wide}


def bdp_bytes(rate_bps: float, rtt_s: float) -> float:
    """C * tau / 8 [bytes] for C in bit/s and tau in s."""
    return rate_bps * rtt_s / 8


def buffer_target(rtt_s: float, rate_bps: float, buffer_bytes: int | None = None) -> int:
    """The socket-buffer limit a path needs [bytes]: B when a fixed buffer was chosen, else 2 x BDP
    (fasterdata's headroom) rounded up to MiB, at least 4 MiB, at most INT_MAX."""
    if buffer_bytes:
        return min(INT_MAX, int(buffer_bytes))
    need = math.ceil(HEADROOM * bdp_bytes(rate_bps, rtt_s) / MIB) * MIB
    return min(INT_MAX, max(MIN_BUFFER, need))


def targets(rtt_s: float, rate_bps: float, *, buffer_bytes: int | None = None, streams: int = 1,
            fq: bool | None = False, page: int = PAGE) -> dict[str, Target]:
    """The sysctl targets for a path of rate C [bit/s] and RTT up to rtt_s [s], with `streams` parallel streams."""
    buf = buffer_target(rtt_s, rate_bps, buffer_bytes)
    why = (f"the fixed socket buffer B = {buf} B" if buffer_bytes else
           f"2 x BDP ({rate_bps / 1e9:g} Gbit/s x {to_ms(rtt_s):g} ms = {bdp_bytes(rate_bps, rtt_s) / 1e6:.3g} MB)")
    out = {k: Target(k, (buf,), f"{why}: caps {opt} ({FASTERDATA})", True)   # net/core/sock.c: min(val, *mem_max)
           for k, opt in (("net.core.rmem_max", "SO_RCVBUF"), ("net.core.wmem_max", "SO_SNDBUF"))}
    for key, (lo, default) in TRIPLE_DEFAULTS.items():
        out[key] = Target(key, (lo, default, buf), f"{why}: the third field limits autotuning ({FASTERDATA})")
    pages = math.ceil(2 * streams * buf / page)       # n streams x (send + receive) buffers, in pages
    out["net.ipv4.tcp_mem"] = Target(
        "net.ipv4.tcp_mem", (0, pages, pages),
        f"pages of {page} B, host-wide: {streams} stream(s) x send and receive buffers of {buf} B below "
        f"the pressure threshold (ip-sysctl.rst); more for concurrent transfers", True)
    out["net.ipv4.tcp_no_metrics_save"] = Target(
        "net.ipv4.tcp_no_metrics_save", (1,),
        "do not start a connection from a previous one's ssthresh (perfSONAR configure_sysctl)")
    out["net.ipv4.tcp_mtu_probing"] = Target(
        "net.ipv4.tcp_mtu_probing", (1,), f"MTU probing after an ICMP black hole, for jumbo frames ({FASTERDATA})")
    if fq:
        out["net.core.default_qdisc"] = Target(
            "net.core.default_qdisc", "fq", "fq paces every flow (fasterdata packet pacing; perfSONAR "
            "configure_sysctl); applies to interfaces brought up afterwards", True)
    return out


def _fields(value: str | None, n: int) -> tuple[int, ...] | None:
    try:
        fields = tuple(int(x) for x in (value or "").split())
    except ValueError:
        return None
    return fields if len(fields) == n else None


def row(target: Target, current: str | None) -> Row:
    """Compare one key. A number is never lowered: each field becomes max(current, minimum)."""
    now = " ".join(current.split()) if current is not None else None
    base = dict(key=target.key, current=now, target=target.text(), reason=target.reason,
                host_wide=target.host_wide)
    if isinstance(target.minimum, str):
        return Row(**base, value=None, status="ok") if now == target.minimum else \
            Row(**base, value=target.minimum, status="set")
    fields = _fields(now, len(target.minimum))
    if fields is None:
        if all(target.minimum):
            return Row(**base, value=target.text(), status="raise")
        return Row(**base, value=None, status="unknown")
    new = tuple(max(c, m) for c, m in zip(fields, target.minimum))
    if new == fields:
        return Row(**base, value=None, status="ok")
    return Row(**base, value=" ".join(map(str, new)), status="raise")


def check(current: dict[str, str | None], wanted: dict[str, Target]) -> list[Row]:
    """Every target compared with the current values (a key missing from `current` is unreadable)."""
    return [row(t, current.get(k)) for k, t in wanted.items()]


SNIPPET_PATH = "/etc/sysctl.d/90-tcpprofile.conf"


def snippet(rows: list[Row], *, netns: str | None = None) -> list[str]:
    """The /etc/sysctl.d file for the rows that change something, each with its reason; nothing that lowers."""
    todo = [r for r in rows if r.status in ("raise", "set")]
    out = [f"# {SNIPPET_PATH}: only raises; keys already at or above their target are left out"]
    for r in todo:
        where = " [host-wide: set it on the host, not inside the namespace]" if netns and r.host_wide else ""
        out.append(f"# {r.reason}; now {r.current if r.current is not None else 'unreadable'}{where}")
        out.append(f"{r.key} = {r.value}")
    for r in rows:
        if r.status == "unknown":
            out.append(f"# {r.key}: could not be read; each field should be at least {r.target} ({r.reason})")
    if not todo:
        out.append("# nothing to raise: every key is at or above its target")
    else:
        out.append("# then load it: sysctl --system")
    return out


def rate_text(bps: float, *, tc: bool) -> str:
    """A rate for tc (2gbit, 2500mbit) or for iperf --fq-rate (2G, 2500M), rounded down to whole Mbit/s."""
    mbit = max(1, int(bps // 1e6))
    if mbit % 1000 == 0:
        return f"{mbit // 1000}gbit" if tc else f"{mbit // 1000}G"
    return f"{mbit}mbit" if tc else f"{mbit}M"


def pacing(rate_bps: float, streams: int, fq: bool | None, devices: list[str]) -> list[str]:
    """fq pacing advice: per-flow maxrate = 0.8 x C / n (fasterdata DTN tuning), only where the kernel has fq."""
    if fq is False:
        return ["no fq: this kernel has no fq qdisc (CONFIG_NET_SCH_FQ not set), so no fq pacing "
                "(tc ... fq maxrate, iperf3 --fq-rate) is offered here"]
    per_flow = PACING_SHARE * rate_bps / streams
    lines = [] if fq else ["fq: this kernel's configuration could not be read; if `tc qdisc add ... fq` works:"]
    lines += [f"tc qdisc replace dev {d} root fq maxrate {rate_text(per_flow, tc=True)}" for d in devices]
    lines.append(f"iperf3 -c HOST -P {streams} --fq-rate {rate_text(per_flow, tc=False)}   (per stream; "
                 f"iperf2: iperf -c HOST -P {streams} --fq-rate {rate_text(per_flow, tc=False)})")
    return lines


JUMBO_MTU = 9000           # fasterdata: MTU 9000 where every hop of the path carries it
TXQUEUELEN = 10000         # fasterdata "other tuning": txqueuelen 10000 for 10G hosts


def interface_advice(ifaces: list[dict]) -> list[str]:
    """Per interface, only raising changes: MTU 9000, txqueuelen, TSO/GSO/GRO on (fasterdata)."""
    out = []
    for i in ifaces:
        name, mtu, qlen = i["name"], i.get("mtu") or 0, i.get("txqueuelen") or 0
        if mtu < JUMBO_MTU:
            out.append(f"{name}: MTU {mtu}: ip link set dev {name} mtu {JUMBO_MTU}, only if every hop of the path "
                       f"carries {JUMBO_MTU}-byte frames (then tcp_mtu_probing = 1 covers a black hole)")
        if qlen < TXQUEUELEN:
            out.append(f"{name}: txqueuelen {qlen}: ip link set dev {name} txqueuelen {TXQUEUELEN}")
        off = sorted(k for k, on in (i.get("offloads") or {}).items() if not on)
        if off:
            out.append(f"{name}: {', '.join(off)} off: ethtool -K {name} " + " ".join(f"{k} on" for k in off))
    return out
