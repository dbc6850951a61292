"""Best vs runner-up in `select`: separated, a tie shown within ±margin, or not separated with the
repetitions that would decide (docs/select.md, step 7). The numbers are checked against scipy's t."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from synthetic_store import add_link, add_run
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.store import Store

G = 1e9
RTT = 10.0


def _values(mean: float, sd: float, k: int) -> list[float]:
    """k values whose sample mean and sample sd (ddof 1) are exactly `mean` and `sd`."""
    z = np.arange(k, dtype=float)
    z = (z - z.mean()) / z.std(ddof=1)
    return list(mean + sd * z)


def _store(best: list[float], runner_up: list[float], path=":memory:") -> Store:
    s = Store.open(path)
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    add_link(s, "L", RTT)
    for (v, n), values in ((("htcp", 1), best), (("cubic", 2), runner_up)):
        for i, x in enumerate(values):
            add_run(s, f"{v}-{n}-{i}", "L", v, n, None, x, rep=i)
    return s


def _compare(best, runner_up, margin=0.01):
    choice = sel.select(sel.load_profiles(_store(best, runner_up)), RTT / 1e3, margin=margin)
    assert choice.best.config.variant == "htcp"
    return choice


def _welch(best, runner_up):
    a, b = np.asarray(best), np.asarray(runner_up)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    d, half = a.mean() - b.mean(), stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    return d, d - half, d + half


def _runs_needed(sd_a, sd_b, target):
    """Smallest k with t_{0.975, k−1}·√((s_a² + s_b²)/k) < target, by scipy."""
    return next(k for k in range(3, 10**4) if stats.t.ppf(0.975, k - 1) * math.sqrt((sd_a**2 + sd_b**2) / k) < target)


# Two repetitions each, +0.065 Gbit/s, 95 % t interval [−0.343, 0.473], margin 1 % of 8.6 = 0.086 Gbit/s:
# an interval nine times wider than the margin, which must not read as "within the margin: a tie". Two runs
# give no interval at all (decide.MIN_INTERVAL_RUNS); three with the same spread are "not separated".
SD2 = 0.134 * G / math.sqrt(2)              # two values 0.134 Gbit/s apart
ISSUE = (_values(8.600 * G, SD2, 2), _values(8.535 * G, SD2, 2))
THREE = (_values(8.600 * G, SD2, 3), _values(8.535 * G, SD2, 3))


def test_the_issues_case_has_no_interval_but_the_runs_that_would_decide():
    choice = _compare(*ISSUE)
    c = choice.comparison
    assert c.decision == "insufficient" and (c.ci_low_bps, c.ci_high_bps, c.p_value) == (None, None, None)
    # the difference (0.065) lies inside the margin: more runs would show the tie, at this many
    assert c.decides_as == "tie"
    assert c.runs_to_decide == _runs_needed(SD2, SD2, c.margin_bps - (8.600 - 8.535) * G) == 159


def test_three_runs_each_of_the_same_spread_are_not_separated_not_a_tie():
    choice = _compare(*THREE)
    c = choice.comparison
    d, lo, hi = _welch(*THREE)
    assert (c.difference_bps, c.ci_low_bps, c.ci_high_bps) == pytest.approx((d, lo, hi), rel=1e-9)
    assert c.decision == "unresolved" and not c.equivalent and c.decides_as == "tie"
    assert c.runs_to_decide == _runs_needed(SD2, SD2, c.margin_bps - d)


def test_runs_to_decide_would_decide_at_that_count_with_the_same_means_and_spread():
    for best_mean, runner_mean, sd, outcome in ((9.30 * G, 9.25 * G, 0.15 * G, "tie"),
                                                (9.30 * G, 9.00 * G, 0.40 * G, "significant")):
        choice = _compare(_values(best_mean, sd, 3), _values(runner_mean, sd, 3))
        c = choice.comparison
        assert c.decision == "unresolved" and c.decides_as == outcome
        margin = 0.01 * best_mean
        assert c.runs_to_decide == _runs_needed(sd, sd, abs(abs(best_mean - runner_mean) - margin))
        again = _compare(_values(best_mean, sd, c.runs_to_decide), _values(runner_mean, sd, c.runs_to_decide))
        assert again.comparison.decision == outcome


def test_separated_tie_and_not_separated_in_words(tmp_path, capsys):
    cases = {
        # 4.0 Gbit/s apart, sd 0.08: interval far above the margin (0.09)
        "separated": (_values(9.0 * G, 0.08 * G, 4), _values(5.0 * G, 0.08 * G, 4)),
        # 0.01 Gbit/s apart, sd 0.005, 5 each: the whole interval inside ±0.09
        "tie": (_values(9.01 * G, 0.005 * G, 5), _values(9.0 * G, 0.005 * G, 5)),
        "not separated": THREE,
    }
    for name, (best, runner_up) in cases.items():
        db = tmp_path / f"{name.replace(' ', '_')}.duckdb"
        _store(best, runner_up, db).close()
        assert main(["select", "--db", str(db), "--rtt", f"{RTT}ms"]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Best vs runner-up"))
        d, lo, hi = _welch(best, runner_up)
        m = 0.01 * np.mean(best)
        assert f"+{d / G:.3f} Gbit/s, 95% t interval [{lo / G:.3f}, {hi / G:.3f}]" in line
        if name == "separated":
            assert lo > m and f"separated: better by more than the margin (the interval lies above +{m / G:.3f})" in line
        elif name == "tie":
            assert -m <= lo and hi <= m
            assert f"a tie: shown within the margin (the whole interval lies inside ±{m / G:.3f})" in line
        else:
            assert "tie" not in line.split(":", 1)[1].replace("no tie is shown", "")
            k = _runs_needed(SD2, SD2, m - d)
            assert (f"not separated: the interval is neither above +{m / G:.3f} nor inside ±{m / G:.3f}, so no tie "
                    f"is shown either; about {k} repetitions of each (now 3) would show them within the margin") in line


def test_not_separated_beyond_the_repetition_cap_says_more_than_the_cap():
    """runs_to_decide None with a decision still reachable: the words name the cap (select.MAX_RUNS_TO_DECIDE).
    Fails on the undefined name this branch once used (NameError)."""
    from types import SimpleNamespace
    from tcpprofile.commands.select import verdict
    c = sel.Comparison(difference_bps=0.0, ci_low_bps=-1.0, ci_high_bps=1.0, p_value=None, decision="unresolved",
                       margin_bps=0.09 * G, runs_to_decide=None, decides_as="tie")
    run = SimpleNamespace(repetitions=[2, 2])
    choice = SimpleNamespace(comparison=c, best=run, ranking=[run, run])
    words = verdict(choice)
    assert f"more than {sel.MAX_RUNS_TO_DECIDE} repetitions of each would be needed to show them within the margin" \
        in words
