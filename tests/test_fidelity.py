"""Per-run fidelity (tcpprofile.measure.fidelity): the verdicts against their definitions, tcp_info parsing,
and the host sampler telling foreign CPU use from our own (real processes, read back from /proc)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time

import pytest

from tcpprofile.measure.fidelity import connections, host, monitors, thresholds, verdicts

SS_OUTPUT = (  # `ss -tinH state established dport = :5301` with a control and a data connection
    "0 0 10.77.1.1:40000 10.77.1.2:5301\n"
    "\t cubic wscale:14,14 rto:248 rtt:46.1/0.1 mss:8948 bytes_sent:186 bytes_acked:187 minrtt:45.420\n"
    "0 0 10.77.1.1:40002 10.77.1.2:5301\n"
    "\t cubic wscale:14,14 rto:248 rtt:46.4/0.06 mss:8948 bytes_acked:11215085470 minrtt:45.597 snd_wnd:306233344\n")


class FakeHost:
    def __init__(self, out: str):
        self.out, self.argv = out, None

    def run(self, role, argv, check=True, timeout=None):
        self.argv = argv
        return subprocess.CompletedProcess(argv, 0, self.out, "")


def test_min_rtt_reads_data_connections_only():
    host = FakeHost(SS_OUTPUT)
    assert connections.min_rtt_s(host, "sender", 5301) == pytest.approx(45.597e-3)   # the control connection is left out
    assert "dport = :5301" in host.argv
    assert connections.min_rtt_s(host, "sender", 5301, min_bytes=1) == pytest.approx(45.420e-3)
    assert connections.min_rtt_s(FakeHost(""), "sender", 5301) is None


@pytest.mark.parametrize("base, target, off", [(0.49, 0.4, False), (0.51, 0.4, True), (0.31, 0.4, False),
                                               (0.29, 0.4, True), (46.0, 45.6, False), (46.1, 45.6, True),
                                               (362.4, 366.0, False), (362.3, 366.0, True),
                                               # whole-ms samples of the timestamp option: up to a tick low
                                               (11.0, 11.8, False), (10.0, 11.8, True), (11.5, 11.8, True),
                                               (45.0, 45.6, False), (44.0, 45.6, True), (12.0, 11.8, True)])
def test_rtt_tolerance_is_max_of_1_percent_and_0_1_ms(base, target, off):
    assert verdicts.rtt_off(base / 1e3, target / 1e3) is off          # the readings as ss prints them [ms], in s


def test_periodic_loss_must_be_exactly_one_in_n_up_to_one():
    assert not verdicts.loss_off("periodic", 1 / 500, 500, seen=5000, dropped=10)
    assert not verdicts.loss_off("periodic", 1 / 500, 500, seen=5000, dropped=11)
    assert verdicts.loss_off("periodic", 1 / 500, 500, seen=5000, dropped=12)
    assert verdicts.loss_off("periodic", 1 / 500, 500, seen=5000, dropped=0)
    assert not verdicts.loss_off("none", 0.0, 0, seen=5000, dropped=0)


def test_uniform_loss_within_the_binomial_interval():
    # p = 1e-3 over 10^6 packets: mean 1000, sd 31.6; the band is ±3.29 sd (+½)
    assert not verdicts.loss_off("uniform", 1e-3, 0, seen=10**6, dropped=1000)
    assert not verdicts.loss_off("uniform", 1e-3, 0, seen=10**6, dropped=1104)
    assert verdicts.loss_off("uniform", 1e-3, 0, seen=10**6, dropped=1106)
    assert verdicts.loss_off("uniform", 1e-3, 0, seen=10**6, dropped=880)


def test_engine_late_sums_directions_and_scales_with_tau():
    cols = {"engine_fwd_late_mean_s": 15.0e-6, "engine_rev_late_mean_s": 4.0e-6,
            "engine_fwd_late_max_s": 900.0e-6, "engine_rev_late_max_s": 400.0e-6}
    assert not verdicts.engine_late(cols, 0.4e-3)                       # 0.019 ms added <= G/2 = 0.02 ms
    assert verdicts.engine_late({**cols, "engine_rev_late_mean_s": 6.0e-6}, 0.4e-3)
    # measured at 10 Gbit/s, 0.4 ms, β = 0.5 MB (CUBIC n = 1, 9.0 Gbit/s): fwd +32 µs, rev −3.5 µs → late;
    # 5 Gbit/s at 0.8 ms, same β (4.90 of 4.95 Gbit/s): fwd +14.8, rev −5.7 → not; 11.8 ms: −13.6, −18.0
    assert verdicts.engine_late({**cols, "engine_fwd_late_mean_s": 32.3e-6, "engine_rev_late_mean_s": -3.5e-6}, 0.4e-3)
    assert not verdicts.engine_late({**cols, "engine_fwd_late_mean_s": 14.8e-6, "engine_rev_late_mean_s": -5.7e-6}, 0.8e-3)
    assert not verdicts.engine_late({**cols, "engine_fwd_late_mean_s": 100.0e-6}, 11.8e-3)          # 1 % of 11.8 = 0.118
    assert verdicts.engine_late({**cols, "engine_fwd_late_mean_s": 130.0e-6}, 11.8e-3)
    assert not verdicts.engine_late({**cols, "engine_fwd_late_mean_s": 2000.0e-6}, 366.0e-3)   # 1 % of 366 ms = 3.66
    assert not verdicts.engine_late({**cols, "engine_fwd_late_max_s": 25_000.0e-6}, 11.8e-3)   # the worst case: engine_stall
    assert not verdicts.engine_late({k: None for k in cols}, 11.8e-3)


def test_engine_stall_on_any_release_beyond_half_a_ms_or_one_percent_of_tau_capped_at_2_ms():
    cols = {"engine_fwd_late_mean_s": 15.0e-6, "engine_rev_late_mean_s": 4.0e-6,
            "engine_fwd_late_max_s": 400.0e-6, "engine_rev_late_max_s": 100.0e-6}
    assert not verdicts.engine_stall(cols, 11.8e-3)                                       # 0.4 ms <= 0.5 ms
    assert verdicts.engine_stall({**cols, "engine_rev_late_max_s": 600.0e-6}, 11.8e-3)      # either direction
    assert verdicts.engine_stall({**cols, "engine_fwd_late_max_s": 9300.0e-6}, 91.6e-3)     # issue 21: 9.3 ms at 11.8 ms
    assert not verdicts.engine_stall({**cols, "engine_fwd_late_max_s": 1800.0e-6}, 183.0e-3)  # 1 % of 183 ms = 1.83 ms
    assert verdicts.engine_stall({**cols, "engine_fwd_late_max_s": 1900.0e-6}, 183.0e-3)
    assert verdicts.engine_stall({**cols, "engine_fwd_late_max_s": 2100.0e-6}, 366.0e-3)      # capped at 2 ms, not 3.66
    assert not verdicts.engine_stall({**cols, "engine_fwd_late_max_s": 1900.0e-6}, 366.0e-3)
    assert not verdicts.engine_stall({k: None for k in cols}, 11.8e-3)


BUSY = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {s}: pass\n"


def _foreign_busy(seconds: float) -> None:
    """A busy loop that is not our descendant: started by a child that exits at once (double fork)."""
    code = (f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {BUSY.format(s=seconds)!r}], "
            "start_new_session=True)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_foreign_cores_leaves_out_our_tree_and_kernel_threads():
    # pid -> (ppid, utime+stime jiffies, kernel thread): 10 is us, 11 our child, 12 its child (iperf3)
    before = {10: (1, 100, 0), 11: (10, 0, 0), 20: (1, 50, 0), 30: (2, 0, 1)}
    after = {10: (1, 200, 0), 11: (10, 300, 0), 12: (11, 400, 0), 20: (1, 150, 0), 21: (1, 50, 0), 30: (2, 999, 1)}
    # foreign: pid 20 (+100) and the new pid 21 (+50) = 150 jiffies over 1 s at 100 Hz
    assert host.foreign_cores(before, after, root=10, hz=100, wall_s=1.0) == pytest.approx(1.5)
    assert host.foreign_cores(before, before, root=10, hz=100, wall_s=1.0) == 0.0
    # a remote run's own processes outside our tree (ownprocs: an engine, the server) are not foreign either
    assert host.foreign_cores(before, after, root=10, hz=100, wall_s=1.0, own={20}) == pytest.approx(0.5)
    # … themselves only: what such a process started (pid 22, 30 jiffies) is not known to be the run's
    assert host.foreign_cores(before, {**after, 22: (20, 30, 0)}, root=10, hz=100, wall_s=1.0,
                           own={20}) == pytest.approx(0.8)


def test_host_sampler_counts_foreign_cpu():
    with host.HostSampler(interval_s=0.1) as other:
        _foreign_busy(1.5)
        time.sleep(1.2)
    load = other.result()
    assert load.foreign_cores > 0.5, load
    assert "host_contended" in verdicts.host_flags(load)
    assert 0.0 <= load.busy_share <= 1.0


def test_host_sampler_result_only_after_the_block():
    s = host.HostSampler()
    with pytest.raises(RuntimeError):
        s.result()


def test_our_own_load_is_not_contention():
    """A quiet host running only the link and iperf3 at 0.4 ms showed PSI pressure 0.48-0.53 and 0.005-
    0.014 foreign cores (reproduce --quick): not contended. Foreign processes are."""
    quiet = host.HostLoad(busy_share=0.8, pressure_share=0.53, runqueue_max=8, foreign_cores=0.014, wall_s=8.0)
    assert verdicts.host_flags(quiet) == []
    busy = host.HostLoad(busy_share=1.0, pressure_share=0.9, runqueue_max=6, foreign_cores=1.6, wall_s=8.0)
    assert verdicts.host_flags(busy) == ["host_contended"]


def test_a_frames_serialisation_is_part_of_the_wire():
    """At 1 Gbit/s and MTU 9000 a data frame takes 72 µs on the wire: 10.132 ms at τ = 10 ms is
    τ + frame + 0.06 ms, within tolerance; without the frame time it would not be."""
    frame_s = (9000 + 38) * 8 / 1e9
    assert verdicts.rtt_off(10.132e-3, 10.0e-3)
    assert not verdicts.rtt_off(10.132e-3, 10.0e-3, frame_s=frame_s)
    assert verdicts.rtt_off(10.2e-3, 10.0e-3, frame_s=frame_s)
    assert verdicts.rtt_off(9.85e-3, 10.0e-3, frame_s=frame_s)      # the frame time never excuses a short wire


def test_an_engine_that_died_during_the_run_leaves_the_verdict_to_the_run():
    """The delay engine killed mid-run: the monitor's closing snapshot cannot be read; the monitor
    records no engine columns (rather than raising out of the campaign) and the run's own check
    names the engine (tests/test_campaign_faults.py)."""
    import dataclasses

    from tcpprofile.errors import TcpProfileError
    from tcpprofile.testbed import LinkConfig
    from tcpprofile.testbed.engine import EngineStats

    stats = EngineStats(**{f.name: 0 for f in dataclasses.fields(EngineStats)})

    class DyingLink(FakeHost):
        config = LinkConfig.checked(rate_bps="200Mbit", rtt_s="2ms", buffer_bytes="50kB")
        snapshots = 0

        def engine_stats(self, *, period=False, answering=False):   # as EmulatedLink.engine_stats
            self.snapshots += 1
            if self.snapshots > 1:
                if answering:
                    return {}
                raise TcpProfileError("delayd in tcpp-x-rcv exited with -9")
            return {"forward": stats, "reverse": stats}

        def loss_counters(self):
            return 0, 0

    link = DyingLink("")
    with monitors.emulated_monitor(link)(5301) as fid:
        pass
    assert link.snapshots == 2
    assert all(fid.columns[f"engine_{d}_{k}"] is None for d in ("fwd", "rev")
               for k in ("late_mean_us", "late_max_us", "drops", "cpu_share"))
    assert "engine_late" not in fid.flags and "engine_dropped" not in fid.flags


def test_calibration_allows_a_frame_above_tau():
    """The demo's 1 Gbit/s, MTU 9000 link at 5 ms calibrated to 5.108 ms (τ + 72 µs frame + 36 µs):
    the same link, not off; 5.2 ms or 4.89 ms are off. At 10 Gbit/s the frame is 7 µs."""
    from tcpprofile.testbed.calibrate import rtt_within
    from tcpprofile.testbed.config import LinkConfig

    slow = LinkConfig.checked(rate_bps="1Gbit", rtt_s="5ms", buffer_bytes="625kB", mtu=9000)
    assert rtt_within(5.108e-3, slow)
    assert not rtt_within(5.2e-3, slow) and not rtt_within(4.89e-3, slow)
    fast = LinkConfig.checked(rate_bps="10Gbit", rtt_s="5ms", buffer_bytes="6250kB", mtu=9000)
    assert not rtt_within(5.108e-3, fast)


SS_OUT = (  # `ss -tinH state established dport = :5201` (iproute2 6.1 format: print_tcpinfo in misc/ss.c)
    "0      0      10.77.1.1:41002 10.77.1.2:5201\n"
    "\t cubic wscale:14,14 rto:212 rtt:11.9/0.1 mss:8948 cwnd:1650 bytes_acked:2000000000 "
    "delivery_rate 9.8Gbps app_limited busy:10000ms rwnd_limited:2000ms(20.0%) minrtt:11.801\n"
    "0      0      10.77.1.1:41000 10.77.1.2:5201\n"
    "\t cubic wscale:14,14 rto:212 rtt:11.9/0.1 mss:8948 cwnd:10 bytes_acked:4000 busy:10ms minrtt:11.9\n"
    "0      0      10.77.1.1:41004 10.77.1.2:5201\n"
    "\t cubic wscale:14,14 rtt:12.0/0.2 bytes_acked:3000000000 delivery_rate 9.9Gbps "
    "busy:10000ms sndbuf_limited:100ms(1.0%) minrtt:11.795\n")


def test_parse_ss_reads_each_data_connection_and_its_chrono_counters():
    conns = connections.parse_ss(SS_OUT)
    assert [c.local for c in conns] == ["10.77.1.1:41002", "10.77.1.1:41004"]   # 4 kB control connection left out
    a, b = conns
    assert (a.busy_s, a.rwnd_limited_s, a.sndbuf_limited_s, a.app_limited, a.min_rtt_s) == \
        (10.0, 2.0, 0.0, True, 11.801 / 1e3)
    assert (b.busy_s, b.rwnd_limited_s, b.sndbuf_limited_s, b.app_limited, b.min_rtt_s) == \
        (10.0, 0.0, 0.1, False, 11.795 / 1e3)


def test_sender_limits_keep_each_connections_last_sample_and_classify():
    first = connections.parse_ss(SS_OUT)
    later = [dataclasses.replace(c, busy_s=c.busy_s * 2, app_limited=False) for c in first]
    lim = connections.sender_limits(first + later)
    assert (lim.busy_s, lim.rwnd_limited_s, lim.sndbuf_limited_s) == (40.0, 2.0, 0.1)   # not summed twice
    assert lim.app_limited_share == 0.25                                                     # 1 of 4 samples
    assert connections.limited_by(lim, thresholds.THRESHOLDS) == "network"          # rwnd 5.0 % of busy: not above 5 %
    rwnd = dataclasses.replace(lim, rwnd_limited_s=2.001)
    assert connections.limited_by(rwnd, thresholds.THRESHOLDS) == "receive_window"
    assert connections.limited_by(dataclasses.replace(lim, sndbuf_limited_s=2.001), thresholds.THRESHOLDS) == "send_buffer"
    assert connections.limited_by(dataclasses.replace(lim, app_limited_share=0.6), thresholds.THRESHOLDS) == "application"
    assert connections.limited_by(None, thresholds.THRESHOLDS) is None
    # flagged when the host chose the limit (autotuning), not when the run asked for a buffer (-w)
    assert connections.host_limited("receive_window", None) and not connections.host_limited("receive_window", 1 << 20)
    assert connections.host_limited("application", 1 << 20) and not connections.host_limited("network", None)


def test_lateness_histogram_quantiles_bound_the_true_ones():
    """delayd's buckets (late_bucket): x = late >> 8, 4 per octave. A bucket's upper edge is within a
    factor 1.25 above every lateness it holds, so p99 from the histogram bounds the true p99."""
    from tcpprofile.testbed.engine import late_bucket_upper_ns, late_quantile_ns

    def bucket(late: int) -> int:                       # delayd.c late_bucket, transcribed
        x = max(late, 0) >> 8
        if x < 4:
            return x
        o = x.bit_length() - 1
        return min(4 * (o - 1) + ((x >> (o - 2)) & 3), 99)

    for late in (0, 255, 256, 1023, 1024, 1279, 1280, 40_000, 9_300_000, 54_300_000):
        b = bucket(late)
        assert late < late_bucket_upper_ns(b) <= max(1.25 * late, 1024), late
        assert b == 0 or late >= late_bucket_upper_ns(b - 1), late
    lates = [20_000] * 990 + [3_000_000] * 9 + [9_300_000]
    hist = [0] * 100
    for late in lates:
        hist[bucket(late)] += 1
    assert 20_000 <= late_quantile_ns(hist, 0.99) <= 25_000
    assert 3_000_000 <= late_quantile_ns(hist, 0.999) <= 3_750_000
    assert late_quantile_ns([0] * 100, 0.99) is None


def test_loss_seed_is_the_run_ids_and_fits_a_bigint():
    a, b = monitors.loss_seed("c1-0001"), monitors.loss_seed("c1-0002")
    assert a == monitors.loss_seed("c1-0001") and a != b and 0 <= a < 2**63 and 0 <= b < 2**63


SOCKSTAT = """sockets: used 13
TCP: inuse 11 orphan 0 tw 1 alloc 24 mem 1749297
UDP: inuse 0 mem 122
"""


def test_tcp_memory_reads_sockstat_and_the_pressure_threshold(monkeypatch):
    assert host.tcp_memory(SOCKSTAT, "771364\t1542728\t3085457\n") == (1749297, 1542728)   # measured here
    assert host.tcp_memory("sockets: used 1\n", "1 2 3") == (None, 2)
    sampled = threading.Event()          # the sampler read sockstat once (a loaded host may start it late)

    def tcp_memory(sockstat, tcp_mem):
        if sockstat:
            sampled.set()                # the sampler stores the pages before it looks at its stop event
        return real(sockstat, tcp_mem)

    real = host.tcp_memory
    monkeypatch.setattr(host, "tcp_memory", tcp_memory)
    with host.HostSampler(interval_s=0.01) as sampler:     # this host's own files parse
        assert sampled.wait(10), "the host sampler never sampled"
    load = sampler.result()
    assert load.tcp_mem_pages_max is not None and load.tcp_mem_pressure_pages is not None
    assert load.tcp_mem_pressure_pages == int(open("/proc/sys/net/ipv4/tcp_mem").read().split()[1])


def test_tcp_memory_at_the_pressure_threshold_flags_the_host():
    load = dict(busy_share=0.8, pressure_share=0.5, runqueue_max=2, foreign_cores=0.01, wall_s=100.0)
    assert verdicts.host_flags(host.HostLoad(**load, tcp_mem_pages_max=1749297, tcp_mem_pressure_pages=1542728)) \
        == ["host_tcp_memory"]
    assert verdicts.host_flags(host.HostLoad(**load, tcp_mem_pages_max=1542727, tcp_mem_pressure_pages=1542728)) == []
    assert verdicts.host_flags(host.HostLoad(**load)) == []                     # not sampled: no verdict
    assert "host_tcp_memory" in thresholds.RERUN_FLAGS


SERVER = """import socket, sys
srv = socket.socket()
srv.bind(("127.0.0.1", 0)); srv.listen()
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
sys.stdin.read()
"""


def test_the_process_holding_the_far_end_of_our_connection_is_found_by_its_socket():
    """ownprocs.server_pids on real sockets: two listening children, one of which we connect to; only
    that one holds an established socket on its port whose peer is our client port (proc(5)
    /proc/PID/net/tcp, /proc/PID/fd). Before the connection nothing matches."""
    import socket
    from tcpprofile import ownprocs
    kids = [subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    try:
        ports = [int(k.stdout.readline()) for k in kids]
        comm = open(f"/proc/{kids[0].pid}/comm").read().strip()
        assert ownprocs.client_ports(ports[0]) == set()
        with socket.create_connection(("127.0.0.1", ports[0])) as c:
            mine = c.getsockname()[1]
            deadline = time.monotonic() + 10
            while not ownprocs.server_pids(ports[0], {mine}, name=comm):    # the child accepts
                assert time.monotonic() < deadline
                time.sleep(0.01)  # polling interval of the readiness check
            assert ownprocs.client_ports(ports[0]) >= {mine}
            assert ownprocs.server_pids(ports[0], {mine}, name=comm) == {kids[0].pid}
            assert ownprocs.server_pids(ports[1], {mine}, name=comm) == set()      # the other serves no one of ours
            assert ownprocs.server_pids(ports[0], {mine + 1}, name=comm) == set()  # not our client port
            assert ownprocs.server_pids(ports[0], {mine}, name="iperf3") == set()  # by name only iperf3 by default
    finally:
        for k in kids:
            k.kill()
            k.wait()


def test_proc_net_tcp_lines_are_read_by_their_hex_fields():
    text = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            "   0: 0100007F:1521 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0\n"
            "   1: 00000000:1521 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0\n")
    from tcpprofile import ownprocs
    assert ownprocs.parse_proc_net_tcp(text) == [(5409, 40000, "01", 4242), (5409, 0, "0A", 17)]
