"""The emulated run monitor (fidelity.monitors.emulated_monitor) end to end on a fake link: engine snapshots, loss
counters, the sender's tcp_info (fake `ss` output) and the host's load that stay just inside every
threshold, on each side a threshold has, raise no flag, and each one pushed just past it raises exactly
its flag; the per-direction columns are the deltas of the two snapshots, not
the engines' counters since they started (which the snapshots before the run make large on purpose)."""

from __future__ import annotations

import dataclasses
import subprocess
import threading

import pytest

from tcpprofile.measure.fidelity import connections, host, monitors, thresholds
from tcpprofile.testbed import LinkConfig
from tcpprofile.testbed.engine import EngineStats

TAU_MS = 10.0
LINK = LinkConfig.checked(rate_bps="1Gbit", rtt_s="10ms", buffer_bytes="1250kB", mtu=9000)
FRAME_MS = (9000 + 38) * 8 / 1e9 * 1e3            # 72.3 µs: one MTU 9000 frame at 1 Gbit/s
RELEASED = 100_000                                 # packets each engine released during the run


def snapshot(**kw) -> EngineStats:
    return EngineStats(**{**{f.name: 0 for f in dataclasses.fields(EngineStats)}, "period_late_hist": (), **kw})


# Before the run: an engine that has run for a while, with a bad past (1 ms mean lateness, a 50 ms
# release, losses): none of it is the run's. Its period counters were just reset by period=True.
BEFORE = {"forward": snapshot(released=10**6, late_sum_ns=10**6 * 10**6, late_max_ns=50 * 10**6, queue_dropped=7,
                              user_dropped=3, enobufs=2, cpu_user_s=100.0, cpu_sys_s=50.0, bottleneck_drops=900,
                              bottleneck_overlimits=5000, late_episodes=40, late_excess_ns=900 * 10**6),
          "reverse": snapshot(released=10**6, late_sum_ns=10**6 * 10**6, late_max_ns=50 * 10**6, queue_dropped=4,
                              enobufs=1, cpu_user_s=20.0, cpu_sys_s=10.0, late_episodes=30,
                              late_excess_ns=700 * 10**6)}
LOSS_BEFORE = (500_000, 4_990)                     # the loss stage's counters run on across runs


def after(fwd_late_us=60.0, rev_late_us=39.9, fwd_max_ms=0.49, rev_max_ms=0.49, fwd_drops=(0, 0, 0),
          rev_drops=(0, 0, 0), fwd_excess_ms=0.0, rev_excess_ms=0.0, covered_ms=(0.0, 0.0)) -> dict:
    """The closing snapshots: RELEASED more packets each, with the given mean and largest lateness of
    the run, (queue, user, ENOBUFS) drops and stall episodes' excess lateness [ms] added during it, of
    which covered_ms (forward, reverse) the bottleneck's queue covered."""
    def one(b: EngineStats, late_us, max_ms, drops, cpu_s, excess_ms, covered, **kw):
        return dataclasses.replace(
            b, released=b.released + RELEASED, late_sum_ns=b.late_sum_ns + round(late_us * 1e3 * RELEASED),
            period_late_max_ns=round(max_ms * 1e6), queue_dropped=b.queue_dropped + drops[0],
            user_dropped=b.user_dropped + drops[1], enobufs=b.enobufs + drops[2], cpu_user_s=b.cpu_user_s + cpu_s,
            late_episodes=b.late_episodes + (excess_ms > 0), late_excess_ns=b.late_excess_ns + round(excess_ms * 1e6),
            late_uncovered_ns=b.late_uncovered_ns + round((excess_ms - covered) * 1e6), **kw)
    f, r = BEFORE["forward"], BEFORE["reverse"]
    return {"forward": one(f, fwd_late_us, fwd_max_ms, fwd_drops, 2.0, fwd_excess_ms, covered_ms[0], held=3,
                           bottleneck_drops=f.bottleneck_drops + 12, bottleneck_overlimits=f.bottleneck_overlimits + 340),
            "reverse": one(r, rev_late_us, rev_max_ms, rev_drops, 0.5, rev_excess_ms, covered_ms[1], held=1)}


# The data connections' tcp_info in each `ss` sample: (busy, rwnd_limited, sndbuf_limited [ms], app_limited).
# Just inside limited_by's thresholds (fidelity.thresholds.THRESHOLDS): rwnd- and send-buffer-limited for exactly 5 % of
# the 10 000 ms busy, app_limited in exactly half the connection samples: the network set the rate.
CONNS = [(5000, 250, 250, True), (5000, 250, 250, False)]
# just past each: 501 ms of 10 000; 51 of 100 connection samples app_limited
RWND_OUT = [(5000, 251, 250, True), (5000, 250, 250, False)]
SNDBUF_OUT = [(5000, 250, 251, True), (5000, 250, 250, False)]
APP_OUT = [(100, 5, 5, i < 51) for i in range(100)]


