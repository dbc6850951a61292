"""Racing (`tcpprofile tune`): the rule on plain numbers, the policy driving a campaign with a fake
executor (decision, evidence, budget, resume), the store usable by select, and the CLI's validation."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from fake_executor import FakeExecutor
from tcpprofile.choose import select as sel, tune
from tcpprofile.campaign.race_state import choose
from tcpprofile.campaign.rules.paired import replay
from tcpprofile.cli import main
from tcpprofile.errors import ValidationError
from tcpprofile.store import Store
from tcpprofile.same_rtt import rtt_tolerance_ms

G = 1e9
RULE = dict(first=3, max_rounds=10, margin=0.01, confidence=0.95)


def test_a_clearly_worse_candidate_is_dropped_after_the_first_rounds():
    values = {"a": [9.0, 9.1, 8.9], "b": [5.0, 5.2, 4.9], "c": [9.05, 9.0, 9.1]}
    st = replay({k: [x * G for x in v] for k, v in values.items()}, **RULE)
    assert st.dropped == {"b": (3, "c")} and st.alive == ["a", "c"]
    assert st.need == 3 and st.stop is None            # a and c not separated yet: round 4 next


def test_not_tested_before_the_first_rounds_and_incomplete_rounds_are_completed():
    st = replay({"a": [9.0, 9.1], "b": [5.0, 5.1]}, **RULE)
    assert st.dropped == {} and st.need == 2
    st = replay({"a": [9.0, 9.1, 9.0, 9.2], "b": [9.0, 9.0, 9.1]}, **{**RULE, "first": 5})
    assert st.need == 3 and st.alive == ["a", "b"]     # b's round 4 is missing: complete it


def test_survivors_within_the_margin_are_a_tie_and_the_simplest_wins():
    # identical up to a 0.1 % offset with the same round-to-round swings: the paired differences are
    # tight, their interval lies within ±1 % of the leader: a tie after the first test
    base = np.array([9.0, 9.3, 8.8]) * G
    values = {"n8": list(base * 1.001), "n1": list(base)}
    st = replay(values, **RULE, simplicity=lambda c: int(c[1:]))
    assert st.stop == "tie" and st.need is None and st.ties == ["n8"]     # what the simplest ties with
    assert choose(st, values, 0.01, simplicity=lambda c: int(c[1:])) == "n1"


def test_the_simplest_must_tie_with_the_best_not_just_with_its_neighbour():
    """n1 is 0.8 % below n4 and n4 0.8 % below n8: n1 is 1.6 % below the best and must not win, though
    it ties with n4. Tight, shared round effects: everything is resolved within the ten rounds."""
    swing = np.array([1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99, 1.0, 1.0]) * 9 * G
    values = {"n1": list(swing * 0.984), "n4": list(swing * 0.992), "n8": list(swing)}
    simple = lambda c: int(c[1:])   # noqa: E731
    st = replay(values, **RULE, simplicity=simple)
    assert "n1" in st.dropped and choose(st, values, 0.01, simplicity=simple) == "n4"


def test_max_rounds_caps_a_race_with_every_round_at_hand():
    rng = np.random.default_rng(2)
    values = {k: list(9 * G * (1 + 0.01 * rng.standard_normal(10))) for k in "ab"}
    st = replay(values, **{**RULE, "margin": 0.0001, "max_rounds": 5})
    assert st.rounds <= 5 and st.need is None


def test_the_race_stops_when_the_budget_would_be_overrun():
    values = {"a": [9.0 * G, 9.5 * G, 8.5 * G], "b": [9.1 * G, 8.6 * G, 9.4 * G]}
    st = replay(values, **RULE, affordable=lambda r, alive: r < 3)
    assert st.stop == "budget" and st.rounds == 3 and sorted(st.alive) == ["a", "b"]


def test_the_race_ends_after_the_most_rounds():
    rng = np.random.default_rng(1)
    values = {k: list(9 * G + 0.3 * G * rng.standard_normal(4)) for k in "ab"}
    st = replay(values, **{**RULE, "max_rounds": 4})
    # a and b have the same mean and 3.3 % noise: four runs can neither separate them nor show them within
    # 1 % of each other, so only the most rounds stop the race
    assert st.stop == "rounds" and st.rounds == 4 and st.need is None and sorted(st.alive) == ["a", "b"]


# -- the policy in a campaign ---------------------------------------------------------------------
MEANS = {("cubic", 1): 6.0, ("cubic", 4): 9.40, ("cubic", 8): 9.42, ("bbr", 1): 7.0, ("bbr", 4): 8.0, ("bbr", 8): 8.5}


def truth(p):
    return MEANS[(p.variant, p.streams)] * G, 0.02 * G


def race_spec(max_rounds=10, seed=5):
    return tune.spec_for(rtt="87ms", host=None, variants=["cubic", "bbr"], streams=[1, 4, 8],
                         buffers=["default"], max_rounds=max_rounds, seed=seed)


def run_race(s, store, **kw):
    ex = FakeExecutor(s.campaign_id, truth)
    res = tune.tune(s, store, out=io.StringIO(), executor=ex, **kw)
    return res, ex


@pytest.mark.parametrize("rule, stop, says", [("confirm", "shown", "shown within the margin of every other"),
                                              ("paired", "tie", "survivors are a tie")])
def test_tune_drops_the_slow_candidates_and_chooses_the_simplest_of_the_tie(tmp_path, rule, stop, says):
    s = race_spec()
    with Store.open(tmp_path / "t.duckdb") as store:
        res, ex = run_race(s, store, rule=rule)
        assert res.stop == stop and res.rule == rule
        c = res.chosen
        assert (c["variant"], c["streams"]) == ("cubic", 4)                  # 9.40 ties 9.42: fewer streams
        status = {(r["variant"], r["streams"]): r for r in res.evidence}
        assert status[("cubic", 8)]["reason"] == "tie"
        for k in [("cubic", 1), ("bbr", 1), ("bbr", 4), ("bbr", 8)]:
            assert status[k]["reason"] == "dropped" and "dropped after round" in status[k]["detail"]
        # dropped candidates stop being measured; everything measured is stored
        assert len(ex.ran) == res.runs == store.query("SELECT count(*) AS n FROM runs")[0]["n"]
        assert len(ex.ran) < 6 * 10 and res.spent_s == pytest.approx(10.0 * len(ex.ran))
        assert {r["reason"] for r in store.query("SELECT reason FROM stops")} == {"chosen", "tie", "dropped"}
        # the store is a campaign store: select works on it (the link's RTT is the fake's 10 ms)
        choice = sel.select(sel.load_profiles(store), 10.0e-3)
        assert choice.recommended.config.variant == "cubic" and choice.recommended.config.streams == 4
        text = tune.format_result(res, margin=0.01, confidence=0.95)
        assert "decision: cubic n=4 B=auto" in text and says in text


@pytest.mark.parametrize("rule", ["confirm", "paired"])
def test_a_budget_bounds_the_transfer_time(tmp_path, rule):
    """A budget below what the race needs (confirm 210 s, paired 180 s: 10 s runs) is what stops it, at
    the last round it can afford, with the decision the data still implies (9.40 ties 9.42: fewer streams)."""
    budget = 150.0
    with Store.open(tmp_path / "whole.duckdb") as store:
        whole, _ = run_race(race_spec(), store, rule=rule)
    assert whole.stop != "budget" and whole.spent_s > budget          # the budget must bind
    with Store.open(tmp_path / "b.duckdb") as store:
        res, ex = run_race(race_spec(), store, budget_s=budget, rule=rule)
        assert res.stop == "budget" and res.spent_s <= budget
        survivors = [r for r in res.evidence if r["reason"] != "dropped"]
        assert res.spent_s + 10.0 * len(survivors) > budget           # the next round would have overrun it
        assert (res.chosen["variant"], res.chosen["streams"]) == ("cubic", 4)
        assert len(ex.ran) == res.runs and res.spent_s == pytest.approx(10.0 * res.runs)
        assert "the budget of transfer time is spent" in tune.format_result(res, margin=0.01, confidence=0.95)


def test_an_interrupted_race_resumes_to_the_same_decision(tmp_path):
    s = race_spec()
    with Store.open(tmp_path / "a.duckdb") as a, Store.open(tmp_path / "b.duckdb") as b:
        whole, _ = run_race(s, a)
        for _ in range(40):
            part, _ = run_race(s, b, max_runs=4)
            if part.stop is not None:
                break
        assert part.chosen == whole.chosen and part.evidence == whole.evidence
        q = "SELECT run_id, seq, throughput_bps FROM runs ORDER BY seq"
        assert a.query(q) == b.query(q)


def test_spec_for_names_the_flag():
    with pytest.raises(ValidationError) as err:
        tune.spec_for(rtt="87 parsecs", host=None, variants=["cubic"], streams=[1], buffers=["default"])
    assert err.value.field == "--rtt"
    with pytest.raises(ValidationError) as err:
        tune.spec_for(rtt="87ms", host=None, variants=["cubic"], streams=[1, 500], buffers=["default"])
    assert err.value.field == "--streams"
    with pytest.raises(ValidationError) as err:
        tune.spec_for(rtt="87ms", host="h", variants=["cubic"], streams=[1], buffers=["default"])
    assert err.value.field == "--rtt"


@pytest.mark.parametrize("argv, flag", [
    (["--rtt", "87ms", "--margin", "lots"], "--margin"),
    (["--rtt", "87ms", "--first", "1"], "--first"),
    (["--rtt", "87ms", "--budget", "soon"], "--budget"),
    (["--rtt", "87ms", "--streams", "0"], "--streams"),
])
def test_cli_validates_before_running(tmp_path, capsys, argv, flag):
    assert main(["tune", "--db", str(tmp_path / "x.duckdb"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tcpprofile tune: {flag}") and err.count("\n") == 1


def test_confirm_says_when_a_simpler_candidate_could_not_be_shown_within_the_margin(tmp_path):
    """n = 1 is 0.85 % below n = 4: within the margin, but too close to its edge to be shown so with
    σ = 0.05 Gbit/s runs; the race decides for n = 4 and says why n = 1 was not chosen."""
    s = tune.spec_for(rtt="87ms", host=None, variants=["cubic"], streams=[1, 4], buffers=["default"], seed=5)
    means = {1: 9.34 * G, 4: 9.42 * G}
    with Store.open(tmp_path / "c.duckdb") as store:
        ex = FakeExecutor(s.campaign_id, lambda p: (means[p.streams], 0.05 * G))
        res = tune.tune(s, store, out=io.StringIO(), executor=ex, rule="confirm")
    status = {r["streams"]: r for r in res.evidence}
    assert res.stop == "shown" and res.chosen["streams"] == 4 and status[4]["repetitions"] == 10
    assert status[1]["reason"] == "tie" and status[1]["detail"].startswith("simpler, not shown within the margin")
    assert status[1]["repetitions"] < 10                 # it rested: not better than n = 4 by more than 1 %


def test_the_result_counts_the_runs_the_instrument_flagged(tmp_path):
    """tune says how many of its runs carry a fidelity flag and how many of them are the decision's (the
    emulated 45.6 ms race here flagged every n = 8 run engine_late); notes are not flags."""
    s = race_spec()

    def flags(p):
        return "engine_late" if p.streams == 4 else ("intervals_receiver_side" if p.streams == 8 else None)

    with Store.open(tmp_path / "f.duckdb") as store:
        res = tune.tune(s, store, out=io.StringIO(), executor=FakeExecutor(s.campaign_id, truth, flags=flags))
        fours = store.query("SELECT count(*) AS n FROM runs WHERE streams = 4")[0]["n"]
        cubic4 = store.query("SELECT count(*) AS n FROM runs WHERE streams = 4 AND variant = 'cubic'")[0]["n"]
        assert res.flagged == {"runs": fours, "chosen": cubic4, "kinds": {"engine_late": fours}} and cubic4 > 0
        text = tune.format_result(res, margin=0.01, confidence=0.95)
        assert f"instrument: {fours} of {res.runs} runs flagged (engine_late ×{fours}), {cubic4} of them" in text
    with Store.open(tmp_path / "g.duckdb") as store:
        res, _ = run_race(s, store)
        assert res.flagged == {"runs": 0, "chosen": 0, "kinds": {}}
        assert "instrument:" not in tune.format_result(res, margin=0.01, confidence=0.95)


def test_paired_counts_the_rounds_each_candidate_raced():
    """RaceState.counts is every rule's: with 'paired', a survivor's count is the rounds run, a dropped
    candidate's the round it was dropped after."""
    values = {"a": [9.0, 9.1, 9.0, 9.2, 9.1], "b": [5.0, 5.1, 5.0, 5.1, 5.0], "c": [9.05, 9.0, 9.1, 9.15, 9.1]}
    st = replay({k: [x * G for x in v] for k, v in values.items()}, **{**RULE, "max_rounds": 5})
    assert st.dropped["b"][0] == 3 and st.counts["b"] == 3
    assert all(st.counts[c] == st.rounds for c in st.alive)


