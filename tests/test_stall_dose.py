"""benchmarks/stall_dose.py's analysis, on hand-worked records (the measuring needs root: the lead runs it):
ΔΘ with its Welch interval, none from fewer than 3 runs, kept within physical bounds; the amplification
fitted through the origin; the cwnd trace's slow-start exit and largest srtt."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "benchmark_stall_dose", Path(__file__).resolve().parents[1] / "benchmarks" / "stall_dose.py")
D = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = D                 # its dataclass looks its module up while the module runs
SPEC.loader.exec_module(D)


def test_the_relative_change_has_welchs_interval():
    d, lo, hi = D.welch_rel([0.90, 0.91, 0.89], [1.00, 1.01, 0.99])
    # Δ = −0.1 of 1.0; se = √(10⁻⁴/3 + 10⁻⁴/3) = 0.008165, df = 4, t₀.₉₇₅,₄ = 2.7764: ±0.02267
    assert d == pytest.approx(-0.1)
    assert (lo, hi) == (pytest.approx(-0.1 - 0.022669, abs=1e-5), pytest.approx(-0.1 + 0.022669, abs=1e-5))


def test_no_interval_from_fewer_than_three_runs_and_none_beyond_what_theta_can_be():
    assert D.welch_rel([0.9, 0.91], [1.0, 1.01, 0.99]) is None
    assert D.welch_rel([0.9, 0.91, 0.92], [1.0, 1.01]) is None
    # an interval reaching past the ceiling (Θ ≤ 1.02) or below Θ = 0 is cut there
    assert D.clipped((0.01, -0.02, 0.04), 1.0, 1.02) == (0.01, -0.02, pytest.approx(0.02))
    assert D.clipped((-0.9, -1.3, -0.5), 1.0, None) == (-0.9, -1.0, -0.5)


def rec(hold, theta, bound=None, **kw):
    return D.Record(1e9, "size", hold, theta, bound=bound, ceiling_bps=0.99e9 * 1.05, **kw)


def test_the_amplification_is_the_drop_per_unit_of_bound_through_the_origin():
    runs = [rec(0, 0.99e9), rec(0, 1.00e9), rec(0, 1.01e9),
            rec(10, 0.98e9, bound=0.01), rec(100, 0.96e9, bound=0.02)]
    assert D.amplification(runs) == pytest.approx(2.0)     # drops 0.02 and 0.04 at bounds 0.01 and 0.02
    assert D.amplification(runs[1:]) is None                # a baseline of 2 runs
    assert D.amplification(runs[:3]) is None                # nothing injected


def test_each_cell_against_the_same_rate_and_mode_without_injection():
    runs = [rec(0, 1.000e9), rec(0, 1.002e9), rec(0, 0.998e9),
            rec(1, 1.001e9, bound=0.0005), rec(1, 0.999e9, bound=0.0005), rec(1, 1.000e9, bound=0.0005),
            rec(100, 0.95e9, bound=0.05), rec(100, 0.951e9, bound=0.05), rec(100, 0.949e9, bound=0.05)]
    rows = {r["hold_ms"]: r for r in D.summarise(runs)}
    assert rows[0]["resolution"] == pytest.approx(0.002) and rows[0]["delta"] is None
    assert rows[1]["within_resolution"] and rows[1]["low"] < 0 < rows[1]["high"]
    assert rows[100]["delta"] == pytest.approx(-0.05) and not rows[100]["within_resolution"]
    assert rows[0]["amplification"] == pytest.approx((0.0005 * 0 + 0.05 * 0.05 * 3) / (3 * 0.0005 ** 2 + 3 * 0.05 ** 2))


def test_the_cwnd_trace_gives_slow_start_exit_and_the_largest_srtt():
    rows = [{"stream": 0, "t_s": 0.01 * i, "snd_cwnd": 10 + i, "ssthresh": 2**31 - 1 if i < 50 else 40,
             "srtt_us": 20_000 + (5_000 if i == 70 else 0)} for i in range(200)]
    m = D.cwnd_measures(rows + [{"stream": 1, "t_s": 0.0, "snd_cwnd": 1, "ssthresh": 1, "srtt_us": 99_000}])
    assert (m["ss_exit_s"], m["ss_exit_cwnd"], m["srtt_max_ms"]) == (pytest.approx(0.5), 60, 25.0)
    assert D.cwnd_measures([]) == {}
