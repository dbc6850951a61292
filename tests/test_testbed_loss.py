"""Privileged: the loss stage inside the forward delay engine, read back from the engine's
counters and from which packets came back. Each test brings up its own link (random tag)."""

from __future__ import annotations

import json
import math
import re
import secrets
import subprocess

import pytest

from tcpprofile.testbed import EmulatedLink, LinkConfig

pytestmark = pytest.mark.privileged


def tag() -> str:
    return "l" + secrets.token_hex(3)


def answered(link, count: int) -> set[int]:
    """icmp_seq numbers (1-based) of `count` pings through the link that came back."""
    out = link.run("sender", ["ping", "-n", "-c", str(count), "-i", "0.005", "-W", "2", link.receiver_addr],
                   check=False, timeout=60).stdout
    return {int(m) for m in re.findall(r"icmp_seq=(\d+)", out)}


def test_periodic_loss_drops_exactly_every_nth_packet_and_calibration_saw_none():
    cfg = LinkConfig.checked(rate_bps="1Gbit", rtt_s="2ms", buffer_bytes="1MB", loss_mode="periodic",
                             loss_rate="1/4")
    with EmulatedLink(cfg, tag=tag()) as link:
        fwd = link.engine_stats()["forward"]
        assert fwd.packets > 1000 and fwd.loss_on == 1   # the calibration's flows crossed the engine ...
        assert (fwd.loss_seen, fwd.loss_dropped) == (0, 0)   # ... with the loss stage off
        assert link.calibration.ok, link.calibration.summary()
        seen0, _ = link.loss_counters()
        got = answered(link, 40)
        seen, dropped = link.loss_counters()
        assert seen - seen0 == 40                        # only our echo requests crossed forward
        lost = {k for k in range(1, 41) if (seen0 + k) % 4 == 0}   # the N-th, 2N-th, ... packet seen
        assert got == set(range(1, 41)) - lost
        assert dropped == seen // 4                      # since the stage was switched on


def test_uniform_loss_rate_within_binomial_interval_and_seed_replays_pattern():
    p = 0.05
    cfg = LinkConfig.checked(rate_bps="1Gbit", rtt_s="2ms", buffer_bytes="1MB", loss_mode="uniform", loss_rate=p)
    with EmulatedLink(cfg, tag=tag()) as link:
        patterns = []
        for seed in (7, 7, 8):
            link.seed_loss(seed)
            seen0, _ = link.loss_counters()
            patterns.append(answered(link, 200))
            assert link.loss_counters()[0] - seen0 == 200    # only our echo requests crossed forward
        assert patterns[0] == patterns[1]                # the same seed: the same packets lost
        assert patterns[0] != patterns[2]                # another seed: another pattern (p(same) = 0.905^200)
        assert link.engine_stats()["forward"].loss_seed == 8

        server = link.popen("receiver", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        link.wait_listening("receiver", 5201)
        seen0, dropped0 = link.loss_counters()
        out = link.run("sender", ["iperf3", "-c", link.receiver_addr, "-u", "-b", "100M", "-l", "1400", "-t", "2",
                                  "-J"], timeout=60).stdout
        link.stop_process(server)
        seen, dropped = (a - b for a, b in zip(link.loss_counters(), (seen0, dropped0)))
        assert seen >= 10_000, json.loads(out)["end"]
        sd = math.sqrt(seen * p * (1 - p))
        assert abs(dropped - seen * p) <= 3.29 * sd    # 99.9 % binomial interval
