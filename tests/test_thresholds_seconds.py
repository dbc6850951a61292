"""Each duration threshold of fidelity.thresholds.Thresholds, in seconds, met by readings as the instrument reads
them (ss's min_rtt and chrono counters through connections.parse_ss, the engines' ns counters through
monitors.engine_readings): a reading exactly on the bound is inside (each flag says "beyond"), one resolution step
past it (1 µs or 1 ms of ss, 1 ns of the engines) is outside. The bounds on decimals of ms are the cases where
arithmetic in binary64 lands an ulp beside the decimal (0.4e-3 − 0.1e-3 > 0.3e-3): the slack of thresholds.beyond
and short_of keeps them inside."""

from __future__ import annotations

import dataclasses

import pytest

from tcpprofile.measure.fidelity import connections, monitors, thresholds, verdicts
from tcpprofile.testbed.engine import EngineStats
from tcpprofile.units import seconds

T = thresholds.THRESHOLDS


def ss_reading(min_rtt_ms: str) -> float:
    """ss's min_rtt [ms, as printed] of one data connection, read to seconds by parse_ss."""
    out = f"0 0 10.77.1.1:40002 10.77.1.2:5201\n\t cubic bytes_acked:2000000000 minrtt:{min_rtt_ms}\n"
    (conn,) = connections.parse_ss(out)
    return conn.min_rtt_s


def tau(text: str) -> float:
    return seconds("rtt", text)          # τ as a spec or --rtt gives it (LinkConfig.rtt_s)


def test_the_thresholds_are_declared_in_seconds():
    assert (T.rtt_abs_s, T.late_mean_s, T.stall_s, T.stall_cap_s, T.ts_tick_s) == (0.1e-3, 0.02e-3, 0.5e-3, 2e-3, 1e-3)
    assert {k: v for k, v in T.stored().items() if k.endswith("_ms")} == \
        {"rtt_abs_ms": 0.1, "late_mean_ms": 0.02, "stall_ms": 0.5, "stall_cap_ms": 2.0, "ts_tick_ms": 1.0}


@pytest.mark.parametrize("rtt, frame_s, inside, outside", [
    # rtt_abs_s: τ ≤ 10 ms, the tolerance is 0.1 ms
    ("0.4ms", 0.0, "0.500", "0.501"), ("0.4ms", 0.0, "0.300", "0.299"),
    ("5ms", 0.0, "5.100", "5.101"), ("5ms", 0.0, "4.900", "4.899"),
    # rtt_rel: 1 % of τ above 10 ms
    ("45.6ms", 0.0, "46.056", "46.057"), ("45.6ms", 0.0, "45.144", "45.143"),
    ("366ms", 0.0, "369.660", "369.661"), ("366ms", 0.0, "362.340", "362.339"),
    # a frame's time on the wire above τ (72 µs: MTU 9000 at 1 Gbit/s, rounded to ss's µs)
    ("10ms", 72e-6, "10.172", "10.173"),
    # ts_tick_s: whole 1 ms ticks down to one tick below τ's tolerance, not a µs further, not a tick off
    ("9.1ms", 0.0, "8.000", "7.000"), ("9.1ms", 0.0, "8.000", "8.001"), ("11.8ms", 0.0, "11.000", "10.000"),
])
def test_base_rtt_on_the_bound_is_inside_and_a_microsecond_past_it_is_off(rtt, frame_s, inside, outside):
    assert not verdicts.rtt_off(ss_reading(inside), tau(rtt), T, frame_s=frame_s)
    assert verdicts.rtt_off(ss_reading(outside), tau(rtt), T, frame_s=frame_s)


def snapshot(**kw) -> EngineStats:
    return EngineStats(**{**{f.name: 0 for f in dataclasses.fields(EngineStats)}, "period_late_hist": (), **kw})


