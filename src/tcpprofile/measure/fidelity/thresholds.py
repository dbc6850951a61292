"""When a run is flagged (Thresholds) and which flags send a run to be made again (RERUN_FLAGS)."""

from __future__ import annotations

from dataclasses import dataclass

from ...same_rtt import RTT_ABS_TOL_S, RTT_REL_TOL
from ...units import to_ms


@dataclass(frozen=True)
class Thresholds:
    """When a run is flagged. Tolerances are per run; see docs/testbed.md for how they were chosen. Durations in
    seconds (`_s`); the store's fidelity_json keeps them in ms under their `_ms` names (stored())."""
    rtt_rel: float = RTT_REL_TOL       # rtt_base_off: |base RTT − τ| > max(rtt_rel·τ, rtt_abs_s): 1 %, 0.1 ms,
    rtt_abs_s: float = RTT_ABS_TOL_S   #   the one "same RTT" of calibration and select (same_rtt.py)
    late_mean_s: float = 0.02e-3     # engine_late: both directions' mean lateness together above
    late_mean_rel: float = 0.01      #   max(late_mean_s, late_mean_rel·τ) (added to every RTT; 20 µs =
                                     #   G/2, delayd's release spread at its 40 µs granularity) …
    stall_s: float = 0.5e-3          # a stall: a release later than max(stall_s, min(stall_rel·τ,
    stall_rel: float = 0.01          #   stall_cap_s)): 0.5 ms, the RTT tolerance, capped at HyStart's ACK-train
    stall_cap_s: float = 2e-3        #   gap, 2 ms (hystart_ack_delta_us, tcp_cubic.c); docs/testbed.md
    stall_resolution_rel: float = 0.002   # engine_stall: stall_effect_bound above the instrument's run-to-run
                                     #   resolution: CoV of Θ, median 0.20 % over 12 configurations × 10 runs
                                     #   at 45.6 ms, 10 Gbit/s (benchmarks/data/adaptive-45.6ms-10rep.csv;
                                     #   0.08-0.82 % per configuration); a milder stall is engine_stall_minor
    stall_amplification: float = 1.0     # Θ's relative change per unit of the engines' excess stall time per
                                     #   second of run. 1: the link idles at most as long as the stalls. The
                                     #   dose-response (benchmarks/stall_dose.py, docs/testbed.md) found no
                                     #   amplification: injected holds cost max(0, D − β/C) each, and natural
                                     #   excess (9-14 % of a run) cost nothing, so 1 is a loose upper bound
    limit_share: float = 0.05        # limited_by: rwnd/sndbuf-limited for more than this share of busy time
    app_limited_share: float = 0.5   #   … or app_limited in more than this share of connection samples
    foreign_cores: float = 0.2       # host_contended: other processes used more CPU than this
                                     # (PSI pressure is stored, not judged: our own iperf3, engines and
                                     # softirq keep it at 0.15-0.6 on a quiet 2-core host)
    ts_tick_s: float = 1e-3          # RTT samples from the timestamp option are whole 1 ms ticks (see rtt_off)
    loss_z: float = 3.29             # loss_off: dropped count outside ±3.29 σ of the binomial (99.9 %)

    def stored(self) -> dict:
        """The thresholds as the store's fidelity_json records them: durations in ms under `_ms` names (as
        every run recorded them before the code kept seconds), the rest as they are."""
        return {(k[:-2] + "_ms" if k.endswith("_s") else k): (to_ms(v) if k.endswith("_s") else v)
                for k, v in self.__dict__.items()}


# Comparisons. Readings are decimals of ms (ss prints min_rtt to 1 µs below 1 s, the chrono counters in whole ms)
# or whole ns (the engines' counters), converted to seconds once where they are read (connections.parse_ss,
# monitors.engine_readings); a bound is computed in seconds from τ and the thresholds. Either can land a few ulps
# beside the decimal it stands for (0.4e-3 − 0.1e-3 ≠ 0.3e-3 in binary64), so a reading on a bound is on it,
# within 1e-13 relative (some 450 ulps; 1 fs at 10 ms): far below ss's 1 µs, the engines' 1 ns and a mean
# lateness's 1 ns / packets released (5e-13 of 20 µs at 10^8 packets). On a bound is inside every threshold
# (each flag says "beyond").
_SLACK = 1e-13


def beyond(x: float, bound: float) -> bool:
    """x is past an upper bound (not on it)."""
    return x > bound + _SLACK * abs(bound)


def short_of(x: float, bound: float) -> bool:
    """x is below a lower bound (not on it)."""
    return x < bound - _SLACK * abs(bound)


THRESHOLDS = Thresholds()

# The flags that say the instrument was not faithful during a run, so that the same run made again may
# be: this module's, and the link's calibration copied to the run (link_rate_low, link_rtt_off; a remote
# link's rtt_unmeasured stays on its links row, cleared once a run measured TCP's min_rtt: a path that
# filters ICMP is measured by TCP). A campaign with `rerun_flagged = true` runs ok runs carrying one again on resume.
# Not: the iperf3 output notes (throughput_sender_side, intervals_*, streams_matched_by_order) and
# cc_mismatch, which say what the run reported or loaded, and come out the same again.
# engine_stall is not rerun: on a quiet host every 10 Gbit/s run of the models' validation design so far had a
# release later than its threshold (issue 21: the stall's cause is open), so a rerun reproduces it.
RERUN_FLAGS = ("host_contended", "rtt_base_off", "engine_late", "engine_dropped", "loss_off", "host_limited",
               "host_tcp_memory")


def rerun_flags(flags: str | None) -> list[str]:
    """The instrument flags (RERUN_FLAGS and link_*) among a run's comma-separated flags."""
    return [f for f in (flags or "").split(",") if f in RERUN_FLAGS or f.startswith("link_")]
