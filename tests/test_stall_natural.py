"""benchmarks/stall_natural.py's within-configuration slope on hand-made groups: an exact −1 relation under
different configuration means is found as −1 with a zero-width interval; a load unrelated to Θ gives an
interval that holds 0; a configuration of one run adds nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "benchmark_stall_natural", Path(__file__).resolve().parents[1] / "benchmarks" / "stall_natural.py")
N = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = N
SPEC.loader.exec_module(N)


def group(theta_mean, loads, slope):
    """Runs whose Θ is theta_mean·(1 + slope·(load − mean load)): relative Θ exactly linear in the load."""
    m = sum(loads) / len(loads)
    return [{"throughput_bps": theta_mean * (1 + slope * (x - m)), "load": x} for x in loads]


def test_an_exact_relation_is_found_whatever_the_configurations_means():
    groups = {"a": group(9.9e9, [0.001, 0.003, 0.002], -1.0), "b": group(2.0e9, [0.010, 0.0, 0.005, 0.02], -1.0),
              "lone": group(5e9, [0.5], -1.0)}
    s = N.within_slope(groups, "load", 0.95)
    assert (s["n"], s["groups"]) == (7, 2)
    assert s["slope"] == pytest.approx(-1.0)
    assert s["interval"][0] == pytest.approx(-1.0, abs=1e-9) and s["interval"][1] == pytest.approx(-1.0, abs=1e-9)


def test_a_load_that_costs_nothing_holds_zero():
    theta = [1.01, 0.99, 1.02, 0.98, 1.00, 1.00]
    loads = [0.01, 0.01, 0.03, 0.03, 0.02, 0.02]        # orthogonal to Θ's ups and downs
    s = N.within_slope({"a": [{"throughput_bps": t, "load": x} for t, x in zip(theta, loads)]}, "load", 0.95)
    lo, hi = s["interval"]
    assert lo < 0 < hi and s["slope"] == pytest.approx(0.0, abs=1e-12)


def test_too_few_runs_give_no_slope():
    assert N.within_slope({"a": group(1e9, [0.1], -1.0)}, "load", 0.95) is None
    s = N.within_slope({"a": group(1e9, [0.1, 0.2], -1.0)}, "load", 0.95)   # df = 2 − 1 − 1 = 0
    assert s["slope"] is None


def test_a_csv_summary_reads_as_its_configurations(tmp_path):
    """The committed CSV of runs (campaign, rtt_ms, streams, …) groups by (campaign, τ, streams), as a store's
    configurations: the exact relation is found across two campaigns at one τ."""
    path = tmp_path / "runs.csv"
    head = ("campaign,rtt_ms,streams,throughput_bps,duration_s,engine_fwd_stall_excess_ms,"
            "engine_rev_stall_excess_ms,engine_fwd_stall_uncovered_ms,engine_rev_stall_uncovered_ms")
    lines = [head]
    for campaign, mean in (("a", 9e8), ("b", 5e8)):
        for unc_ms in (0.0, 50.0, 100.0):                 # over 10 s: loads 0, 0.5, 1 %
            load = unc_ms / 1e3 / 10.0
            lines.append(f"{campaign},20,1,{mean * (1 - (load - 0.005))},10,{unc_ms + 7},0,{unc_ms},0")
    path.write_text("\n".join(lines) + "\n")
    rows = N.rows(path)
    assert len(rows) == 6
    groups = {}
    for r in rows:
        r["uncovered_load"] = (r["fu"] + r["ru"]) / 1e3 / r["duration_s"]
        groups.setdefault((r["campaign"], r["rtt_ms"], r["streams"]), []).append(r)
    s = N.within_slope(groups, "uncovered_load", 0.95)
    assert (s["n"], s["groups"]) == (6, 2) and s["slope"] == pytest.approx(-1.0)
