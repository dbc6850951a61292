"""Where runs execute: an Executor takes link blocks (one link configuration + its runs, in order) and
yields events as they happen; it never writes to the store (the driver's Recorder does).

    with executor:                        # loads congestion control, owns links
        for event in executor.run(blocks):
            ...                           # LinkSetup, LinkUp, RunStarted (each attempt), RunDone

`run_block` is the unit of remote work: set a link up, run the block's runs on it and yield the
events; everything it takes and yields is plain, picklable data, so a cluster executor can run it on
another node and stream the events back to the driver, which commits each as it arrives.
`LocalExecutor` runs blocks one after the other on this machine and keeps a link up across calls
while consecutive blocks ask for the same link configuration (a policy's next round on one link).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..measure import iperf
from ..spec import CampaignSpec, LinkPoint, RunPoint
from ..store.db import dumps
from .environments import (CongestionControl, Environment, EnvironmentFactory, cwnd_trace, emulated, port_taken,
                           remote)
from .progress import autotuned_request_bytes, timeout_seconds


@dataclass(frozen=True)
class Block:
    """One link configuration and the runs to make on it, in this order: (seq, point) pairs."""
    link: LinkPoint
    runs: tuple[tuple[int, RunPoint], ...]


@dataclass(frozen=True)
class Settings:
    """What every run of a campaign needs to know, wherever it executes."""
    campaign_id: str
    retries: int
    trace_cwnd: bool
    variants: tuple[str, ...]

    @classmethod
    def of(cls, spec: CampaignSpec, campaign_id: str | None = None) -> "Settings":
        return cls(campaign_id or spec.campaign_id, spec.retries, spec.trace_cwnd, spec.variants)


# -- events ----------------------------------------------------------------------------------------
@dataclass
class LinkSetup:
    """A link configuration is about to be set up (and calibrated); why: set when it is rebuilt."""
    link: LinkPoint
    why: str | None = None


@dataclass
class LinkUp:
    """The link is up: row is its links-table row (link_id, campaign_id included)."""
    link: LinkPoint
    row: dict


@dataclass
class RunStarted:
    """An attempt begins: row is the run's 'running' marker (status, attempts)."""
    seq: int
    point: RunPoint
    attempt: int
    row: dict


@dataclass
class RunDone:
    """A run ended (ok, or failed after its retries): its row, intervals and cwnd samples."""
    seq: int
    point: RunPoint
    row: dict
    intervals: list = field(default_factory=list)
    cwnd: list = field(default_factory=list)


Event = LinkSetup | LinkUp | RunStarted | RunDone


class Executor(Protocol):
    def __enter__(self) -> "Executor": ...
    def __exit__(self, *exc) -> None: ...
    def run(self, blocks: Sequence[Block]) -> Iterator[Event]: ...


# -- running on this machine -----------------------------------------------------------------------
def default_environments(spec: CampaignSpec) -> EnvironmentFactory:
    return emulated if spec.mode == "emulated" else remote


def host_meta() -> dict:
    """What the runs table records about the machine a run executes on."""
    return {"kernel": iperf.kernel_release(), "iperf3_version": iperf.iperf3_version()}


@contextlib.contextmanager
def link_up(settings: Settings, environments: EnvironmentFactory, link: LinkPoint) -> Iterator[tuple[Environment, dict]]:
    """Bring one link configuration up; yields the environment and its links row (with a fresh link_id)."""
    with environments(link) as env:
        row = {"link_id": f"{settings.campaign_id}-{secrets.token_hex(4)}",
               "campaign_id": settings.campaign_id, **env.link_row}
        yield env, row


class LinkSession:
    """The link of one configuration while its runs are made. When a part of it failed (broken, or
    Environment.check names one) the next attempt first tears it down and sets up (and calibrates) a
    new one, recorded as a new links row: the events of that say why (LinkSetup.why)."""

    def __init__(self, settings: Settings, environments: EnvironmentFactory, link: LinkPoint):
        self.settings, self.environments, self.link = settings, environments, link
        self._stack = contextlib.ExitStack()
        self.env: Environment | None = None
        self.link_id: str | None = None
        self.broken: str | None = None      # why the link must be rebuilt before the next attempt

    def up(self, why: str | None = None) -> Iterator[Event]:
        self.close()
        yield LinkSetup(self.link, why)
        self.env, row = self._stack.enter_context(link_up(self.settings, self.environments, self.link))
        self.link_id = row["link_id"]
        yield LinkUp(self.link, row)

    def ready(self) -> Iterator[Event]:
        """Before an attempt: rebuild the link first if a part of it failed."""
        why = self.broken or self.env.check()
        if why:
            self.broken = None
            yield from self.up(why)

    def close(self) -> None:
        self.env = self.link_id = None
        self._stack.close()


