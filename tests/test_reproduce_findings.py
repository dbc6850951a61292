"""The verdict logic of `tcpprofile reproduce` on synthetic stores with known answers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from synthetic_store import add_link, add_run, build, profile_value, trace
from tcpprofile.reproduce import findings, stats
from tcpprofile.reproduce.campaigns import specs
from tcpprofile.store import Store

RTTS = (0.4, 11.8, 45.6, 91.6, 183.0)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as s:
        yield s


def _loss_runs(store, *, bbr_factor: float, reps: int = 4, seed: int = 3, shape: str = "concave"):
    """Periodic 1-in-500 loss: CUBIC/H-TCP Mathis-like ~1/τ, BBR = bbr_factor × C-ish profile."""
    rng = np.random.default_rng(seed)
    for rtt in RTTS[1:]:
        add_link(store, f"P{rtt:g}", rtt, loss_mode="periodic", loss_rate=0.002)
    for v, rtt, rep in itertools.product(("cubic", "htcp", "bbr"), RTTS[1:], range(reps)):
        base = 1.8e9 / rtt
        if v == "bbr":
            base = 9e9 * (1 - (rtt / 250) ** 2) if shape == "concave" else 9e9 / (1 + rtt / 20)
            base *= bbr_factor
        add_run(store, f"loss-{v}-{rtt:g}-{rep}", f"P{rtt:g}", v, 1, None,
                float(base * (1 + 0.02 * rng.standard_normal())), rep=rep)


def test_holds_on_a_store_built_to_show_it(store):
    build(store, variants=("cubic", "htcp", "scalable", "bbr"), rtts=RTTS, reps=4)
    _loss_runs(store, bbr_factor=1.0)
    by_id = {f.id: f for f in findings.check_findings(store, ["c1"])}
    assert by_id["i"].verdict == stats.REPRODUCED
    assert by_id["i"].interval.high < 0  # slope of ln Θ over ln τ, with its interval
    assert by_id["iv"].verdict == stats.REPRODUCED, by_id["iv"].measured
    assert by_id["iv"].interval.low > findings.FAR_ABOVE
    # only stream comparisons exist (one socket buffer): the buffer half cannot be shown by this design
    assert by_id["ii"].verdict == stats.NOT_TESTABLE
    assert "socket_buffer_bytes" in by_id["ii"].measured
    assert {p.verdict for p in by_id["ii"].parts} == {stats.REPRODUCED}   # every stream comparison holds
    # no 1 s traces: nothing to compute exponents from; no 100 s runs for (iii)
    assert by_id["v"].verdict == stats.NOT_TESTABLE
    assert by_id["iii"].verdict == stats.NOT_TESTABLE


def test_does_not_hold_on_a_store_built_against_it(store):
    store.insert_campaign({"campaign_id": "c1", "name": "synthetic", "mode": "emulated"})
    rng = np.random.default_rng(5)
    for rtt in RTTS:
        add_link(store, f"L{rtt:g}", rtt)
    for rtt, rep in itertools.product(RTTS, range(4)):  # throughput rising with τ
        add_run(store, f"up-{rtt:g}-{rep}", f"L{rtt:g}", "cubic", 1, None,
                float(2e9 + 3e7 * rtt) * (1 + 0.01 * rng.standard_normal()), rep=rep)
    _loss_runs(store, bbr_factor=0.01, shape="convex")  # BBR far below CUBIC and convex
    by_id = {f.id: f for f in findings.check_findings(store, ["c1"])}
    assert by_id["i"].verdict == stats.NOT_REPRODUCED
    assert by_id["i"].interval.low > 0            # the slope of ln Θ over ln τ
    assert "local rises 0.4→11.8, 11.8→45.6, 45.6→91.6, 91.6→183 ms" in by_id["i"].measured   # plain numbers
    assert by_id["iv"].verdict == stats.NOT_REPRODUCED
    assert by_id["iv"].interval.high < 1


def test_two_repetitions_never_give_a_verdict(store):
    """2 repetitions: no interval, so neither reproduced nor not reproduced; undetermined (more runs decide
    it), with the runs per τ that would (3: this profile's trend is far outside its 2-run spread)."""
    build(store, variants=("cubic",), streams=(1,), rtts=RTTS, reps=2, noise=0.001)
    (f,) = [f for f in findings.check_findings(store, ["c1"]) if f.id == "i"]
    assert f.verdict == stats.UNDETERMINED and not f.interval.known
    assert f.interval.estimate < 0  # the point estimate (slope) is still reported
    assert f.interval.needs == stats.MIN_REPS and "about 3 runs per τ would decide it" in f.measured


def test_more_streams_push_tau_T_up_with_an_interval(store):
    build(store, variants=("cubic",), streams=(1, 4), buffers=(int(1e8), int(4e8)), rtts=(0.4, 11.8, 22.6,
          45.6, 91.6, 183.0, 366.0), reps=4, noise=0.01)
    data = findings.Data.load(store, ["c1"])
    f = findings.transition_shift(data)
    assert f.verdict == stats.REPRODUCED, f.measured
    assert f.interval.low > 0


def test_welch_interval_matches_scipy_for_one_cell():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 0.2, 5), rng.normal(0.5, 0.4, 4)
    iv = stats.mean_difference([a], [b])
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert iv.low == pytest.approx(ci.low) and iv.high == pytest.approx(ci.high)
    assert iv.estimate == pytest.approx(a.mean() - b.mean())


