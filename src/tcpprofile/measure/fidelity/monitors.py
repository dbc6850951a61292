"""Monitors: context managers around one iperf3 run that fill in a RunFidelity (the runs-table columns
it measured, the flags it raises) from the host, the data connections and the engines."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ContextManager

from ...store.db import dumps
from .connections import RttWatcher, SenderLimits, host_limited, limited_by, sender_limits
from .host import SAMPLE_S, HostSampler
from .thresholds import THRESHOLDS, Thresholds
from .verdicts import (
    engine_late,
    host_columns,
    host_flags,
    loss_off,
    rtt_off,
    stall_effect_bound,
    stall_flag,
    stall_threshold_ms,
)


@dataclass
class RunFidelity:
    """Filled in when the monitored block ends."""
    columns: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


Monitor = Callable[..., ContextManager[RunFidelity]]   # monitor(port, run=None): run is the run's row so far


@contextlib.contextmanager
def unmonitored(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
    """A monitor that measures nothing (tests' fake environments)."""
    yield RunFidelity()


def remote_monitor(host, role: str = "sender") -> Monitor:
    """Host load and base RTT for runs against a remote server (no target RTT: nothing to compare)."""
    @contextlib.contextmanager
    def monitor(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
        fid = RunFidelity()
        with HostSampler(port=port) as sampler, RttWatcher(host, role, port, first_s=SAMPLE_S) as rtt:
            yield fid
        load = sampler.result()
        fid.columns.update(host_columns(load), rtt_base_ms=rtt.value,
                           rtt_base_source="tcp_info min_rtt" if rtt.value is not None else None,
                           fidelity_json=dumps({"host": load.__dict__}))
        fid.flags += host_flags(load)
    return monitor


def emulated_monitor(link, t: Thresholds = THRESHOLDS) -> Monitor:
    """Everything above for a run on an EmulatedLink."""
    @contextlib.contextmanager
    def monitor(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
        fid = RunFidelity()
        cfg = link.config
        run = run or {}
        seed = None
        if cfg.loss_mode == "uniform" and run.get("run_id"):
            seed = loss_seed(run["run_id"])
            link.seed_loss(seed)
        before = link.engine_stats(period=True, answering=True)
        with HostSampler(cpus=getattr(link, "app_cpus", None)) as sampler, RttWatcher(link, "sender", port) as rtt:
            yield fid
        after = link.engine_stats(period=True, answering=True)
        load = sampler.result()
        fid.columns.update(engine_columns(before, after, load.wall_s))
        fid.columns["stall_effect_bound"] = stall_effect_bound(fid.columns, load.wall_s, t)
        fwd_b, fwd_a = before.get("forward"), after.get("forward")
        seen = dropped = None
        if cfg.loss_mode != "none" and fwd_b is not None and fwd_a is not None:
            seen, dropped = fwd_a.loss_seen - fwd_b.loss_seen, fwd_a.loss_dropped - fwd_b.loss_dropped
        limits = sender_limits(rtt.samples)
        limit = limited_by(limits, t)
        fid.columns.update(host_columns(load), rtt_base_ms=rtt.value,
                           rtt_base_source="tcp_info min_rtt" if rtt.value is not None else None,
                           loss_seen_packets=seen, loss_dropped_packets=dropped, loss_seed=seed,
                           limited_by=limit, app_cpu_busy=load.cpus_busy_share,
                           **limit_columns(limits))
        flags = host_flags(load, t)
        # τ [ms] once: the verdicts compare it with what ss and the engines report (ms, µs) and the record keeps ms
        tau_ms = cfg.rtt_s * 1e3
        if rtt.value is not None and rtt_off(rtt.value, tau_ms, t, frame_ms=cfg.frame_time_s * 1e3):
            flags.append("rtt_base_off")
        if engine_late(fid.columns, tau_ms, t):
            flags.append("engine_late")
        stall = stall_flag(fid.columns, tau_ms, t)
        if stall:
            flags.append(stall)
        if fid.columns.get("engine_fwd_drops") or fid.columns.get("engine_rev_drops"):
            flags.append("engine_dropped")
        if seen is not None and loss_off(cfg.loss_mode, cfg.loss_rate,
                                         cfg.loss_every if cfg.loss_mode == "periodic" else 0, seen, dropped, t):
            flags.append("loss_off")
        if host_limited(limit, run.get("socket_buffer_bytes")):
            flags.append("host_limited")
        fid.flags += flags
        fid.columns["fidelity_json"] = dumps({
            "host": load.__dict__, "thresholds": t.__dict__, "target_rtt_ms": tau_ms,
            "sender_limits": limits.__dict__ if limits else None,
            "stall_threshold_ms": stall_threshold_ms(tau_ms, t),
            "engines": {k: {"before": v.to_dict(), "after": after[k].to_dict()} for k, v in before.items()
                        if k in after}})
    return monitor


def loss_seed(run_id: str) -> int:
    """The uniform loss stage's seed for a run: the first 63 bits of sha256(run id) (a BIGINT; the
    same run id, e.g. a retried attempt, replays the same generator sequence)."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") >> 1


def limit_columns(limits: SenderLimits | None) -> dict:
    keys = ("tcp_busy_ms", "tcp_rwnd_limited_ms", "tcp_sndbuf_limited_ms", "tcp_app_limited_share")
    if limits is None:
        return dict.fromkeys(keys)
    return dict(zip(keys, (limits.busy_ms, limits.rwnd_limited_ms, limits.sndbuf_limited_ms,
                           limits.app_limited_share)))


def engine_columns(before: dict, after: dict, wall_s: float) -> dict:
    """Per-direction deltas of two engine snapshots (period=True at both ends) as runs columns."""
    cols: dict = {}
    for name, d in (("forward", "fwd"), ("reverse", "rev")):
        b, a = before.get(name), after.get(name)
        if b is None or a is None:
            cols.update({f"engine_{d}_{k}": None for k in ("late_mean_us", "late_max_us", "late_p99_us",
                                                            "late_p999_us", "drops", "cpu_share", *_STALL_KEYS)})
            continue
        released = a.released - b.released
        cols[f"engine_{d}_late_mean_us"] = (a.late_sum_ns - b.late_sum_ns) / released / 1e3 if released else None
        cols[f"engine_{d}_late_max_us"] = a.period_late_max_ns / 1e3 if released else None
        for q, k in ((0.99, "p99"), (0.999, "p999")):    # a's histogram covers the period since `before`
            v = a.period_late_quantile_ns(q) if released else None
            cols[f"engine_{d}_late_{k}_us"] = v / 1e3 if v is not None else None
        cols[f"engine_{d}_drops"] = (a.lost + a.enobufs) - (b.lost + b.enobufs)
        cols[f"engine_{d}_cpu_share"] = (a.cpu_s - b.cpu_s) / wall_s
        cols.update(_stall_columns(d, b, a))
    fwd_b, fwd_a = before.get("forward"), after.get("forward")
    if fwd_b is not None and fwd_a is not None:
        cols["bottleneck_drops"] = fwd_a.bottleneck_drops - fwd_b.bottleneck_drops
        cols["bottleneck_overlimits"] = fwd_a.bottleneck_overlimits - fwd_b.bottleneck_overlimits
    cols["inflight_end_packets"] = sum(s.held for s in after.values())
    return cols


_STALL_KEYS = ("stall_episodes", "stall_excess_ms", "stall_injected_holds", "stall_inject_hold_ms",
               "stall_inject_every_s", "stall_uncovered_ms")


def _stall_columns(d: str, b, a) -> dict:
    """One direction's stall record during the run (delayd.c, "Stall episodes", "Stall injection"): the
    episodes and their summed excess [ms], the injected holds that deferred a release, the
    injection in force at the run's end (hold [ms], every [s]; None: off), and the part of the excess
    the bottleneck's queue did not cover [ms] ("Uncovered excess"; None from an engine before schema 8).
    All None from an engine built before issue 33."""
    keys = [f"engine_{d}_{k}" for k in _STALL_KEYS]
    if a.late_excess_ns is None or b.late_excess_ns is None:
        return dict.fromkeys(keys)
    on = bool(a.stall_every_ns)
    uncovered = None if a.late_uncovered_ns is None or b.late_uncovered_ns is None else \
        (a.late_uncovered_ns - b.late_uncovered_ns) / 1e6
    return dict(zip(keys, (a.late_episodes - b.late_episodes, (a.late_excess_ns - b.late_excess_ns) / 1e6,
                           a.stall_holds - b.stall_holds, a.stall_hold_ns / 1e6 if on else None,
                           a.stall_every_ns / 1e9 if on else None, uncovered)))
