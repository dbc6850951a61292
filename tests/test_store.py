"""Store: schema creation, versioning, atomic run replacement, read back."""

import duckdb
import pytest

from tcpprofile.errors import TcpProfileError
from tcpprofile.store import SCHEMA_VERSION, Store


def _run(run_id="r1", **kw):
    return {"run_id": run_id, "campaign_id": "c1", "variant": "cubic", "streams": 2, "status": "ok",
            "throughput_bps": 9.4e9, **kw}


def test_new_store_has_schema_and_version(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as s:
        assert s.query("SELECT max(version) AS v FROM schema_version") == [{"v": SCHEMA_VERSION}]
        assert "throughput_bps" in s.columns("runs")


def test_reopen_keeps_data_and_version(tmp_path):
    path = tmp_path / "s.duckdb"
    with Store.open(path) as s:
        s.put_run(_run())
    with Store.open(path) as s:
        assert s.query("SELECT count(*) AS n FROM schema_version") == [{"n": SCHEMA_VERSION}]
        assert s.query("SELECT run_id, streams FROM runs") == [{"run_id": "r1", "streams": 2}]


def test_version_1_store_is_migrated_keeping_its_runs(tmp_path):
    from importlib import resources
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute(resources.files("tcpprofile.store").joinpath("schema_v1.sql").read_text())
    con.execute("INSERT INTO schema_version (version) VALUES (1)")
    con.execute("INSERT INTO runs (run_id, campaign_id, status, throughput_bps) VALUES ('old', 'c', 'ok', 1e9)")
    con.close()
    with pytest.raises(TcpProfileError, match="open it once for writing"):
        Store.open(path, read_only=True)
    with Store.open(path) as s:
        assert [r["version"] for r in s.query("SELECT version FROM schema_version ORDER BY version")] == \
            list(range(1, SCHEMA_VERSION + 1))
        assert "rtt_base_ms" in s.columns("runs")
        assert s.query("SELECT run_id, throughput_bps, rtt_base_ms FROM runs") == \
            [{"run_id": "old", "throughput_bps": 1e9, "rtt_base_ms": None}]


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version (version) VALUES (?)", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(TcpProfileError, match="schema version"):
        Store.open(path)


def test_put_run_replaces_earlier_attempt_with_its_intervals():
    s = Store.open(":memory:")
    s.put_run(_run(status="running"), intervals=[{"stream": 0, "start_s": 0, "end_s": 1, "bytes": 5}])
    s.put_run(_run(attempts=2), intervals=[{"stream": None, "start_s": 0, "end_s": 1, "bytes": 7},
                                           {"stream": 0, "start_s": 0, "end_s": 1, "bytes": 7}])
    assert s.query("SELECT status, attempts FROM runs") == [{"status": "ok", "attempts": 2}]
    assert s.query("SELECT count(*) AS n, sum(bytes) AS b FROM intervals") == [{"n": 2, "b": 14}]
    assert s.finished_run_ids("c1") == {"r1"}


def test_failed_write_leaves_nothing():
    s = Store.open(":memory:")
    with pytest.raises(TcpProfileError, match="unknown columns"):
        s.put_run(_run(), intervals=[{"start_s": 0, "end_s": 1, "bogus": 1}])
    assert s.query("SELECT count(*) AS n FROM runs") == [{"n": 0}]


def test_unknown_run_column_is_refused():
    with pytest.raises(TcpProfileError, match="nope"):
        Store.open(":memory:").put_run(_run(nope=1))


def test_columnar_insert_round_trips_nulls_and_large_values():
    s = Store.open(":memory:")
    rows = [{"stream": None if i % 4 == 3 else i % 4, "start_s": float(i), "end_s": i + 1.0,
             "bytes": 2**40 + i, "omitted": (None, True, False)[i % 3]} for i in range(10_000)]
    s.put_run(_run(), intervals=rows)
    got = s.query("SELECT stream, start_s, end_s, bytes, omitted FROM intervals ORDER BY start_s")
    assert got == [{**r} for r in rows]
    assert s.insert_columns("cwnd", {"run_id": ["r1"] * 3, "stream": [0, 1, 2], "t_s": [0.0, 0.5, 1.0]}) == 3
    with pytest.raises(TcpProfileError, match="equal length"):
        s.insert_columns("cwnd", {"run_id": ["r1"], "stream": [0, 1]})