ISSUE_PING = {"host": "10.0.0.2", "count": 10, "min_ms": 22.91, "avg_ms": 22.98, "max_ms": 23.1, "mdev_ms": 0.05}


def remote_race_spec():
    return tune.spec_for(rtt=None, host="10.0.0.2", variants=["cubic", "bbr"], streams=[1, 4, 8],
                         buffers=["default"], seed=5)


def issue_min_rtt(p) -> float:
    """The issue's path: TCP's min_rtt 45.6 ms, µs samples a little above it; BBR's read the 1 ms
    timestamp tick below it (45.000, fidelity.verdicts.rtt_off) in loss recovery."""
    return 45.0 if p.variant == "bbr" else 45.6 + 0.004 * p.repetition + 0.001 * p.streams


def test_a_remote_paths_rtt_is_tcps_min_rtt_with_the_ping_beside_it(tmp_path):
    """The issue's race: plain ping read 22.98 ms, TCP's min_rtt 45.6. The links row ends with TCP's
    smallest µs min_rtt (the ticks left out), the ping kept as the cross-check that disagrees, and the
    output says where the RTT came from. Old code: the links row kept the ping's 22.98 ms."""
    s = remote_race_spec()
    with Store.open(tmp_path / "r.duckdb") as store:
        ex = FakeExecutor(s.campaign_id, truth, rtt_base=issue_min_rtt, ping=ISSUE_PING)
        res = tune.tune(s, store, out=io.StringIO(), executor=ex)
        links = store.query("SELECT link_id, rtt_measured_ms, rtt_measured_mdev_ms, calibration_json FROM links "
                            "ORDER BY created_at, rowid")
        ok = store.query("SELECT link_id, rtt_base_ms FROM runs WHERE status = 'ok'")
    assert len(links) > 1                                # the fake sets a link up per block: each has its own RTT
    for link in links:
        mine = [r["rtt_base_ms"] for r in ok if r["link_id"] == link["link_id"]]
        mus = [v for v in mine if v != 45.0]
        assert link["rtt_measured_ms"] == pytest.approx(min(mus))
        assert abs(link["rtt_measured_ms"] - 45.6) <= rtt_tolerance_ms(45.6)
        assert link["rtt_measured_mdev_ms"] == pytest.approx(np.std(mus))
        cal = json.loads(link["calibration_json"])
        assert cal["ping"] == ISSUE_PING and (cal["runs"], cal["tick_samples_left_out"]) == (len(mus), len(mine) - len(mus))
        assert cal["cross_check"]["agree"] is False and cal["cross_check"]["tolerance_ms"] == pytest.approx(0.456, abs=1e-3)
    text = tune.format_result(res, margin=0.01, confidence=0.95)
    assert text.count("path RTT to 10.0.0.2:") == 1           # the latest link's
    assert f"path RTT to 10.0.0.2: {links[-1]['rtt_measured_ms']:.3f} ms from TCP" in text
    assert "replaced ping -U's min 22.910 ms" in text and "WARNING: ping -U's min 22.910 ms" in text


