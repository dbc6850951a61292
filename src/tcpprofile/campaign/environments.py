"""Where a run's link comes from and what a run needs on the machine that runs it.

`emulated(point)` / `remote(point)` are context managers that bring one link configuration up (and
calibrate it) and yield an Environment; `CongestionControl` loads the variants a campaign needs;
`cwnd_trace` is the one call site for kernel cwnd tracing around a run. Executors (executor.py) use
these; nothing here writes to the store.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ContextManager

from .. import cc
from ..measure import iperf, ping, trace
from ..measure.fidelity import monitors
from ..errors import EnvironmentNotReady, TcpProfileError, ValidationError
from ..spec import LinkPoint
from ..store.db import dumps
from ..same_rtt import rtt_tolerance_ms


@dataclass
class Environment:
    """A link that is up: where to run iperf3 and what to store about it."""
    host: iperf.Host
    addr: str
    port: int
    start_server: bool
    link_row: dict                       # the links row (without link_id / campaign_id)
    flags: list[str] = field(default_factory=list)
    sysctls: dict = field(default_factory=dict)
    monitor: monitors.Monitor = monitors.unmonitored   # per-run fidelity (measure/fidelity/)
    check: Callable[[], str | None] = lambda: None      # names a failed part of the link; None: healthy


EnvironmentFactory = Callable[[LinkPoint], ContextManager[Environment]]


@contextlib.contextmanager
def emulated(point: LinkPoint) -> Iterator[Environment]:
    """Set up (and calibrate) an emulated link for one link configuration; torn down on exit."""
    from ..testbed import EmulatedLink
    tag = "c" + secrets.token_hex(3)
    with EmulatedLink(link_config(point), tag=tag) as link:
        cal = link.calibration
        row = {
            "kind": "emulated", "rate_bps": point.rate_bps, "rtt_ms": point.rtt_s * 1e3,
            "buffer_bytes": point.buffer_bytes, "buffer_spec": point.buffer_label, "loss_mode": point.loss.mode, "loss_rate": point.loss.rate,
            "mtu": point.mtu, "rtt_measured_ms": cal.rtt_measured_ms, "rtt_measured_mdev_ms": cal.rtt_mdev_ms,
            "rate_measured_bps": cal.rate_measured_bps, "goodput_ceiling_bps": cal.goodput_ceiling_bps,
            "calibration_ok": cal.ok, "flags": ",".join(cal.flags) or None,
            "calibration_json": dumps({**cal.to_dict(), "testbed_tag": tag, "cpu_plan": link.plan.describe()}),
            "loss_calibrated_off": point.loss.mode != "none" or None,
            "stall_inject": point.stall_inject.describe() if point.stall_inject else None,
            "cpu_plan": link.plan.name,          # the plan used ("auto" resolved: testbed/cpuplan.py)
        }
        sysctls = {role: iperf.read_sysctls(link, role) for role in ("sender", "receiver")}
        yield Environment(link, link.receiver_addr, 5301 + int(tag[1:], 16) % 20000, True, row,
                          [f"link_{f}" for f in cal.flags], sysctls, monitors.emulated_monitor(link),
                          check=_engines_check(link))


def _engines_check(link) -> Callable[[], str | None]:
    """A dead delay engine (exited, or a zombie not yet reaped) makes the link drop every packet."""
    from ..testbed.netns import process_start_time

    def check() -> str | None:
        for name, pid in link.engine_pids().items():
            if process_start_time(pid) is None:
                return f"delay engine ({name}, pid {pid}) is not running"
        return None
    return check


def port_taken(env: Environment) -> str | None:
    """After a run's own server has been stopped: who else listens on the server port, if anyone."""
    if not env.start_server:
        return None
    out = env.host.run("receiver", ["ss", "-Hltnp", f"sport = :{env.port}"], check=False, timeout=10).stdout.strip()
    return f"server port {env.port} is taken ({out.split('users:')[-1].strip()})" if out else None