def test_verdict_is_three_way_and_combines():
    iv = lambda lo, hi: stats.Interval((lo + hi) / 2, lo, hi, 6)  # noqa: E731
    assert stats.verdict(iv(0.1, 0.3), above=0) == stats.REPRODUCED
    assert stats.verdict(iv(-0.3, -0.1), above=0) == stats.NOT_REPRODUCED
    assert stats.verdict(iv(-0.1, 0.1), above=0) == stats.UNDETERMINED
    assert stats.verdict(iv(-0.3, -0.1), below=0) == stats.REPRODUCED
    assert stats.verdict(stats.unknown(0.5), above=0) == stats.UNDETERMINED   # a point, no interval yet
    assert stats.verdict(stats.unknown(), above=0) == stats.NOT_TESTABLE      # nothing to estimate
    assert stats.combine([stats.REPRODUCED, stats.UNDETERMINED]) == stats.UNDETERMINED
    assert stats.combine([stats.REPRODUCED, stats.NOT_REPRODUCED]) == stats.NOT_REPRODUCED
    assert stats.combine([stats.REPRODUCED] * 3) == stats.REPRODUCED
    assert stats.combine([stats.REPRODUCED, stats.NOT_TESTABLE]) == stats.NOT_TESTABLE
    assert stats.combine([stats.NOT_TESTABLE, stats.UNDETERMINED]) == stats.UNDETERMINED
    assert stats.combine([]) == stats.NOT_TESTABLE


def test_fisher_interval_covers_at_the_nominal_rate():
    rng = np.random.default_rng(1)
    rho_true, hits, trials = -0.5, 0, 400
    for _ in range(trials):
        rhos, sizes = [], []
        for n in (8, 12):
            x = rng.standard_normal(n)
            y = rho_true * x + math.sqrt(1 - rho_true ** 2) * rng.standard_normal(n)
            rhos.append(sps.spearmanr(x, y).statistic)
            sizes.append(n)
        iv = stats.fisher_combined(rhos, sizes)
        true_spearman = 6 / math.pi * math.asin(rho_true / 2)
        hits += iv.low <= true_spearman <= iv.high
    assert 0.90 <= hits / trials <= 0.99


def test_quick_mode_fits_its_time_budget():
    from tcpprofile.campaign import LINK_SETUP_ESTIMATE_S, expected_seconds
    quick = specs("quick")
    runs = [p for s in quick for p in s.sweep()]
    seconds = sum(expected_seconds(p) + 2.5 for p in runs) + LINK_SETUP_ESTIMATE_S * sum(len(s.links) for s in quick)
    assert seconds < 45 * 60
    assert {s.links[0].loss.mode for s in quick} == {"none", "periodic"}
    assert all(p.duration_s is not None for p in runs)  # duration mode (model fit on -t runs)
    assert all(s.repetitions >= stats.MIN_REPS for s in quick)


