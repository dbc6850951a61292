"""Monitors: context managers around one iperf3 run that fill in a RunFidelity (the runs-table columns
it measured, the flags it raises) from the host, the data connections and the engines."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ContextManager

from ...store.db import dumps
from ...units import to_ms
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
    stall_threshold_s,
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
        fid.columns.update(host_columns(load), **rtt_columns(rtt.value_s), fidelity_json=dumps({"host": load.__dict__}))
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
        engines = engine_readings(before, after, load.wall_s)       # [s]; the store's columns in µs and ms
        engines["stall_effect_bound"] = stall_effect_bound(engines, load.wall_s, t)
        fid.columns.update(store_columns(engines))
        fwd_b, fwd_a = before.get("forward"), after.get("forward")
        seen = dropped = None
        if cfg.loss_mode != "none" and fwd_b is not None and fwd_a is not None:
            seen, dropped = fwd_a.loss_seen - fwd_b.loss_seen, fwd_a.loss_dropped - fwd_b.loss_dropped
        limits = sender_limits(rtt.samples)
        limit = limited_by(limits, t)
        fid.columns.update(host_columns(load), **rtt_columns(rtt.value_s),
                           loss_seen_packets=seen, loss_dropped_packets=dropped, loss_seed=seed,
                           limited_by=limit, app_cpu_busy=load.cpus_busy_share,
                           **limit_columns(limits))
        flags = host_flags(load, t)
        tau_s = cfg.rtt_s
        if rtt.value_s is not None and rtt_off(rtt.value_s, tau_s, t, frame_s=cfg.frame_time_s):
            flags.append("rtt_base_off")
        if engine_late(engines, tau_s, t):
            flags.append("engine_late")
        stall = stall_flag(engines, tau_s, t)
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
            "host": load.__dict__, "thresholds": t.stored(), "target_rtt_ms": to_ms(tau_s),
            "sender_limits": limits.__dict__ if limits else None,
            "stall_threshold_ms": to_ms(stall_threshold_s(tau_s, t)),
            "engines": {k: {"before": v.to_dict(), "after": after[k].to_dict()} for k, v in before.items()
                        if k in after}})
    return monitor


def loss_seed(run_id: str) -> int:
    """The uniform loss stage's seed for a run: the first 63 bits of sha256(run id) (a BIGINT; the
    same run id, e.g. a retried attempt, replays the same generator sequence)."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") >> 1


def limit_columns(limits: SenderLimits | None) -> dict:
    """The sender's limits as the runs table keeps them: the chrono counters in ms."""
    keys = ("tcp_busy_ms", "tcp_rwnd_limited_ms", "tcp_sndbuf_limited_ms", "tcp_app_limited_share")
    if limits is None:
        return dict.fromkeys(keys)
    return dict(zip(keys, (to_ms(limits.busy_s), to_ms(limits.rwnd_limited_s), to_ms(limits.sndbuf_limited_s),
                           limits.app_limited_share)))


def rtt_columns(base_s: float | None) -> dict:
    """The run's base RTT as the store keeps it: rtt_base_ms [ms] and where it came from."""
    return {"rtt_base_ms": None if base_s is None else to_ms(base_s),
            "rtt_base_source": None if base_s is None else "tcp_info min_rtt"}


# The engines' durations as the runs table keeps them: the unit of each reading's column (engine_fwd_late_mean_s
# → engine_fwd_late_mean_us); a reading not named here is stored as it is (counts, shares, stall_inject_every_s).
_STORE_UNIT = {"late_mean": "us", "late_max": "us", "late_p99": "us", "late_p999": "us", "stall_excess": "ms",
               "stall_inject_hold": "ms", "stall_uncovered": "ms"}
_PER_MS = {"ms": 1.0, "us": 1e3}


