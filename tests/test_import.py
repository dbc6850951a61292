"""Importer on real iperf3 3.12 JSON (tests/data/iperf3/, made by generate.py there) and the export
round trip: the numbers that come out are the JSON's numbers."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from tcpprofile.store import export, importer
from tcpprofile.measure import iperf, iperf_json
from tcpprofile.cli import main as cli
from tcpprofile.store.db import Store

DATA = Path(__file__).resolve().parent / "data" / "iperf3"
GOOD = ["one_stream.json", "four_streams.json", "reverse.json", "size_mode.json", "omit.json"]


def doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "s.duckdb")
    yield s
    s.close()


def exported(store, what: str) -> list[dict]:
    buf = io.StringIO()
    export.export(store, what, "jsonl", buf)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


@pytest.mark.parametrize("name", GOOD)
def test_parse_matches_the_json(name):
    d = doc(name)
    p = iperf.parse(d)
    end, ts = d["end"], d["start"]["test_start"]
    assert p.run["bytes_transferred"] == end["sum_received"]["bytes"]
    assert p.run["throughput_bps"] == end["sum_received"]["bits_per_second"]
    assert p.run["streams"] == ts["num_streams"] == len(d["start"]["connected"])
    assert p.run["reverse"] == bool(ts["reverse"])
    assert p.run["cc_reported"] == end["sender_tcp_congestion"]
    assert p.run["retransmits"] == end["sum_sent"]["retransmits"]
    assert p.run["kernel"] == d["start"]["system_info"].split()[2]
    assert p.run["iperf3_version"] == "3.12"
    # intervals: the receiver's grid (what crossed the link); every stream 0..n-1 once per interval,
    # plus one sum row (stream None) per interval
    source, socket_of, has_receiver = receiver_side(d)
    streams = [r["stream"] for r in p.intervals]
    for k in range(ts["num_streams"]):
        assert streams.count(k) == len(source)
    assert streams.count(None) == len(source)
    assert set(streams) == set(range(ts["num_streams"])) | {None}
    # stream k is the sender's k-th stream, found in the receiver's output through its port pair
    for j, it in enumerate(source):
        for k in range(ts["num_streams"]):
            s = next(x for x in it["streams"] if x["socket"] == socket_of[k])
            row = [r for r in p.intervals if r["stream"] == k][j]
            assert (row["bytes"], row["start_s"], row["end_s"]) == (s["bytes"], s["start"], s["end"])
    sums = sum(r["bytes"] for r in p.intervals if r["stream"] is None)
    assert sums == sum(it["sum"]["bytes"] for it in source)
    # the sender's cwnd and RTT ride along
    assert all(r["snd_cwnd_bytes"] for r in p.intervals if r["stream"] is not None)
    assert p.flags == ([] if has_receiver else ["intervals_sender_bytes"])


def receiver_side(d):
    """(the receiver's intervals, its socket for the sender's k-th stream, whether the receiver's output
    exists); without it the sender's own intervals and sockets stand in."""
    srv = d.get("server_output_json")
    client = (d["start"]["connected"], d["intervals"])
    server = (srv["start"]["connected"], srv["intervals"]) if srv else None
    sender, receiver = (server, client) if d["start"]["test_start"]["reverse"] else (client, server)
    if receiver is None:
        return sender[1], [c["socket"] for c in sender[0]], False
    by_ports = {(c["remote_port"], c["local_port"]): c["socket"] for c in receiver[0]}
    return receiver[1], [by_ports[(c["local_port"], c["remote_port"])] for c in sender[0]], True


def test_many_streams_socket_buffer_and_loaded_rtt():
    d = doc("four_streams.json")
    p = iperf.parse(d)
    assert p.run["socket_buffer_bytes"] == d["start"]["sock_bufsize"] == 2**20
    # the kernel doubles SO_SNDBUF/SO_RCVBUF: what it granted is what iperf3 read back
    assert p.run["effective_socket_buffer_bytes"] == min(d["start"]["sndbuf_actual"], d["start"]["rcvbuf_actual"])
    assert p.run["effective_socket_buffer_bytes"] == 2 * 2**20
    means = [s["sender"]["mean_rtt"] for s in d["end"]["streams"]]
    assert p.run["rtt_loaded_mean_ms"] == pytest.approx(sum(means) / len(means) / 1e3)
    assert p.run["rtt_loaded_min_ms"] == min(s["sender"]["min_rtt"] for s in d["end"]["streams"] if s["sender"]["min_rtt"]) / 1e3
    assert p.run["duration_target_s"] == 2.0 and p.run["transfer_bytes"] is None


