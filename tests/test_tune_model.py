"""Racing rule 'model' (campaign/rules/model.py) and its priors (campaign/priors.py): a correct model saves
runs and keeps the winner, a wrong model cannot change the decision, a candidate without a model is only
dropped by its runs, and a race driven run by run reaches its replay's decision; `tune --rule model`."""

from __future__ import annotations

import io

import numpy as np
import pytest

import race_drive
from fake_executor import FakeExecutor
from tcpprofile.choose import tune
from tcpprofile.campaign.priors import AUTOTUNING_CEILING, prediction_error, predict_bps, priors_for_points
from tcpprofile.campaign.race_state import choose
from tcpprofile.campaign.rules import DEFAULT_RULE as RULES_DEFAULT, RULES, confirm, model
from tcpprofile.campaign.priors import Prior
from tcpprofile.store import Store

G = 1e9
RULE = dict(first=2, max_rounds=10, margin=0.01, confidence=0.95)
simple = lambda c: int(c[1:])   # noqa: E731  (n1 simpler than n2 … )
# six candidates: the best (n5) clearly ahead, the rest 4–25 % below
LEVELS = {"n1": 7.0, "n2": 7.6, "n3": 8.2, "n4": 8.6, "n5": 9.4, "n6": 9.0}


def noisy(rng, level, cv=0.005, n=10):
    return list(level * G * (1 + cv * rng.standard_normal(n)))


def drive(rule, truth: dict, **kw):
    return race_drive.drive(rule, truth, **{**RULE, **kw}, simplicity=simple)


def runs(values) -> int:
    return sum(map(len, values.values()))


def right(error=0.02):
    return {c: Prior(v * G, error) for c, v in LEVELS.items()}


def test_the_rule_is_registered_for_tune():
    assert RULES["model"] is model and model.NAME == "model"


def test_a_correct_model_saves_runs_and_keeps_the_winner():
    rng = np.random.default_rng(1)
    truth = {c: noisy(rng, v) for c, v in LEVELS.items()}
    st_c, v_c = drive(confirm, truth)
    st_m, v_m = drive(model, truth, priors=right())
    assert st_c.chosen == st_m.chosen == "n5"
    # the losers far below (n1–n4: their prior's upper end P·(1 + 2·2 %) ≤ 8.95 below 0.99 × n5's runs ≈ 9.3) cost
    # one run each; n6 (9.0 · 1.04 = 9.36) is not far enough below and races on its runs
    assert st_m.prior_dropped == {"n1", "n2", "n3", "n4"}
    assert all(len(v_m[c]) == 1 for c in ("n1", "n2", "n3", "n4")) and len(v_m["n6"]) >= 2
    assert runs(v_m) < runs(v_c)
    first = model.replay({c: [] for c in truth}, **RULE, simplicity=simple, priors=right())
    assert first.next == {"n5": 0}                                  # the predicted best is measured first


def test_a_wrong_model_still_picks_the_measured_winner():
    """The model's ranking reversed: the winner predicted lowest (far below everyone), the worst highest."""
    rng = np.random.default_rng(2)
    truth = {c: noisy(rng, v) for c, v in LEVELS.items()}
    ranked = sorted(LEVELS, key=LEVELS.get)
    wrong = {c: Prior(LEVELS[w] * G, 0.02) for c, w in zip(ranked, reversed(ranked))}
    assert min(wrong, key=lambda c: wrong[c].bps) == "n5"
    st, values = drive(model, truth, priors=wrong)
    assert st.chosen == "n5" and choose(st, values, 0.01, simple) == "n5"
    assert "n5" not in st.dropped and len(values["n5"]) >= 2
    # a prior dropped only a candidate whose run lay under its (wrong, but near) upper end and below n5's runs:
    # n3, over-rated (8.6 for 8.2, upper end 8.94), truly worse than the winner by more than the margin; n4, under-
    # rated (8.2 for 8.6), put its run above its upper end 8.53 and raced on its runs
    assert st.prior_dropped == {"n3"} and all(LEVELS[c] < 0.99 * LEVELS["n5"] for c in st.prior_dropped)
    assert len(values["n4"]) >= 2
    assert st.chosen == drive(confirm, truth)[0].chosen


