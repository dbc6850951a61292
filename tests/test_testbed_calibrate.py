"""Parsing and summarising ping -U output (exact means from ping's summary line)."""

from __future__ import annotations

import pytest

from tcpprofile.testbed.calibrate import rtt_tolerance_s, summarize_ping


def fake_ping(times_us: list[int]) -> str:
    """ping's output for the given reply times, printed with ping's precision rules."""
    lines = ["PING 10.77.2.2 (10.77.2.2) 56(84) bytes of data."]
    for seq, t in enumerate(times_us, 1):
        ms = t / 1000
        shown = f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"
        lines.append(f"64 bytes from 10.77.2.2: icmp_seq={seq} ttl=63 time={shown} ms")
    n = len(times_us)
    avg = sum(times_us) / n / 1000
    lines.append(f"{n} packets transmitted, {n} received, 0% packet loss, time 100ms")
    lines.append(f"rtt min/avg/max/mdev = {min(times_us) / 1000:.3f}/{avg:.3f}/{max(times_us) / 1000:.3f}/0.010 ms")
    return "\n".join(lines)


def test_exact_mean_despite_integer_printing():
    # 366.3 ms is printed as "366": the mean must come from the summary, not from the printed replies.
    times = [5000, 5000] + [366_300] * 40
    s = summarize_ping(fake_ping(times), discard=2, trim=0)
    assert s.count == 40
    assert s.mean_ms == pytest.approx(366.3, abs=0.03)   # left-out replies printed to 0.5 % at worst
    assert s.trimmed_ms == pytest.approx(366.3, abs=0.03)


def test_trimming_removes_outliers():
    times = [400] * 2 + [400] * 38 + [3000, 2500]
    s = summarize_ping(fake_ping(times), discard=2, trim=0.05)
    assert s.trimmed_ms == pytest.approx(0.400, abs=1e-3)   # the summary average is printed to 1 us
    assert s.mean_ms == pytest.approx((38 * 0.4 + 5.5) / 40, abs=1e-3)
    assert s.max_ms == pytest.approx(3.0)


def test_too_few_replies():
    with pytest.raises(ValueError):
        summarize_ping(fake_ping([400, 400, 400]), discard=2)
    with pytest.raises(ValueError):
        summarize_ping("ping: connect: Network is unreachable")


@pytest.mark.parametrize("rtt, tol", [(0.4e-3, 0.1e-3), (10e-3, 0.1e-3), (45.6e-3, 0.456e-3), (0.366, 3.66e-3)])
def test_tolerance(rtt, tol):
    assert rtt_tolerance_s(rtt) == pytest.approx(tol)
