"""Racing rule 'confirm' (campaign/rules/confirm.py): drops, confirmation, resting, the decision, the bound's
validity, and a race driven run by run reaching the decision of its replay."""

from __future__ import annotations

import numpy as np
import pytest

import race_drive
from tcpprofile.campaign.race_state import choose
from tcpprofile.campaign.rules import confirm

G = 1e9
RULE = dict(first=2, max_rounds=10, margin=0.01, confidence=0.95)
simple = lambda c: int(c[1:])   # noqa: E731  (n1 simpler than n4 simpler than n8)


def drive(truth: dict, **kw):
    """A live race: start with no runs, run what the rule asks for (its run index) until it stops."""
    return race_drive.drive(confirm, truth, **{**RULE, **kw}, simplicity=simple)


def noisy(rng, level, cv=0.005, n=10, slow=()):
    x = level * G * (1 + cv * rng.standard_normal(n))
    for i in slow:
        x[i] *= 0.8
    return list(x)


def test_a_clearly_worse_candidate_is_dropped_at_the_first_test():
    rng = np.random.default_rng(1)
    truth = {"n1": noisy(rng, 6.0), "n4": noisy(rng, 9.4), "n8": noisy(rng, 9.42)}
    st = confirm.replay({c: v[:2] for c, v in truth.items()}, **RULE, simplicity=simple)
    assert st.dropped == {"n1": (2, "n8")}          # 36 % below after two runs each: dropped
    assert st.stop is None and "n1" not in st.next


def test_a_clear_winner_wins_alone():
    rng = np.random.default_rng(2)
    truth = {"n1": noisy(rng, 8.0), "n4": noisy(rng, 8.3), "n8": noisy(rng, 9.4)}
    st, values = drive(truth)
    assert st.stop == "one left" and st.chosen == "n8" and choose(st, values, 0.01, simple) == "n8"
    assert sum(map(len, values.values())) == 6        # everyone twice, then nothing more


def test_a_tie_goes_to_the_simplest_after_all_its_runs_and_the_others_rest():
    # three candidates with the same runs: every one is confirmed at the same test, the simplest wins
    rng = np.random.default_rng(3)
    same = noisy(rng, 9.4)
    st, values = drive({"n1": same, "n4": list(same), "n8": list(same)})
    assert st.stop == "shown" and st.chosen == "n1" and sorted(st.ties) == ["n4", "n8"]
    assert len(values["n1"]) == 10                    # the decision rests on all its repetitions
    assert len(values["n4"]) < 10 and len(values["n8"]) < 10   # the others rested once settled


def welch_upper(x, y, confidence=0.95) -> float:
    """The one-sided Welch t upper bound of μ_x − μ_y (scipy's t quantile, the exact Satterthwaite df):
    an independent computation of the bound the rule claims, where no run is 3 % below the other's mean
    (the rule's censoring does not act; its df rounded down only widens its bound)."""
    from scipy import stats
    x, y = np.asarray(x), np.asarray(y)
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    return float(x.mean() - y.mean() + stats.t.ppf(confidence, df) * np.sqrt(vx + vy))


def test_a_near_tie_goes_to_a_candidate_shown_within_the_margin_of_the_others():
    """9.40 / 9.41 / 9.42 with 0.5 % noise: all three are truly within the 1 % margin of each other, so
    none may be dropped and the decision is shown against both others (its ties); each of them, on the
    runs the rule used, is not better than the decision by more than the margin (the decision is the
    simplest *shown*, not necessarily the simplest)."""
    rng = np.random.default_rng(3)
    levels = {"n1": 9.40, "n4": 9.41, "n8": 9.42}
    truth = {c: noisy(rng, lv) for c, lv in levels.items()}
    st, values = drive(truth)
    assert st.stop == "shown" and len(values[st.chosen]) == 10 and st.dropped == {}
    assert sorted(st.ties) == sorted(c for c in truth if c != st.chosen)        # both others, shown
    assert levels[st.chosen] >= max(levels.values()) * (1 - 0.01)                # true level within the margin
    m = 0.01 * np.mean(values[st.leader])
    for x in st.ties:
        assert welch_upper(values[x], values[st.chosen]) <= m


def test_the_simplest_is_not_chosen_when_it_is_worse_than_the_best_by_more_than_the_margin():
    rng = np.random.default_rng(4)
    truth = {"n1": noisy(rng, 9.40 * 0.97), "n4": noisy(rng, 9.40 * 0.995), "n8": noisy(rng, 9.40)}
    st, _ = drive(truth)
    assert "n1" in st.dropped and st.chosen == "n4"


@pytest.mark.parametrize("seed", range(40))
def test_noiseless_races_never_choose_worse_than_the_best_by_more_than_the_margin(seed):
    rng = np.random.default_rng(seed)
    levels = {f"n{k}": float(rng.uniform(8.0, 9.5)) for k in range(1, 9)}
    truth = {c: [lv * G] * 10 for c, lv in levels.items()}
    st, values = drive(truth)
    chosen = choose(st, values, 0.01, simple)
    assert levels[chosen] >= max(levels.values()) * (1 - 0.01) - 1e-12
    # and it is the simplest such (no noise: every test is exact)
    assert chosen == min((c for c, lv in levels.items() if lv >= max(levels.values()) * 0.99 - 1e-12), key=simple)


@pytest.mark.parametrize("seed", range(20))
def test_low_noise_races_stay_within_twice_the_margin(seed):
    rng = np.random.default_rng(100 + seed)
    levels = {f"n{k}": float(rng.uniform(9.0, 9.5)) for k in range(1, 9)}
    truth = {c: noisy(rng, lv, cv=0.002) for c, lv in levels.items()}
    st, values = drive(truth)
    assert levels[choose(st, values, 0.01, simple)] >= max(levels.values()) * (1 - 0.02)