def test_a_prior_its_run_contradicts_drops_nothing():
    """n4 is predicted 30 % low (its band far below the leader) but its run is only 3 % below n5: the
    model is wrong for it, so only runs may drop it (and do, after ≥ 2 runs)."""
    rng = np.random.default_rng(3)
    truth = {"n4": noisy(rng, 9.1), "n5": noisy(rng, 9.4), "n1": noisy(rng, 6.0)}
    priors = {"n4": Prior(9.1 * 0.7 * G, 0.02), "n5": Prior(9.4 * G, 0.02), "n1": Prior(6.0 * G, 0.02)}
    st, values = drive(model, truth, priors=priors)
    assert st.chosen == "n5"
    assert "n4" not in st.prior_dropped and len(values["n4"]) >= 2
    assert st.prior_dropped == {"n1"} and len(values["n1"]) == 1


def test_a_run_below_the_band_keeps_the_prior():
    """n1 is over-rated by 20 % (8.4 predicted for 7.0): its run lies far below the band, yet the prior's upper end
    (8.74) is below n5's runs too, so one run drops it; under-rated n4 (8.0 for 8.6) puts its run above its upper end
    8.32 and races on its runs."""
    rng = np.random.default_rng(8)
    truth = {c: noisy(rng, LEVELS[c]) for c in ("n1", "n4", "n5")}
    priors = {"n1": Prior(8.4 * G, 0.02), "n4": Prior(8.0 * G, 0.02), "n5": Prior(9.4 * G, 0.02)}
    assert not model.credible(priors["n4"], [8.6 * G], model.DEFAULT_BAND)
    assert model.credible(priors["n1"], [7.0 * G], model.DEFAULT_BAND)
    st, values = drive(model, truth, priors=priors)
    assert st.chosen == "n5" and st.prior_dropped == {"n1"} and len(values["n1"]) == 1
    assert "n4" not in st.prior_dropped and len(values["n4"]) >= 2


# variant "a" over-rated by 8 % on this link (n1–n4, 7.5–14 % below the leader), "b" (n5, the best) rated right
OVER = {"n1": 7.8, "n2": 8.1, "n3": 8.4, "n4": 8.7, "n5": 9.4}


def test_the_models_level_on_the_link_is_measured_from_the_variants_others():
    rng = np.random.default_rng(9)
    truth = {c: noisy(rng, v) for c, v in OVER.items()}
    grouped = {c: Prior(v * (1.08 if c != "n5" else 1) * G, 0.02, "a" if c != "n5" else "b") for c, v in OVER.items()}
    st, values = drive(model, truth, priors=grouped)
    # scaled by the median of the three others' run ÷ P (≈ 1/1.08): upper ends 8.11–9.05, below 0.99 × n5's runs
    assert st.chosen == "n5" and st.prior_dropped == {"n1", "n2", "n3", "n4"}
    assert all(len(values[c]) == 1 for c in ("n1", "n2", "n3", "n4"))
    ungrouped = {c: Prior(p.bps, p.error) for c, p in grouped.items()}
    st, values = drive(model, truth, priors=ungrouped)
    # unscaled upper ends P·1.04: n3 9.43 and n4 9.77 reach n5's runs, so they race on theirs
    assert st.chosen == "n5" and {"n3", "n4"}.isdisjoint(st.prior_dropped) and len(values["n4"]) >= 2
    # the level: the median over the others of the variant with runs, none from fewer than LEVEL_MIN
    runs = {"n1": [7.8 * G], "n2": [8.1 * G, 8.1 * G], "n3": [], "n4": [8.7 * G], "n5": [9.4 * G]}
    assert model.level("n3", grouped, runs) == pytest.approx(1 / 1.08)
    assert model.level("n1", grouped, runs) == 1.0 and model.level("n5", grouped, runs) == 1.0
    assert model.level("n4", ungrouped, runs) == 1.0 and model.LEVEL_MIN == 3


