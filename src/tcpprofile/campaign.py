"""The campaign runner: a validated spec -> iperf3 runs on emulated links (or a remote server) -> store.

Order: the spec's schedule (spec.CampaignSpec.schedule): grouped by link configuration, so each link is
set up and calibrated once, shuffled within (seeded; the seed is recorded with the campaign and reused
on resume). Every run has a deterministic run_id, is marked 'running' before it starts and committed
when it ends, so a killed campaign loses at most the run in flight and a rerun of the same spec skips
what finished. A failed run is retried `retries` times; what still fails is stored with its reason.

Faults during a run (iperf3 killed, the server port taken, the delay engine dead) fail that attempt
with a reason naming the part; when a part of the link failed (Environment.check, or a foreign listener
on the server port) the link is torn down and set up again (LinkSession) before the next attempt, and
the run keeps the reasons of its failed attempts (failure_reason) when a retry succeeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ContextManager, TextIO

from . import cc, fidelity, iperf, ping, trace
from .errors import ValidationError
from .spec import CampaignSpec, LinkPoint, RunPoint, draw_seed
from .store.db import Store, dumps
from .testbed.config import TCP_IP_HEADERS

LINK_SETUP_ESTIMATE_S = 15.0   # set-up plus calibration, for the ETA
ASSUMED_RATE_BPS = 1e9         # remote mode without a nominal rate: for ETA and timeouts only


# -- environments: where a run happens -------------------------------------------------------------
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
    monitor: fidelity.Monitor = fidelity.unmonitored   # per-run fidelity (fidelity.py)
    check: Callable[[], str | None] = lambda: None      # names a failed part of the link; None: healthy


EnvironmentFactory = Callable[[LinkPoint], ContextManager[Environment]]


@contextlib.contextmanager
def emulated(point: LinkPoint) -> Iterator[Environment]:
    """Set up (and calibrate) an emulated link for one link configuration; torn down on exit."""
    from .testbed import EmulatedLink
    tag = "c" + secrets.token_hex(3)
    with EmulatedLink(link_config(point), tag=tag) as link:
        cal = link.calibration
        row = {
            "kind": "emulated", "rate_bps": point.rate_bps, "rtt_ms": point.rtt_s * 1e3,
            "buffer_bytes": point.buffer_bytes, "buffer_spec": point.buffer_label, "loss_mode": point.loss.mode, "loss_rate": point.loss.rate,
            "mtu": point.mtu, "rtt_measured_ms": cal.rtt_measured_ms, "rtt_measured_mdev_ms": cal.rtt_mdev_ms,
            "rate_measured_bps": cal.rate_measured_bps, "goodput_ceiling_bps": cal.goodput_ceiling_bps,
            "calibration_ok": cal.ok, "flags": ",".join(cal.flags) or None,
            "calibration_json": dumps({**cal.to_dict(), "testbed_tag": tag}),
            "loss_calibrated_off": point.loss.mode != "none" or None,
        }
        sysctls = {role: iperf.read_sysctls(link, role) for role in ("sender", "receiver")}
        yield Environment(link, link.receiver_addr, 5301 + int(tag[1:], 16) % 20000, True, row,
                          [f"link_{f}" for f in cal.flags], sysctls, fidelity.emulated_monitor(link),
                          check=_engines_check(link))


def _engines_check(link) -> Callable[[], str | None]:
    """A dead delay engine (exited, or a zombie not yet reaped) makes the link drop every packet."""
    from .testbed.netns import process_start_time

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


class LinkSession:
    """The link of one configuration, as a links row; rebuild() tears it down and sets up (and
    calibrates) a new one, stored as a new links row, when a part of it failed."""

    def __init__(self, environments: EnvironmentFactory, point: LinkPoint, store: Store, campaign_id: str,
                 progress: "Progress"):
        self.factory, self.point, self.store, self.campaign_id, self.progress = (
            environments, point, store, campaign_id, progress)
        self.stack = contextlib.ExitStack()
        self.broken: str | None = None     # why the link must be rebuilt before the next attempt

    def __enter__(self) -> "LinkSession":
        self.env = self.stack.enter_context(self.factory(self.point))
        self.link_id = f"{self.campaign_id}-{secrets.token_hex(4)}"
        self.store.insert_link({"link_id": self.link_id, "campaign_id": self.campaign_id, **self.env.link_row})
        self.progress.calibrated(self.env.link_row)
        return self

    def __exit__(self, *exc) -> bool | None:
        return self.stack.__exit__(*exc)

    def ready(self) -> Environment:
        """The environment for the next attempt: rebuilt first if a part of it failed."""
        why = self.broken or self.env.check()
        if why:
            self.progress.rebuild(self.point, why)
            self.stack.close()
            self.broken = None
            self.__enter__()
        return self.env


def link_config(point: LinkPoint):
    """The testbed's LinkConfig for a spec link point (raises ValidationError naming the link)."""
    from .testbed import LinkConfig
    try:
        return LinkConfig.checked(rate_bps=point.rate_bps, rtt_s=point.rtt_s, buffer_bytes=point.buffer_bytes,
                                  loss_mode=point.loss.mode, loss_rate=point.loss.rate, mtu=point.mtu)
    except ValidationError as err:
        raise ValidationError("link", f"{point.describe()}: the testbed rejects it: {err}") from err


