"""When two RTTs are the same RTT: within max(1 %, 0.1 ms). One definition for the calibration of an
emulated link (a measured base RTT is the configured one, docs/testbed.md), for each run's base RTT (the
fidelity monitor's rtt_base_off, measure/fidelity/thresholds.py) and for `select` (a query RTT is a measured
point, measured RTTs of one profile are one point, docs/select.md)."""

from __future__ import annotations

RTT_REL_TOL = 0.01          # of the RTT
RTT_ABS_TOL_S = 0.1e-3      # [s]: the floor at sub-10 ms RTTs


def rtt_tolerance_s(rtt_s: float) -> float:
    """Allowed |a − b| [s] for RTTs near rtt_s [s]: max(1 %, 0.1 ms)."""
    return max(RTT_REL_TOL * rtt_s, RTT_ABS_TOL_S)


def rtt_tolerance_ms(rtt_ms: float) -> float:
    """The same in milliseconds, for RTTs read from the store's ms columns and compared with them there
    (store/importer.py: a file's min_rtt against --rtt; campaign/environments.py: ping against TCP)."""
    return 1e3 * rtt_tolerance_s(rtt_ms / 1e3)