def test_the_level_cannot_drop_a_candidate_the_model_under_rates_against_its_variant():
    """The model over-rates n1–n3 by 30 % and rates n4 (2 % below the best) right: n4's prior, scaled by its
    variant's level (1/1.3), ends at 7.4, far below n4's run, so n4 loses its prior and races on its runs."""
    rng = np.random.default_rng(10)
    levels = {"n1": 7.0, "n2": 7.5, "n3": 8.0, "n4": 9.2, "n5": 9.4}
    truth = {c: noisy(rng, v) for c, v in levels.items()}
    priors = {c: Prior(v * (1.3 if c in ("n1", "n2", "n3") else 1) * G, 0.02, "a" if c != "n5" else "b")
              for c, v in levels.items()}
    st, values = drive(model, truth, priors=priors)
    assert st.chosen == "n5" and "n4" not in st.prior_dropped and len(values["n4"]) >= 2


def test_a_candidate_without_a_model_is_dropped_only_by_its_runs():
    rng = np.random.default_rng(4)
    truth = {c: noisy(rng, v) for c, v in LEVELS.items()}
    priors = {**right(), "n1": None}      # n1 (the worst, 25 % below) has no model: BBR, a BPF variant
    st, values = drive(model, truth, priors=priors)
    assert st.chosen == "n5"
    assert "n1" in st.dropped and "n1" not in st.prior_dropped
    assert len(values["n1"]) >= RULE["first"]          # confirm's t bound needs two of its runs
    assert confirm.upper(values["n1"], values["n5"], w=3 * 0.01, confidence=0.95) < -0.01 * np.mean(values["n5"])


def test_an_unmodelled_winner_wins_on_its_runs():
    rng = np.random.default_rng(5)
    truth = {c: noisy(rng, v) for c, v in LEVELS.items()}
    priors = {**right(), "n5": None}
    st, values = drive(model, truth, priors=priors)
    assert st.chosen == "n5" and len(values["n5"]) >= 2


def test_without_priors_it_races_on_runs_alone_and_decides_as_confirm():
    rng = np.random.default_rng(6)
    for _ in range(5):
        truth = {c: noisy(rng, v + rng.uniform(-0.4, 0.4), cv=0.01) for c, v in LEVELS.items()}
        st, values = drive(model, truth, priors={})
        assert not st.prior_dropped and st.chosen == drive(confirm, truth)[0].chosen


@pytest.mark.parametrize("seed", range(4))
def test_a_replay_of_the_runs_a_race_asked_for_gives_its_decision_again(seed):
    rng = np.random.default_rng(10 + seed)
    truth = {c: noisy(rng, v, cv=0.02) for c, v in LEVELS.items()}
    st, values = drive(model, truth, priors=right())
    again = model.replay(values, **RULE, simplicity=simple, priors=right())
    assert (again.chosen, again.stop, again.dropped, again.counts) == (st.chosen, st.stop, st.dropped, st.counts)
    assert all(len(values[c]) <= RULE["max_rounds"] for c in values)


def test_the_budget_stops_the_race_before_runs_it_cannot_afford():
    rng = np.random.default_rng(7)
    truth = {c: noisy(rng, v) for c, v in LEVELS.items()}
    st, values = drive(model, truth, priors=right(), affordable=lambda r, alive: r < 2)
    assert st.stop == "budget" and runs(values) == 2 + 5      # the lead and the probes, nothing after


# -- the priors --------------------------------------------------------------------------------------------
def test_prediction_error_is_the_validated_cell_or_the_variants_largest():
    assert prediction_error("cubic", 1) == pytest.approx(0.0385)
    assert prediction_error("htcp", 8) == pytest.approx(0.0331)        # n = 8 not validated: htcp's largest E
    assert prediction_error("bbr", 1) is None and prediction_error("reno", 1) is None


