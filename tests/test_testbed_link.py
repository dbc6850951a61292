"""Privileged: a real emulated link, its kernel state read back, traffic through it, and teardown
(normal exit, SIGINT, and cleanup_leftovers after SIGKILL). Each test uses its own random tag."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap

import pytest
from conftest import require_or_skip

from tcpprofile.testbed import EmulatedLink, LinkConfig, cleanup_leftovers
from tcpprofile.testbed import netns, state
from tcpprofile.testbed.calibrate import rtt_tolerance_s
from vm_timing import MEASURED_AGAIN

pytestmark = pytest.mark.privileged


def tag() -> str:
    return "t" + secrets.token_hex(3)


def namespaces_of(t: str) -> list[str]:
    return [ns for ns in netns.netns_list() if ns.startswith(f"tcpp-{t}-")]


def iperf(link, *extra: str) -> dict:
    server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    link.wait_listening("receiver", 5201)
    proc = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-J", "-C", "cubic", *extra], timeout=60)
    link.stop_process(server)
    return json.loads(proc.stdout)


@MEASURED_AGAIN   # the link's calibration is one measurement of its RTT and rate on a VM that stalls now and then
def test_link_state_traffic_and_teardown():
    cfg = LinkConfig.checked(rate_bps="1Gbit", rtt_s="10ms", buffer_bytes="1MB")
    t = tag()
    with EmulatedLink(cfg, tag=t) as link:
        assert sorted(namespaces_of(t)) == sorted([link.ns_sender, link.ns_receiver])
        # no shaping qdisc anywhere: the forward engine is the bottleneck
        for ns, dev in ((link.ns_sender, link.sender_dev), (link.ns_receiver, link.receiver_dev)):
            assert not any(q["kind"] in ("tbf", "htb") for q in netns.qdiscs(ns, dev))
        fwd = link.engine_stats()["forward"]
        assert fwd.rate_bps == pytest.approx(1e9) and fwd.buffer_bytes == 10**6
        assert link.engine_stats()["reverse"].rate_bps == 0
        # RPS steers both devices' packets to the plan's RPS CPUs (read back from the namespace's sysfs)
        mask = sum(1 << c for c in link.plan.rps)
        for role, dev in (("receiver", link.receiver_dev), ("sender", link.sender_dev)):
            got = link.run(role, ["cat", f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"]).stdout.strip()
            assert int(got.replace(",", ""), 16) == mask
        for pid in link.engine_pids().values():
            assert os.sched_getaffinity(pid) == link.engine_cpus

        for ns, dev in ((link.ns_receiver, link.receiver_dev), (link.ns_sender, link.sender_dev)):
            rules = [r for r in netns.iptables_rules(ns, "raw") if r["chain"] == "PREROUTING"]
            assert len(rules) == 1 and "NFQUEUE" in rules[0]["rule"] and f"-i {dev}" in rules[0]["rule"]
            assert f"tcpp-{t}" in rules[0]["rule"]
        engine_pids = link.engine_pids()
        assert set(netns.netns_pids(link.ns_receiver)) >= {engine_pids["forward"]}
        assert set(netns.netns_pids(link.ns_sender)) >= {engine_pids["reverse"]}

        cal = link.calibration
        frame_ms = (cfg.mtu + 38) * 8 / 1e9 * 1e3    # a data frame's time on the 1 Gbit/s wire is part of the RTT
        tol_ms = rtt_tolerance_s(0.010) * 1e3
        assert 10.0 - tol_ms <= cal.rtt_measured_ms <= 10.0 + frame_ms + tol_ms, cal.summary()
        assert "rtt_off" not in cal.flags, cal.summary()
        assert cal.goodput_ceiling_bps == pytest.approx(cfg.goodput_ceiling_bps)
        assert cal.rate_measured_bps <= 1.02 * cfg.rate_bps, cal.summary()
        assert "rate_low" not in cal.flags, cal.summary()

        result = iperf(link, "-t", "2")
        goodput = result["end"]["sum_received"]["bits_per_second"]
        assert 0.5 * cfg.goodput_ceiling_bps <= goodput <= 1.02 * cfg.goodput_ceiling_bps
        assert result["end"]["streams"][0]["sender"]["min_rtt"] >= 0.95 * 10_000  # us: the delay is there
        stats = link.engine_stats()
        assert stats["forward"].packets > 0 and stats["forward"].lost == 0 and stats["reverse"].lost == 0
        assert state.read_owners()[t]["owner"]["pid"] == os.getpid()

    assert namespaces_of(t) == []
    assert t not in state.read_owners()
    assert t not in state.host_sysctl_state()["holders"]
    assert all(netns.process_start_time(pid) is None for pid in engine_pids.values())
    assert set(link.final_engine_stats) == {"forward", "reverse"}


def test_engines_scheduling_read_back_from_the_kernel_matches_the_design():
    """The reverse (ACK) engine SCHED_FIFO 10, the forward engine in the fair class, both pinned to the
    engines' CPU, the applications elsewhere; delayd takes turns (--turns) only when both are FIFO at
    one priority (docs/testbed.md, "Why releases stalled")."""
    cfg = LinkConfig.checked(rate_bps="1Gbit", rtt_s="2ms", buffer_bytes="1MB")
    with EmulatedLink(cfg, tag=tag()) as link:
        pids = link.engine_pids()
        assert set(pids) == {"forward", "reverse"}
        assert os.sched_getscheduler(pids["reverse"]) == os.SCHED_FIFO
        assert os.sched_getparam(pids["reverse"]).sched_priority == 10
        assert os.sched_getscheduler(pids["forward"]) == os.SCHED_OTHER
        for pid in pids.values():
            assert os.sched_getaffinity(pid) == link.engine_cpus
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            assert (b"--turns" in argv) is False
        if len(os.sched_getaffinity(0)) > 1:
            assert not link.engine_cpus & link.app_cpus
        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert os.sched_getaffinity(server.pid) == link.plan.app_cpus_of("receiver")
        assert os.sched_getscheduler(server.pid) == os.SCHED_OTHER
        link.stop_process(server)


def test_rate_calibration_at_a_low_rate_reads_what_crossed_the_link():
    # 20 Mbit/s: the probe's socket buffers hold seconds of data, so only the receiver's count is the rate.
    cfg = LinkConfig.checked(rate_bps="20Mbit", rtt_s="20ms", buffer_bytes="30KB")
    with EmulatedLink(cfg, tag=tag()) as link:
        c = link.calibration
        assert c.ok and not c.flags
        assert 0.95 * cfg.goodput_ceiling_bps <= c.goodput_measured_bps <= 1.01 * cfg.goodput_ceiling_bps
        assert abs(c.rate_measured_bps - cfg.rate_bps) <= 0.05 * cfg.rate_bps


def test_periodic_loss_matches_engine_counters():
    cfg = LinkConfig.checked(rate_bps="1Gbit", rtt_s="10ms", buffer_bytes="2MB",
                             loss_mode="periodic", loss_rate="1/500")
    with EmulatedLink(cfg, tag=tag()) as link:
        features = netns.sh(netns.in_ns(link.ns_sender, ["ethtool", "-k", link.sender_dev])).stdout
        assert "tcp-segmentation-offload: off" in features
        assert "generic-segmentation-offload: off" in features
        before = link.loss_counters()[1]
        result = iperf(link, "-n", "30M")
        drops = link.loss_counters()[1] - before
        retransmits = result["end"]["sum_sent"]["retransmits"]
        segments = 30 * 2**20 / cfg.mss_bytes     # iperf3 -n counts M as MiB
        assert drops == pytest.approx(segments / 500, rel=0.25)   # 1 in 500 wire packets (+ACKs, handshake)
        assert 0.8 * drops <= retransmits <= 1.3 * drops + 5


CHILD = textwrap.dedent("""
    import json, signal, sys
    from tcpprofile.testbed import EmulatedLink, LinkConfig
    cfg = LinkConfig.checked(rate_bps="100Mbit", rtt_s="2ms", buffer_bytes="200kB")
    with EmulatedLink(cfg, tag=sys.argv[1]) as link:
        print(json.dumps({"ready": True, "pids": list(link.engine_pids().values())}), flush=True)
        while True:
            signal.pause()