def test_path_rtt_keeps_the_ping_until_tcp_measured_and_says_when_they_agree():
    from tcpprofile.campaign.environments import path_rtt, path_rtt_note
    assert path_rtt(ISSUE_PING, [None, None]) is None                 # no min_rtt sampled: the ping stays
    only_ticks = path_rtt(ISSUE_PING, [45.0, 46.0])                    # nothing else: the ticks are all there is
    assert only_ticks["rtt_measured_ms"] == 45.0
    ping = {**ISSUE_PING, "min_ms": 45.75, "avg_ms": 45.8}
    cols = path_rtt(ping, [45.62, 45.601, None, 45.0])
    assert cols["rtt_measured_ms"] == 45.601
    cal = json.loads(cols["calibration_json"])
    assert cal["cross_check"] == {"ping_min_ms": 45.75, "tcp_min_rtt_ms": 45.601, "tolerance_ms": pytest.approx(0.45601),
                                  "agree": True}
    assert "agrees within 0.456 ms" in path_rtt_note("h", cols["rtt_measured_ms"], cal)
    # just outside max(1 %, 0.1 ms): a disagreement
    assert json.loads(path_rtt({"min_ms": 45.601 * 1.01 + 1e-3}, [45.601])["calibration_json"])["cross_check"]["agree"] is False
    assert "the ping stays" in path_rtt_note("h", 22.98, {"ping": ISSUE_PING})