def test_report_section_shows_the_verdicts_of_reproduce_campaigns(store):
    from tcpprofile.report.findings import verdicts
    build(store, variants=("cubic",), streams=(1,), rtts=RTTS, reps=3)
    assert verdicts(store).items[0].title == "Verdicts" and not hasattr(verdicts(store).items[0], "rows")
    store.con.execute("UPDATE campaigns SET name = 'reproduce-quick-clean' WHERE campaign_id = 'c1'")
    (table,) = verdicts(store).items
    assert [r[0] for r in table.rows] == ["(i)", "(ii)", "(iii)", "(iv)", "(v)"]
    assert table.rows[0][2] == stats.REPRODUCED


def test_short_traces_leave_the_exponent_finding_not_testable(store):
    """The quick campaigns' 8 s traces are too short for the local exponent: finding (v) is not testable
    and says so instead of failing (it raised TypeError on the first real store)."""
    store.insert_campaign({"campaign_id": "c1", "name": "synthetic", "mode": "emulated"})
    rng = np.random.default_rng(11)
    add_link(store, "L11.8", 11.8)
    for rep in range(12):
        add_run(store, f"short-{rep}", "L11.8", "cubic", 1, None, 9e9, rep=rep, duration_s=8.0,
                intervals=trace(rng, 9e9, 1, seconds=8))
    (v,) = [f for f in findings.check_findings(store, ["c1"]) if f.id == "v"]
    assert v.verdict == stats.NOT_TESTABLE
    assert "12 traces of 1 s intervals" in v.measured and "0 with ≥ 50 s after the ramp-up" in v.measured, v.measured


def test_flagged_runs_are_counted_and_left_out_on_request(store):
    """findings.flagged_runs counts the campaigns' ok runs with a fidelity flag; with exclude_flagged
    a profile point made only of flagged runs is gone from finding (i)'s evidence."""
    build(store, variants=("cubic",), rtts=RTTS, reps=3)
    assert findings.flagged_runs(store, ["c1"]) == 0
    store.con.execute("UPDATE runs SET flags = 'engine_late' WHERE link_id IN "
                      "(SELECT link_id FROM links WHERE rtt_ms < 1)")
    flagged = findings.flagged_runs(store, ["c1"])
    assert flagged == store.con.execute("SELECT count(*) FROM runs r JOIN links l USING (link_id) "
                                        "WHERE l.rtt_ms < 1 AND r.status = 'ok'").fetchone()[0] > 0
    store.con.execute("UPDATE runs SET flags = 'intervals_receiver_side' WHERE link_id IN "
                      "(SELECT link_id FROM links WHERE rtt_ms > 100)")       # a note, not a flag
    assert findings.flagged_runs(store, ["c1"]) == flagged
    kept = findings.Data.load(store, ["c1"], exclude_flagged=True).runs
    assert len(kept) and kept.tau_s.min() > 1e-3


def test_an_empty_store_leaves_every_finding_not_testable(store):
    """`reproduce --check-only` on a store without runs (a new or wrong --db): no crash, no verdict."""
    result = findings.check_findings(store)
    assert [f.id for f in result] == ["i", "ii", "iii", "iv", "v"]
    assert {f.verdict for f in result} == {stats.NOT_TESTABLE}
    assert findings.flagged_runs(store, ["c1"]) == 0


def test_chord_excess_is_the_papers_criterion():
    """HPDC'17 §1: concave = above the linear interpolation of the end points. A line has excess 0 exactly;
    Θ = 9.3 − 7.3·u² (u = (τ − τ_0)/(τ_K − τ_0)) has excess 7.3·mean(u_k − u_k²) over the interior points."""
    x = np.array([11.8, 45.6, 91.6, 183.0])
    w = stats.chord_weights(x)
    assert float(w @ (3.0 + 0.02 * x)) == pytest.approx(0.0, abs=1e-12)
    u = (x - x[0]) / (x[-1] - x[0])
    assert float(w @ (9.3 - 7.3 * u ** 2)) == pytest.approx(7.3 * np.mean(u[1:-1] - u[1:-1] ** 2))
    samples = [np.array([v - 0.1, v, v + 0.1]) for v in 9.3 - 7.3 * u ** 2]
    iv = stats.linear_combination(w, samples)
    assert iv.low > 0 and stats.verdict(iv, above=0.0) == stats.REPRODUCED
