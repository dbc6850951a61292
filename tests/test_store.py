"""Store: schema creation, versioning, atomic run replacement, read back."""

import duckdb
import pytest

from tcpprofile.errors import TcpProfileError, ValidationError
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
    # read-only: read through the current schema, the file left at version 1
    with Store.open(path, read_only=True) as s:
        assert "rtt_base_ms" in s.columns("runs") and s.columns("stops")
        assert s.query("SELECT run_id, throughput_bps, rtt_base_ms FROM runs") == \
            [{"run_id": "old", "throughput_bps": 1e9, "rtt_base_ms": None}]
        assert s.query("SELECT count(*) AS n FROM stops") == [{"n": 0}]
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (1,)
    con.close()
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


def _counts(s):
    return {t: s.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "intervals", "cwnd")}


@pytest.mark.parametrize("row,field", [
    (_run(throughput_bps=float("nan")), "runs.throughput_bps"),
    (_run(throughput_bps=float("inf")), "runs.throughput_bps"),
    (_run(throughput_bps=-1.0), "runs.throughput_bps"),
    (_run(throughput_bps=None), "runs.throughput_bps"),             # an 'ok' run without its result
    (_run(throughput_bps=2e15), "runs.throughput_bps"),
    (_run(bytes_transferred=1_000_000_000, duration_s=1.0), "runs.throughput_bps"),  # 8 Gbit in 1 s ≠ 9.4
    (_run(duration_s=float("-inf")), "runs.duration_s"),
    (_run(rtt_loaded_mean_ms=float("nan")), "runs.rtt_loaded_mean_ms"),
    (_run(retransmits=2**63), "runs.retransmits"),
    (_run(status="done"), "runs.status"),
])
def test_put_run_refuses_what_is_not_a_measurement_and_keeps_the_earlier_attempt(row, field):
    s = Store.open(":memory:")
    s.put_run(_run(status="running"), intervals=[{"stream": 0, "start_s": 0.0, "end_s": 1.0, "bytes": 5}])
    before = _counts(s)
    with pytest.raises(ValidationError) as err:
        s.put_run(row, intervals=[{"stream": 0, "start_s": 0.0, "end_s": 1.0, "bytes": 9}])
    assert err.value.field == field and "run r1" in str(err.value)
    assert _counts(s) == before
    assert s.query("SELECT status FROM runs") == [{"status": "running"}]
    assert s.query("SELECT bytes FROM intervals") == [{"bytes": 5}]
    s.put_run(_run(bytes_transferred=1_175_000_000, duration_s=1.0))   # 9.4 Gbit in 1 s: stored
    assert s.query("SELECT status, throughput_bps FROM runs") == [{"status": "ok", "throughput_bps": 9.4e9}]


@pytest.mark.parametrize("interval,field", [
    ({"bits_per_second": float("nan")}, "intervals.bits_per_second"),
    ({"bytes": -5}, "intervals.bytes"),
    ({"start_s": 2.0}, "intervals.end_s"),                       # ends before it starts
    ({"rtt_us": 2**63}, "intervals.rtt_us"),
])
def test_put_run_refuses_incoherent_intervals_and_stores_nothing_of_the_run(interval, field):
    s = Store.open(":memory:")
    with pytest.raises(ValidationError) as err:
        s.put_run(_run(), intervals=[{"stream": None, "start_s": 0.0, "end_s": 1.0, **interval}])
    assert err.value.field == field
    assert _counts(s) == {"runs": 0, "intervals": 0, "cwnd": 0}


def test_nested_transactions_are_one_and_a_failure_leaves_the_store_usable():
    s = Store.open(":memory:")
    with pytest.raises(ValidationError):
        with s.transaction():
            s.insert_link({"link_id": "l1", "campaign_id": "c1", "kind": "unknown"})
            s.put_run(_run())                                          # joins the outer transaction
            s.put_run(_run("r2", throughput_bps=float("nan")))
    assert s.query("SELECT count(*) AS n FROM links") == [{"n": 0}] and _counts(s)["runs"] == 0
    with s.transaction():
        s.insert_link({"link_id": "l1", "campaign_id": "c1", "kind": "unknown"})
        s.put_run(_run())
    assert s.query("SELECT count(*) AS n FROM links") == [{"n": 1}] and _counts(s)["runs"] == 1


def test_a_database_error_inside_a_transaction_is_reported_as_itself():
    # DuckDB's own refusal (here a value a BIGINT cannot hold, through the bulk path) surfaces, not
    # "Current transaction is aborted" from the clean-up after it; the store then works as before
    s = Store.open(":memory:")
    with pytest.raises(duckdb.ConversionException):
        with s.transaction():
            s.insert_columns("cwnd", {"run_id": ["r1"], "stream": [0], "t_s": [0.0], "ssthresh": [2**64]})
    assert s.insert_columns("cwnd", {"run_id": ["r1"], "stream": [0], "t_s": [0.0]}) == 1


@pytest.mark.parametrize("sample,field", [
    ({"srtt_us": float("nan")}, "cwnd.srtt_us"),
    ({"snd_cwnd": -3}, "cwnd.snd_cwnd"),
    ({"ssthresh": 2**64}, "cwnd.ssthresh"),
    ({"t_s": float("inf")}, "cwnd.t_s"),
])
def test_one_bad_cwnd_sample_among_many_is_named_and_nothing_is_stored(sample, field):
    s = Store.open(":memory:")
    rows = [{"stream": 0, "t_s": i / 1e3, "snd_cwnd": 10 + i, "ssthresh": 7, "srtt_us": 900} for i in range(5000)]
    rows[4321] = {**rows[4321], **sample}
    with pytest.raises(ValidationError) as err:
        s.put_run(_run(), cwnd=rows)
    assert err.value.field == field
    assert _counts(s) == {"runs": 0, "intervals": 0, "cwnd": 0}
    s.put_run(_run(), cwnd=rows[:4321])
    assert _counts(s)["cwnd"] == 4321
