"""The analyses applied to a small synthetic store (Store.open(':memory:') + put_run), the bulk path,
and the `tcpprofile analyze` command."""

import csv
import io
import json

import numpy as np
import pytest

from tcpprofile import cli
from tcpprofile.analysis import (dynamics_from_store, load_runs, load_traces, profiles_from_store,
                                 relations_from_store, transitions_from_store, bounds_from_store)
from tcpprofile.errors import ValidationError
from tcpprofile.store import Store
from tcpprofile.units import to_ms

GRID = [0.4, 11.8, 91.6, 366.0]
CAP = 9.4e9


def _trace(rng, level, ramp, n=30):
    t = np.arange(n, dtype=float)
    return np.where(t < ramp, level * 2.0 ** (t - ramp), level * (1 + 0.05 * rng.standard_normal(n)))


def _fill(store: Store, seed=0):
    rng = np.random.default_rng(seed)
    for tau in GRID:
        store.insert_link({"link_id": f"L{tau}", "campaign_id": "c", "kind": "emulated", "rate_bps": 1e10,
                           "goodput_ceiling_bps": CAP, "rtt_ms": tau, "buffer_bytes": 10**8,
                           "loss_mode": "none", "loss_rate": 0.0,
                           "calibration_ok": tau != 366.0, "flags": "rtt_off" if tau == 366.0 else None})
    for variant in ("cubic", "htcp"):
        for streams in (1, 2):
            for tau in GRID:
                level = CAP * (0.95 - 0.3 * (tau / 366) ** 2) * (0.9 if variant == "htcp" else 1.0)
                for rep in range(4):
                    rid = f"{variant}-{streams}-{tau}-{rep}"
                    agg = _trace(rng, level, ramp=int(tau / 40))
                    parts = [agg / streams] * streams
                    iv = [{"stream": None, "start_s": float(i), "end_s": i + 1.0, "bits_per_second": float(v),
                           "bytes": int(v / 8)} for i, v in enumerate(agg)]
                    iv += [{"stream": s, "start_s": float(i), "end_s": i + 1.0, "bits_per_second": float(v)}
                           for s, p in enumerate(parts) for i, v in enumerate(p)]
                    store.put_run({"run_id": rid, "campaign_id": "c", "link_id": f"L{tau}", "variant": variant,
                                   "streams": streams, "socket_buffer_bytes": 2**30, "repetition": rep,
                                   "duration_target_s": 30.0, "status": "ok",
                                   "throughput_bps": float(agg.mean())}, intervals=iv)
    store.put_run({"run_id": "failed", "campaign_id": "c", "link_id": "L0.4", "variant": "cubic", "streams": 1,
                   "socket_buffer_bytes": 2**30, "duration_target_s": 30.0, "status": "failed"})


@pytest.fixture(scope="module")
def store():
    s = Store.open(":memory:")
    _fill(s)
    yield s
    s.close()


def test_load_runs_keeps_ok_runs_and_marks_flagged_links(store):
    runs = load_runs(store)
    assert len(runs) == 2 * 2 * 4 * 4 and "failed" not in set(runs.run_id)
    assert runs.flagged.sum() == 16 and np.all(to_ms(runs.tau_s[runs.flagged]) == 366.0)
    assert np.all(runs.capacity_bps == CAP)
    assert len(load_runs(store.con, exclude_flagged=True)) == 48


@pytest.mark.parametrize("calibration_ok, link_flags, run_flags, flagged", [
    (True, None, None, False),
    (True, None, "intervals_sender_bytes", False),                       # notes on how the traces were made
    (True, None, "intervals_receiver_side,streams_matched_by_order", False),
    (True, None, "intervals_sender_bytes,host_contended", True),         # a note beside a flag: flagged
    (True, None, "engine_late,intervals_sender_bytes", True),
    (True, None, "throughput_sender_side", True),
    (True, None, "link_rate_low", True),
    (True, None, "some_future_flag", True),                              # unknown flags count
    (True, None, "xintervals_sender_bytes", True),                       # whole names only
    (False, None, None, True),                                           # the link missed calibration
    (None, "rtt_off", None, True),
])
def test_which_flags_flag_a_run(calibration_ok, link_flags, run_flags, flagged):
    s = Store.open(":memory:")
    s.insert_link({"link_id": "L", "campaign_id": "c", "kind": "emulated", "rtt_ms": 10.0,
                   "calibration_ok": calibration_ok, "flags": link_flags})
    s.put_run({"run_id": "r", "campaign_id": "c", "link_id": "L", "variant": "cubic", "streams": 1,
               "status": "ok", "throughput_bps": 1e9, "flags": run_flags})
    assert load_runs(s).flagged.tolist() == [flagged]
    assert len(load_runs(s, exclude_flagged=True)) == (0 if flagged else 1)