def test_a_path_that_does_not_answer_ping_is_measured_by_tcp(monkeypatch):
    """ICMP filtered (ping gets no answer): the remote link is set up flagged rtt_unmeasured, without
    an RTT, and its runs carry no link flag; the first run's min_rtt measures the path and the links row
    becomes calibrated and unflagged. Old code: the link stayed flagged and every run carried
    link_rtt_unmeasured (an instrument flag: rerun on resume), with no RTT to select by."""
    from tcpprofile.campaign import environments as env
    from tcpprofile.campaign.executor import LinkUp, RunDone
    from tcpprofile.campaign.recorder import Recorder
    monkeypatch.setattr(env, "ping_rtt", lambda host: {})
    monkeypatch.setattr(env.iperf, "read_sysctls", lambda host, role: {})
    s = remote_race_spec()
    with Store.open(":memory:") as store, env.remote(s.links[0]) as e:
        assert e.flags == [] and e.link_row["flags"] == "rtt_unmeasured" and e.link_row["rtt_measured_ms"] is None
        rec = Recorder(store, s.campaign_id)
        rec.record(LinkUp(s.links[0], {"link_id": "L", "campaign_id": s.campaign_id, **e.link_row}))
        rec.record(RunDone(0, None, {"run_id": "r0", "campaign_id": s.campaign_id, "link_id": "L", "status": "ok",
                                     "throughput_bps": 9e9, "rtt_base_ms": 45.62}))
        (link,) = store.query("SELECT rtt_measured_ms, calibration_ok, flags, calibration_json FROM links")
    assert (link["rtt_measured_ms"], link["calibration_ok"], link["flags"]) == (45.62, True, None)
    assert json.loads(link["calibration_json"])["cross_check"]["agree"] is None    # nothing to compare with