class FakeLink:
    """What emulated_monitor reads of an EmulatedLink: its config, two engine snapshots (before and after
    the run, the forward one with its loss stage's counts), and `ss` in the sender namespace (the base RTT
    and the connections' chrono counters)."""

    def __init__(self, config: LinkConfig, closing: dict, loss_after: tuple[int, int], base_rtt_ms: float,
                 conns: list = CONNS):
        self.config = config
        self.conns = conns
        self._stats = [BEFORE, closing]
        self._loss = [LOSS_BEFORE, loss_after]
        self.base_rtt_ms = base_rtt_ms
        self.sampled_twice = threading.Event()      # the watcher has stored its first sample
        self.samples = 0

    def engine_stats(self, *, period=False, answering=False):
        assert period and answering                  # a new lateness period per run; a dead engine is not raised
        stats, (seen, dropped) = self._stats.pop(0), self._loss.pop(0)
        return {**stats, "forward": dataclasses.replace(stats["forward"], loss_seen=seen, loss_dropped=dropped)}

    def run(self, role, argv, check=True, timeout=None):
        assert role == "sender" and argv[0] == "ss"
        self.samples += 1
        if self.samples >= 2:
            self.sampled_twice.set()
        port = argv[-1].split(':')[-1]
        out = "".join(f"0 0 10.77.1.1:{40002 + i} 10.77.1.2:{port}\n"
                      f"\t cubic mss:8948 bytes_acked:11215085470 minrtt:{self.base_rtt_ms:.3f} busy:{busy}ms"
                      f" rwnd_limited:{rwnd}ms sndbuf_limited:{sndbuf}ms{' app_limited' if app else ''}\n"
                      for i, (busy, rwnd, sndbuf, app) in enumerate(self.conns))
        return subprocess.CompletedProcess(argv, 0, out, "")


class QuietHost:
    """HostSampler on a host where nothing else runs (the shared test machine may not be quiet). `load`: just
    inside host_contended (foreign CPU not above 0.2 cores) and host_tcp_memory (a page below tcp_mem[1])."""
    load = {"foreign_cores": 0.2, "tcp_mem_pages_max": 999, "tcp_mem_pressure_pages": 1000}

    def __init__(self, *, cpus=None):       # the application CPUs it would sample (fidelity.host.HostSampler)
        self.cpus = cpus

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def result(self):
        return host.HostLoad(busy_share=0.5, pressure_share=0.2, runqueue_max=2, wall_s=4.0, **self.load)


@pytest.fixture(autouse=True)
def quick_quiet(monkeypatch):
    monkeypatch.setattr(monitors, "HostSampler", QuietHost)
    monkeypatch.setattr(connections, "RTT_SAMPLE_S", 0.01)
    monkeypatch.setattr(connections.RttWatcher.__init__, "__defaults__", (0.01,))     # first_s: the first sample


def monitored(link: FakeLink, run: dict | None = None) -> monitors.RunFidelity:
    with monitors.emulated_monitor(link)(5301, run) as fid:
        assert link.sampled_twice.wait(10), "the RTT watcher never sampled"
    return fid


PERIODIC = LinkConfig.checked(rate_bps="1Gbit", rtt_s="10ms", buffer_bytes="1250kB", mtu=9000, loss_mode="periodic",
                              loss_rate=0.01)
UNIFORM = LinkConfig.checked(rate_bps="1Gbit", rtt_s="10ms", buffer_bytes="1250kB", mtu=9000, loss_mode="uniform",
                             loss_rate=0.01)
SEEN = 100_000                          # packets the loss stage saw during the run
# uniform 1 %: mean 1000, σ = √(10⁵·0.01·0.99) = 31.46, band ±(3.29σ + ½) = ±104.0
UNIFORM_IN, UNIFORM_OUT = 1000 + 103, 1000 + 105
# periodic 1 in 100: exactly 1000 up to ±1
PERIODIC_IN, PERIODIC_OUT = 1000 - 1, 1000 + 2
BASE_IN = TAU_MS + FRAME_MS + 0.1 - 0.002      # τ + one frame + max(1 %, 0.1 ms), less 2 µs
BASE_OUT = TAU_MS + FRAME_MS + 0.1 + 0.003
BELOW_IN, BELOW_OUT = TAU_MS - 0.1 + 0.002, TAU_MS - 0.1 - 0.003      # τ − max(1 %, 0.1 ms), ± a few µs


def healthy(**kw) -> dict:
    """A run just inside every threshold; kw replaces one part."""
    args = {"config": PERIODIC, "closing": after(), "loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + PERIODIC_IN),
            "base_rtt_ms": BASE_IN}
    return {**args, **kw}


