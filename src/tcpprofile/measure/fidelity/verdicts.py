"""The verdicts on a run: each flag against its definition and threshold (Thresholds)."""

from __future__ import annotations

import math

from .host import HostLoad
from .thresholds import THRESHOLDS, Thresholds, beyond, short_of


def rtt_off(base_s: float, target_s: float, t: Thresholds = THRESHOLDS, frame_s: float = 0.0) -> bool:
    """Base RTT [s] outside max(1 %, 0.1 ms) of τ [s]. Above τ, a data frame's serialisation at the line rate
    (frame_s = frame bits / C) is part of the wire: the engine releases a packet τ/2 after its last
    bit left the modelled wire, so an RTT sample is τ + frame_s (72 µs at 1 Gbit/s, MTU 9000: a quiet
    run read 10.132 ms at 10 ms). One exception below τ: in loss recovery the kernel
    takes RTT samples from the timestamp option (tcp_rtt_tsopt_us) in whole 1 ms ticks, so tcp_info's
    min_rtt can read floor(τ) (seen: 11.000 at 11.8 ms, 45.000 at 45.6 ms on lossy links and BBR runs,
    whose other samples sat at τ). A whole number of ticks up to one tick below τ is that, not the wire
    (the engine never releases more than G/2 = 20 µs early)."""
    tol = max(t.rtt_rel * target_s, t.rtt_abs_s)
    if not short_of(base_s, target_s - tol) and not beyond(base_s, target_s + frame_s + tol):
        return False
    ticks = base_s / t.ts_tick_s
    tick_sample = base_s < target_s and abs(ticks - round(ticks)) < 1e-9      # whole ticks, to 1e-12 s as before
    return not (tick_sample and not short_of(base_s, target_s - t.ts_tick_s - tol))


def loss_off(mode: str, rate: float, every: int, seen: int, dropped: int, t: Thresholds = THRESHOLDS) -> bool:
    """Did the loss stage drop what its rule says? periodic (1 in N): exactly seen/N up to ±1 (the
    rule's counter runs on across runs); uniform: within ±z σ of the binomial mean."""
    if mode == "none" or seen == 0:
        return False
    if mode == "periodic":
        return abs(dropped - seen / every) > 1
    sd = math.sqrt(seen * rate * (1 - rate))
    return abs(dropped - seen * rate) > t.loss_z * sd + 0.5       # + ½: continuity


def _per_direction(readings: dict, name: str) -> list[float]:
    """Both directions' reading `engine_{fwd,rev}_{name}` [s], those the engines reported."""
    values = [readings.get(f"engine_{d}_{name}") for d in ("fwd", "rev")]
    return [v for v in values if v is not None]


def engine_late(readings: dict, target_s: float, t: Thresholds = THRESHOLDS) -> bool:
    """The engines added more than the tolerated delay on average (readings: monitors.engine_readings, [s])."""
    added_s = sum(_per_direction(readings, "late_mean_s"))
    return beyond(added_s, max(t.late_mean_s, t.late_mean_rel * target_s))


def stall_threshold_s(target_s: float, t: Thresholds = THRESHOLDS) -> float:
    """max(0.5 ms, min(1 % τ, 2 ms)) [s]: a held release shifts every RTT sample behind it; beyond 1 % τ
    they leave the RTT tolerance, and beyond 2 ms the ACK stream has a gap that HyStart's ACK-train
    test reads (hystart_ack_delta_us = 2000 in net/ipv4/tcp_cubic.c: a gap ends the train), the
    smallest hold at which the kernel's TCP changes what it does (docs/testbed.md, "the worst case")."""
    return max(t.stall_s, min(t.stall_rel * target_s, t.stall_cap_s))


def engine_stall(readings: dict, target_s: float, t: Thresholds = THRESHOLDS) -> bool:
    """Some release, in either direction, was later than stall_threshold_s (a stall was seen; whether
    it matters is stall_flag's question)."""
    worst_s = max(_per_direction(readings, "late_max_s"), default=0.0)
    return beyond(worst_s, stall_threshold_s(target_s, t))


def stall_effect_bound(readings: dict, wall_s: float, t: Thresholds = THRESHOLDS) -> float | None:
    """The largest relative change in Θ the run's observed stalls could have caused (issue 33): both
    engines' summed *uncovered* stall excess [s] (readings: monitors.engine_readings) over the run's wall
    time [s], times t.stall_amplification.

    A stall episode of e (delayd.c, "Stall episodes": how long the emulated wire delivered nothing it
    should have) stops the ACK clock for e; the bottleneck's backlog q keeps the wire busy for q/C of it,
    so the wire idles max(0, e − q/C) (delayd.c, "Uncovered excess", q read per episode), and a
    fixed-size transfer takes at most that much longer: Θ changes by at most Σ max(0, e − q/C) / T
    (amplification 1: benchmarks/stall_dose.py measured the cost following D − β/C with a full queue,
    no amplification). An engine without the uncovered record (delayd before schema 8) counts its whole
    excess (nothing covers: the bound of issue 33's first step, ~10× too high here). Capped at 1 (Θ
    cannot fall by more than itself). None when no engine reported the record (delayd before issue 33)
    or the wall time is unknown."""
    per_direction = []
    for d in ("fwd", "rev"):
        uncovered, excess = readings.get(f"engine_{d}_stall_uncovered_s"), readings.get(f"engine_{d}_stall_excess_s")
        per_direction.append(uncovered if uncovered is not None else excess)
    if all(e is None for e in per_direction) or not wall_s or wall_s <= 0:
        return None
    lost_s = sum(e for e in per_direction if e is not None)
    return min(1.0, t.stall_amplification * lost_s / wall_s)


def stall_flag(readings: dict, target_s: float, t: Thresholds = THRESHOLDS) -> str | None:
    """'engine_stall' where the run's stall_effect_bound (readings) exceeds the instrument's resolution
    (t.stall_resolution_rel): the stalls could have changed Θ by more than runs differ anyway;
    'engine_stall_minor' where a release was later than stall_threshold_s but the bound stays within
    the resolution (recorded, not a reason to leave the run out: grouping.NOTE_FLAGS); None without a
    stall. Without the engines' record (bound None) every stall is 'engine_stall', as before issue 33."""
    bound = readings.get("stall_effect_bound")
    if bound is not None and bound > t.stall_resolution_rel:
        return "engine_stall"
    if not engine_stall(readings, target_s, t):
        return None
    return "engine_stall" if bound is None else "engine_stall_minor"


def host_flags(load: HostLoad, t: Thresholds = THRESHOLDS) -> list[str]:
    """host_contended: foreign processes used more CPU than t.foreign_cores; host_tcp_memory: TCP's memory
    reached tcp_mem's pressure threshold during the run (tcp_memory)."""
    flags = ["host_contended"] if load.foreign_cores > t.foreign_cores else []
    if None not in (load.tcp_mem_pages_max, load.tcp_mem_pressure_pages) and \
            load.tcp_mem_pages_max >= load.tcp_mem_pressure_pages:
        flags.append("host_tcp_memory")
    return flags


def host_columns(load: HostLoad) -> dict:
    return {"host_cpu_busy": load.busy_share, "host_cpu_pressure": load.pressure_share,
            "host_runqueue_max": load.runqueue_max, "host_cpu_foreign": load.foreign_cores}