def test_load_traces_aggregate_and_streams(store):
    tr = load_traces(store, ["cubic-2-0.4-0"], per_stream=True)
    assert set(tr) == {("cubic-2-0.4-0", None), ("cubic-2-0.4-0", 0), ("cubic-2-0.4-0", 1)}
    agg = tr[("cubic-2-0.4-0", None)]
    assert agg.bps.size == 30 and np.allclose(tr[("cubic-2-0.4-0", 0)].bps * 2, agg.bps)
    assert set(load_traces(store, ["cubic-2-0.4-0"])) == {("cubic-2-0.4-0", None)}


def test_profiles_group_and_pool(store):
    ps = profiles_from_store(store, by=("variant", "streams"), n_boot=200, seed=1)
    assert [p.key for p in ps] == [{"variant": v, "streams": n} for v in ("cubic", "htcp") for n in (1, 2)]
    p = ps[0]
    runs = load_runs(store)
    sel = (runs.dims["variant"] == "cubic") & (runs.dims["streams"] == 1) & (to_ms(runs.tau_s) == 11.8)
    assert p.mean[1] == pytest.approx(runs.throughput_bps[sel].mean())
    assert p.count.tolist() == [4, 4, 4, 4] and p.n_flagged.tolist() == [0, 0, 0, 4]
    pooled = profiles_from_store(store, by=("variant",), n_boot=200, seed=1)
    assert [p.count.tolist() for p in pooled] == [[8] * 4, [8] * 4]
    assert profiles_from_store(store, by=("variant",), n_boot=200, seed=1)[0].ci_low.tolist() == \
        pooled[0].ci_low.tolist()
    with pytest.raises(ValidationError, match="by"):
        profiles_from_store(store, by=("colour",))


def test_transitions_and_bounds(store):
    ts = transitions_from_store(store, by=("variant",), n_boot=50, seed=0)
    assert len(ts) == 2
    for t in ts:
        assert t.fit.capacity == CAP
        # the 366 ms mean drops below half capacity (long ramp-up in a 30 s run): τ_T in (91.6, 366)
        assert t.fit.kind == "dual" and to_ms(t.fit.tau_T_grid) == 91.6      # the fit in s
        assert t.row()["tau_T_ms"] == pytest.approx(1e3 * t.fit.tau_T, rel=1e-12)   # printed in ms
        assert t.ci_low <= t.fit.tau_T <= t.ci_high
    rows = bounds_from_store(store, by=("variant",), eps=0.5)
    assert [r["n"] for r in rows] == [32, 32] and all(0 < r["bound"] <= 1 for r in rows)


def test_dynamics_and_relation(store):
    dyn = dynamics_from_store(store, run_ids=["cubic-1-366.0-0", "htcp-2-91.6-1"], per_stream=True)
    assert [(d.run_id, d.stream) for d in dyn] == [("cubic-1-366.0-0", None), ("cubic-1-366.0-0", 0),
                                                   ("htcp-2-91.6-1", None), ("htcp-2-91.6-1", 0),
                                                   ("htcp-2-91.6-1", 1)]
    d = dyn[0].dynamics
    assert d.ramp.T_R == 9.0  # int(366/40) = 9 halved-rate intervals before the level
    assert to_ms(dyn[0].key["tau_s"]) == 366.0 and dyn[0].row()["tau_ms"] == 366.0 and dyn[0].key["variant"] == "cubic"
    rel = relations_from_store(store, by=("variant", "streams"), dynamics=dynamics_from_store(store))
    assert len(rel) == 16 and all(r.n <= 4 for _, r in rel)
    assert sum(r.n == 4 for _, r in rel) >= 12  # 366 ms: 21 sustained points are often too few


