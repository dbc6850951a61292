"""The flags runs and links carry, each raised by the input that should raise it (and only then)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tcpprofile import campaign, spec
from tcpprofile.store import importer
from tcpprofile.measure import iperf
from tcpprofile.store.db import Store

DATA = Path(__file__).resolve().parent / "data" / "iperf3"


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "s.duckdb")
    yield s
    s.close()


def doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_throughput_sender_side_when_the_receiver_total_is_missing():
    d = doc("four_streams.json")
    assert "throughput_sender_side" not in iperf.parse(d).flags
    sent = d["end"]["sum_sent"]
    del d["end"]["sum_received"]
    p = iperf.parse(d)
    assert "throughput_sender_side" in p.flags
    assert p.run["throughput_bps"] == sent["bits_per_second"] and p.run["bytes_transferred"] == sent["bytes"]


def test_variant_unknown_when_neither_the_file_nor_the_caller_names_it(store, tmp_path):
    d = doc("one_stream.json")
    del d["end"]["sender_tcp_congestion"]
    path = tmp_path / "anon.json"
    path.write_text(json.dumps(d))
    _, (res,) = importer.import_files(store, [path])
    row = store.query("SELECT variant, flags FROM runs WHERE run_id = ?", [res.run_id])[0]
    assert row["variant"] is None and "variant_unknown" in row["flags"].split(",")
    _, (named,) = importer.import_files(store, [DATA / "one_stream.json"])
    flags = store.query("SELECT variant, flags FROM runs WHERE run_id = ?", [named.run_id])[0]
    assert flags["variant"] == "cubic" and "variant_unknown" not in (flags["flags"] or "")


def test_imported_link_rtt_is_the_files_smallest_and_says_it_was_under_load(store):
    d = doc("one_stream.json")
    lowest = min(s["sender"]["min_rtt"] for s in d["end"]["streams"])    # µs: iperf3's smallest srtt sample
    _, (res,) = importer.import_files(store, [DATA / "one_stream.json"])
    link = store.query("SELECT l.flags, l.rtt_measured_ms FROM links l JOIN runs r USING (link_id) "
                       "WHERE r.run_id = ?", [res.run_id])[0]
    assert link["flags"] == "rtt_measured_under_load"
    assert link["rtt_measured_ms"] == pytest.approx(lowest / 1e3)


def test_link_flags_are_copied_to_every_run(store):
    """A link whose calibration raised flags passes them (prefixed link_) to each run on it, ok or failed."""
    from tests.test_campaign_unit import SPEC, FakeHost
    host = FakeHost(fail_attempts={1, 2})

    @contextlib.contextmanager
    def flagged(point):
        yield campaign.Environment(host, "192.0.2.1", 5201, False,
                                   {"kind": "remote", "host": point.host, "calibration_ok": False,
                                    "flags": "rate_low,rtt_off"}, ["link_rate_low", "link_rtt_off"], {})
    campaign.run_campaign(spec.parse(SPEC), store, out=io.StringIO(), environments=flagged)
    rows = store.query("SELECT status, flags FROM runs")
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok", "failed"}
    for r in rows:
        assert {"link_rate_low", "link_rtt_off"} <= set(r["flags"].split(",")), r