def store_columns(readings: dict) -> dict:
    """engine_readings' values [s] as the runs table's columns (µs and ms), converted here, once, through
    units.to_ms (which keeps the decimal the ns counters give: 200.0 ms, not 200.00000000000003)."""
    out = {}
    for key, value in readings.items():
        stem = key[:-2] if key.endswith("_s") else None
        unit = next((u for name, u in _STORE_UNIT.items() if stem and stem.endswith("_" + name)), None)
        if unit is None:
            out[key] = value
        else:
            out[f"{stem}_{unit}"] = None if value is None else to_ms(value * _PER_MS[unit])
    return out


def engine_readings(before: dict, after: dict, wall_s: float) -> dict:
    """Per-direction deltas of two engine snapshots (period=True at both ends), durations in seconds, read
    from the engines' ns counters here, once: engine_{fwd,rev}_late_{mean,max,p99,p999}_s, …_drops,
    …_cpu_share and the stall record (_stall_readings); the bottleneck's drops and overlimits, the packets
    held at the end."""
    cols: dict = {}
    for name, d in (("forward", "fwd"), ("reverse", "rev")):
        b, a = before.get(name), after.get(name)
        if b is None or a is None:
            cols.update({f"engine_{d}_{k}": None for k in ("late_mean_s", "late_max_s", "late_p99_s",
                                                            "late_p999_s", "drops", "cpu_share", *_STALL_KEYS)})
            continue
        released = a.released - b.released
        cols[f"engine_{d}_late_mean_s"] = (a.late_sum_ns - b.late_sum_ns) / released / 1e9 if released else None
        cols[f"engine_{d}_late_max_s"] = a.period_late_max_ns / 1e9 if released else None
        for q, k in ((0.99, "p99"), (0.999, "p999")):    # a's histogram covers the period since `before`
            v = a.period_late_quantile_ns(q) if released else None
            cols[f"engine_{d}_late_{k}_s"] = v / 1e9 if v is not None else None
        cols[f"engine_{d}_drops"] = (a.lost + a.enobufs) - (b.lost + b.enobufs)
        cols[f"engine_{d}_cpu_share"] = (a.cpu_s - b.cpu_s) / wall_s
        cols.update(_stall_readings(d, b, a))
    fwd_b, fwd_a = before.get("forward"), after.get("forward")
    if fwd_b is not None and fwd_a is not None:
        cols["bottleneck_drops"] = fwd_a.bottleneck_drops - fwd_b.bottleneck_drops
        cols["bottleneck_overlimits"] = fwd_a.bottleneck_overlimits - fwd_b.bottleneck_overlimits
    cols["inflight_end_packets"] = sum(s.held for s in after.values())
    return cols


_STALL_KEYS = ("stall_episodes", "stall_excess_s", "stall_injected_holds", "stall_inject_hold_s",
               "stall_inject_every_s", "stall_uncovered_s")


def _stall_readings(d: str, b, a) -> dict:
    """One direction's stall record during the run (delayd.c, "Stall episodes", "Stall injection"): the
    episodes and their summed excess [s], the injected holds that deferred a release, the
    injection in force at the run's end (hold [s], every [s]; None: off), and the part of the excess
    the bottleneck's queue did not cover [s] ("Uncovered excess"; None from an engine before schema 8).
    All None from an engine built before issue 33."""
    keys = [f"engine_{d}_{k}" for k in _STALL_KEYS]
    if a.late_excess_ns is None or b.late_excess_ns is None:
        return dict.fromkeys(keys)
    on = bool(a.stall_every_ns)
    uncovered = None if a.late_uncovered_ns is None or b.late_uncovered_ns is None else \
        (a.late_uncovered_ns - b.late_uncovered_ns) / 1e9
    return dict(zip(keys, (a.late_episodes - b.late_episodes, (a.late_excess_ns - b.late_excess_ns) / 1e9,
                           a.stall_holds - b.stall_holds, a.stall_hold_ns / 1e9 if on else None,
                           a.stall_every_ns / 1e9 if on else None, uncovered)))