def run_block(settings: Settings, environments: EnvironmentFactory, block: Block,
              congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    """Set the block's link up, run its runs, tear the link down: the events, in order."""
    session = LinkSession(settings, environments, block.link)
    try:
        yield from session.up()
        yield from run_runs(settings, session, block.runs, congestion, meta)
    finally:
        session.close()


def run_runs(settings: Settings, session: LinkSession, runs: Iterable[tuple[int, RunPoint]],
             congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    for seq, p in runs:
        yield from run_one(settings, session, seq, p, congestion, meta)


def run_one(settings: Settings, session: LinkSession, seq: int, p: RunPoint,
            congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    """One run with its retries: a RunStarted per attempt, then one RunDone.

    Faults during a run (iperf3 killed, the server port taken, the delay engine dead) fail that
    attempt with a reason naming the part; when a part of the link failed (Environment.check, or a
    foreign listener on the server port) the link is rebuilt before the next attempt (LinkSession),
    and a retry that succeeds keeps its failed attempts' reasons (failure_reason)."""
    impl = congestion.record(p.variant)
    base = {
        "run_id": p.run_id(settings.campaign_id), "campaign_id": settings.campaign_id,
        "seq": seq, "variant": p.variant, **impl, "streams": p.streams,
        "socket_buffer_bytes": p.socket_buffer_bytes, "transfer_bytes": p.transfer_bytes,
        "duration_target_s": float(p.duration_s) if p.duration_s is not None else None,
        "reverse": p.reverse, "zerocopy": p.zerocopy, "repetition": p.repetition, "trace_cwnd": settings.trace_cwnd, **meta,
    }
    earlier: list[str] = []   # reasons of this run's failed attempts
    for attempt in range(1, settings.retries + 2):
        yield from session.ready()
        env = session.env
        argv = iperf.client_argv(env.addr, env.port, cc=impl["cc_kernel_name"], streams=p.streams,
                                 socket_buffer=p.socket_buffer_bytes, transfer_bytes=p.transfer_bytes,
                                 duration_s=p.duration_s, reverse=p.reverse, zerocopy=p.zerocopy,
                                 autotuned_bytes=autotuned_request_bytes(p))
        base.update(link_id=session.link_id, sysctls_json=dumps(env.sysctls))
        yield RunStarted(seq, p, attempt, {**base, "status": "running", "attempts": attempt})
        with cwnd_trace(env.port, settings.trace_cwnd) as capture, env.monitor(env.port, run=base) as fid:
            outcome = iperf.run(env.host, env.addr, env.port, argv, timeout_s=timeout_seconds(p),
                                start_server=env.start_server, watch=env.check, size_bytes=p.transfer_bytes,
                                interval_s=iperf.stored_interval_s(p.transfer_bytes))
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
            if attempt <= settings.retries:
                continue
            yield RunDone(seq, p, row)
            return
        r = outcome.parsed.run
        flags = env.flags + outcome.parsed.flags + fid.flags
        if r["cc_reported"] and r["cc_reported"] != impl["cc_kernel_name"]:
            flags.append("cc_mismatch")
        effective = r["effective_socket_buffer_bytes"]
        if p.socket_buffer_bytes is None:
            effective = iperf.autotuning_ceiling(env.sysctls.get("sender", {}), env.sysctls.get("receiver", {}))
        row.update({k: r[k] for k in ("cc_reported", "throughput_bps", "size_delivered_s", "bytes_transferred",
                                      "duration_s",
                                      "retransmits", "rtt_loaded_mean_ms", "rtt_loaded_min_ms",
                                      "started_at", "finished_at")})
        row.update(status="ok", flags=",".join(flags) or None, effective_socket_buffer_bytes=effective,
                   failure_reason="; ".join(earlier) or None)   # failed attempts before this one
        yield RunDone(seq, p, row, outcome.parsed.intervals, capture.rows(outcome.raw_json))
        return


class LocalExecutor:
    """This machine: one link at a time, blocks in the order given."""

    def __init__(self, settings: Settings, environments: EnvironmentFactory):
        self.settings = settings
        self.environments = environments
        self._stack = contextlib.ExitStack()
        self._current: LinkSession | None = None

    def __enter__(self) -> "LocalExecutor":
        self.congestion = self._stack.enter_context(CongestionControl(self.settings.variants))
        self.meta = host_meta()
        return self

    def __exit__(self, *exc) -> None:
        self._release()
        self._stack.close()

    def _release(self) -> None:
        if self._current is not None:
            session, self._current = self._current, None
            session.close()

    def run(self, blocks: Sequence[Block]) -> Iterator[Event]:
        for block in blocks:
            if self._current is None or self._current.link != block.link:
                self._release()
                self._current = LinkSession(self.settings, self.environments, block.link)
                yield from self._current.up()
            yield from run_runs(self.settings, self._current, block.runs, self.congestion, self.meta)
