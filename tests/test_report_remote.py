"""End to end over a remote connection: `tcpprofile run` in remote mode, then `select --host` and the
report's calibration table. The 'remote host' is an iperf3 server in a throwaway namespace joined to a
second throwaway namespace (where the client side runs) by veth; nothing touches the host network."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tcpprofile.report import Table, build_report
from tcpprofile.same_rtt import rtt_tolerance_ms
from tcpprofile.store import Store

pytestmark = pytest.mark.privileged
CLI = [sys.executable, "-m", "tcpprofile.cli"]


def test_remote_campaign_select_by_ping_and_report(remote_pair, tmp_path):
    spec = tmp_path / "remote.toml"
    spec.write_text(f"""
[campaign]
name = "report-remote"
seed = 3
repetitions = 2
[remote]
host = "{remote_pair['host']}"
port = {remote_pair['port']}
rate = "10Gbit"
[transfer]
variant = ["cubic"]
streams = [1, 2]
duration = "1s"
""")
    db = tmp_path / "r.duckdb"
    in_ns = ["ip", "netns", "exec", remote_pair["client"]]
    r = subprocess.run(in_ns + CLI + ["run", str(spec), "--db", str(db)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr

    with Store.open(db, read_only=True) as s:
        (link_rtt,) = [r["rtt_measured_ms"] for r in s.query("SELECT rtt_measured_ms FROM links")]
    # idle on both sides (the campaign has ended), 10 pings like the campaign's own: a veth RTT is far
    # below the 0.1 ms matching tolerance, so the query matches the measured RTT exactly
    r = subprocess.run(in_ns + CLI + ["select", "--db", str(db), "--host", remote_pair["host"], "--ping-count", "10",
                                      "--json", "--boot", "300"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["rtt_source"] == "ping" and doc["ping"]["host"] == remote_pair["host"]
    assert doc["conditions"]["link_kind"] == "remote"
    assert abs(doc["rtt_ms"] - link_rtt) <= rtt_tolerance_ms(link_rtt)     # one measured RTT: exact match
    assert {e["streams"] for e in doc["ranking"]} == {1, 2}
    assert all(e["method"] == "exact" and e["repetitions"] == [2] for e in doc["ranking"])

    with Store.open(db, read_only=True) as s:
        report = build_report(s, tmp_path / "report")
        # flagged: the link missed calibration or the run carries a flag (host_contended on a busy machine)
        # other than the note every run against a server without -J carries (its traces are the sender's)
        (link,) = s.query("SELECT calibration_ok, flags FROM links")
        runs = s.query("SELECT flags FROM runs WHERE status = 'ok'")
        flagged = len(runs) if (link["calibration_ok"] is False or link["flags"]) else sum(
            1 for r in runs if set((r["flags"] or "").split(",")) - {"", "intervals_sender_bytes"})
    calib = next(i for sec in report.sections for i in sec.items if isinstance(i, Table) and i.id == "calibration")
    (row,) = calib.rows
    assert row[1] == "remote" and row[2] == remote_pair["host"] and row[-3] == "4" and row[-2] == str(flagged)
    assert any(f.id == "box-g0-cubic" and f.runs == 4 for f in report.figures())