def test_bulk_insert_columns():
    s = Store.open(":memory:")
    n = s.insert_columns("intervals", {"run_id": np.array(["a", "a", "b"], dtype=object),
                                        "stream": np.array([0, 1, 0]), "start_s": np.zeros(3),
                                        "end_s": np.ones(3), "bits_per_second": np.array([1.0, 2.0, 3.0])})
    assert n == 3
    assert s.query("SELECT run_id, sum(bits_per_second) AS b FROM intervals GROUP BY 1 ORDER BY 1") == [
        {"run_id": "a", "b": 3.0}, {"run_id": "b", "b": 3.0}]
    with pytest.raises(Exception, match="unknown columns"):
        s.insert_columns("intervals", {"nope": np.zeros(1)})


@pytest.fixture(scope="module")
def dbfile(store, tmp_path_factory):
    path = tmp_path_factory.mktemp("analyze") / "s.duckdb"
    store.con.execute(f"ATTACH '{path}' AS copy")
    store.con.execute("COPY FROM DATABASE memory TO copy")
    store.con.execute("DETACH copy")
    return str(path)


def _cli(capsys, *argv):
    assert cli.main(["analyze", *argv]) == 0
    return capsys.readouterr().out


def test_cli_profiles_jsonl_and_csv(dbfile, capsys):
    out = _cli(capsys, "--db", dbfile, "--by", "variant,streams", "--format", "jsonl", "--n-boot", "100")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 16 and {"variant", "streams", "tau_ms", "mean", "ci_low", "n_flagged"} <= set(rows[0])
    out = _cli(capsys, "--db", dbfile, "--by", "variant", "--what", "regions", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 8 and rows[0]["region"] == "undetermined" and rows[0]["d2"] == ""


def test_cli_tables(dbfile, capsys):
    out = _cli(capsys, "--db", dbfile, "--by", "variant,streams", "--what", "transition", "--n-boot", "20")
    assert out.startswith("τ_T") and "cubic" in out.splitlines()[1]
    out = _cli(capsys, "--db", dbfile, "--what", "bound", "--by", "variant", "--eps", "0.5")
    assert "samples_needed" in out.splitlines()[0]
    out = _cli(capsys, "--db", dbfile, "--what", "lyapunov", "--by", "variant", "--format", "jsonl")
    assert len(out.splitlines()) == 8


def test_cli_rejects_unknown_dimension(dbfile, capsys):
    assert cli.main(["analyze", "--db", dbfile, "--by", "colour"]) == 2
    assert "by: unknown dimension" in capsys.readouterr().err


def test_bdp_sized_buffers_form_one_profile_and_one_model_dataset():
    # buffer = "BDP": β in bytes differs at every τ, yet it is one configuration.
    from tcpprofile.analysis import profiles_from_store
    from tcpprofile.models.fit import fit_profiles, fit_table_from_store as model_profiles
    s = Store.open(":memory:")
    taus = (11.8, 45.6, 183.0)
    for i, tau in enumerate(taus):
        s.insert_link({"link_id": f"l{i}", "campaign_id": "c", "kind": "emulated", "rate_bps": 10e9,
                       "rtt_ms": tau, "buffer_bytes": int(10e9 * tau / 8e3), "buffer_spec": "BDP"})
        for rep in range(3):
            s.put_run({"run_id": f"r{i}{rep}", "campaign_id": "c", "link_id": f"l{i}", "variant": "cubic",
                       "streams": 1, "transfer_bytes": 10**10, "status": "ok", "repetition": rep,
                       "throughput_bps": 9.5e9 - 10e6 * tau - 1e6 * rep, "duration_s": 9.0})
    (prof,) = profiles_from_store(s, n_boot=50, seed=0)
    assert list(to_ms(prof.tau_s)) == list(taus) and list(prof.count) == [3, 3, 3]
    (fit,) = fit_profiles(model_profiles(s.con))
    assert fit.key["buffer"] == "BDP" and fit.points == 3
