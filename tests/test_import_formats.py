"""Each format the importer reads, on real files (tests/data/iperf2/: iperf 2.1.8 over loopback;
tests/data/pscheduler/: pScheduler's tools' renaming applied to real iperf3 and iperf2 output, see the
generate.py beside them): one run each, with the file's streams, throughput (the receiver's where the file
has it), interval count, RTT and host pair."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tcpprofile.store import export, formats, importer
from tcpprofile.store.db import Store

DATA = Path(__file__).resolve().parent / "data"
MIB, GIB = 2**20, 2**30


def one(path: Path):
    reader, runs = formats.read(path.read_bytes())
    assert len(runs) == 1
    return reader.name, runs[0]


def sums(run) -> list[dict]:
    return [r for r in run.intervals if r["stream"] is None]


def test_pscheduler_iperf3_result_takes_the_receivers_throughput():
    doc = json.loads((DATA / "iperf3" / "four_streams.json").read_text())
    name, run = one(DATA / "pscheduler" / "iperf3_result.json")
    assert name == "pScheduler throughput"
    r = run.run
    assert r["streams"] == 4
    assert r["throughput_bps"] == doc["end"]["sum_received"]["bits_per_second"]       # receiver-throughput-bits
    assert r["throughput_bps"] != doc["end"]["sum_sent"]["bits_per_second"]
    assert "throughput_sender_side" not in run.flags
    assert r["retransmits"] == doc["end"]["sum_sent"]["retransmits"]
    assert r["duration_s"] == doc["end"]["sum_sent"]["end"] - doc["end"]["sum_sent"]["start"]
    assert [x["bytes"] for x in sums(run)] == [it["sum"]["bytes"] for it in doc["intervals"]]
    means = [s["sender"]["mean_rtt"] for s in doc["end"]["streams"]]
    assert r["rtt_loaded_mean_ms"] == pytest.approx(sum(means) / 4 / 1e3)
    rtts = [s["rtt"] for it in doc["intervals"] for s in it["streams"]]
    assert r["rtt_file_min_ms"] == min(rtts) / 1e3
    assert r["rtt_file_min_what"] == "the smallest smoothed RTT sampled at an interval's end"
    # stream k is the k-th socket of the first interval, its cwnd iperf3's snd_cwnd
    first = doc["intervals"][0]["streams"]
    rows = [x for x in run.intervals if x["stream"] is not None][:4]
    assert [(x["bytes"], x["snd_cwnd_bytes"]) for x in rows] == [(s["bytes"], s["snd_cwnd"]) for s in first]


def test_pscheduler_run_record_gives_the_tasks_spec_and_host_pair():
    record = json.loads((DATA / "pscheduler" / "iperf3_run.json").read_text())
    doc = json.loads((DATA / "iperf3" / "one_stream.json").read_text())
    _, run = one(DATA / "pscheduler" / "iperf3_run.json")
    r = run.run
    assert (r["source_host"], r["dest_host"]) == ("dtn1.example.net", "dtn2.example.net")
    assert (r["cc_reported"], r["streams"], r["duration_target_s"]) == ("cubic", 1, 2.0)
    assert r["throughput_bps"] == doc["end"]["sum_received"]["bits_per_second"]
    assert str(r["started_at"]) == "2026-11-22 11:55:25" == record["start-time"][:19].replace("T", " ")
    assert len(sums(run)) == len(doc["intervals"]) == 4


def test_pscheduler_iperf2_result_of_four_streams():
    # pscheduler_p4.txt: [SUM] 0.0000-2.0026 sec 1.56 GBytes 6.70 Gbits/sec; intervals 0-1 (821 MBytes) and
    # 1-2 (778 MBytes); pScheduler's tool reads M as 10^6 (generate.py); iperf 2.1 prints each stream's
    # whole-test line with its own end: those are not intervals
    _, run = one(DATA / "pscheduler" / "iperf2_result.json")
    r = run.run
    assert r["streams"] == 4
    # its bytes are GBytes (×2^30) read as 10^9 (generate.py): not kept; the rate is the throughput
    assert (r["throughput_bps"], r["bytes_transferred"], r["duration_s"]) == (6.70e9, None, 2.0026)
    assert "throughput_sender_side" in run.flags            # iperf2 reports no receiver's rate for TCP
    assert [(x["start_s"], x["end_s"], x["bytes"]) for x in sums(run)] == [(0, 1, 821e6), (1, 2, 778e6)]
    assert len(run.intervals) == 2 * 5


def test_iperf2_plain():
    name, run = one(DATA / "iperf2" / "plain.txt")
    r = run.run
    assert name == "iperf2" and r["streams"] == 1
    # [  1] 0.0000-2.0187 sec  1.82 GBytes  7.75 Gbits/sec
    # three printed digits: the rate is the throughput; the bytes agree with it to 0.5 % but are not kept
    assert (r["throughput_bps"], r["bytes_transferred"], r["duration_s"]) == (7.75e9, None, 2.0187)
    assert 8 * 1.82 * GIB / 2.0187 == pytest.approx(7.75e9, rel=0.01)
    assert "throughput_sender_side" in run.flags and r["cc_reported"] is None
    assert [x["bytes"] for x in sums(run)] == [round(v * MIB) for v in (228, 468, 509, 660)]
    assert r["rtt_file_min_ms"] == 0.035 and r["rtt_file_min_what"] == "iperf2 irtt, the handshake's RTT"
    assert (r["source_host"], r["dest_host"]) == ("127.0.0.1", "127.0.0.1")


def test_iperf2_enhanced_reads_retries_cwnd_and_rtt():
    _, run = one(DATA / "iperf2" / "enhanced.txt")
    r = run.run
    assert (r["cc_reported"], r["retransmits"], r["throughput_bps"]) == ("cubic", 22, 4.40e9)
    rows = [x for x in run.intervals if x["stream"] == 0]
    # 4220K/153(212) us … : cwnd in KByte, the smoothed RTT in µs, Rtry per interval
    assert [x["snd_cwnd_bytes"] for x in rows] == [4220 * 1024] * 4
    assert [x["rtt_us"] for x in rows] == [153, 49, 7431, 1675]
    assert [x["retransmits"] for x in rows] == [5, 5, 4, 8]
    assert r["rtt_loaded_min_ms"] == 0.049 and r["rtt_loaded_mean_ms"] == pytest.approx((153 + 49 + 7431 + 1675) / 4e3)
    assert r["rtt_file_min_ms"] == 0.030                   # irtt=30: the handshake's, below any loaded sample
    assert str(r["started_at"]) == "2026-11-28 07:57:39"


def test_iperf2_four_streams_with_sum_lines():
    _, run = one(DATA / "iperf2" / "p4.txt")
    r = run.run
    assert r["streams"] == 4
    # [SUM] 0.0000-2.0050 sec  2.90 GBytes  12.4 Gbits/sec  23717/0  77
    assert (r["throughput_bps"], r["retransmits"], r["duration_s"]) == (12.4e9, 77, 2.0050)
    # TCP window size: 2.00 MByte (WARNING: requested 1.00 MByte)
    assert (r["socket_buffer_bytes"], r["effective_socket_buffer_bytes"]) == (MIB, 2 * MIB)
    assert [x["bytes"] for x in sums(run)] == [round(v * MIB) for v in (591, 986, 651, 736)]
    # streams by transfer id: [  1] is stream 0 (228 MBytes in the first interval), [  4] stream 3 (70.1)
    first = [x for x in run.intervals if x["stream"] is not None and x["start_s"] == 0]
    assert [x["bytes"] for x in sorted(first, key=lambda x: x["stream"])] == \
        [round(v * MIB) for v in (228, 69.3, 223, 70.1)]
    assert r["rtt_file_min_ms"] == 0.009


def test_iperf2_csv_counts_are_exact():
    _, run = one(DATA / "iperf2" / "csv.csv")
    r = run.run
    # …,1,0.0-2.0,718536764,2806259430
    # the duration from the exact counts: 8·bytes/speed, within the printed 0.0-2.0's rounding
    assert (r["streams"], r["bytes_transferred"], r["throughput_bps"]) == (1, 718536764, 2806259430)
    assert r["duration_s"] == 8 * 718536764 / 2806259430 == pytest.approx(2.0, abs=0.05)
    assert [x["bytes"] for x in sums(run)] == [196739132, 162004992, 184942592, 174718976]
    assert r["rtt_file_min_ms"] is None and str(r["started_at"]) == "2026-11-28 07:57:45"


def test_iperf2_csv_four_streams_without_sum_lines_adds_them_up():
    _, run = one(DATA / "iperf2" / "csv_p4.csv")
    finals = (172621884, 157810748, 230555708, 139460668)
    rates = (672879622, 614135331, 887510520, 543066907)
    r = run.run
    assert (r["streams"], r["bytes_transferred"], r["throughput_bps"]) == (4, sum(finals), sum(rates))
    assert sums(run)[0]["bytes"] == 62259260 + 43909180 + 59768892 + 46530620
    assert len(sums(run)) == 4


@pytest.mark.parametrize("content,reason", [
    ('{"foo": 1}', "not an iperf3 -J, pScheduler or iperf2 result: JSON, but not an object with intervals/summary "
                   "(a pScheduler throughput result) or result-merged (a pScheduler run record); an object with "
                   "start/intervals/end (iperf3 -J)"),
    ("hello\n", "not an iperf3 -J, pScheduler or iperf2 result: looked for JSON or lines time,srcaddress,"),
    ('[1, 2]', "not an iperf3 -J, pScheduler or iperf2 result: JSON, but not"),
])
def test_a_file_no_reader_recognises_says_what_was_looked_for(content, reason, tmp_path):
    (tmp_path / "f").write_text(content)
    with Store.open(tmp_path / "s.duckdb") as store:
        _, (res,) = importer.import_files(store, [tmp_path / "f"])
    assert res.run_id is None and res.reason.startswith(reason)


def _edit(src: Path, dst: Path, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text
    dst.write_text(text.replace(old, new, 1))
    return dst


@pytest.mark.parametrize("src,old,new,reason", [
    # a [SUM] 2 % above its streams: beyond the 0.5 % that three printed digits allow
    ("iperf2/p4.txt", "[SUM] 0.0000-0.5000 sec   591 MBytes", "[SUM] 0.0000-0.5000 sec   603 MBytes",
     "line 13.bytes: 632291328 is not the sum over its streams (619079271) to 0.5%"),
    # the whole-test rate 10 % off its bytes and duration
    ("iperf2/p4.txt", "2.90 GBytes  12.4 Gbits/sec", "2.90 GBytes  13.7 Gbits/sec",
     "line 37.bits_per_second: 1.37e+10 bit/s disagrees with 3113851290 bytes over 2.005 s"),
    ("iperf2/csv.csv", "0.0-2.0,718536764,2806259430", "0.0-2.0,718536764,2506259430",
     "line 5.bits_per_second: 2.50626e+09 bit/s and 718536764 bytes make 2.294 s, not the printed 2 s"),
    ("iperf2/csv.csv", "1,0.5-1.0,162004992", "1,0.5-1.0,-5", "line 2: "),
    ("iperf2/enhanced.txt", "TCP port", "UDP port", "line 2: a UDP test: only TCP runs are supported"),
    ("pscheduler/iperf3_run.json", '"parallel": 1', '"parallel": 2',
     "task.test.spec.parallel: 2, but the intervals have 1 streams"),
    ("pscheduler/iperf3_run.json", '"succeeded": true', '"succeeded": false',
     "pScheduler: the run failed: no error given"),
    ("pscheduler/iperf3_run.json", '"duration": "PT2S"', '"duration": "2s"',
     "task.test.spec.duration: '2s' is not an ISO 8601 duration"),
    ("pscheduler/iperf3_run.json", '"state": "finished"', '"state": "running"',
     "state: 'running': the run did not finish"),
    ("pscheduler/iperf3_run.json", '"type": "throughput"', '"type": "latency"',
     "task.test.type: 'latency': only throughput runs are results of a transfer"),
    ("pscheduler/iperf3_result.json", '"receiver-throughput-bits": 19269698597.940556',
     '"receiver-throughput-bits": -1', "summary.summary.receiver-throughput-bits: -1 is outside"),
])
def test_incoherent_files_are_rejected_naming_the_line_or_field(src, old, new, reason, tmp_path):
    bad = _edit(DATA / src, tmp_path / Path(src).name, old, new)
    with Store.open(tmp_path / "s.duckdb") as store:
        _, (res,) = importer.import_files(store, [bad])
        assert store.query("SELECT count(*) AS n FROM runs") == [{"n": 0}]
    assert res.run_id is None and res.reason.startswith(reason), res.reason


def test_the_host_pair_and_format_are_stored_with_the_run(tmp_path):
    files = [DATA / "pscheduler" / "iperf3_run.json", DATA / "iperf2" / "p4.txt", DATA / "iperf3" / "one_stream.json"]
    with Store.open(tmp_path / "s.duckdb") as store:
        _, results = importer.import_files(store, files)
        rows = store.query("SELECT r.source_file, l.source_host, l.host, l.calibration_json FROM runs r "
                           "JOIN links l USING (link_id) ORDER BY r.source_file")
    assert [r.format for r in results] == ["pScheduler throughput", "iperf2", "iperf3 -J"]
    got = {Path(r["source_file"]).name: (r["source_host"], r["host"], json.loads(r["calibration_json"])["format"])
           for r in rows}
    assert got == {"iperf3_run.json": ("dtn1.example.net", "dtn2.example.net", "pScheduler throughput"),
                   "p4.txt": ("127.0.0.1", "127.0.0.1", "iperf2"),
                   "one_stream.json": ("127.0.0.1", "127.0.0.1", "iperf3 -J")}
    # the pair leaves the store with the run: export --what runs carries source_host beside host
    with Store.open(tmp_path / "s.duckdb", read_only=True) as store:
        out = io.StringIO()
        export.export(store, "runs", "jsonl", out)
    pairs = {Path(r["source_file"]).name: (r["source_host"], r["host"])
             for r in map(json.loads, out.getvalue().splitlines())}
    assert pairs["iperf3_run.json"] == ("dtn1.example.net", "dtn2.example.net")


def test_iperf2_csv_enhanced_with_sum_lines(tmp_path):
    # iperf 2.1.8 wrote the plain fields with -e (csv_p4.csv); these lines follow Locale.c's
    # reportCSV_bw_tcp_write_enhanced_format (17 fields, tcpcwnd in KByte, tcprtt in µs, the sum's id -1)
    header = "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,writecnt,writeerr," \
             "tcpretry,tcpcwnd,tcppcwnd,tcprtt,tcprttvar"
    rows = [header]
    for a, b in ((0.0, 1.0), (1.0, 2.0), (0.0, 2.0)):
        n = int(b - a)
        for tid, port, rtt in ((1, 40000, 45000 + int(a)), (2, 40002, 46000)):
            rows.append(f"20260101120000.000,10.0.0.1,{port},10.0.0.2,5001,{tid},{a},{b},{125000000 * n},1000000000,"
                        f"{953 * n},0,{tid * n},1000,700,{rtt},300")
        rows.append(f"20260101120000.000,10.0.0.1,0,10.0.0.2,5001,-1,{a},{b},{250000000 * n},2000000000,"
                    f"{1906 * n},0,{3 * n},0,0,0,0")
    (tmp_path / "e.csv").write_text("\n".join(rows) + "\n")
    name, run = one(tmp_path / "e.csv")
    r = run.run
    assert name == "iperf2 -y C"
    assert (r["streams"], r["throughput_bps"], r["bytes_transferred"], r["duration_s"], r["retransmits"]) == \
        (2, 2e9, 500_000_000, 2.0, 6)
    assert [x["bytes"] for x in sums(run)] == [250_000_000] * 2
    assert {x["snd_cwnd_bytes"] for x in run.intervals if x["stream"] is not None} == {1000 * 1024}
    assert r["rtt_file_min_ms"] == 45.0 and r["rtt_loaded_min_ms"] == 45.0
    assert (r["source_host"], r["dest_host"]) == ("10.0.0.1", "10.0.0.2")
