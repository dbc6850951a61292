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

from .. import iperf
from ..spec import CampaignSpec, LinkPoint, RunPoint
from ..store.db import dumps
from .environments import CongestionControl, Environment, EnvironmentFactory, cwnd_trace, emulated, remote
from .progress import timeout_seconds


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
    """A link configuration is about to be set up (and calibrated)."""
    link: LinkPoint


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


def run_block(settings: Settings, environments: EnvironmentFactory, block: Block,
              congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    """Set the block's link up, run its runs, tear the link down: the events, in order."""
    yield LinkSetup(block.link)
    with link_up(settings, environments, block.link) as (env, row):
        yield LinkUp(block.link, row)
        yield from run_runs(settings, env, row["link_id"], block.runs, congestion, meta)


def run_runs(settings: Settings, env: Environment, link_id: str, runs: Iterable[tuple[int, RunPoint]],
             congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    for seq, p in runs:
        yield from run_one(settings, env, link_id, seq, p, congestion, meta)


def run_one(settings: Settings, env: Environment, link_id: str, seq: int, p: RunPoint,
            congestion: CongestionControl, meta: dict) -> Iterator[Event]:
    """One run with its retries: a RunStarted per attempt, then one RunDone."""
    impl = congestion.record(p.variant)
    base = {
        "run_id": p.run_id(settings.campaign_id), "campaign_id": settings.campaign_id, "link_id": link_id,
        "seq": seq, "variant": p.variant, **impl, "streams": p.streams,
        "socket_buffer_bytes": p.socket_buffer_bytes, "transfer_bytes": p.transfer_bytes,
        "duration_target_s": float(p.duration_s) if p.duration_s is not None else None,
        "reverse": p.reverse, "repetition": p.repetition, "trace_cwnd": settings.trace_cwnd,
        "sysctls_json": dumps(env.sysctls), **meta,
    }
    argv = iperf.client_argv(env.addr, env.port, cc=impl["cc_kernel_name"], streams=p.streams,
                             socket_buffer=p.socket_buffer_bytes, transfer_bytes=p.transfer_bytes,
                             duration_s=p.duration_s, reverse=p.reverse)
    for attempt in range(1, settings.retries + 2):
        yield RunStarted(seq, p, attempt, {**base, "status": "running", "attempts": attempt})
        with cwnd_trace(env.port, settings.trace_cwnd) as capture, env.monitor(env.port) as fid:
            outcome = iperf.run(env.host, env.addr, env.port, argv, timeout_s=timeout_seconds(p),
                                start_server=env.start_server)
        row = {**base, "attempts": attempt, "raw_json": outcome.raw_json, **fid.columns}
        if outcome.parsed is None:
            row.update(status="failed", failure_reason=outcome.failure_reason,
                       flags=",".join(env.flags + fid.flags) or None)
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
        row.update({k: r[k] for k in ("cc_reported", "throughput_bps", "bytes_transferred", "duration_s",
                                      "retransmits", "rtt_loaded_mean_ms", "rtt_loaded_min_ms",
                                      "started_at", "finished_at")})
        row.update(status="ok", flags=",".join(flags) or None, effective_socket_buffer_bytes=effective)
        yield RunDone(seq, p, row, outcome.parsed.intervals, capture.rows(outcome.raw_json))
        return


class LocalExecutor:
    """This machine: one link at a time, blocks in the order given."""

    def __init__(self, settings: Settings, environments: EnvironmentFactory):
        self.settings = settings
        self.environments = environments
        self._stack = contextlib.ExitStack()
        self._current: tuple[LinkPoint, Environment, str] | None = None

    def __enter__(self) -> "LocalExecutor":
        self.congestion = self._stack.enter_context(CongestionControl(self.settings.variants))
        self.meta = host_meta()
        return self

    def __exit__(self, *exc) -> None:
        self._release()
        self._stack.close()

    def _release(self) -> None:
        if self._current is not None:
            self._current = None
            self._link_stack.close()

    def run(self, blocks: Sequence[Block]) -> Iterator[Event]:
        for block in blocks:
            if self._current is None or self._current[0] != block.link:
                self._release()
                yield LinkSetup(block.link)
                self._link_stack = contextlib.ExitStack()
                env, row = self._link_stack.enter_context(link_up(self.settings, self.environments, block.link))
                self._current = (block.link, env, row["link_id"])
                yield LinkUp(block.link, row)
            _, env, link_id = self._current
            yield from run_runs(self.settings, env, link_id, block.runs, self.congestion, self.meta)
