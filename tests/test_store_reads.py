"""store.reads: the reads several commands share, on a store built to show each case."""

from __future__ import annotations

import pytest

from synthetic_store import add_link, add_run, ensure_campaign
from tcpprofile.store import Store
from tcpprofile.store.reads import flagged_ok_runs
from tcpprofile.choose.tune import flagged_runs


@pytest.fixture
def store(tmp_path):
    with Store.open(str(tmp_path / "s.duckdb")) as s:
        ensure_campaign(s)
        add_link(s, "good", 10.0)
        add_link(s, "bad", 20.0, flags="rtt_off")
        add_run(s, "clean", "good", "cubic", 1, None, 9e9)
        add_run(s, "note-only", "good", "cubic", 1, None, 9e9, flags="intervals_sender_bytes")
        add_run(s, "contended", "good", "cubic", 4, None, 8e9, flags="host_contended,intervals_receiver_side")
        add_run(s, "late", "good", "htcp", 1, None, 8e9, flags="engine_late")
        add_run(s, "on-bad-link", "bad", "cubic", 4, None, 7e9)
        add_run(s, "failed", "good", "cubic", 4, None, None, status="failed", flags="host_contended")
        yield s


def test_flagged_ok_runs_are_the_flagged_ok_runs_with_their_flags_and_no_notes(store):
    rows = sorted(flagged_ok_runs(store, ["c1"]), key=lambda r: (r["variant"], r["streams"], r["flags"]))
    assert rows == [   # not the clean, the note-only or the failed run
        {"variant": "cubic", "streams": 4, "socket_buffer_bytes": None, "flags": ["host_contended"]},
        {"variant": "cubic", "streams": 4, "socket_buffer_bytes": None, "flags": ["rtt_off"]},   # its link's flag
        {"variant": "htcp", "streams": 1, "socket_buffer_bytes": None, "flags": ["engine_late"]},
    ]
    assert flagged_ok_runs(store, ["other"]) == []


def test_tune_counts_flags_and_the_decisions_share(store):
    chosen = {"variant": "cubic", "streams": 4, "socket_buffer_bytes": None}
    assert flagged_runs(store, "c1", chosen) == {"runs": 3, "chosen": 2,
                                                 "kinds": {"engine_late": 1, "host_contended": 1, "rtt_off": 1}}


def test_opening_for_reading_creates_nothing(tmp_path):
    from tcpprofile.errors import TcpProfileError
    missing = tmp_path / "typo" / "runs.duckdb"
    with pytest.raises(TcpProfileError, match="cannot open store"):
        Store.open(str(missing), read_only=True)
    assert not missing.parent.exists()
