"""`select` on an operator's imported history: iperf2 and pScheduler files that state no -t, and files
that name no congestion control, must neither crash the group listing nor be recommended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcpprofile.cli import main as cli
from tcpprofile.store import Store, reads

DATA = Path(__file__).resolve().parent / "data"
IPERF2 = sorted((DATA / "iperf2").glob("*.txt")) + sorted((DATA / "iperf2").glob("*.csv"))


@pytest.fixture
def history(tmp_path, capsys):
    db = tmp_path / "history.duckdb"
    files = [*IPERF2, *sorted((DATA / "pscheduler").glob("*.json")), DATA / "iperf3" / "one_stream.json",
             DATA / "iperf3" / "size_mode.json"]
    assert cli(["import", *map(str, files), "--db", str(db)]) == 0
    capsys.readouterr()
    return db


def test_iperf2_runs_get_their_duration_and_every_group_names_its_flags(history, capsys):
    """The whole-test line's span is the run's -t (rounded to iperf2's 0.1 s): no group lacks both size and
    duration, and the refusal prints flags for each group (it raised TypeError on a group with neither)."""
    assert cli(["select", "--db", str(history), "--rtt", "0.05ms"]) == 2
    err = capsys.readouterr().err
    assert "incomparable groups" in err and "unknown: no --size/--duration" not in err
    assert "--duration 2s" in err and "--size 209715200B" in err


def test_runs_that_name_no_variant_are_left_out_and_counted(history, capsys):
    """Plain iperf2 (no -Z) and a bare pScheduler result name no congestion control: nothing to recommend
    for them, so they are left out with a count and the way to name it."""
    with Store.open(history, read_only=True) as store:
        tau = next(r["rtt_s"] * 1e3 for r in reads.profile_runs(store)
                   if r["variant"] and r["duration_s"] == 2 and not r["reverse"])
    assert cli(["select", "--db", str(history), "--rtt", f"{tau}ms", "--duration", "2s", "--forward", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unknown_variant_left_out"] > 0
    assert all(r["variant"] for r in doc["ranking"]), doc["ranking"]


def test_only_unknown_variants_is_a_clear_refusal(tmp_path, capsys):
    db = tmp_path / "plain.duckdb"
    assert cli(["import", str(DATA / "iperf2" / "plain.txt"), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli(["select", "--db", str(db), "--rtt", "0.05ms"]) == 2
    assert "name no congestion-control variant" in capsys.readouterr().err


def test_unknown_variant_names_list_what_the_store_holds(history, capsys):
    """The store holds runs that name no variant: the refusal of --variants foo lists the named ones (it raised
    TypeError sorting None with the names)."""
    assert cli(["select", "--db", str(history), "--rtt", "1ms", "--variants", "foo"]) == 2
    err = capsys.readouterr().err
    assert "unknown congestion control 'foo'" in err and "the store holds: cubic, reno" in err