def engines(fwd_late_sum_ns=0, rev_late_sum_ns=0, released=100_000, fwd_max_ns=0, fwd_excess_ns=0,
            wall_s=4.0) -> dict:
    """The readings [s] of one run's engines from their ns counters (period since the `before` snapshot)."""
    before = {"forward": snapshot(late_excess_ns=0, late_uncovered_ns=0),
              "reverse": snapshot(late_excess_ns=0, late_uncovered_ns=0)}
    after = {"forward": snapshot(released=released, late_sum_ns=fwd_late_sum_ns, period_late_max_ns=fwd_max_ns,
                                 late_excess_ns=fwd_excess_ns, late_uncovered_ns=fwd_excess_ns),
             "reverse": snapshot(released=released, late_sum_ns=rev_late_sum_ns, late_excess_ns=0,
                                 late_uncovered_ns=0)}
    r = monitors.engine_readings(before, after, wall_s)
    r["stall_effect_bound"] = verdicts.stall_effect_bound(r, wall_s, T)
    return r


@pytest.mark.parametrize("rtt, bound_ns", [
    ("0.4ms", 20_000),          # late_mean_s: 20 µs (G/2) below 2 ms
    ("11.2ms", 112_000),        # late_mean_rel: 1 % of τ
    ("45.6ms", 456_000),
])
def test_mean_lateness_on_the_bound_is_inside_and_a_nanosecond_per_packet_past_it_is_late(rtt, bound_ns):
    released = 100_000
    fwd = bound_ns * released * 3 // 4           # both directions together
    assert not verdicts.engine_late(engines(fwd, bound_ns * released - fwd, released), tau(rtt), T)
    assert verdicts.engine_late(engines(fwd, bound_ns * released - fwd + released, released), tau(rtt), T)


@pytest.mark.parametrize("rtt, bound_ns", [
    ("11.8ms", 500_000),        # stall_s: 0.5 ms
    ("91.6ms", 916_000),        # stall_rel: 1 % of τ
    ("183ms", 1_830_000),
    ("366ms", 2_000_000),       # stall_cap_s: 2 ms
])
def test_a_release_on_the_stall_bound_is_no_stall_and_a_nanosecond_later_is(rtt, bound_ns):
    assert verdicts.stall_threshold_s(tau(rtt), T) == pytest.approx(bound_ns / 1e9, rel=1e-12)
    assert verdicts.stall_flag(engines(fwd_max_ns=bound_ns), tau(rtt), T) is None
    assert verdicts.stall_flag(engines(fwd_max_ns=bound_ns + 1), tau(rtt), T) == "engine_stall_minor"


def test_stall_excess_on_the_resolution_is_minor_and_a_nanosecond_more_is_material():
    """stall_resolution_rel (0.2 %) of a 4 s run: 8 ms of uncovered excess."""
    assert verdicts.stall_flag(engines(fwd_max_ns=8_000_000, fwd_excess_ns=8_000_000), tau("45.6ms"), T) == \
        "engine_stall_minor"
    assert verdicts.stall_flag(engines(fwd_max_ns=8_000_000, fwd_excess_ns=8_000_001), tau("45.6ms"), T) == \
        "engine_stall"


def ss_limits(busy_ms: int, rwnd_ms: int, sndbuf_ms: int) -> connections.SenderLimits:
    """One data connection's chrono counters as ss prints them (whole ms), read to seconds by parse_ss."""
    out = (f"0 0 10.77.1.1:40002 10.77.1.2:5201\n\t cubic bytes_acked:2000000000 busy:{busy_ms}ms"
           f" rwnd_limited:{rwnd_ms}ms sndbuf_limited:{sndbuf_ms}ms minrtt:11.8\n")
    return connections.sender_limits(connections.parse_ss(out))


@pytest.mark.parametrize("busy_ms", [10_000, 580, 1140])    # 5 % of 0.58 s: 0.029 < 0.05 × 0.58 in binary64
def test_limited_for_exactly_the_share_of_busy_time_is_the_network_and_a_millisecond_more_is_not(busy_ms):
    on = busy_ms * 5 // 100                                  # limit_share: 5 % of busy time
    assert connections.limited_by(ss_limits(busy_ms, on, on), T) == "network"
    assert connections.limited_by(ss_limits(busy_ms, on + 1, on), T) == "receive_window"
    assert connections.limited_by(ss_limits(busy_ms, on, on + 1), T) == "send_buffer"