def test_a_slow_run_of_the_other_is_censored_but_a_slow_run_of_the_decision_counts():
    rng = np.random.default_rng(5)
    steady = noisy(rng, 9.4)[:6]
    slow = noisy(rng, 9.4, slow=[1])[:6]              # one run of six 20 % down: a loss episode
    m, up = 0.01 * 9.4 * G, dict(w=0.03, confidence=0.95)
    # X = slow, Y = steady: X's slow run is censored, X is settled (not better than Y by > 1 %) ...
    assert confirm.upper(slow, steady, **up) <= m
    # ... which uncensored Welch cannot tell from six runs
    assert confirm.upper(slow, steady, w=1e9, confidence=0.95) > 3 * m
    # Y's slow run is evidence against Y: the steady candidate is not settled against it
    assert confirm.upper(steady, slow, **up) > 3 * m


TRIALS = 4000    # standard error of a coverage near 0.7–0.95: ≤ 0.73 points


def standard_error(p: float, trials: int = TRIALS) -> float:
    return float(np.sqrt(p * (1 - p) / trials))


def coverage(n: int, slow_side: str | None, trials: int = TRIALS) -> float:
    """Share of simulated pairs with U(X, Y) ≥ μ_X − μ_Y (one-sided, nominal 95 %): runs with a 1 %
    coefficient of variation, and 5 % slow runs (× 0.75–0.95) on one side; true means include them."""
    rng = np.random.default_rng(n)
    mu_x, mu_y, cv, slow_mean = 9.3, 9.4, 0.01, 1 - 0.05 * 0.15

    def draw(level, slow):
        x = level * (1 + cv * rng.standard_normal(n))
        if slow:
            s = rng.random(n) < 0.05
            x[s] *= rng.uniform(0.75, 0.95, s.sum())
        return list(x)
    truth = mu_x * (slow_mean if slow_side == "x" else 1) - mu_y * (slow_mean if slow_side == "y" else 1)
    return float(np.mean([confirm.upper(draw(mu_x, slow_side == "x"), draw(mu_y, slow_side == "y"),
                                        w=0.03, confidence=0.95) >= truth for _ in range(trials)]))


@pytest.mark.parametrize("n", [2, 3, 5, 10])
@pytest.mark.parametrize("slow_side", [None, "x"])
def test_the_upper_bound_covers_the_true_difference(n, slow_side):
    """At least the nominal 95 % (within 3 standard errors: ≥ 94.0 %) at 2, 3, 5 and 10 runs, normal runs or
    slow runs of X (censored: conservative). docs/tune.md says ≥ 93 %; measured 95.5–97.2 % (normal)
    and 98.9–100 % (slow X)."""
    assert coverage(n, slow_side) >= 0.95 - 3 * standard_error(0.95)


@pytest.mark.parametrize("n, documented", [(2, 0.93), (3, 0.87), (5, 0.79), (10, 0.71)])
def test_rare_slow_runs_of_the_reference_make_the_bound_optimistic_as_documented(n, documented):
    """The stated limit (docs/tune.md): a 5 % slow run of Y is often absent from a few runs, so the
    mean of Y is over-estimated and U(X, Y) covers less than nominal: 93, 87, 79, 71 % at 2, 3, 5, 10
    runs (the larger t quantile hides it at 2 runs). Each within the documented value's rounding (½
    point) and 3 standard errors of the simulation (1.7–2.7 points), and from 3 runs on below the
    nominal 95 % by more than 3 standard errors."""
    c = coverage(n, "y")
    assert abs(c - documented) <= 0.005 + 3 * standard_error(documented)
    assert n < 3 or c < 0.95 - 3 * standard_error(0.95)


@pytest.mark.parametrize("seed", range(20))
def test_runs_are_never_asked_beyond_the_most_rounds_and_failed_runs_are_skipped(seed):
    """Noisy runs (3 %): n4 and n8 are the true best (equal), the simplest, n1, is 5.3 % below them. The
    race never asks an eleventh run nor a failed one again (drive checks every request is the next
    run), and its decision is one of the true best, never n1, whichever way the noise made it stop."""
    rng = np.random.default_rng(6 + seed)
    levels = {"n1": 8.9, "n4": 9.4, "n8": 9.4}
    truth = {c: noisy(rng, lv, cv=0.03) for c, lv in levels.items()}
    truth["n4"][0] = None                                                   # a failed run
    st, values = drive(truth)
    assert all(len(v) <= 10 for v in values.values()) and values["n4"][0] is None
    assert choose(st, values, 0.01, simple) in ("n4", "n8")
    if st.stop == "shown":
        assert len(values[st.chosen]) == 10 and sorted(st.ties) == sorted(set(st.alive) - {st.chosen})
    else:
        assert (st.stop, len(st.alive)) in (("rounds", 2), ("rounds", 3), ("one left", 1)), st


def test_the_budget_stops_the_race_before_a_round_it_cannot_afford():
    rng = np.random.default_rng(7)
    truth = {c: noisy(rng, 9.4, cv=0.03) for c in ("n1", "n4", "n8")}
    st, values = drive(truth, affordable=lambda r, measure: r < 3)
    assert st.stop == "budget" and st.rounds == 3 and st.need is None


def test_replaying_a_finished_race_gives_its_decision_again():
    rng = np.random.default_rng(8)
    truth = {f"n{k}": noisy(rng, 9.0 + 0.05 * k, slow=[3] if k == 4 else ()) for k in range(1, 9)}
    st, values = drive(truth)
    again = confirm.replay(values, **RULE, simplicity=simple)
    assert (again.stop, again.chosen, again.dropped, again.counts) == (st.stop, st.chosen, st.dropped, st.counts)