""")


def start_child(t: str) -> tuple[subprocess.Popen, list[int]]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, t], stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline()          # readiness: printed once the link is up and calibrated
    assert line, "child failed to bring its link up"
    info = json.loads(line)
    assert len(namespaces_of(t)) == 2
    return child, info["pids"]


def test_sigint_tears_everything_down():
    t = tag()
    child, pids = start_child(t)
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=60) != 0      # KeyboardInterrupt after teardown
    assert namespaces_of(t) == []
    assert t not in state.read_owners()
    assert all(netns.process_start_time(pid) is None for pid in pids)


def test_cleanup_leftovers_after_sigkill():
    t = tag()
    child, pids = start_child(t)
    child.kill()
    child.wait()
    assert len(namespaces_of(t)) == 2       # nothing ran to remove them
    status = subprocess.run([sys.executable, "-m", "tcpprofile.cli", "testbed", "status"], capture_output=True,
                            text=True, check=True).stdout
    assert any(line.startswith(f"link {t}:") and "LEFTOVER" in line for line in status.splitlines()), status
    removed = cleanup_leftovers()
    assert {f"namespace tcpp-{t}-{r}" for r in ("snd", "rcv")} <= set(removed)
    assert f"owner record of link {t}" in removed
    assert namespaces_of(t) == []
    assert all(netns.process_start_time(pid) is None for pid in pids)
    assert t not in state.host_sysctl_state()["holders"]


def test_host_sysctls_raised_then_restored():
    t = tag()
    held_before = bool(state.host_sysctl_state()["holders"])   # then `before` holds raised values
    before = {key: state._read(key) for key in state.wanted_host_sysctls()}
    state.acquire_host_sysctls(t)
    try:
        for key, wanted in state.wanted_host_sysctls().items():
            assert all(v >= w for v, w in zip(state._read(key), wanted)), key
        recorded = state.host_sysctl_state()
        assert t in recorded["holders"]
    finally:
        restored = state.release_host_sysctls(t)
    after = state.host_sysctl_state()
    if after["holders"] or held_before:   # another link held them (a parallel run): said, not passed
        require_or_skip(f"host sysctls held by other links ({sorted(after['holders'])}): the restore is theirs")
    assert restored
    assert {key: state._read(key) for key in before} == before   # as read before the link came up
