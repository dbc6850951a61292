"""Adaptive repetitions: the stop rule, validation, the runner with a fake executor (fewer runs than
the fixed design, stop reasons stored, resumable to the same decisions)."""

from __future__ import annotations

import io

import pytest

from fake_executor import FakeExecutor
from test_campaign_unit import SPEC
from tcpprofile import campaign, spec
from tcpprofile.campaign.policies.adaptive import stop_reason
from tcpprofile.errors import ValidationError
from tcpprofile.store.db import Store

G = 1e9
ADAPTIVE = SPEC.replace("repetitions = 2", 'precision = "2%"\nmin_repetitions = 3\nmax_repetitions = 10')


def truth(p):
    """cubic: quiet (0.5 % sd) -> stops at the minimum; bbr n=4: noisy (8 %) -> runs to the maximum;
    bbr n=1: in between."""
    return {("cubic", 1): (9 * G, 0.05 * G), ("cubic", 4): (9.4 * G, 0.04 * G),
            ("bbr", 1): (8 * G, 0.25 * G), ("bbr", 4): (9 * G, 0.7 * G)}[(p.variant, p.streams)]


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "a.duckdb")
    yield s
    s.close()


def run(s, store, **kw):
    ex = FakeExecutor(s.campaign_id, truth)
    summary = campaign.run_campaign(s, store, out=io.StringIO(), executor=ex, **kw)
    return summary, ex


def test_stop_rule_is_the_t_interval_half_width():
    # [100, 101, 99]: s = 1, half-width t(0.975, 2)·1/√3 = 2.484 → 2.48 % of the mean
    v = [100.0, 101.0, 99.0]
    kw = dict(min_reps=3, max_reps=10, confidence=0.95)
    assert stop_reason(v, 3, precision=0.025, **kw) == "precision"
    assert stop_reason(v, 3, precision=0.024, **kw) is None
    assert stop_reason(v[:2], 2, precision=0.5, **kw) is None            # below the minimum
    assert stop_reason(v * 3 + [130.0], 10, precision=0.001, **kw) == "maximum"
    assert stop_reason([100.0], 10, precision=0.5, **kw) == "maximum"    # failures: one value, max reached


@pytest.mark.parametrize("text, field", [
    (ADAPTIVE.replace("min_repetitions = 3", "min_repetitions = 1"), "campaign.min_repetitions"),
    (ADAPTIVE.replace("max_repetitions = 10", "max_repetitions = 2"), "campaign.max_repetitions"),
    (ADAPTIVE.replace('"2%"', '"two"'), "campaign.precision"),
    (ADAPTIVE.replace('"2%"', '"0%"'), "campaign.precision"),
    (ADAPTIVE.replace("min_repetitions = 3", "repetitions = 3"), "campaign.repetitions"),
    (ADAPTIVE.replace("min_repetitions = 3", "confidence = 1.5"), "campaign.confidence"),
    (SPEC.replace("repetitions = 2", "max_repetitions = 4"), "campaign.max_repetitions"),
])
def test_adaptive_fields_are_validated_at_the_boundary(text, field):
    with pytest.raises(ValidationError) as err:
        spec.parse(text)
    assert err.value.field == field


def test_fixed_campaign_ids_are_unchanged_by_the_adaptive_fields():
    assert spec.parse(SPEC).campaign_id == "e4e143c6020334c5"     # pinned: adaptive fields left unset add nothing


def test_adaptive_campaign_stops_each_configuration_for_its_reason(store):
    s = spec.parse(ADAPTIVE)
    summary, ex = run(s, store)
    stops = {(r["variant"], r["streams"]): r for r in store.query("SELECT * FROM stops")}
    assert stops[("cubic", 1)]["reason"] == stops[("cubic", 4)]["reason"] == "precision"
    assert stops[("cubic", 1)]["repetitions"] == 3
    assert stops[("bbr", 4)]["reason"] == "maximum" and stops[("bbr", 4)]["repetitions"] == 10
    # every stop agrees with the rule applied to the stored values, repetition by repetition
    for (v, n), row in stops.items():
        values = [r["throughput_bps"] for r in store.query(
            "SELECT throughput_bps FROM runs WHERE variant = ? AND streams = ? ORDER BY repetition", [v, n])]
        k = len(values)
        rule = dict(min_reps=3, max_reps=10, precision=0.02, confidence=0.95)
        assert stop_reason(values, k, **rule) == row["reason"]
        assert all(stop_reason(values[:j], j, **rule) is None for j in range(3, k))
        lo, hi = row["ci_low_bps"], row["ci_high_bps"]
        assert lo < row["mean_bps"] < hi and (row["reason"] != "precision" or (hi - lo) / 2 <= 0.02 * row["mean_bps"])
    assert summary.total == len(ex.ran) < 40 and summary.ok == len(ex.ran)
    text = campaign.format_summary(summary, "db")
    spent = 10.0 * len(ex.ran)
    assert f"transfer time: {spent:.0f} s spent; the fixed 10-repetition design would spend about 400 s" in text


def test_an_interrupted_adaptive_campaign_resumes_to_the_same_decisions(store, tmp_path):
    s = spec.parse(ADAPTIVE)
    straight, ex = run(s, store)
    reference = store.query("SELECT run_id, seq, throughput_bps FROM runs ORDER BY seq")
    stops = store.query("SELECT * FROM stops ORDER BY config_key")
    with Store.open(tmp_path / "sliced.duckdb") as sliced:
        invocations = 0
        while True:
            summary, _ = run(s, sliced, max_runs=5)
            invocations += 1
            if summary.remaining == 0:
                break
        assert invocations > 3
        assert sliced.query("SELECT run_id, seq, throughput_bps FROM runs ORDER BY seq") == reference
        assert sliced.query("SELECT * FROM stops ORDER BY config_key") == stops


def test_rounds_follow_the_seeded_schedule(store):
    s = spec.parse(ADAPTIVE)
    _, ex = run(s, store)
    order = [p.run_id(s.campaign_id) for p in s.schedule(3)]
    first_round = ex.ran[:12]                                      # 4 configurations × minimum 3
    assert {p.repetition for p in first_round} == {0, 1, 2}
    positions = [order.index(p.run_id(s.campaign_id)) for p in first_round]
    assert positions == sorted(positions)                          # the schedule's (shuffled) order