def link_config(point: LinkPoint):
    """The testbed's LinkConfig for a spec link point (raises ValidationError naming the link)."""
    from ..testbed import LinkConfig
    try:
        return LinkConfig.checked(rate_bps=point.rate_bps, rtt_s=point.rtt_s, buffer_bytes=point.buffer_bytes,
                                  loss_mode=point.loss.mode, loss_rate=point.loss.rate, mtu=point.mtu,
                                  stall_inject=point.stall_inject, cpu_plan=point.cpu_plan)
    except ValidationError as err:
        raise ValidationError("link", f"{point.describe()}: the testbed rejects it: {err}") from err


@contextlib.contextmanager
def remote(point: LinkPoint) -> Iterator[Environment]:
    """A real iperf3 server elsewhere: the client runs in the caller's namespace. The path's RTT is
    TCP's: `ping -U` at set-up (the only RTT before the first run), replaced in the links row by the
    runs' tcp_info min_rtt as they end (path_rtt, applied by the Recorder), ping kept as its cross-check."""
    host = iperf.LocalHost()
    rtt = ping_rtt(point.host)          # {} when it does not answer: the link is flagged rtt_unmeasured
    flags = [] if rtt else ["rtt_unmeasured"]    # until a run measured TCP's min_rtt (path_rtt): on the links row only
    row = {"kind": "remote", "host": point.host, "port": point.port, "rate_bps": point.rate_bps,
           "rtt_measured_ms": rtt.get("min_ms") if rtt else None,     # a base RTT, as TCP's min_rtt
           "rtt_measured_mdev_ms": rtt.get("mdev_ms") if rtt else None,
           "calibration_ok": bool(rtt), "flags": ",".join(flags) or None,
           "calibration_json": dumps({"ping": rtt, "rtt_source": RTT_FROM_PING})}
    sysctls = {"sender": iperf.read_sysctls(host, "sender")}
    yield Environment(host, point.host, point.port, False, row, [], sysctls, monitors.remote_monitor(host))


def ping_rtt(host: str, count: int = 10) -> dict:
    """Idle RTT to host by ping -U (from the caller's namespace); {} if it does not answer."""
    try:
        return ping.rtt(host, count=count)
    except EnvironmentNotReady:
        raise
    except TcpProfileError:
        return {}


RTT_FROM_PING = "ping -U at set-up (TCP's min_rtt replaces it once runs exist)"
RTT_FROM_TCP = "tcp_info min_rtt: the smallest over the link's ok runs"


def tick_sample(ms: float) -> bool:
    """A whole number of milliseconds: a min_rtt taken from the timestamp option in loss recovery
    (tcp_rtt_tsopt_us in net/ipv4/tcp_input.c: TS ticks are 1 ms), which reads up to one tick below
    the path's RTT (fidelity.verdicts.rtt_off: 45.000 at 45.6 ms); a µs sample is whole by chance 1 in 1000."""
    return abs(ms - round(ms)) < 1e-9