@contextlib.contextmanager
def remote(point: LinkPoint) -> Iterator[Environment]:
    """A real iperf3 server elsewhere: the client runs in the caller's namespace; RTT by ping."""
    host = iperf.LocalHost()
    rtt = ping_rtt(point.host)
    flags = [] if rtt else ["rtt_unmeasured"]
    row = {"kind": "remote", "host": point.host, "port": point.port, "rate_bps": point.rate_bps,
           "rtt_measured_ms": rtt.get("avg_ms") if rtt else None,
           "rtt_measured_mdev_ms": rtt.get("mdev_ms") if rtt else None,
           "calibration_ok": bool(rtt), "flags": ",".join(flags) or None,
           "calibration_json": dumps({"ping": rtt})}
    sysctls = {"sender": iperf.read_sysctls(host, "sender")}
    yield Environment(host, point.host, point.port, False, row, [f"link_{f}" for f in flags], sysctls,
                      fidelity.remote_monitor(host))


def ping_rtt(host: str, count: int = 10) -> dict:
    """Idle RTT to host by ping (from the caller's namespace); {} if it does not answer."""
    r = subprocess.run(["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "2", host],
                       capture_output=True, text=True, timeout=count * 0.2 + 30)
    parsed = ping.summary(r.stdout)
    return {**parsed, "count": count} if parsed else {}


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


# -- durations -------------------------------------------------------------------------------------
def expected_seconds(p: RunPoint) -> float:
    """A rough run duration for the ETA: duration mode D; size mode F over the rate the link can give
    (rate C, window limit n·B/τ, loss limit n·Mathis) plus ten RTTs of ramp-up."""
    if p.duration_s is not None:
        return p.duration_s + 1.0
    link = p.link
    rate = 0.9 * (link.rate_bps or ASSUMED_RATE_BPS)
    rtt = link.rtt_s or 0.05
    if p.socket_buffer_bytes:
        rate = min(rate, p.streams * p.socket_buffer_bytes * 8 / rtt)   # window-limited: n·W/τ [bit/s]
    if link.loss.rate > 0:
        mss = ((link.mtu or 1500) - TCP_IP_HEADERS) * 8     # remote links: MTU 1500 assumed
        rate = min(rate, p.streams * mss / rtt * math.sqrt(1.5 / link.loss.rate))  # Mathis: MSS/τ·√(3/2p)
    return p.transfer_bytes * 8 / rate + 10 * rtt + 1.0


def timeout_seconds(p: RunPoint) -> float:
    """When a run counts as hung: generous, a multiple of the expected duration."""
    if p.duration_s is not None:
        return p.duration_s + 30.0 + 20 * (p.link.rtt_s or 0.5)
    return max(60.0, 4 * expected_seconds(p) + 30.0)


# -- progress --------------------------------------------------------------------------------------
class Progress:
    """Plain-text progress with ETA on a stream: \\r updates on a TTY, one line per run otherwise."""

    def __init__(self, total: int, expected_s: float, links: int, out: TextIO):
        self.total, self.done, self.remaining_s, self.links = total, 0, expected_s, links
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()

    def _eta(self) -> str:
        s = int(self.remaining_s + self.links * LINK_SETUP_ESTIMATE_S)
        return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"

    def link(self, point: LinkPoint) -> None:
        self._line(f"link {point.describe()}: setting up and calibrating", final=True)

    def calibrated(self, row: dict) -> None:
        self.links = max(0, self.links - 1)
        measured = row.get("rtt_measured_ms")
        rate = row.get("rate_measured_bps")
        bits = [f"rtt {measured:.3f} ms" if measured is not None else "rtt unmeasured"]
        if rate:
            bits.append(f"rate {rate / 1e9:.3f} Gbit/s")
        bits.append("ok" if row.get("calibration_ok") else f"FLAGGED {row.get('flags')}")
        self._line("link calibrated: " + ", ".join(bits), final=True)

    def rebuild(self, point: LinkPoint, why: str) -> None:
        self.links += 1
        self._line(f"link {point.describe()}: {why}: tearing it down, setting up a new one", final=True)

    def start(self, p: RunPoint, attempt: int) -> None:
        if self.tty:
            again = f" (attempt {attempt})" if attempt > 1 else ""
            self._line(f"[{self.done + 1}/{self.total}] {self.done * 100 // max(self.total, 1)}% "
                       f"ETA {self._eta()}  {p.describe()}{again}", final=False)

    def finish(self, p: RunPoint, row: dict, expected: float) -> None:
        self.done += 1
        self.remaining_s = max(0.0, self.remaining_s - expected)
        result = (f"ok {row['throughput_bps'] / 1e9:.3f} Gbit/s" if row["status"] == "ok"
                  else f"FAILED ({row['failure_reason']})")
        flags = f" flags={row['flags']}" if row.get("flags") else ""
        self._line(f"[{self.done}/{self.total}] {result}{flags}  {p.describe()}  ETA {self._eta()}", final=True)

    def _line(self, text: str, final: bool) -> None:
        if self.tty:
            self.out.write("\r\033[K" + text + ("\n" if final else ""))
        elif final:
            self.out.write(text + "\n")
        self.out.flush()


# -- the runner ------------------------------------------------------------------------------------
@dataclass
class Summary:
    campaign_id: str
    seed: int | None
    total: int
    skipped: int                 # finished before this invocation
    ok: int
    failed: int
    flagged: int
    table: list[dict]
    remaining: int = 0           # left for a later invocation (--max-runs)


def run_campaign(spec: CampaignSpec, store: Store, *, out: TextIO = sys.stderr,
                 environments: EnvironmentFactory | None = None, max_runs: int | None = None) -> Summary:
    """Run (or resume) the campaign; returns its summary. Raises TcpProfileError if it cannot run.

    max_runs: run at most this many of the runs still to do (in schedule order); the rest stay for
    the next invocation of the same spec.
    """
    if environments is None:
        environments = emulated if spec.mode == "emulated" else remote
    campaign_id = spec.campaign_id
    existing = store.query("SELECT seed FROM campaigns WHERE campaign_id = ?", [campaign_id])
    if existing:
        seed = existing[0]["seed"]
    else:
        seed = spec.seed if spec.seed is not None else draw_seed()
    store.insert_campaign({"campaign_id": campaign_id, "name": spec.name, "mode": spec.mode, "seed": seed,
                           "spec_toml": spec.source_toml, "spec_json": dumps(spec.normalised())})
    schedule = spec.schedule(seed)
    finished = store.finished_run_ids(campaign_id)
    pending = [(seq, p) for seq, p in enumerate(schedule) if p.run_id(campaign_id) not in finished]
    todo = pending[:max_runs]
    if spec.mode == "emulated" and environments is emulated:
        for p in {p.link for _, p in todo}:
            link_config(p)
        from .testbed import cleanup_leftovers
        cleanup_leftovers()

    blocks: list[tuple[LinkPoint, list[tuple[int, RunPoint]]]] = []
    for seq, p in todo:
        if not blocks or blocks[-1][0] != p.link:
            blocks.append((p.link, []))
        blocks[-1][1].append((seq, p))
    progress = Progress(len(todo), sum(expected_seconds(p) for _, p in todo), len(blocks), out)
    meta = {"kernel": iperf.kernel_release(), "iperf3_version": iperf.iperf3_version()}

    with CongestionControl(spec.variants) as congestion:
        for point, runs in blocks:
            progress.link(point)
            with LinkSession(environments, point, store, campaign_id, progress) as session:
                for seq, p in runs:
                    row = _run_with_retries(spec, store, session, congestion, campaign_id, seq, p, meta, progress)
                    progress.finish(p, row, expected_seconds(p))
    summary = summarise(store, campaign_id, seed, len(schedule), len(schedule) - len(pending))
    return dataclasses.replace(summary, remaining=len(pending) - len(todo))


def _run_with_retries(spec: CampaignSpec, store: Store, session: LinkSession, congestion: CongestionControl,
                      campaign_id: str, seq: int, p: RunPoint, meta: dict, progress: Progress) -> dict:
    impl = congestion.record(p.variant)
    base = {
        "run_id": p.run_id(campaign_id), "campaign_id": campaign_id, "seq": seq,
        "variant": p.variant, **impl, "streams": p.streams, "socket_buffer_bytes": p.socket_buffer_bytes,
        "transfer_bytes": p.transfer_bytes,
        "duration_target_s": float(p.duration_s) if p.duration_s is not None else None,
        "reverse": p.reverse, "repetition": p.repetition, "trace_cwnd": spec.trace_cwnd,
        **meta,
    }
    earlier: list[str] = []   # reasons of this run's failed attempts
    for attempt in range(1, spec.retries + 2):
        env = session.ready()
        argv = iperf.client_argv(env.addr, env.port, cc=impl["cc_kernel_name"], streams=p.streams,
                                 socket_buffer=p.socket_buffer_bytes, transfer_bytes=p.transfer_bytes,
                                 duration_s=p.duration_s, reverse=p.reverse)
        base.update(link_id=session.link_id, sysctls_json=dumps(env.sysctls))
        progress.start(p, attempt)
        store.put_run({**base, "status": "running", "attempts": attempt})
        with cwnd_trace(env.port, spec.trace_cwnd) as capture, env.monitor(env.port) as fid:
            outcome = iperf.run(env.host, env.addr, env.port, argv, timeout_s=timeout_seconds(p),
                                start_server=env.start_server, watch=env.check)
        row = {**base, "attempts": attempt, "raw_json": outcome.raw_json, **fid.columns}
        if outcome.parsed is None:
            part = env.check() or port_taken(env)    # a failed part of the link: rebuild it
            reason = outcome.failure_reason if not part or part in outcome.failure_reason \
                else f"{part}; {outcome.failure_reason}"
            session.broken = part
            before = [r for r in earlier if not r.endswith(f": {reason}")]
            row.update(status="failed", flags=",".join(env.flags + fid.flags) or None,
                       failure_reason=reason + (f" (earlier: {'; '.join(before)})" if before else ""))
            earlier.append(f"attempt {attempt}: {reason}")
            if attempt <= spec.retries:
                continue
            store.put_run(row)
            return row
        r = outcome.parsed.run
        flags = env.flags + outcome.parsed.flags + fid.flags
        if r["cc_reported"] and r["cc_reported"] != impl["cc_kernel_name"]:
            flags.append("cc_mismatch")
        effective = r["effective_socket_buffer_bytes"]
        if p.socket_buffer_bytes is None:
            effective = iperf.autotuning_ceiling(env.sysctls.get("sender", {}), env.sysctls.get("receiver", {}))
        row.update({k: r[k] for k in ("cc_reported", "throughput_bps", "bytes_transferred", "duration_s",
                                      "retransmits", "rtt_loaded_mean_ms", "rtt_loaded_min_ms",
                                      "started_at", "finished_at")})
        row.update(status="ok", flags=",".join(flags) or None, effective_socket_buffer_bytes=effective,
                   failure_reason="; ".join(earlier) or None)   # failed attempts before this one
        store.put_run(row, intervals=outcome.parsed.intervals, cwnd=capture.rows(outcome.raw_json))
        return row
    raise AssertionError("unreachable")


def summarise(store: Store, campaign_id: str, seed: int | None, total: int, skipped: int) -> Summary:
    counts = store.query(
        "SELECT count(*) FILTER (WHERE status = 'ok') AS ok, count(*) FILTER (WHERE status = 'failed') AS failed, "
        "count(*) FILTER (WHERE status = 'ok' AND flags IS NOT NULL) AS flagged FROM runs WHERE campaign_id = ?",
        [campaign_id])[0]
    table = store.query(
        "SELECT l.kind, l.host, l.rate_bps, l.rtt_ms, l.buffer_bytes, l.loss_mode, l.loss_rate, r.variant, r.streams, "
        "r.socket_buffer_bytes, r.transfer_bytes, r.duration_target_s, count(*) AS runs, "
        "count(r.throughput_bps) AS ok, avg(r.throughput_bps) AS mean_bps, stddev_samp(r.throughput_bps) AS sd_bps "
        "FROM runs r JOIN links l USING (link_id) WHERE r.campaign_id = ? AND r.status <> 'running' "
        "GROUP BY ALL ORDER BY l.rtt_ms, l.rate_bps, l.buffer_bytes, l.loss_rate, r.variant, r.streams, "
        "r.socket_buffer_bytes NULLS FIRST, r.transfer_bytes, r.duration_target_s", [campaign_id])
    return Summary(campaign_id, seed, total, skipped, counts["ok"], counts["failed"], counts["flagged"], table)


def format_summary(s: Summary, db_path: str) -> str:
    lines = [f"campaign {s.campaign_id} (seed {s.seed}): {s.total} runs, {s.ok} ok, {s.failed} failed, "
             f"{s.flagged} flagged; {s.skipped} were already done"
             + (f"; {s.remaining} left for later (run the spec again to continue)" if s.remaining else "")]
    header = f"{'link':<34} {'variant':<9} {'n':>3} {'socket buf':>10} {'amount':>8} {'runs':>4} {'mean Gbit/s':>11} {'sd':>7}"
    lines.append(header)
    for r in s.table:
        if r["kind"] == "remote":
            link = f"remote {r['host']}"
        else:
            loss = "" if not r["loss_rate"] else f" loss {r['loss_rate']:.0e}"
            link = f"{(r['rate_bps'] or 0) / 1e9:g}G {r['rtt_ms']:g}ms buf {(r['buffer_bytes'] or 0) / 1e6:.3g}MB{loss}"
        buf = "default" if r["socket_buffer_bytes"] is None else f"{r['socket_buffer_bytes'] / 2**20:g}MiB"
        amount = (f"{r['transfer_bytes'] / 1e9:g}GB" if r["transfer_bytes"] is not None
                  else f"{r['duration_target_s']:g}s")
        mean = f"{r['mean_bps'] / 1e9:.3f}" if r["mean_bps"] is not None else "-"
        sd = f"{r['sd_bps'] / 1e9:.3f}" if r["sd_bps"] is not None else "-"
        lines.append(f"{link:<34} {r['variant']:<9} {r['streams']:>3} {buf:>10} {amount:>8} "
                     f"{r['ok']:>2}/{r['runs']:<1} {mean:>11} {sd:>7}")
    lines.append(f"store: {db_path}")
    return "\n".join(lines)


def exit_code(s: Summary) -> int:
    """0: the campaign completed with at least one usable run; 1: it completed but every run failed."""
    return 0 if s.ok > 0 or s.total == 0 else 1