def test_a_run_just_inside_every_threshold_is_not_flagged_and_its_columns_are_the_runs_deltas():
    fid = monitored(FakeLink(**healthy()))
    assert fid.flags == []
    c = fid.columns
    # lateness: (Σlate_after − Σlate_before)/(released_after − released_before), not the 1 ms since start
    assert c["engine_fwd_late_mean_us"] == pytest.approx(60.0) and c["engine_rev_late_mean_us"] == pytest.approx(39.9)
    assert c["engine_fwd_late_max_us"] == pytest.approx(490.0) and c["engine_rev_late_max_us"] == pytest.approx(490.0)
    assert (c["engine_fwd_drops"], c["engine_rev_drops"]) == (0, 0)       # 12 and 5 lost before the run
    assert c["engine_fwd_cpu_share"] == pytest.approx(2.0 / 4.0) and c["engine_rev_cpu_share"] == pytest.approx(0.5 / 4.0)
    assert (c["bottleneck_drops"], c["bottleneck_overlimits"], c["inflight_end_packets"]) == (12, 340, 4)
    assert (c["loss_seen_packets"], c["loss_dropped_packets"]) == (SEEN, PERIODIC_IN)
    assert c["rtt_base_ms"] == pytest.approx(BASE_IN, abs=1e-3) and c["rtt_base_source"] == "tcp_info min_rtt"
    assert (c["tcp_busy_ms"], c["tcp_rwnd_limited_ms"], c["tcp_sndbuf_limited_ms"]) == (10000, 500, 500)
    assert c["tcp_app_limited_share"] == 0.5 and c["limited_by"] == "network"
    assert c["host_cpu_foreign"] == 0.2


