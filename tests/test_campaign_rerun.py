"""`[campaign] rerun_flagged`: on resume, ok runs whose instrument was not faithful are run again and
replaced (fixed and adaptive campaigns, with a fake executor); other flags and clean runs stay."""

from __future__ import annotations

import io

import pytest

from fake_executor import FakeExecutor
from test_campaign_adaptive import ADAPTIVE, truth
from test_campaign_unit import SPEC
from tcpprofile import campaign, spec
from tcpprofile.errors import ValidationError
from tcpprofile.store.db import Store

RERUN = SPEC.replace("retries = 1", "retries = 1\nrerun_flagged = true")


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "r.duckdb")
    yield s
    s.close()


def run(text, store, flags=None):
    s = spec.parse(text)
    ex = FakeExecutor(s.campaign_id, truth, flags=flags)
    out = io.StringIO()
    summary = campaign.run_campaign(s, store, out=out, executor=ex)
    return summary, ex, out.getvalue()


def ids(points, campaign_id):
    return sorted(p.run_id(campaign_id) for p in points)


def test_rerun_flagged_is_a_validated_bool_outside_the_campaign_identity():
    assert spec.parse(SPEC).rerun_flagged is False and spec.parse(RERUN).rerun_flagged is True
    assert spec.parse(RERUN).campaign_id == spec.parse(SPEC).campaign_id      # toggling it resumes the campaign
    for bad in ('"yes"', "1"):
        with pytest.raises(ValidationError) as err:
            spec.parse(SPEC.replace("retries = 1", f"retries = 1\nrerun_flagged = {bad}"))
        assert err.value.field == "campaign.rerun_flagged"


def test_flagged_runs_are_rerun_only_with_rerun_flagged(store):
    cid = spec.parse(SPEC).campaign_id
    # first invocation: cubic n=1 rep 0 host_contended (instrument), bbr n=4 rep 1 throughput_sender_side
    # (an iperf3 output note: not rerun), cubic n=4 rep 0 link_rate_low (the link's calibration: rerun)
    marked = {("cubic", 1, 0): "host_contended", ("bbr", 4, 1): "throughput_sender_side",
              ("cubic", 4, 0): "intervals_sender_bytes,link_rate_low"}
    _, first, _ = run(SPEC, store, flags=lambda p: marked.get((p.variant, p.streams, p.repetition)))
    assert len(first.ran) == 8
    contended = next(p for p in first.ran if (p.variant, p.streams, p.repetition) == ("cubic", 1, 0))
    link_low = next(p for p in first.ran if (p.variant, p.streams, p.repetition) == ("cubic", 4, 0))
    before = {r["run_id"]: r for r in store.query("SELECT * FROM runs")}

    _, plain, _ = run(SPEC, store)                          # resume without rerun_flagged: nothing to do
    assert plain.ran == []

    summary, rerun, out = run(RERUN, store)                 # with it: exactly the instrument-flagged runs
    assert ids(rerun.ran, cid) == ids([contended, link_low], cid)
    assert "rerun_flagged: 2 ok runs with instrument flags will be run again" in out
    assert summary.skipped == 6 and summary.ok == 8 and summary.total == 8
    after = {r["run_id"]: r for r in store.query("SELECT * FROM runs")}
    assert after.keys() == before.keys()                    # replaced by run_id, nothing added
    new = after[contended.run_id(cid)]
    assert new["status"] == "ok" and new["flags"] is None
    assert new["failure_reason"] == (f"rerun_flagged: replaces an ok run flagged host_contended, "
                                     f"{before[contended.run_id(cid)]['throughput_bps'] / 1e9:.3f} Gbit/s")
    assert after[link_low.run_id(cid)]["failure_reason"].startswith(
        "rerun_flagged: replaces an ok run flagged link_rate_low,")
    for rid, row in before.items():                         # the others untouched, the note flag kept
        if rid not in (contended.run_id(cid), link_low.run_id(cid)):
            assert after[rid] == row
    assert sum(1 for r in after.values() if r["flags"] == "throughput_sender_side") == 1

    _, again, _ = run(RERUN, store)                         # clean now: nothing left to rerun
    assert again.ran == []


def test_a_run_flagged_again_is_rerun_once_per_invocation(store):
    cid = spec.parse(SPEC).campaign_id
    always = lambda p: "engine_late" if (p.variant, p.streams, p.repetition) == ("bbr", 1, 1) else None  # noqa: E731
    run(SPEC, store, flags=always)
    for _ in range(2):
        _, ex, _ = run(RERUN, store, flags=always)
        assert [(p.variant, p.streams, p.repetition) for p in ex.ran] == [("bbr", 1, 1)]
    (row,) = store.query("SELECT flags, failure_reason, throughput_bps FROM runs WHERE flags IS NOT NULL")
    note = f"rerun_flagged: replaces an ok run flagged engine_late, {row['throughput_bps'] / 1e9:.3f} Gbit/s"
    assert row["flags"] == "engine_late"          # each replacement noted, the earlier one inside the later
    assert row["failure_reason"] == f"{note} [its failure_reason: {note}]"
    assert len(store.query("SELECT run_id FROM runs WHERE campaign_id = ?", [cid])) == 8


def test_adaptive_campaign_reruns_a_flagged_repetition_and_decides_as_before(tmp_path):
    text = ADAPTIVE
    rerun_text = ADAPTIVE.replace("retries = 1", "retries = 1\nrerun_flagged = true")
    with Store.open(tmp_path / "clean.duckdb") as clean:
        run(text, clean)
        reference = {(r["variant"], r["streams"]): (r["reason"], r["repetitions"])
                     for r in clean.query("SELECT * FROM stops")}
    with Store.open(tmp_path / "a.duckdb") as s:
        flag = lambda p: "host_contended" if (p.variant, p.streams, p.repetition) == ("cubic", 1, 1) else None  # noqa: E731
        _, first, _ = run(text, s, flags=flag)
        _, ex, _ = run(rerun_text, s)
        assert [(p.variant, p.streams, p.repetition) for p in ex.ran] == [("cubic", 1, 1)]
        stops = {(r["variant"], r["streams"]): (r["reason"], r["repetitions"]) for r in s.query("SELECT * FROM stops")}
        # the fake's values depend on the run id only: the rerun measures the same, so do the decisions
        assert stops == reference
        assert len(s.query("SELECT run_id FROM runs")) == len(first.ran)
