"""Every reading command on the stores users have: older schema versions (1, 2) read as they are, and a
remote link's runs (τ measured, not configured: store.TAU_MS_SQL) seen by every reader."""

from __future__ import annotations

import itertools
import json
import shutil
from importlib import resources

import duckdb
import numpy as np
import pytest

from synthetic_store import RATE, add_link, add_run, profile_value, trace
from tcpprofile.cli import main as cli
from tcpprofile.report.data import ReportData
from tcpprofile.store import SCHEMA_VERSION, Store

RTTS = (11.8, 45.6, 91.6, 183.0)
VARIANTS = ("cubic", "htcp")
REPS = 3
RUNS = len(RTTS) * len(VARIANTS) * REPS


def _runs(rng):
    """(run_id, link τ index, variant, repetition, throughput) of the shared data set."""
    for (k, rtt), v, rep in itertools.product(enumerate(RTTS), VARIANTS, range(REPS)):
        yield f"{v}-{rtt:g}-{rep}", k, v, rep, float(profile_value(v, 1, None, rtt) * (1 + 0.02 * rng.standard_normal()))


def old_store(path, version: int) -> None:
    """A store as tcpprofile wrote it at schema `version`: its SQL files only, rows through plain SQL
    (the columns that version had); emulated links with a configured RTT."""
    con = duckdb.connect(str(path))
    files = ["schema_v1.sql"] + [f"migrate_v{v}.sql" for v in range(2, version + 1)]
    for v, name in enumerate(files, 1):
        con.execute(resources.files("tcpprofile.store").joinpath(name).read_text())
        con.execute("INSERT INTO schema_version (version) VALUES (?)", [v])
    con.execute("INSERT INTO campaigns (campaign_id, name, mode) VALUES ('c1', 'old', 'emulated')")
    for rtt in RTTS:
        con.execute("INSERT INTO links (link_id, campaign_id, kind, rate_bps, rtt_ms, buffer_bytes, loss_mode, "
                    "loss_rate, rtt_measured_ms, calibration_ok) VALUES (?, 'c1', 'emulated', ?, ?, 50000000, "
                    "'none', 0, ?, true)", [f"L{rtt:g}", RATE, rtt, rtt * 1.002])
    rng = np.random.default_rng(5)
    for run_id, k, v, rep, thr in _runs(rng):
        con.execute("INSERT INTO runs (run_id, campaign_id, link_id, variant, cc_impl, cc_kernel_name, streams, "
                    "duration_target_s, repetition, status, throughput_bps, duration_s) VALUES "
                    "(?, 'c1', ?, ?, 'builtin', ?, 1, 10, ?, 'ok', ?, 10)",
                    [run_id, f"L{RTTS[k]:g}", v, v, rep, thr])
        for row in trace(rng, thr, 1, seconds=20):
            con.execute("INSERT INTO intervals (run_id, stream, start_s, end_s, bytes, bits_per_second) "
                        "VALUES (?, ?, ?, ?, ?, ?)", [run_id, row["stream"], row["start_s"], row["end_s"],
                                                      row["bytes"], row["bits_per_second"]])
    con.close()


def remote_store(path) -> None:
    """The same data set on remote links: rtt_ms NULL (a remote host's RTT is not configured), the RTT
    measured at set-up in rtt_measured_ms."""
    with Store.open(path) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "remote", "mode": "remote"})
        for rtt in RTTS:
            add_link(s, f"L{rtt:g}", None, kind="remote", rtt_measured_ms=rtt, host=f"h{rtt:g}")
        rng = np.random.default_rng(5)
        for run_id, k, v, rep, thr in _runs(rng):
            add_run(s, run_id, f"L{RTTS[k]:g}", v, 1, None, thr, rep=rep, intervals=trace(rng, thr, 1, seconds=20))


def version_of(path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
    finally:
        con.close()


def read_everything(db, out_dir, capsys, *, report: bool = True) -> dict[str, object]:
    """Run every reading command on `db`; each must exit 0. Returns what each says, parsed."""
    got = {}

    def run(name, argv):
        code = cli(argv)
        out = capsys.readouterr()
        assert code == 0, (name, out.err)
        return out.out

    db = str(db)
    got["select"] = json.loads(run("select", ["select", "--db", db, "--rtt", "45.6ms", "--json", "--boot", "200"]))
    got["analyze"] = [json.loads(x) for x in run("analyze", ["analyze", "--db", db, "--format", "jsonl"]).splitlines()]
    got["export"] = [json.loads(x) for x in run("export", ["export", "--db", db, "--what", "runs"]).splitlines()]
    got["fit"] = json.loads(run("model fit", ["model", "fit", "--db", db, "--json"]))
    if report:
        run("report", ["report", "--db", db, "--out", str(out_dir / "report")])
        got["report"] = (out_dir / "report" / "index.html").read_text()
    return got


def _check_sees_every_run(got) -> None:
    assert len(got["export"]) == RUNS
    assert sum(p["count"] for p in got["analyze"]) == RUNS
    assert {p["tau_ms"] for p in got["analyze"]} == set(RTTS)
    assert {e["variant"] for e in got["select"]["ranking"]} == set(VARIANTS)
    assert all(e["method"] == "exact" and e["repetitions"] == [REPS] for e in got["select"]["ranking"])
    assert sorted((f["variant"], f["points"]) for f in got["fit"]) == [(v, len(RTTS)) for v in VARIANTS]
    assert f"Flagged runs included: 0 of {RUNS} ok runs" in got["report"]


@pytest.mark.parametrize("version", [1, 2])
def test_reading_commands_read_an_older_store_as_it_is(version, tmp_path, capsys):
    db = tmp_path / f"v{version}.duckdb"
    old_store(db, version)
    before = db.read_bytes()
    got = read_everything(db, tmp_path, capsys)
    _check_sees_every_run(got)
    assert version_of(db) == version and db.read_bytes() == before      # read, never written
    # the same answers as from the store upgraded (a writing open runs the migrations it lacks)
    upgraded = tmp_path / "upgraded.duckdb"
    shutil.copy(db, upgraded)
    Store.open(upgraded).close()
    assert version_of(upgraded) == SCHEMA_VERSION
    again = read_everything(upgraded, tmp_path, capsys, report=False)
    for key in ("select", "analyze", "export", "fit"):
        assert again[key] == got[key], key


@pytest.mark.parametrize("version", [1, 2])
def test_reproduce_check_only_upgrades_an_older_store_and_reads_it(version, tmp_path, capsys):
    db = tmp_path / f"v{version}.duckdb"
    old_store(db, version)
    assert cli(["reproduce", "--quick", "--check-only", "--db", str(db), "--json"]) == 0
    assert [f["id"] for f in json.loads(capsys.readouterr().out)] == ["i", "ii", "iii", "iv", "v"]
    assert version_of(db) == SCHEMA_VERSION


def test_a_remote_links_runs_reach_every_reader(tmp_path, capsys):
    db = tmp_path / "remote.duckdb"
    remote_store(db)
    got = read_everything(db, tmp_path, capsys)
    _check_sees_every_run(got)
    assert all(r["rtt_ms"] is None and r["link_kind"] == "remote" for r in got["export"])
    assert sorted({r["rtt_measured_ms"] for r in got["export"]}) == list(RTTS)
    assert got["select"]["conditions"]["link_kind"] == "remote"
    with Store.open(db, read_only=True) as s:      # the report's per-run τ (its Lyapunov tables)
        assert ReportData(s, []).run_info(f"cubic-{RTTS[2]:g}-0")["rtt_s"] == RTTS[2] / 1e3