@pytest.mark.parametrize("kw", [
    {"base_rtt_ms": BELOW_IN},
    {"loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + 1000 + 1)},
    {"config": UNIFORM, "loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + 1000 - 103)},
], ids=["rtt-below", "loss-periodic-above", "loss-uniform-below"])
def test_just_inside_the_other_side_of_a_two_sided_threshold_is_not_flagged(kw):
    assert monitored(FakeLink(**healthy(**kw))).flags == []


def test_a_window_the_run_set_is_its_configuration_not_the_host():
    # rwnd-limited past 5 % of busy with -w set: the configuration the run asked for, not host_limited
    fid = monitored(FakeLink(**healthy(conns=RWND_OUT)), run={"socket_buffer_bytes": 4 << 20})
    assert fid.columns["limited_by"] == "receive_window" and fid.flags == []


@pytest.mark.parametrize("flag, kw", [
    # both directions' mean lateness together above max(0.02 ms, 1 % of τ) = 100 µs
    ("engine_late", {"closing": after(rev_late_us=40.2)}),
    ("engine_late", {"closing": after(fwd_late_us=60.3)}),
    # a stall at τ = 10 ms: a release later than max(0.5 ms, min(1 % τ, 2 ms)) = 0.5 ms during the run, either
    # direction (the 50 ms release before it does not count), whose excess cannot move Θ beyond the resolution:
    # a note, engine_stall_minor; engine_stall where both engines' excess over the run's 4 s exceeds 0.2 %
    # of it (8 ms; the 1.6 s of excess before the run do not count)
    ("engine_stall_minor", {"closing": after(fwd_max_ms=0.51)}),
    ("engine_stall_minor", {"closing": after(rev_max_ms=0.51, rev_excess_ms=7.9)}),
    ("engine_stall", {"closing": after(fwd_max_ms=8.1, fwd_excess_ms=8.1)}),
    ("engine_stall", {"closing": after(fwd_max_ms=4.0, fwd_excess_ms=4.0, rev_max_ms=4.1, rev_excess_ms=4.1)}),
    # one packet lost by an engine during the run, in either direction, by any of the three paths
    ("engine_dropped", {"closing": after(fwd_drops=(1, 0, 0))}),
    ("engine_dropped", {"closing": after(fwd_drops=(0, 1, 0))}),
    ("engine_dropped", {"closing": after(rev_drops=(0, 0, 1))}),
    ("engine_dropped", {"closing": after(rev_drops=(1, 0, 0))}),
    ("loss_off", {"loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + PERIODIC_OUT)}),
    ("loss_off", {"config": UNIFORM, "loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + UNIFORM_OUT)}),
    ("loss_off", {"loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + 1000 - 2)}),
    ("loss_off", {"config": UNIFORM, "loss_after": (LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + 1000 - 105)}),
    ("rtt_base_off", {"base_rtt_ms": BASE_OUT}),
    ("rtt_base_off", {"base_rtt_ms": BELOW_OUT}),
    ("rtt_base_off", {"base_rtt_ms": 8.0}),          # a whole ms, but more than one tick below τ
    # limited_by past its shares with autotuned buffers (the run set none): the host set the rate
    ("host_limited", {"conns": RWND_OUT}),
    ("host_limited", {"conns": SNDBUF_OUT}),
    ("host_limited", {"conns": APP_OUT}),
    ("host_contended", {"host": {"foreign_cores": 0.21}}),
    ("host_tcp_memory", {"host": {"tcp_mem_pages_max": 1000}}),
], ids=["late-mean-rev", "late-mean-fwd", "stall-minor-fwd", "stall-minor-rev", "stall-fwd", "stall-both", "drop-fwd-queue", "drop-fwd-user",
        "drop-rev-enobufs", "drop-rev-queue", "loss-periodic-above", "loss-uniform-above", "loss-periodic-below",
        "loss-uniform-below", "rtt-above", "rtt-below", "rtt-tick-below", "limit-rwnd", "limit-sndbuf", "limit-app",
        "host-foreign", "host-tcp-mem"])
def test_each_threshold_crossed_raises_its_flag_alone(flag, kw, monkeypatch):
    monkeypatch.setattr(QuietHost, "load", {**QuietHost.load, **kw.pop("host", {})})
    fid = monitored(FakeLink(**healthy(**kw)))
    assert fid.flags == [flag]


def test_uniform_loss_inside_its_band_and_whole_ms_samples_are_not_flagged():
    fid = monitored(FakeLink(**healthy(config=UNIFORM, loss_after=(LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1] + UNIFORM_IN))))
    assert fid.flags == [] and fid.columns["loss_dropped_packets"] == UNIFORM_IN
    # the kernel's 1 ms timestamp ticks: 9.000 at τ = 10 ms is a tick below τ, not the wire
    assert monitored(FakeLink(**healthy(base_rtt_ms=9.0))).flags == []


def test_every_flag_at_once():
    fid = monitored(FakeLink(**healthy(closing=after(rev_late_us=45.0, fwd_drops=(0, 0, 3)), base_rtt_ms=BASE_OUT,
                                       loss_after=(LOSS_BEFORE[0] + SEEN, LOSS_BEFORE[1]))))
    assert sorted(fid.flags) == ["engine_dropped", "engine_late", "loss_off", "rtt_base_off"]
    assert set(fid.flags) <= set(thresholds.RERUN_FLAGS)          # each one makes the run run again on resume
    assert (fid.columns["engine_fwd_drops"], fid.columns["engine_rev_drops"]) == (3, 0)


def test_the_stall_bound_is_the_runs_excess_over_its_wall_time_and_a_bound_just_inside_is_a_note():
    # 7.99 ms of excess over 4 s: 0.19975 % <= 0.2 % (the resolution): a stall seen, recorded, not material
    fid = monitored(FakeLink(**healthy(closing=after(fwd_max_ms=3.0, fwd_excess_ms=4.0, rev_excess_ms=3.99))))
    c = fid.columns
    assert c["engine_fwd_stall_excess_ms"] == pytest.approx(4.0) and c["engine_rev_stall_excess_ms"] == pytest.approx(3.99)
    assert (c["engine_fwd_stall_episodes"], c["engine_rev_stall_episodes"]) == (1, 1)
    assert c["stall_effect_bound"] == pytest.approx(7.99e-3 / 4.0)
    assert fid.flags == ["engine_stall_minor"]
    # 8.01 ms: 0.20025 % > 0.2 %: material, with or without a single release beyond 0.5 ms
    fid = monitored(FakeLink(**healthy(closing=after(fwd_excess_ms=4.0, rev_excess_ms=4.01))))
    assert fid.columns["stall_effect_bound"] == pytest.approx(8.01e-3 / 4.0) and fid.flags == ["engine_stall"]
    # 400 ms of excess, all but 7.99 ms of it inside the queue's cover: what the wire lost is the note's
    fid = monitored(FakeLink(**healthy(closing=after(fwd_max_ms=30.0, fwd_excess_ms=300.0, rev_excess_ms=100.0,
                                                     covered_ms=(296.0, 96.01)))))
    assert fid.columns["engine_fwd_stall_uncovered_ms"] == pytest.approx(4.0)
    assert fid.columns["stall_effect_bound"] == pytest.approx(7.99e-3 / 4.0) and fid.flags == ["engine_stall_minor"]


def test_an_engine_without_the_stall_record_flags_every_stall_as_before():
    old = {k: dataclasses.replace(v, late_episodes=None, late_excess_ns=None) for k, v in after(fwd_max_ms=0.51).items()}
    before = {k: dataclasses.replace(v, late_episodes=None, late_excess_ns=None) for k, v in BEFORE.items()}
    link = FakeLink(**healthy(closing=old))
    link._stats[0] = before
    fid = monitored(link)
    assert fid.columns["stall_effect_bound"] is None and fid.flags == ["engine_stall"]
