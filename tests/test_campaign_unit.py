"""Campaign runner logic with a fake environment (unit tests only): the 'client' prints a real
iperf3 JSON fixture, or fails. Checks ordering, resume, retries, failure records, summary, exit codes."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcpprofile import campaign, spec
from tcpprofile.measure import iperf
from tcpprofile.packet_overhead import mss_bytes
from tcpprofile.store.db import Store

DATA = Path(__file__).resolve().parent / "data" / "iperf3"

SPEC = """
[campaign]
name = "unit"
seed = 3
repetitions = 2
retries = 1
[remote]
host = "192.0.2.1"
[transfer]
variant = ["cubic", "bbr"]
streams = [1, 4]
duration = "2s"
"""


class FakeHost:
    """Runs a stand-in for the iperf3 client: `cat` a fixture, or `false` for the attempts listed."""

    def __init__(self, fail_attempts: set[int] = frozenset(), fixture: str = "one_stream.json"):
        self.calls = 0
        self.fail_attempts = fail_attempts
        self.fixture = fixture
        self.argvs: list[list[str]] = []

    def popen(self, ns_role, argv, **kw):
        self.calls += 1
        self.argvs.append(argv)
        stand_in = ["false"] if self.calls in self.fail_attempts else ["cat", str(DATA / self.fixture)]
        return subprocess.Popen(stand_in, **kw)

    def run(self, ns_role, argv, *, check=True, timeout=None):
        return subprocess.CompletedProcess(argv, 0, "", "")

    def stop_process(self, proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def fake_environments(host: FakeHost, setups: list):
    @contextlib.contextmanager
    def factory(point):
        setups.append(point)
        yield campaign.Environment(host, "192.0.2.1", 5201, False,
                                   {"kind": "remote", "host": point.host, "port": point.port,
                                    "rtt_measured_ms": 1.0, "calibration_ok": True},
                                   [], {"sender": {"net.ipv4.tcp_wmem": "4096 16384 4194304"}})
    return factory


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "u.duckdb")
    yield s
    s.close()


def run(s, store, host, setups=None):
    out = io.StringIO()
    summary = campaign.run_campaign(s, store, out=out, environments=fake_environments(host, [] if setups is None else setups))
    return summary, out.getvalue()


def test_runs_in_schedule_order_with_deterministic_ids(store):
    s = spec.parse(SPEC)
    host = FakeHost()
    summary, text = run(s, store, host)
    assert (summary.total, summary.ok, summary.failed) == (8, 8, 0)
    rows = store.query("SELECT run_id, seq, variant, streams, repetition, status, attempts, cc_impl "
                       "FROM runs ORDER BY seq")
    sched = s.schedule(3)
    assert [r["run_id"] for r in rows] == [p.run_id(s.campaign_id) for p in sched]
    assert [(r["variant"], r["streams"]) for r in rows] == [(p.variant, p.streams) for p in sched]
    assert [a[a.index("-C") + 1] for a in host.argvs] == [p.variant for p in sched]
    assert all(r["status"] == "ok" and r["attempts"] == 1 and r["cc_impl"] for r in rows)
    assert text.count("] ok ") == 8 and "ETA" in text
    # intervals of the fixture are stored with every run
    n = store.query("SELECT count(*) AS n FROM intervals")[0]["n"]
    assert n == 8 * len(spec_intervals())


def spec_intervals():
    from tcpprofile.measure import iperf
    import json
    return iperf.parse(json.loads((DATA / "one_stream.json").read_text())).intervals


def test_rerun_skips_finished_and_redoes_running(store):
    s = spec.parse(SPEC)
    run(s, store, FakeHost())
    before = store.query("SELECT * EXCLUDE (raw_json) FROM runs ORDER BY run_id")
    # a run left 'running' (killed mid-run) is redone; the others are untouched
    victim = before[3]["run_id"]
    store.con.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", [victim])
    host, setups = FakeHost(), []
    summary, _ = run(s, store, host, setups)
    assert host.calls == 1 and summary.skipped == 7 and len(setups) == 1
    after = store.query("SELECT * EXCLUDE (raw_json) FROM runs ORDER BY run_id")
    assert len(after) == len(before)
    assert [r for r in after if r["run_id"] != victim] == [r for r in before if r["run_id"] != victim]
    assert {r["status"] for r in after} == {"ok"}
    # nothing left: no link set up at all
    setups.clear()
    run(s, store, FakeHost(), setups)
    assert setups == []


def test_seed_is_drawn_once_and_reused(store):
    s = spec.parse(SPEC.replace("seed = 3\n", ""))
    assert s.seed is None
    first, _ = run(s, store, FakeHost(fail_attempts={1, 2}))
    store.con.execute("UPDATE runs SET status = 'running' WHERE seq >= 4")
    second, _ = run(s, store, FakeHost())
    assert first.seed == second.seed is not None
    seqs = store.query("SELECT run_id, seq FROM runs")
    sched = s.schedule(first.seed)
    assert {r["run_id"]: r["seq"] for r in seqs} == {p.run_id(s.campaign_id): i for i, p in enumerate(sched)}


def test_failure_is_retried_then_recorded(store):
    s = spec.parse(SPEC)
    # calls 1 and 2 fail: the first run fails twice (recorded failed); call 3 fails once, retry succeeds
    host = FakeHost(fail_attempts={1, 2, 3})
    summary, text = run(s, store, host)
    assert host.calls == 8 + 2
    assert (summary.ok, summary.failed) == (7, 1)
    failed = store.query("SELECT * FROM runs WHERE status = 'failed'")[0]
    assert failed["seq"] == 0 and failed["attempts"] == 2
    assert "without output" in failed["failure_reason"]
    retried = store.query("SELECT attempts, status, failure_reason FROM runs WHERE seq = 1")[0]
    assert retried["attempts"] == 2 and retried["status"] == "ok"
    assert retried["failure_reason"].startswith("attempt 1: iperf3 client exited 1 without output")
    assert store.query("SELECT count(*) AS n FROM runs WHERE status = 'ok' AND failure_reason IS NOT NULL")[0]["n"] == 1
    assert "FAILED (iperf3 client exited 1 without output" in text
    assert campaign.exit_code(summary) == 0
    # a failed run counts as finished: a rerun does not try it again
    host2 = FakeHost()
    run(s, store, host2)
    assert host2.calls == 0


def test_a_failed_part_of_the_link_is_rebuilt_before_the_retry(store):
    """check() names a failed part once (as a dead delay engine would): that attempt fails with that
    reason, the link is set up again (a second links row) and the retry runs on the new link."""
    s = spec.parse(SPEC.replace("repetitions = 2", "repetitions = 1"))
    host, setups = FakeHost(fail_attempts={2}), []

    @contextlib.contextmanager
    def factory(point):
        with fake_environments(host, setups)(point) as env:
            env.check = lambda: "delay engine (forward, pid 1) is not running" if host.calls == 2 else None
            yield env
    out = io.StringIO()
    summary = campaign.run_campaign(s, store, out=out, environments=factory)
    assert (summary.ok, summary.failed) == (4, 0) and len(setups) == 2 and host.calls == 5
    links = [r["link_id"] for r in store.query("SELECT link_id FROM links")]
    assert len(links) == 2
    row = store.query("SELECT * FROM runs WHERE attempts = 2")[0]
    assert row["failure_reason"].startswith("attempt 1: delay engine (forward, pid 1) is not running")
    assert row["link_id"] == store.query("SELECT link_id FROM runs WHERE seq = 3")[0]["link_id"] != \
        store.query("SELECT link_id FROM runs WHERE seq = 0")[0]["link_id"]
    assert "tearing it down, setting up a new one" in out.getvalue()


def test_every_run_failing_exits_1(store):
    s = spec.parse(SPEC.replace("repetitions = 2", "repetitions = 1").replace("retries = 1", "retries = 0"))
    summary, _ = run(s, store, FakeHost(fail_attempts=set(range(1, 100))))
    assert (summary.ok, summary.failed) == (0, 4) and campaign.exit_code(summary) == 1


def test_bad_iperf_output_is_a_failure_with_reason(store):
    s = spec.parse(SPEC.replace("retries = 1", "retries = 0"))
    summary, _ = run(s, store, FakeHost(fixture="refused.json"))
    reasons = {r["failure_reason"] for r in store.query("SELECT failure_reason FROM runs")}
    assert reasons == {"iperf3 error: unable to connect to server: Connection refused"}
    assert summary.failed == 8
    raw = store.query("SELECT raw_json FROM runs LIMIT 1")[0]["raw_json"]
    assert '"error"' in raw


def test_a_nan_throughput_from_iperf3_is_a_failed_run_never_ok(store, tmp_path):
    d = json.loads((DATA / "one_stream.json").read_text())
    d["end"]["sum_received"]["bits_per_second"] = float("nan")
    (tmp_path / "nan.json").write_text(json.dumps(d))
    s = spec.parse(SPEC.replace("retries = 1", "retries = 0"))
    summary, _ = run(s, store, FakeHost(fixture=str(tmp_path / "nan.json")))
    assert (summary.ok, summary.failed) == (0, 8)
    assert store.query("SELECT DISTINCT status, failure_reason, throughput_bps FROM runs") == [
        {"status": "failed", "failure_reason": "end.sum_received.bits_per_second: NaN is not a rate",
         "throughput_bps": None}]
    assert store.query("SELECT count(*) AS n FROM intervals") == [{"n": 0}]


def test_flags_and_effective_buffer(store):
    s = spec.parse(SPEC)
    summary, _ = run(s, store, FakeHost(fixture="one_stream.json"))
    rows = store.query("SELECT variant, flags, effective_socket_buffer_bytes, cc_reported FROM runs")
    # the fixture says cubic: runs asked for bbr are flagged; it has no receiver's output (no
    # --get-server-output), so every run's 1 s bytes are the sender's count, and say so
    assert {r["flags"] for r in rows if r["variant"] == "bbr"} == {"intervals_sender_bytes,cc_mismatch"}
    assert {r["flags"] for r in rows if r["variant"] == "cubic"} == {"intervals_sender_bytes"}
    assert summary.flagged == 4          # cc_mismatch; intervals_sender_bytes is a note (grouping.NOTE_FLAGS)
    # default socket buffer: the sender's autotuning ceiling (receiver unknown here -> None)
    assert {r["effective_socket_buffer_bytes"] for r in rows} == {None}


def test_summary_table_and_format(store, tmp_path):
    s = spec.parse(SPEC)
    summary, _ = run(s, store, FakeHost())
    assert len(summary.table) == 4 and all(r["runs"] == 2 for r in summary.table)
    text = campaign.format_summary(summary, "x.duckdb")
    assert "8 ok, 0 failed" in text and text.endswith("store: x.duckdb")


def test_unknown_variant_is_refused_before_anything_runs(store):
    host, setups = FakeHost(), []
    with pytest.raises(Exception) as err:   # the spec refuses it (cc/registry.py), so nothing reaches the runner
        run(spec.parse(SPEC.replace('"bbr"', '"nosuchcc"')), store, host, setups)
    assert "transfer.variant[1]" in str(err.value) and host.calls == 0 and setups == []


def test_expected_and_timeout_durations():
    s = spec.parse('[campaign]\nname="d"\n[link]\nrate="1Gbit"\nrtt="100ms"\n'
                   'loss=[{mode="none"},{mode="uniform",p=1e-4}]\n'
                   '[transfer]\nvariant="cubic"\nsize="1GB"\nsocket_buffer=["default","1MB"]\n')
    e = {(p.link.loss.mode, p.socket_buffer_bytes): campaign.expected_seconds(p) for p in s.sweep()}
    # no loss, autotuned: F and what the autotuned send buffers can hold at the link's largest window
    # (iperf.autotuned_send_buffers_bytes) at 0.9 Gbit/s, plus ten RTTs and a second
    link = s.sweep()[0].link
    held = iperf.autotuned_send_buffers_bytes(1e9 * 0.1 / 8 + link.buffer_bytes, mss_bytes(link.mtu or 1500), 1)
    assert held > 7 * (1e9 * 0.1 / 8 + link.buffer_bytes)
    assert e[("none", None)] == pytest.approx((1e9 + held) * 8 / 0.9e9 + 1 + 1)
    # 1 MB window at 100 ms: 80 Mbit/s, for F and the 2 + 2 MB its send and receive buffers may hold
    # (iperf.size_request_bytes)
    assert e[("none", 10**6)] == pytest.approx((1e9 + 4e6) * 8 / 80e6 + 2)
    # Mathis at p = 1e-4, MSS 8948 B: 8948·8/0.1·√15000 ≈ 87.7 Mbit/s
    assert e[("uniform", None)] == pytest.approx((1e9 + held) * 8 / (8948 * 8 / 0.1 * (1.5e4) ** 0.5) + 2)
    for p in s.sweep():
        assert campaign.timeout_seconds(p) >= 4 * campaign.expected_seconds(p)


def test_cli_bad_spec_names_the_field(tmp_path, capsys):
    from tcpprofile.cli import main
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.replace("streams = [1, 4]", "streams = [1, 400]"))
    assert main(["run", str(bad), "--db", str(tmp_path / "x.duckdb")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "transfer.streams[1]" in err
    assert main(["run", str(tmp_path / "missing.toml"), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_progress_on_a_tty_uses_carriage_returns():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    s = spec.parse(SPEC)
    p = s.sweep()[0]
    prog = campaign.Progress(2, 10.0, 1, out)
    prog.start(p, 1)
    prog.finish(p, {"status": "ok", "throughput_bps": 1e9, "flags": None}, 3.0)
    assert out.getvalue().startswith("\r\033[K[1/2] 0% ETA")
    assert out.getvalue().endswith("\n") and "ok 1.000 Gbit/s" in out.getvalue()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_max_runs_runs_a_slice_and_the_next_call_continues(store):
    s = spec.parse(SPEC)
    ids = [p.run_id(s.campaign_id) for p in s.schedule(3)]
    first_host, second_host = FakeHost(), FakeHost()
    out = io.StringIO()
    first = campaign.run_campaign(s, store, out=out, environments=fake_environments(first_host, []), max_runs=3)
    done = [r["run_id"] for r in store.query("SELECT run_id FROM runs ORDER BY seq")]
    assert first_host.calls == 3 and done == ids[:3]
    assert (first.skipped, first.remaining) == (0, 5)
    assert "0 were already done; 5 left for later" in campaign.format_summary(first, "db")
    second = campaign.run_campaign(s, store, out=out, environments=fake_environments(second_host, []))
    assert second_host.calls == 5 and (second.skipped, second.remaining) == (3, 0)
    assert [r["run_id"] for r in store.query("SELECT run_id FROM runs ORDER BY seq")] == ids


def test_cli_max_runs_must_be_positive(tmp_path, capsys):
    from tcpprofile.cli import main
    with pytest.raises(SystemExit):
        main(["run", str(tmp_path / "x.toml"), "--db", str(tmp_path / "x.duckdb"), "--max-runs", "0"])
    assert "--max-runs: a whole number ≥ 1, got '0'" in capsys.readouterr().err