def test_reverse_takes_the_server_side_as_sender():
    d = doc("reverse.json")
    p = iperf.parse(d)
    assert p.run["reverse"] is True
    # the client received: its own per-stream RTTs are zero, the server's (the sender's) are used
    assert all(s["sender"]["mean_rtt"] == 0 for s in d["end"]["streams"])
    server_means = [s["sender"]["mean_rtt"] for s in d["server_output_json"]["end"]["streams"]]
    assert p.run["rtt_loaded_mean_ms"] == pytest.approx(sum(server_means) / len(server_means) / 1e3)


def test_reverse_without_server_output_flags_receiver_side_intervals():
    d = doc("reverse.json")
    del d["server_output_json"]
    p = iperf.parse(d)
    assert "intervals_receiver_side" in p.flags
    assert p.run["rtt_loaded_mean_ms"] is None
    assert len([r for r in p.intervals if r["stream"] is None]) == len(d["intervals"])


def test_size_mode():
    p = iperf.parse(doc("size_mode.json"))
    assert p.run["transfer_bytes"] == 200 * 2**20 and p.run["duration_target_s"] is None
    assert p.run["bytes_transferred"] >= 200 * 2**20


@pytest.mark.parametrize("mutate,reason", [
    (lambda d: d.pop("end"), "^end: no such section"),
    (lambda d: d.pop("intervals"), "^intervals: no such section"),
    (lambda d: d["intervals"].clear(), "^intervals: empty"),
    (lambda d: d["start"].pop("test_start"), "^start.test_start: missing"),
    (lambda d: (d["end"].pop("sum_received"), d["end"].pop("sum_sent")), "^end: .*truncated"),
])
def test_parse_rejects_incomplete_documents(mutate, reason):
    d = doc("one_stream.json")
    mutate(d)
    with pytest.raises(iperf.IperfError, match=reason):
        iperf.parse(d)


def test_import_keeps_valid_files_and_rejects_bad_ones(store):
    files = [DATA / n for n in GOOD + ["refused.json", "truncated.json"]]
    campaign_id, results = importer.import_files(store, files)
    by_name = {Path(r.path).name: r for r in results}
    assert all(by_name[n].run_id for n in GOOD)
    assert "Connection refused" in by_name["refused.json"].reason
    assert by_name["truncated.json"].reason.startswith("not JSON")
    assert store.query("SELECT mode FROM campaigns")[0]["mode"] == "import"
    assert {r["kind"] for r in store.query("SELECT kind FROM links")} == {"unknown"}
    runs = exported(store, "runs")
    assert len(runs) == len(GOOD)
    for r in runs:
        d = doc(Path(r["source_file"]).name)
        assert r["throughput_bps"] == d["end"]["sum_received"]["bits_per_second"]
        assert r["bytes_transferred"] == d["end"]["sum_received"]["bytes"]
        assert r["streams"] == d["start"]["test_start"]["num_streams"]
        assert r["variant"] == d["end"]["sender_tcp_congestion"]
        assert r["rtt_ms"] is None and r["rate_bps"] is None and r["status"] == "ok"
        # τ without --rtt: the file's smallest RTT (iperf3's min_rtt over the sender's streams [µs → ms]),
        # never above the loaded mean
        lows = [s["sender"]["min_rtt"] for s in d["end"]["streams"] if s["sender"].get("min_rtt")]
        if lows:
            assert r["rtt_measured_ms"] == min(lows) / 1e3 <= r["rtt_loaded_mean_ms"]
        assert r["repetition"] == 0
    # importing the same files again replaces, never duplicates
    importer.import_files(store, files)
    assert store.query("SELECT count(*) AS n FROM runs")[0]["n"] == len(GOOD)