def path_rtt(ping_json: dict, run_min_rtts_ms: list[float | None]) -> dict | None:
    """A remote link's RTT columns from its runs: rtt_measured_ms = the smallest tcp_info min_rtt [ms]
    of the runs (each run's is the smallest over its data connections, fidelity.connections.RttWatcher: TCP's RTT
    samples, taken when the ACK is processed, net/ipv4/tcp_input.c tcp_update_rtt_min), whole-ms
    timestamp samples left out (tick_sample) unless no other exists; rtt_measured_mdev_ms = their
    population standard deviation (a spread, like ping's mdev). calibration_json keeps the ping and its
    cross-check: ping's min within rtt_tolerance_ms of TCP's (max(1 %, 0.1 ms), same_rtt.py); a path
    that does not answer ping (ICMP filtered) is measured now: calibration_ok, no rtt_unmeasured. None
    when no run measured a min_rtt (the ping stays, and the link stays flagged without one)."""
    seen = [v for v in run_min_rtts_ms if v is not None]
    values = [v for v in seen if not tick_sample(v)] or seen
    if not values:
        return None
    tcp = min(values)
    mean = sum(values) / len(values)
    ping_min = (ping_json or {}).get("min_ms")
    tol = rtt_tolerance_ms(tcp)
    check = {"ping_min_ms": ping_min, "tcp_min_rtt_ms": tcp, "tolerance_ms": tol,
             "agree": None if ping_min is None else abs(ping_min - tcp) <= tol}
    return {"rtt_measured_ms": tcp, "calibration_ok": True, "flags": None,    # measured: no rtt_unmeasured
            "rtt_measured_mdev_ms": (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5,
            "calibration_json": dumps({"ping": ping_json, "rtt_source": RTT_FROM_TCP, "runs": len(values),
                                       "tick_samples_left_out": len(seen) - len(values), "cross_check": check})}


def path_rtt_notes(store, campaign_id: str) -> list[str]:
    """path_rtt_note for each host of a campaign's remote links: its latest link (a resumed campaign set
    up one per invocation)."""
    rows = store.query("SELECT host, rtt_measured_ms, calibration_json FROM links WHERE campaign_id = ? "
                       "AND kind = 'remote' ORDER BY created_at, rowid", [campaign_id])
    latest = {r["host"]: r for r in rows}
    return [path_rtt_note(h, r["rtt_measured_ms"], json.loads(r["calibration_json"] or "{}")) for h, r in latest.items()]


def path_rtt_note(host: str | None, rtt_ms: float | None, calibration: dict) -> str:
    """One line on where a remote link's stored RTT came from, and the ping cross-check's verdict."""
    ping_json = calibration.get("ping") or {}
    check = calibration.get("cross_check")
    if check is None:
        got = f"{rtt_ms:.3f} ms by ping -U" if rtt_ms is not None else "unmeasured (no ping reply)"
        return f"path RTT to {host}: {got}; no run measured TCP's min_rtt, so the ping stays"
    line = (f"path RTT to {host}: {rtt_ms:.3f} ms from TCP (tcp_info min_rtt, smallest of {calibration['runs']} "
            f"runs; it replaced ping -U's min {ping_json.get('min_ms', float('nan')):.3f} ms from set-up)")
    if check["agree"] is False:
        line += (f"; WARNING: ping -U's min {check['ping_min_ms']:.3f} ms is more than {check['tolerance_ms']:.3f} ms "
                 f"from TCP's: ICMP does not see the path as TCP does (its stamps, priority or route)")
    elif check["agree"]:
        line += f"; ping -U's min {check['ping_min_ms']:.3f} ms agrees within {check['tolerance_ms']:.3f} ms"
    return line


# -- congestion control: the one place the catalogue plugs in --------------------------------------
class CongestionControl:
    """Loads the variants a campaign needs (tcpprofile.cc), held by this process; at the end drops the
    hold, unregistering what no other live process holds and nobody pinned (`tcpprofile cc load`)."""

    def __init__(self, names: tuple[str, ...]):
        self.names = list(names)
        self.loaded: list[str] = []

    def __enter__(self) -> "CongestionControl":
        for i, name in enumerate(self.names):
            if name not in cc.NAMES:
                raise ValidationError(f"transfer.variant[{i}]",
                                      f"{name!r}: not a known variant ({', '.join(cc.NAMES)})")
        self.loaded = cc.ensure_loaded(self.names, hold=True)   # held by this process, recorded first
        return self

    def __exit__(self, *exc) -> None:
        cc.release(self.names)    # what nobody else holds or pinned is unregistered

    def record(self, name: str) -> dict:
        """cc_kernel_name, cc_impl, cc_object_sha256 for the runs table."""
        return cc.implementation_record(name)


@dataclass
class CwndCapture:
    """What a traced run captured; rows() turns it into cwnd table rows once iperf3's JSON is known."""
    tracer: object = None
    t0: float = 0.0

    def rows(self, raw_json: str | None) -> list[dict]:
        if self.tracer is None or raw_json is None:
            return []
        return trace.cwnd_rows(self.tracer.events, trace.sender_streams(json.loads(raw_json)), t0=self.t0)


@contextlib.contextmanager
def cwnd_trace(port: int, enabled: bool) -> Iterator[CwndCapture]:
    """THE call site for kernel cwnd tracing around one run (tcp_probe filtered on the run's port)."""
    if not enabled:
        yield CwndCapture()
        return
    with trace.CwndTracer(ports=[port]) as tracer:
        yield CwndCapture(tracer, time.monotonic())