def test_a_prediction_from_configuration_matches_a_validation_cell():
    """CUBIC n = 4, 45.6 ms, β = 1 × BDP (57 MB), 10 GB at 10 Gbit/s, MTU 9000: the three validation stores'
    six runs average 9.44 Gbit/s (benchmarks/data/models-validation*-runs.csv); E for the cell is 1.12 %. Those
    runs are rated by iperf3's end (F written, not delivered): the prediction with the unsent backlog."""
    p = predict_bps("cubic", 4, rtt_s=0.0456, rate_bps=10e9, buffer_bytes=57e6, mtu=9000, size_bytes=10e9,
                    delivered=False)
    assert p == pytest.approx(9.44e9, rel=0.02)
    ceiling = 10e9 * (9000 - 52) / (9000 + 38)                           # payload ceiling (framing.py)
    assert p <= ceiling


def test_a_delivered_transfer_is_predicted_without_the_unsent_backlog():
    """A race's fixed-size runs are timed by their delivery (the executor asks for F plus what the buffers hold),
    so its priors leave nothing unsent. Measured (the 5 Gbit/s new-condition twin, 2026-11-29): CUBIC n = 1,
    130 ms, β = 0.7 × BDP, 0.5 GB delivered at 1.72 Gbit/s (2 runs); with the backlog of iperf3-rated runs,
    2.92 (Cτ + β) = 403 MB of the 500, the prediction was 0.52 Gbit/s, and at β = 2 × BDP F − U < 0."""
    kw = dict(rtt_s=0.13, rate_bps=5e9, mtu=9000, size_bytes=5e8)
    delivered = predict_bps("cubic", 1, buffer_bytes=0.7 * 5e9 * 0.13 / 8, **kw)
    assert delivered == pytest.approx(1.72e9, rel=0.05)
    assert predict_bps("cubic", 1, buffer_bytes=0.7 * 5e9 * 0.13 / 8, delivered=False, **kw) < 0.35 * delivered
    assert predict_bps("cubic", 1, buffer_bytes=2 * 5e9 * 0.13 / 8, delivered=False, **kw) < 0.01e9
    assert predict_bps("cubic", 1, buffer_bytes=2 * 5e9 * 0.13 / 8, **kw) > 1e9


def test_priors_for_a_race_name_the_unmodelled_and_the_remote():
    s = tune.spec_for(rtt="87ms", host=None, variants=["cubic", "bbr"], streams=[1, 4], buffers=["default"],
                      max_rounds=3, seed=1)
    points = {p.variant + str(p.streams): p for p in s.schedule(1)}
    pri = priors_for_points(points)
    assert pri["bbr1"] is None and pri["bbr4"] is None
    assert pri["cubic4"].error == pytest.approx(0.0112) and 0 < pri["cubic1"].bps < pri["cubic4"].bps
    remote = tune.spec_for(rtt=None, host="dtn.example.org", variants=["cubic"], streams=[4], buffers=["default"],
                           max_rounds=3, seed=1)
    assert list(priors_for_points({"c": remote.schedule(1)[0]}).values()) == [None]
    assert AUTOTUNING_CEILING == 2147483647


# -- tune --rule model -----------------------------------------------------------------------------------
MEANS = {("cubic", 1): 6.0, ("cubic", 4): 9.40, ("cubic", 8): 9.42, ("bbr", 1): 7.0, ("bbr", 4): 8.0, ("bbr", 8): 8.5}