def test_export_intervals_round_trip(store):
    _, results = importer.import_files(store, [DATA / "four_streams.json"])
    d = doc("four_streams.json")
    rows = exported(store, "intervals")
    assert {r["run_id"] for r in rows} == {results[0].run_id}
    parsed = iperf.parse(d).intervals
    key = lambda r: (r["start_s"], -1 if r["stream"] is None else r["stream"])
    fields = ("stream", "start_s", "end_s", "bytes", "bits_per_second", "snd_cwnd_bytes", "rtt_us", "retransmits")
    assert [tuple(r[f] for f in fields) for r in sorted(rows, key=key)] == \
        [tuple(r[f] for f in fields) for r in sorted(parsed, key=key)]
    assert len(rows) == 5 * len(d["server_output_json"]["intervals"])
    # csv carries the same rows
    buf = io.StringIO()
    export.export(store, "intervals", "csv", buf)
    table = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert len(table) == len(rows) and int(table[0]["bytes"]) == rows[0]["bytes"]


def test_parquet_export(store, tmp_path):
    importer.import_files(store, [DATA / n for n in GOOD])
    out = str(tmp_path / "runs.parquet")
    assert export.export(store, "runs", "parquet", out) == len(GOOD)
    back = store.con.execute(f"SELECT sum(bytes_transferred) FROM read_parquet('{out}')").fetchone()[0]
    assert back == sum(doc(n)["end"]["sum_received"]["bytes"] for n in GOOD)


