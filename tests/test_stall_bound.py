"""What a stall could cost a run (issue 33): fidelity.verdicts.stall_effect_bound from the engines' records, the
graded flag (engine_stall only beyond the instrument's resolution, engine_stall_minor a note that
--exclude-flagged does not honour), the per-direction columns, and the store's version 7."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

from tcpprofile.measure.fidelity import monitors, thresholds, verdicts
from tcpprofile.store.grouping import FLAGGED_SQL, NOTE_FLAGS
from tcpprofile.store import Store
from tcpprofile.testbed.engine import EngineStats


def cols(fwd_ms=None, rev_ms=None, fwd_max_us=None, rev_max_us=None, bound=None) -> dict:
    """The engines' readings (monitors.engine_readings, [s]) from the given ms and µs."""
    def s(v, per_s):
        return None if v is None else v / per_s
    return {"engine_fwd_stall_excess_s": s(fwd_ms, 1e3), "engine_rev_stall_excess_s": s(rev_ms, 1e3),
            "engine_fwd_late_max_s": s(fwd_max_us, 1e6), "engine_rev_late_max_s": s(rev_max_us, 1e6),
            "stall_effect_bound": bound}


def test_the_bound_is_both_directions_excess_over_the_wall_time_times_the_amplification():
    assert verdicts.stall_effect_bound(cols(3.0, 1.0), 2.0) == pytest.approx(0.002)           # 4 ms of 2 s
    assert verdicts.stall_effect_bound(cols(3.0, None), 2.0) == pytest.approx(0.0015)
    doubled = dataclasses.replace(thresholds.THRESHOLDS, stall_amplification=2.5)
    assert verdicts.stall_effect_bound(cols(3.0, 1.0), 2.0, doubled) == pytest.approx(0.005)
    assert verdicts.stall_effect_bound(cols(0.0, 0.0), 2.0) == 0.0
    assert verdicts.stall_effect_bound(cols(3000.0, 0.0), 2.0) == 1.0        # Θ cannot fall by more than itself
    assert verdicts.stall_effect_bound(cols(), 2.0) is None                  # an engine built before issue 33
    assert verdicts.stall_effect_bound(cols(3.0, 1.0), 0.0) is None


def test_the_bound_counts_only_what_the_queue_did_not_cover_where_the_engines_recorded_it():
    c = {**cols(300.0, 100.0), "engine_fwd_stall_uncovered_s": 6.0e-3, "engine_rev_stall_uncovered_s": 2.0e-3}
    assert verdicts.stall_effect_bound(c, 2.0) == pytest.approx(0.004)       # 8 ms of 2 s, not 400 ms
    c["engine_rev_stall_uncovered_s"] = None                          # that engine's record predates it
    assert verdicts.stall_effect_bound(c, 2.0) == pytest.approx(0.053)       # (6 + its whole 100 ms) of 2 s
    c = {**cols(300.0, 100.0), "engine_fwd_stall_uncovered_s": 0.0, "engine_rev_stall_uncovered_s": 0.0}
    assert verdicts.stall_effect_bound(c, 2.0) == 0.0                        # every episode inside the queue's cover


# The resolution: 0.2 % (Thresholds.stall_resolution_rel); the stall threshold at τ = 45.6 ms: 0.5 ms.
@pytest.mark.parametrize("c, flag", [
    (cols(fwd_max_us=499.0, bound=0.0), None),                     # no release beyond 0.5 ms, no excess
    (cols(fwd_max_us=501.0, bound=0.0), "engine_stall_minor"),      # a stall seen, nothing it could move
    (cols(rev_max_us=30_000.0, bound=0.00199), "engine_stall_minor"),   # just inside the resolution
    (cols(fwd_max_us=30_000.0, bound=0.00201), "engine_stall"),         # just beyond it
    (cols(fwd_max_us=400.0, bound=0.00201), "engine_stall"),   # many episodes just over 0.5 ms: material too
    (cols(fwd_max_us=501.0), "engine_stall"),                   # no record (older delayd): as before issue 33
    (cols(fwd_max_us=499.0), None),
], ids=["none", "minor-no-excess", "minor-just-inside", "material-just-beyond", "material-small-releases",
        "old-engine-stall", "old-engine-none"])
def test_the_flag_is_material_only_beyond_the_resolution(c, flag):
    assert verdicts.stall_flag(c, 45.6e-3) == flag


def test_the_resolution_is_a_threshold_of_its_own():
    coarse = dataclasses.replace(thresholds.THRESHOLDS, stall_resolution_rel=0.01)
    assert verdicts.stall_flag(cols(fwd_max_us=30_000.0, bound=0.009), 45.6e-3, coarse) == "engine_stall_minor"
    assert verdicts.stall_flag(cols(fwd_max_us=30_000.0, bound=0.011), 45.6e-3, coarse) == "engine_stall"