def test_tune_with_the_model_rule_decides_as_confirm_and_never_drops_bbr_on_a_prior(tmp_path):
    s = tune.spec_for(rtt="87ms", host=None, variants=["cubic", "bbr"], streams=[1, 4, 8], buffers=["default"],
                      max_rounds=10, seed=5)
    truth = lambda p: (MEANS[(p.variant, p.streams)] * G, 0.02 * G)   # noqa: E731
    out = {}
    for rule in ("confirm", "model"):
        with Store.open(tmp_path / f"{rule}.duckdb") as store:
            ex = FakeExecutor(s.campaign_id, truth)
            out[rule] = (tune.tune(s, store, out=io.StringIO(), executor=ex, rule=rule), ex)
    res, ex = out["model"]
    assert res.rule == "model"
    assert (res.chosen["variant"], res.chosen["streams"]) == (out["confirm"][0].chosen["variant"],
                                                             out["confirm"][0].chosen["streams"]) == ("cubic", 4)
    for r in res.evidence:
        if r["variant"] == "bbr":
            assert "model" not in r["detail"] and r["repetitions"] >= 2
    text = tune.format_result(res, margin=0.01, confidence=0.95)
    assert res.modelled == 3 and "model priors for 3 of 6 candidates; the others (no validated model" in text
    assert out["confirm"][0].modelled is None


def test_tune_with_a_correct_model_drops_far_candidates_after_one_run_and_says_so(tmp_path):
    """183 ms, β = 0.1 × BDP, 10 GB: the runs as the model predicts them (sd 0.5 %); STCP n = 10 (8.15 Gbit/s
    predicted) leads, H-TCP (5.5–6.7) and CUBIC n = 1 (6.6) are far below it."""
    s = tune.spec_for(rtt="183ms", host=None, link_buffer="0.1xBDP", variants=["cubic", "htcp", "scalable"],
                      streams=[1, 4, 10], buffers=["default"], max_rounds=10, seed=5, duration=None, size="10GB")
    points = {(p.variant, p.streams): p for p in s.schedule(5) if p.repetition == 0}
    predicted = {k: v.bps for k, v in priors_for_points(points).items()}
    truth = lambda p: (predicted[(p.variant, p.streams)], 0.005 * predicted[(p.variant, p.streams)])  # noqa: E731
    res = {}
    for rule in ("confirm", "model"):
        with Store.open(tmp_path / f"{rule}.duckdb") as store:
            res[rule] = tune.tune(s, store, out=io.StringIO(), executor=FakeExecutor(s.campaign_id, truth), rule=rule)
    m, c = res["model"], res["confirm"]
    assert (m.chosen["variant"], m.chosen["streams"]) == (c.chosen["variant"], c.chosen["streams"]) == ("scalable", 10)
    far = {(r["variant"], r["streams"]): r for r in m.evidence if "model's prediction" in r["detail"]}
    assert {("htcp", 1), ("htcp", 4), ("htcp", 10), ("cubic", 1)} <= set(far)
    assert all(r["reason"] == "dropped" and r["repetitions"] == 1 for r in far.values())
    assert m.runs < c.runs


def test_tune_races_with_the_model_rule_unless_told_otherwise(tmp_path):
    """Since the rule met issue 31's 5× on a store it never saw (docs/tune.md), `tune` without --rule uses it: the
    far candidates of the 183 ms race above are dropped on their run and the model's prediction."""
    s = tune.spec_for(rtt="183ms", host=None, link_buffer="0.1xBDP", variants=["cubic", "htcp"], streams=[1, 10],
                      buffers=["default"], max_rounds=10, seed=6, duration=None, size="10GB")
    points = {(p.variant, p.streams): p for p in s.schedule(6) if p.repetition == 0}
    predicted = {k: v.bps for k, v in priors_for_points(points).items()}
    truth = lambda p: (predicted[(p.variant, p.streams)], 0.005 * predicted[(p.variant, p.streams)])  # noqa: E731
    with Store.open(tmp_path / "default.duckdb") as store:
        res = tune.tune(s, store, out=io.StringIO(), executor=FakeExecutor(s.campaign_id, truth))
    assert res.rule == "model" == RULES_DEFAULT
    assert any("model's prediction" in r["detail"] for r in res.evidence)
