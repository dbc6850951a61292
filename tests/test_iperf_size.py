"""Fixed-size transfers timed by their delivery (iperf.size_request_bytes, delivered_at, coarsened, parse):
iperf3 -n ends when the client has written F into its sockets, so a transfer is asked for F plus what the
send buffers can hold and timed when the receiver had read F, on 0.1 s intervals summed back to 1 s."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from tcpprofile.measure import iperf

DATA = Path(__file__).parent / "data" / "iperf3"


def test_autotuned_send_buffers_from_tcp_sndbuf_expand():
    """tcp_sndbuf_expand's arithmetic by hand: MSS 8948 → per_mss = roundup_pow_of_two(8948 + 320 + 320) + 256 =
    16640 B; at 5 Gbit/s, 130 ms, β = 0.7 × BDP the window C·τ + β = 138.1 MB, slow start's peak twice that:
    30,873 segments, × 2 × 16640 B; MSS 1448 → 4096 + 256 = 4352 B per segment; a tiny window: 10 segments
    a flow."""
    window = 5e9 * 0.13 / 8 * 1.7
    assert iperf.autotuned_send_buffers_bytes(window, 8948, 1) == 2 * 30873 * 16640
    assert iperf.autotuned_send_buffers_bytes(window, 8948, 1) / window == pytest.approx(7.44, abs=0.01)
    assert iperf.autotuned_send_buffers_bytes(10**6, 1448, 1) == 2 * 1382 * 4352
    assert iperf.autotuned_send_buffers_bytes(1000, 8948, 3) == 2 * 30 * 16640


def test_the_request_adds_what_the_send_and_receive_buffers_can_hold():
    # Linux grants twice the -w request per socket (net/core/sock.c), and iperf3 sets -w on both ends:
    # 10 streams × (2 + 2) × 128 MiB
    assert iperf.size_request_bytes(10**9, 10, 128 * 2**20) == 10**9 + 10 * (2 + 2) * 128 * 2**20  # sndbuf + rcvbuf
    assert iperf.size_request_bytes(10**9, 1, None) == 10**9          # autotuned, remote: no bound, F asked for
    assert iperf.size_request_bytes(10**9, 1, None, 7 * 10**8) == 17 * 10**8   # autotuned, emulated: F + buffers
    argv = iperf.client_argv("10.0.0.2", 5201, cc="cubic", streams=2, socket_buffer=1000, transfer_bytes=10**6,
                             duration_s=None, reverse=False)
    assert argv[argv.index("-n") + 1] == str(10**6 + 8000) and argv[argv.index("-i") + 1] == "0.1"
    argv = iperf.client_argv("10.0.0.2", 5201, cc="cubic", streams=2, socket_buffer=None, transfer_bytes=None,
                             duration_s=8, reverse=False)
    assert argv[argv.index("-i") + 1] == "1" and "-n" not in argv
    argv = iperf.client_argv("10.0.0.2", 5201, cc="cubic", streams=2, socket_buffer=None, transfer_bytes=10**6,
                             duration_s=None, reverse=False, autotuned_bytes=5 * 10**6)
    assert argv[argv.index("-n") + 1] == str(6 * 10**6) and "-w" not in argv
    # what parse() sums the reports into: 1 s bins for the 0.1 s size reports, nothing for duration runs
    assert iperf.stored_interval_s(10**6) == 1 and iperf.stored_interval_s(None) is None


def intervals(*spans):
    return tuple(NS(sum=NS(start=a, end=b, bytes=n)) for a, b, n in spans)


def test_delivery_time_interpolates_inside_the_interval_that_reaches_F():
    its = intervals((0.0, 0.1, 100), (0.1, 0.2, 300), (0.2, 0.3, 400))
    assert iperf.delivered_at(its, 100) == pytest.approx(0.1)
    assert iperf.delivered_at(its, 250) == pytest.approx(0.1 + 0.1 * 150 / 300)
    assert iperf.delivered_at(its, 800) == pytest.approx(0.3)
    assert iperf.delivered_at(its, 801) is None                        # never read: None (parse flags it)
    assert iperf.delivered_at(intervals((0.0, 0.1, 0), (0.1, 0.2, 50)), 0) == pytest.approx(0.1)


def row(stream, a, b, n, cwnd=None, retr=None):
    return {"stream": stream, "start_s": a, "end_s": b, "bytes": n, "bits_per_second": 8 * n / (b - a),
            "snd_cwnd_bytes": cwnd, "rtt_us": cwnd, "retransmits": retr, "omitted": False}


def test_coarsened_sums_bytes_per_stream_into_one_second_bins():
    fine = []
    for k in range(25):                                   # 2.5 s of 0.1 s intervals, two streams
        a, b = round(0.1 * k, 10), round(0.1 * (k + 1), 10)
        fine += [row(0, a, b, 10 * k, cwnd=k, retr=1), row(None, a, b, 20 * k, cwnd=k, retr=2)]
    bins = iperf.coarsened(fine, 1.0)
    by = {(r["stream"], round(r["end_s"], 6)): r for r in bins}
    assert set(by) == {(s, e) for s in (0, None) for e in (1.0, 2.0, 2.5)} and len(bins) == 6
    first, last = by[(0, 1.0)], by[(0, 2.5)]
    assert first["start_s"] == 0.0 and first["bytes"] == sum(10 * k for k in range(10))
    assert first["bits_per_second"] == pytest.approx(8 * first["bytes"] / 1.0)
    assert first["snd_cwnd_bytes"] == 9 and first["retransmits"] == 10          # last sample; retransmits add up
    assert last["start_s"] == pytest.approx(2.0) and last["bytes"] == sum(10 * k for k in range(20, 25))
    assert last["bits_per_second"] == pytest.approx(8 * last["bytes"] / 0.5)
    assert sum(r["bytes"] for r in bins if r["stream"] is None) == sum(r["bytes"] for r in fine if r["stream"] is None)


def test_parse_rates_a_size_transfer_by_its_delivery_and_flags_one_never_delivered():
    doc = json.loads((DATA / "four_streams.json").read_text())        # the receiver's intervals are the server's
    server = doc["server_output_json"]["intervals"]
    received = sum(it["sum"]["bytes"] for it in server)
    F = received // 2
    expected_t = iperf.delivered_at(iperf.iperf_json.read(copy.deepcopy(doc)).server.intervals, F)
    p = iperf.parse(copy.deepcopy(doc), size_bytes=F)
    assert p.run["size_delivered_s"] == pytest.approx(expected_t)
    assert p.run["throughput_bps"] == pytest.approx(8 * F / expected_t) and "size_undelivered" not in p.flags
    assert 0 < expected_t < p.run["duration_s"]
    q = iperf.parse(copy.deepcopy(doc), size_bytes=received + 1)       # more than the receiver ever read
    assert q.run["size_delivered_s"] is None and "size_undelivered" in q.flags
    assert q.run["throughput_bps"] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    d = iperf.parse(copy.deepcopy(doc))                                   # duration mode: iperf3's own rate
    assert d.run["size_delivered_s"] is None and d.run["throughput_bps"] == q.run["throughput_bps"]
