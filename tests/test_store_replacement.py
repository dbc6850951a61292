"""A failed replacement of a run keeps the earlier attempt, with its intervals and cwnd samples."""

import pytest

from tcpprofile.store import Store


def _run(**kw):
    return {"run_id": "r1", "campaign_id": "c1", "variant": "cubic", "streams": 1, "status": "ok",
            "throughput_bps": 9.4e9, **kw}


def test_failed_replacement_keeps_the_earlier_attempt():
    s = Store.open(":memory:")
    s.put_run(_run(), intervals=[{"stream": None, "start_s": 0, "end_s": 1, "bytes": 7}],
              cwnd=[{"stream": 0, "t_s": 0.1, "snd_cwnd": 10}])
    before = [s.query(f"SELECT * FROM {t} ORDER BY ALL") for t in ("runs", "intervals", "cwnd")]
    # the replacement's runs row is written, then an interval row breaks a NOT NULL constraint
    # (the error may be reported as DuckDB's "transaction is aborted": insert_columns unregisters its view
    # in an aborted transaction, which masks the constraint error; what matters here is the rollback)
    with pytest.raises(Exception, match="(?i)constraint|null|aborted"):
        s.put_run(_run(status="failed", throughput_bps=None, attempts=2, failure_reason="x"),
                  intervals=[{"stream": None, "start_s": None, "end_s": 1, "bytes": 1}])
    assert [s.query(f"SELECT * FROM {t} ORDER BY ALL") for t in ("runs", "intervals", "cwnd")] == before
    s.put_run(_run(attempts=3))                    # and the store takes the next write
    assert s.query("SELECT attempts FROM runs") == [{"attempts": 3}]
    assert s.query("SELECT count(*) AS n FROM intervals") == [{"n": 0}]