def test_overrides_and_inferred_repetitions(store, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    d = doc("one_stream.json")
    a.write_text(json.dumps(d))
    d["start"]["timestamp"]["timesecs"] -= 100   # b ran first
    b.write_text(json.dumps(d))
    ov = importer.Overrides(variant="cubic", rtt_s=45.6e-3, rate_bps=10e9, buffer_bytes=57_000_000)
    importer.import_files(store, [a, b], ov)
    runs = {Path(r["source_file"]).name: r for r in exported(store, "runs")}
    assert runs["b.json"]["repetition"] == 0 and runs["a.json"]["repetition"] == 1
    assert runs["a.json"]["rtt_ms"] == pytest.approx(45.6) and runs["a.json"]["rate_bps"] == 10e9
    assert runs["a.json"]["buffer_bytes"] == 57_000_000


def test_cli_exit_codes_and_lines(tmp_path, capsys):
    db = str(tmp_path / "c.duckdb")
    assert cli(["import", str(DATA / "refused.json"), str(DATA / "truncated.json"), "--db", db]) == 1
    out = capsys.readouterr()
    assert out.out.count("rejected ") == 2 and "no file could be imported" in out.err
    assert "0 stored, 2 rejected; nothing written to" in out.out
    assert f"rejected {DATA / 'refused.json'}: iperf3 error: unable to connect to server" in out.out
    assert not Path(db).exists()
    assert cli(["import", str(DATA / "one_stream.json"), str(DATA / "refused.json"), "--db", db,
                "--rtt", "45.6ms"]) == 1
    out = capsys.readouterr()
    assert "1 stored, 1 rejected" in out.out and "tcpprofile import: 1 of 2 files rejected" in out.err
    assert cli(["import", str(DATA / "one_stream.json"), "--db", db, "--rtt", "soon"]) == 2
    assert "--rtt" in capsys.readouterr().err
    assert cli(["export", "--db", db, "--what", "runs", "--format", "parquet"]) == 2
    assert "--out" in capsys.readouterr().err
    assert cli(["export", "--db", db, "--what", "runs"]) == 0
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    contract = {"run_id", "variant", "streams", "socket_buffer_bytes", "effective_socket_buffer_bytes",
                "transfer_bytes", "duration_s", "rtt_ms", "rtt_measured_ms", "rate_bps", "rate_measured_bps",
                "buffer_bytes", "loss_mode", "loss_rate", "repetition", "throughput_bps", "status"}
    assert contract <= set(line)
    assert line["rtt_ms"] == pytest.approx(45.6)


def test_unreadable_and_non_json_files(store, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe")
    shutil.copy(DATA / "one_stream.json", tmp_path / "ok.json")
    _, results = importer.import_files(store, [bad, tmp_path / "missing.json", tmp_path / "ok.json"])
    reasons = [r.reason for r in results]
    assert reasons[0] == "not text (not UTF-8): not an iperf3 -J, pScheduler or iperf2 result"
    assert reasons[1].startswith("cannot read") and reasons[2] is None


def test_intervals_count_received_bytes_and_carry_the_senders_cwnd():
    # four_streams.json: client (sender) at 0.5 s intervals, server (receiver) at 1 s, --get-server-output
    d = doc("four_streams.json")
    srv = d["server_output_json"]
    p = iperf.parse(d)
    assert "intervals_sender_bytes" not in p.flags
    sums = [r for r in p.intervals if r["stream"] is None]
    assert [r["bytes"] for r in sums] == [it["sum"]["bytes"] for it in srv["intervals"]]
    assert [r["end_s"] for r in sums] == [it["sum"]["end"] for it in srv["intervals"]]
    # streams keep the sender's numbering: matched through their port pairs, not the receiver's sockets
    port_of = {c["socket"]: c["local_port"] for c in d["start"]["connected"]}
    client_socket = {port_of[c]: c for c in port_of}
    for k, it in enumerate(srv["intervals"]):
        rows = [r for r in p.intervals if r["stream"] is not None][4 * k:4 * k + 4]
        for r_stream in it["streams"]:
            peer = next(c["remote_port"] for c in srv["start"]["connected"] if c["socket"] == r_stream["socket"])
            i = [c["socket"] for c in d["start"]["connected"]].index(client_socket[peer])
            row = next(r for r in rows if r["stream"] == i)
            assert row["bytes"] == r_stream["bytes"]
            end = it["sum"]["end"]
            nearest = min(d["intervals"], key=lambda x: abs(x["sum"]["end"] - end))
            assert row["snd_cwnd_bytes"] == nearest["streams"][i]["snd_cwnd"] > 0
    # every sender retransmit is counted once
    assert sum(r["retransmits"] or 0 for r in sums) == sum(it["sum"]["retransmits"] for it in d["intervals"])


def test_intervals_without_the_receivers_output_are_flagged_sender_bytes():
    p = iperf.parse(doc("one_stream.json"))
    assert "intervals_sender_bytes" in p.flags
    assert [r["bytes"] for r in p.intervals if r["stream"] is None] == [
        it["sum"]["bytes"] for it in doc("one_stream.json")["intervals"]]


def _set(d: dict, path: str, value) -> dict:
    *parents, last = path.split(".")
    for k in parents:
        d = d[int(k)] if isinstance(d, list) else d[k]
    if isinstance(d, list):
        d[int(last)] = value
    else:
        d[last] = value
    return d


@pytest.mark.parametrize("name,path,value,reason", [
    ("one_stream.json", "end.sum_received.bits_per_second", float("nan"),
     "end.sum_received.bits_per_second: NaN is not a rate"),
    ("one_stream.json", "end.sum_received.bits_per_second", -1.0,
     "end.sum_received.bits_per_second: -1.0 is negative: not a rate"),
    ("one_stream.json", "end.sum_received.bytes", 10**30, "end.sum_received.bytes: 1000000000000000000000000000000 "
                                                          "is above 9.22337e+18"),
    ("one_stream.json", "end.sum_received.end", float("inf"), "end.sum_received.end: Infinity is not a time"),
    ("one_stream.json", "end.sum_received.start", "0", "end.sum_received.start: '0' is not a time"),
    ("one_stream.json", "intervals.1", {}, "intervals[1].streams: missing"),
    ("one_stream.json", "intervals.2.sum.bytes", 4254597121, "intervals[2].sum.bytes: 4254597121 is not the sum "
                                                             "over intervals[2].streams (4254597120)"),
    ("one_stream.json", "start.test_start.num_streams", 2, "start.connected: 1 connections for 2 streams"),
    ("one_stream.json", "start.timestamp.timesecs", 1e20, "start.timestamp.timesecs: 1e+20 is above"),
    ("one_stream.json", "end.sender_tcp_congestion", ["cubic"], "end.sender_tcp_congestion: a list is not a string"),
    # 1,000 bytes more (its rate still agrees to 0.1 %): the streams no longer add up to the total
    ("four_streams.json", "end.streams.2.receiver.bytes", 1198915584 + 1000,
     "end.sum_received.bytes: 4820828160 is not the sum over end.streams[*].receiver (4820829160)"),
    ("four_streams.json", "intervals.0.streams.3.socket", 5, "intervals[0].streams[3].socket: 5 is not one of"),
    ("four_streams.json", "server_output_json.intervals.1.streams", [],
     "server_output_json.intervals[1].streams: 0 streams, but the test has 4"),
    ("reverse.json", "end.sum_received.bits_per_second", 1e9,
     "end.sum_received.bits_per_second: 1e+09 bit/s disagrees with 5467406336 bytes over 2.00004 s"),
])
def test_incoherent_documents_are_rejected_naming_the_path(name, path, value, reason):
    d = doc(name)
    _set(d, path, value)
    with pytest.raises(iperf.IperfError) as err:
        iperf.parse(json.loads(json.dumps(d)))
    assert str(err.value).startswith(reason)


def test_a_batch_goes_on_past_bad_files_each_stored_or_rolled_back_alone(store, tmp_path, monkeypatch):
    nan = doc("one_stream.json")
    nan["end"]["sum_received"]["bits_per_second"] = float("nan")
    (tmp_path / "nan.json").write_text(json.dumps(nan))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "digits.json").write_text('{"start": ' + "9" * 5000 + "}")
    for n in ("one_stream.json", "reverse.json", "size_mode.json"):
        shutil.copy(DATA / n, tmp_path / n)
    # the store refuses reverse.json's run (as a full disk would): its link goes with it
    put_run = store.put_run

    def refusing(row, *a, **kw):
        put_run(row, *a, **kw)
        if row["source_file"].endswith("reverse.json"):
            raise duckdb.IOException("disk full")
    monkeypatch.setattr(store, "put_run", refusing)
    names = ["nan.json", "one_stream.json", "deep.json", "reverse.json", "digits.json", "size_mode.json"]
    _, results = importer.import_files(store, [tmp_path / n for n in names])
    got = {Path(r.path).name: r for r in results}
    assert got["nan.json"].reason == "end.sum_received.bits_per_second: NaN is not a rate"
    assert got["deep.json"].reason.startswith("not JSON")
    assert got["digits.json"].reason.startswith("not JSON")
    assert got["reverse.json"].reason == "not stored: disk full"
    assert all(got[n].run_id and got[n].reason is None for n in ("one_stream.json", "size_mode.json"))
    assert sorted(Path(r["source_file"]).name for r in store.query("SELECT source_file FROM runs")) == \
        ["one_stream.json", "size_mode.json"]
    assert store.query("SELECT count(*) AS n FROM links") == [{"n": 2}]
    assert store.query("SELECT count(DISTINCT run_id) AS n FROM intervals") == [{"n": 2}]
    assert store.query("SELECT count(*) AS n FROM campaigns") == [{"n": 1}]


def test_a_batch_of_only_refused_files_leaves_no_campaign(store, tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({**doc("one_stream.json"), "intervals": "x"}))
    _, results = importer.import_files(store, [tmp_path / "a.json", DATA / "refused.json"])
    assert [r.reason for r in results] == ["intervals: 'x' is not a list",
                                           "iperf3 error: unable to connect to server: Connection refused"]
    assert all(store.query(f"SELECT count(*) AS n FROM {t}") == [{"n": 0}]
               for t in ("campaigns", "links", "runs", "intervals", "cwnd"))


def test_omit_mode_the_interval_that_straddles_iperf3s_clock_restart():
    # iperf3 3.12 -O 1: after the omitted intervals its clock restarts inside the next interval, which is
    # printed ending before it starts; its rate is over iperf3's own `seconds`
    d = doc("omit.json")
    quirk = d["intervals"][1]["sum"]
    assert d["intervals"][0]["sum"]["omitted"] and quirk["end"] < quirk["start"]
    assert quirk["bits_per_second"] == pytest.approx(quirk["bytes"] * 8 / quirk["seconds"], rel=1e-12)
    sender = iperf_json.read(d).client.intervals
    assert sender[1].sum.start == max(0.0, quirk["end"] - quirk["seconds"])
    assert all(it.sum.end >= it.sum.start for it in sender)
    # the same end < start anywhere else is refused
    d["intervals"][2]["sum"]["start"] = d["intervals"][2]["sum"]["end"] + 0.1
    with pytest.raises(iperf.IperfError, match=r"^intervals\[2\]"):
        iperf.parse(d)


# -- iperf3 --bidir (tests/data/iperf3/bidir*.json: real iperf3 3.12 over loopback, generate.py) ------------
BIDIR = ["bidir.json", "bidir_four.json"]
_SUFFIX = {"forward": "", "reverse": "_bidir_reverse"}


@pytest.mark.parametrize("name", BIDIR)
def test_bidir_each_direction_is_read_from_its_own_streams_and_sums(name):
    d = doc(name)
    n = d["start"]["test_start"]["num_streams"]
    assert len(d["start"]["connected"]) == 2 * n and iperf_json.directions(d) == ("forward", "reverse")
    for direction in ("forward", "reverse"):
        p = iperf.parse(d, direction)
        end = d["end"]
        received = end["sum_received" + _SUFFIX[direction]]
        assert p.run["reverse"] is (direction == "reverse")
        assert p.run["streams"] == n
        assert (p.run["throughput_bps"], p.run["bytes_transferred"]) == (received["bits_per_second"], received["bytes"])
        assert p.run["retransmits"] == end["sum_sent" + _SUFFIX[direction]]["retransmits"]
        # the loaded RTT is the sending side's, from the streams it sends on only
        client_sends = direction == "forward"
        side = d if client_sends else d.get("server_output_json")
        if side is None:
            assert p.run["rtt_loaded_mean_ms"] is None
        else:
            means = [s["sender"]["mean_rtt"] for s in side["end"]["streams"] if s["sender"]["sender"]]
            assert len(means) == n
            assert p.run["rtt_loaded_mean_ms"] == pytest.approx(sum(means) / n / 1e3)
        # the 1 s rows follow the receiver's grid of this direction: its `sum` or `sum_bidir_reverse`
        receiver = d if not client_sends else d.get("server_output_json") or d
        key = "sum" + _SUFFIX[direction]
        assert [r["bytes"] for r in p.intervals if r["stream"] is None] == \
            [it[key]["bytes"] for it in receiver["intervals"]]
        assert sorted({r["stream"] for r in p.intervals} - {None}) == list(range(n))


def test_bidir_receiving_sockets_rtt_is_not_the_paths():
    # the client's socket that only receives reports microseconds (its ACKs' RTT): never the reverse run's
    d = doc("bidir.json")
    ack_rtts = [s["sender"]["mean_rtt"] for s in d["end"]["streams"] if not s["sender"]["sender"]]
    assert ack_rtts and all(ack_rtts)
    assert iperf.parse(d, "reverse").run["rtt_loaded_mean_ms"] is None


def test_bidir_is_never_read_as_one_direction():
    d = doc("bidir.json")
    with pytest.raises(iperf.IperfError, match="^end.sum_sent_bidir_reverse: a --bidir result holds two directions"):
        iperf.parse(d)
    with pytest.raises(iperf.IperfError, match="^end: not a --bidir result"):
        iperf.parse(doc("one_stream.json"), "reverse")


@pytest.mark.parametrize("path,value,reason", [
    ("intervals.1.streams.1.sender", None, "intervals[1].streams[1].sender: missing: a --bidir stream says which"),
    ("end.sum_received_bidir_reverse.bits_per_second", 1e9,
     "end.sum_received_bidir_reverse.bits_per_second: 1e+09 bit/s disagrees with 4161667072 bytes"),
    ("intervals.2.sum_bidir_reverse.bits_per_second", 1e9,
     "intervals[2].sum_bidir_reverse.bits_per_second: 1e+09 bit/s disagrees"),
    ("end.streams.1.receiver.bytes", 4161667072 + 1000, "end.sum_received_bidir_reverse.bytes: 4161667072 is not "
                                                        "the sum over end.streams[*].receiver (reverse) (4161668072)"),
    ("start.connected", [], "start.connected: 0 connections for 1 streams in each direction (--bidir)"),
    ("start.test_start.reverse", 1, "start.test_start.reverse: true in a --bidir result"),
])
def test_incoherent_bidir_documents_are_rejected_naming_the_path(path, value, reason, store, tmp_path):
    d = doc("bidir.json")
    if value is None:
        *parents, last = path.split(".")
        _set(d, ".".join(parents), {k: v for k, v in _get(d, parents).items() if k != last})
    else:
        _set(d, path, value)
    (tmp_path / "bad.json").write_text(json.dumps(d))
    _, (result,) = importer.import_files(store, [tmp_path / "bad.json"])
    assert result.run_id is None and result.reason.startswith(reason)
    assert store.query("SELECT count(*) AS n FROM runs") == [{"n": 0}]


def _get(d, parents):
    for k in parents:
        d = d[int(k)] if isinstance(d, list) else d[k]
    return d


def test_bidir_import_stores_both_directions_and_says_so(tmp_path, capsys):
    db = str(tmp_path / "b.duckdb")
    files = [str(DATA / n) for n in BIDIR]
    assert cli(["import", *files, "--db", db, "--rtt", "1ms"]) == 0
    out = capsys.readouterr().out
    assert "2 stored, 0 rejected (4 runs: a --bidir file gives one per direction)" in out
    with Store.open(db, read_only=True) as store:
        runs = store.query("SELECT run_id, source_file, reverse, flags, throughput_bps, streams FROM runs")
    assert len(runs) == 4
    for name in BIDIR:
        d = doc(name)
        mine = {r["reverse"]: r for r in runs if Path(r["source_file"]).name == name}
        assert set(mine) == {False, True}
        assert mine[False]["throughput_bps"] == d["end"]["sum_received"]["bits_per_second"]
        assert mine[True]["throughput_bps"] == d["end"]["sum_received_bidir_reverse"]["bits_per_second"]
        assert all("bidir" in r["flags"].split(",") for r in mine.values())
        line = next(x for x in out.splitlines() if x.startswith(f"stored   {DATA / name}"))
        n = d["start"]["test_start"]["num_streams"]
        assert (f"--bidir forward (client to server): cubic n={n} "
                f"{d['end']['sum_received']['bits_per_second'] / 1e9:.3f} Gbit/s, run {mine[False]['run_id']}") in line
        assert (f"--bidir reverse (server to client, stored as -R): cubic n={n} "
                f"{d['end']['sum_received_bidir_reverse']['bits_per_second'] / 1e9:.3f} Gbit/s, "
                f"run {mine[True]['run_id']}") in line
    # again: replaced, not duplicated
    assert cli(["import", *files, "--db", db, "--rtt", "1ms"]) == 0
    with Store.open(db, read_only=True) as store:
        assert store.query("SELECT count(*) AS n FROM runs") == [{"n": 4}]


def test_bidir_directions_are_stored_together_or_not_at_all(store, monkeypatch):
    put_run = store.put_run

    def refusing(row, *a, **kw):
        put_run(row, *a, **kw)
        if row["reverse"]:
            raise duckdb.IOException("disk full")
    monkeypatch.setattr(store, "put_run", refusing)
    _, (result,) = importer.import_files(store, [DATA / "bidir.json"])
    assert result.run_id is None and result.reason == "not stored: disk full"
    assert all(store.query(f"SELECT count(*) AS n FROM {t}") == [{"n": 0}] for t in ("runs", "links", "intervals"))