def _flagged(flags: str | None) -> bool:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE runs (flags VARCHAR); CREATE TABLE links (calibration_ok BOOLEAN, flags VARCHAR)")
    con.execute("INSERT INTO runs VALUES (?)", [flags])
    con.execute("INSERT INTO links VALUES (true, NULL)")
    return con.execute(f"SELECT {FLAGGED_SQL} FROM runs r, links l").fetchone()[0]


def test_exclude_flagged_honours_engine_stall_but_not_the_minor_note():
    assert "engine_stall_minor" in NOTE_FLAGS and "engine_stall" not in NOTE_FLAGS
    assert not _flagged("engine_stall_minor")
    assert not _flagged("intervals_receiver_side,engine_stall_minor")
    assert _flagged("engine_stall")
    assert _flagged("engine_stall_minor,host_limited")
    assert "engine_stall_minor" not in thresholds.rerun_flags("engine_stall_minor,engine_late")


def snapshot(**kw) -> EngineStats:
    return EngineStats(**{**{f.name: 0 for f in dataclasses.fields(EngineStats)}, "period_late_hist": (), **kw})


def test_the_columns_are_the_runs_deltas_and_name_the_injection_in_force():
    before = {"forward": snapshot(late_episodes=5, late_excess_ns=40_000_000, stall_holds=2,
                                  late_uncovered_ns=10_000_000),
              "reverse": snapshot(late_episodes=1, late_excess_ns=1_000_000, late_uncovered_ns=1_000_000)}
    after = {"forward": snapshot(released=10, late_episodes=9, late_excess_ns=240_000_000, stall_holds=6,
                                 stall_every_ns=2_000_000_000, stall_hold_ns=50_000_000, late_uncovered_ns=70_500_000),
             "reverse": snapshot(released=10, late_episodes=1, late_excess_ns=1_000_000, late_uncovered_ns=1_000_000)}
    c = monitors.store_columns(monitors.engine_readings(before, after, 8.0))
    assert (c["engine_fwd_stall_episodes"], c["engine_fwd_stall_excess_ms"], c["engine_fwd_stall_injected_holds"]) == \
        (4, 200.0, 4)
    assert (c["engine_fwd_stall_inject_hold_ms"], c["engine_fwd_stall_inject_every_s"]) == (50.0, 2.0)
    assert (c["engine_rev_stall_episodes"], c["engine_rev_stall_excess_ms"], c["engine_rev_stall_injected_holds"]) == \
        (0, 0.0, 0)
    assert c["engine_rev_stall_inject_hold_ms"] is None and c["engine_rev_stall_inject_every_s"] is None
    assert (c["engine_fwd_stall_uncovered_ms"], c["engine_rev_stall_uncovered_ms"]) == (60.5, 0.0)
    schema7 = {k: dataclasses.replace(v, late_uncovered_ns=None) for k, v in after.items()}
    c = monitors.store_columns(monitors.engine_readings(before, schema7, 8.0))
    assert c["engine_fwd_stall_uncovered_ms"] is None and c["engine_fwd_stall_excess_ms"] == 200.0
    old = {k: dataclasses.replace(v, late_episodes=None, late_excess_ns=None, stall_holds=None) for k, v in after.items()}
    c = monitors.store_columns(monitors.engine_readings(before, old, 8.0))
    assert c["engine_fwd_stall_excess_ms"] is None and c["engine_rev_stall_injected_holds"] is None


def test_the_store_keeps_the_bound_and_the_records_and_refuses_a_negative_bound(tmp_path):
    from tcpprofile.errors import ValidationError
    run = {"run_id": "r1", "campaign_id": "c1", "variant": "cubic", "streams": 1, "status": "ok",
           "throughput_bps": 9.4e9, "stall_effect_bound": 0.0031, "engine_fwd_stall_excess_ms": 24.8,
           "engine_fwd_stall_episodes": 4, "engine_fwd_stall_injected_holds": 4,
           "engine_fwd_stall_inject_hold_ms": 10.0, "engine_fwd_stall_inject_every_s": 2.0,
           "flags": "engine_stall"}
    with Store.open(tmp_path / "s.duckdb") as s:
        s.put_run(run)
        got = s.query("SELECT stall_effect_bound, engine_fwd_stall_excess_ms, engine_fwd_stall_injected_holds, "
                      "engine_rev_stall_excess_ms FROM runs")
        assert got == [{"stall_effect_bound": 0.0031, "engine_fwd_stall_excess_ms": 24.8,
                        "engine_fwd_stall_injected_holds": 4, "engine_rev_stall_excess_ms": None}]
        with pytest.raises(ValidationError, match="stall_effect_bound"):
            s.put_run({**run, "run_id": "r2", "stall_effect_bound": -0.001})
