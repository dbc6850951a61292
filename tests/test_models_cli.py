"""`tcpprofile model` and `tcpprofile model fit` through the real CLI entry point."""

import json
import math

import duckdb
import numpy as np
import pytest

from tcpprofile.cli import main
from tcpprofile.models import make_model


def test_model_json_matches_api(capsys):
    rc = main(["model", "--variant", "cubic", "--capacity", "10Gbit", "--rtt", "91.6ms", "--buffer", "50MB",
               "--wmax", "1GB", "--size", "20GB", "--streams", "4", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["rows"]
    c = make_model("cubic", capacity_bps=10e9, buffer_bytes=50e6, wmax_bytes=1e9, size_bytes=20e9).components(
        0.0916, n=4)
    assert row["throughput"] == pytest.approx(float(c["throughput"]), rel=1e-12)
    for key in ("T_s", "N_s", "W_m", "T_a", "N_a", "k"):
        assert row[key] == pytest.approx(float(c[key]), rel=1e-12)
    assert (row["case"], row["subcase"], row["streams"]) == (2, 1, 4)


def test_model_profile_table(capsys):
    rc = main(["model", "predict", "--variant", "stcp", "--rtt", "11.8ms", "91.6ms", "366ms", "--buffer", "5MB",
               "--wmax", "50MB", "--streams", "1", "2", "--set", "a=0.02"])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Θ Gbit/s" in lines[1]
    body = [ln.split() for ln in lines[2:-1]]
    assert len(body) == 6 and [b[0] for b in body] == ["11.80", "11.80", "91.60", "91.60", "366.00", "366.00"]
    expected = make_model("stcp", buffer_bytes=5e6, wmax_bytes=5e7, a=0.02).predict(0.366, n=2) / 1e9
    assert float(body[-1][2]) == pytest.approx(float(expected), rel=1e-3)


@pytest.mark.parametrize("argv,field", [
    (["model", "--rtt", "10ms", "--buffer", "1MB"], "--variant"),
    (["model", "--variant", "bbr", "--rtt", "10ms", "--buffer", "1MB"], "variant"),
    (["model", "--variant", "cubic", "--rtt", "10parsecs", "--buffer", "1MB"], "--rtt"),
    (["model", "--variant", "cubic", "--rtt", "10ms"], "--buffer"),
    (["model", "--variant", "htcp", "--rtt", "10ms", "--buffer", "1MB", "--set", "b=0.9"], "b"),
    (["model", "--variant", "htcp", "--rtt", "10ms", "--buffer", "1MB", "--set", "nonsense=1"], "nonsense"),
    (["model", "fit"], "--db"),
    (["model", "fit", "--db", "none.duckdb", "--trajectory"], "--trajectory"),
    (["model", "fit", "--db", "none.duckdb", "--eq8"], "--eq8"),       # the default models the trajectory
    (["model", "fit", "--db", "none.duckdb", "--configuration", "htcp-burst-regime", "--eq8"], "--eq8"),
    (["model", "fit", "--db", "none.duckdb", "--configuration", "trajectory9"], "--configuration"),
    (["model", "validate", "--db", "none.duckdb", "--configuration", "trajectory2"], "--configuration"),
    (["model", "--variant", "htcp", "--rtt", "10ms", "--buffer", "1MB", "--set", "rtt_scaling=true"], "rtt_scaling"),
])
def test_model_errors_name_the_field(argv, field, capsys):
    assert main(argv) == 2
    assert f"tcpprofile model: {field}:" in capsys.readouterr().err


@pytest.mark.parametrize("eq8", [False, True])
def test_model_fit_reads_store(tmp_path, capsys, eq8):
    """Round trip: a profile the model generates (the buffer overflowing at Cτ + β, fit's default, or by
    Eq. (8) with --eq8) is fitted back to E < 0.5 % and its W_max."""
    db = str(tmp_path / "store.duckdb")
    con = duckdb.connect(db)
    con.execute("""CREATE TABLE runs (variant VARCHAR, streams INTEGER, socket_buffer_bytes BIGINT,
        transfer_bytes BIGINT, duration_s DOUBLE, rtt_ms DOUBLE, rate_bps DOUBLE, buffer_bytes BIGINT,
        throughput_bps DOUBLE, status VARCHAR, repetition INTEGER)""")
    m = make_model("htcp", buffer_bytes=5e6, wmax_bytes=5e7, size_bytes=20e9, queue_fill=not eq8, receiver_report=True)
    tau = np.array([0.0118, 0.0456, 0.183, 0.366])
    for n in (1, 2):
        for t, th in zip(tau, m.predict(tau, n=n)):
            con.execute("INSERT INTO runs VALUES ('htcp', ?, 1073741824, 20000000000, ?, ?, 1e10, 5000000, ?, 'ok', 0)",
                        [n, 1.6e11 / th, t * 1e3, th])
    con.close()
    paper = ["--configuration", "paper"]   # the paper's rule generated these runs
    assert main(["model", "fit", "--db", db, "--json", *paper] + (["--eq8"] if eq8 else [])) == 0
    (fit,) = json.loads(capsys.readouterr().out)
    assert fit["variant"] == "htcp" and set(fit["E_percent"]) == {"1", "2"}
    assert fit["queue_fill"] is (not eq8) and fit["receiver_report"] is True  # size mode too (iperf3 -n)
    assert fit["capacity_bps"] == 1e10 and fit["startup_rtts"] == 0.0  # a flat table: no calibration, no intervals
    assert fit["E_mean_percent"] < 0.5 and fit["wmax_bytes_fit"] == pytest.approx(5e7, rel=0.01)
    assert set(fit["E_heldout_percent"]) == {"1", "2"}  # leave-one-RTT-out, per n
    assert main(["model", "fit", "--db", db, *paper] + (["--eq8"] if eq8 else [])) == 0
    table = capsys.readouterr().out.splitlines()
    flags = len(fit["flags"])       # one line each, after the notes
    assert len(table) == 7 + flags and table[1].split()[0] == "htcp" and table[3].startswith("held-out")
    assert table[4] == ("model configuration: paper — the paper's first-principles rule (no parameter changed)"
                        + (" with --eq8" if eq8 else ""))
    assert table[5].startswith("fitted as measured") and table[6 + flags].startswith("flags:")
    assert math.isfinite(float(table[1].split()[-2])) and math.isfinite(float(table[1].split()[-3]))
    assert table[1].split()[-1] == table[2].split()[-1] == "-" and flags == 0  # the model's own profile


def _fit_json(db, capsys) -> str:
    assert main(["model", "fit", "--db", db, "--json"]) == 0
    return capsys.readouterr().out


def test_model_fit_of_one_campaign_with_a_bdp_buffer(tmp_path, capsys):
    """`model fit --campaign NAME`: only that campaign's runs; a β = BDP link is fitted as m × BDP."""
    from tcpprofile.store.db import Store

    db = str(tmp_path / "s.duckdb")
    tau = np.array([0.0004, 0.0118, 0.0456, 0.0916, 0.183])
    with Store.open(db) as store:
        for cid, name, variant in (("c1", "reproduce-quick-clean", "htcp"), ("c2", "other", "cubic")):
            store.insert_campaign({"campaign_id": cid, "name": name, "mode": "emulated"})
            for i, t in enumerate(tau):
                bdp = 10e9 * t / 8
                store.insert_link({"link_id": f"{cid}-l{i}", "campaign_id": cid, "kind": "emulated",
                                   "rate_bps": 10e9, "rtt_ms": t * 1e3, "buffer_bytes": int(round(bdp)),
                                   "buffer_spec": "BDP", "mtu": 9000})
                th = float(make_model(variant, buffer_bytes=round(bdp), wmax_bytes=3e8, mss_bytes=8948,
                                      receiver_report=True).predict(t, duration=8.0))
                store.put_run({"run_id": f"{cid}-r{i}", "campaign_id": cid, "link_id": f"{cid}-l{i}",
                               "variant": variant, "streams": 1, "duration_target_s": 8.0, "status": "ok",
                               "throughput_bps": th, "duration_s": 8.0, "repetition": 0})
    # Eq. (8) as generated (at W = Cτ + β a buffer ≥ ~BDP keeps the link full: β is not identifiable there)
    assert main(["model", "fit", "--db", db, "--campaign", "reproduce-quick-%", "--json", "--eq8",
                 "--configuration", "paper"]) == 0
    (fit,) = json.loads(capsys.readouterr().out)
    assert fit["receiver_report"] is True and fit["queue_fill"] is False  # a duration-mode dataset
    assert fit["variant"] == "htcp" and fit["buffer"] == "BDP" and fit["duration_target_s"] == 8.0
    assert fit["buffer_multiple_fit"] == pytest.approx(1.0, rel=0.05) and fit["buffer_bytes_fit"] is None
    assert fit["E_percent"]["1"] < 0.5 and fit["E_heldout_percent"]["1"] < 1.0
    assert main(["model", "fit", "--db", db]) == 0
    table = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in table[1:3]] == ["cubic", "htcp"]
    # each column's unit matches its header: the duration under "size or duration" with its unit (not
    # '8s' under 'size GB'), the factor m under "β fit ×cfg" (not '1×' under 'β fit MB')
    head = table[0]
    cols = {name: slice(head.index(name) + len(name) - w, head.index(name) + len(name))
            for name, w in (("size or duration", 16), ("β fit MB", 9), ("β fit ×cfg", 10))}
    assert table[1][cols["size or duration"]].strip() == "8 s" and table[1][cols["β fit MB"]].strip() == "-"
    m = json.loads(_fit_json(db, capsys))[0]["buffer_multiple_fit"]
    assert table[1][cols["β fit ×cfg"]].strip() == f"{m:.3g}" and "×" not in table[1]
    assert main(["model", "fit", "--db", db, "--campaign", "nothing"]) == 0
    assert "for campaign nothing" in capsys.readouterr().out
    # --exclude-flagged: a run the instrument flagged (here the 0.4 ms one, far off the model) is left out
    with Store.open(db) as store:
        store.con.execute("UPDATE runs SET flags = 'engine_late', throughput_bps = throughput_bps * 0.5 "
                          "WHERE run_id = 'c1-r0'")
    fits = {}
    for extra in ([], ["--exclude-flagged"]):
        assert main(["model", "fit", "--db", db, "--campaign", "reproduce-quick-%", "--json", "--eq8",
                     "--configuration", "paper", *extra]) == 0
        (fits[bool(extra)],) = json.loads(capsys.readouterr().out)
    assert fits[False]["points"] == 5 and fits[True]["points"] == 4
    assert fits[True]["E_percent"]["1"] < 0.5 < fits[False]["E_percent"]["1"]
