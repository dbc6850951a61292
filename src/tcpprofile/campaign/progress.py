"""How long runs take (for the ETA and hang timeouts) and the plain-text progress line."""

from __future__ import annotations

import math
import time
from typing import TextIO

from ..spec import LinkPoint, RunPoint
from ..packet_overhead import mss_bytes
from ..measure.iperf import autotuned_send_buffers_bytes, size_request_bytes

LINK_SETUP_ESTIMATE_S = 15.0   # set-up plus calibration, for the ETA
ASSUMED_RATE_BPS = 1e9         # remote mode without a nominal rate: for ETA and timeouts only


def autotuned_request_bytes(p: RunPoint) -> int | None:
    """What a fixed-size transfer with autotuned buffers asks for beyond F so that its receiver reads F
    (iperf.size_request_bytes): what the send buffers can hold at the link's largest window C·τ + β
    (iperf.autotuned_send_buffers_bytes). None where it is not needed or not known: duration mode, -w given,
    a remote link (β unknown)."""
    link = p.link
    if p.transfer_bytes is None or p.socket_buffer_bytes or link.kind != "emulated" or not link.buffer_bytes:
        return None
    window = link.rate_bps * link.rtt_s / 8 + link.buffer_bytes     # C·τ + β [bytes]
    return autotuned_send_buffers_bytes(window, mss_bytes(link.mtu or 1500), p.streams)


def expected_seconds(p: RunPoint) -> float:
    """A rough run duration for the ETA: duration mode D; size mode F over the rate the link can give
    (rate C, window limit n·B/τ, loss limit n·Mathis) plus ten RTTs of ramp-up."""
    if p.duration_s is not None:
        return p.duration_s + 1.0
    link = p.link
    rate = 0.9 * (link.rate_bps or ASSUMED_RATE_BPS)
    rtt = link.rtt_s or 0.05
    if p.socket_buffer_bytes:
        rate = min(rate, p.streams * p.socket_buffer_bytes * 8 / rtt)   # window-limited: n·W/τ [bit/s]
    if link.loss.rate > 0:
        mss = mss_bytes(link.mtu or 1500) * 8     # bits; remote links: MTU 1500 assumed
        rate = min(rate, p.streams * mss / rtt * math.sqrt(1.5 / link.loss.rate))  # Mathis: MSS/τ·√(3/2p)
    sent = size_request_bytes(p.transfer_bytes, p.streams, p.socket_buffer_bytes,   # F and what buffers hold
                              autotuned_request_bytes(p))
    return sent * 8 / rate + 10 * rtt + 1.0


def timeout_seconds(p: RunPoint) -> float:
    """When a run counts as hung: generous, a multiple of the expected duration."""
    if p.duration_s is not None:
        return p.duration_s + 30.0 + 20 * (p.link.rtt_s or 0.5)
    return max(60.0, 4 * expected_seconds(p) + 30.0)


class Progress:
    """Plain-text progress with ETA on a stream: \\r updates on a TTY, one line per run otherwise.

    `note` (optional) is a callable whose text is appended to each finished run's line (a policy's
    state: survivors, budget left)."""

    def __init__(self, total: int, expected_s: float, links: int, out: TextIO):
        self.total, self.done, self.remaining_s, self.links = total, 0, expected_s, links
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.note = None

    def extend(self, runs: int, expected_s: float, links: int) -> None:
        """A policy planned another round: more runs, time and link set-ups ahead."""
        self.total += runs
        self.remaining_s += expected_s
        self.links += links

    def _eta(self) -> str:
        s = int(self.remaining_s + self.links * LINK_SETUP_ESTIMATE_S)
        return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"

    def link(self, point: LinkPoint) -> None:
        self._line(f"link {point.describe()}: setting up and calibrating", final=True)

    def rebuild(self, point: LinkPoint, why: str) -> None:
        self.links += 1
        self._line(f"link {point.describe()}: {why}: tearing it down, setting up a new one", final=True)

    def calibrated(self, row: dict) -> None:
        self.links = max(0, self.links - 1)
        measured = row.get("rtt_measured_ms")
        rate = row.get("rate_measured_bps")
        bits = [f"rtt {measured:.3f} ms" if measured is not None else "rtt unmeasured"]
        if row.get("kind") == "remote" and measured is not None:   # environments.remote, path_rtt
            bits[0] += " by ping -U (TCP's min_rtt replaces it once runs exist)"
        if rate:
            bits.append(f"rate {rate / 1e9:.3f} Gbit/s")
        bits.append("ok" if row.get("calibration_ok") else f"FLAGGED {row.get('flags')}")
        self._line("link calibrated: " + ", ".join(bits), final=True)

    def start(self, p: RunPoint, attempt: int) -> None:
        if self.tty:
            again = f" (attempt {attempt})" if attempt > 1 else ""
            self._line(f"[{self.done + 1}/{self.total}] {self.done * 100 // max(self.total, 1)}% "
                       f"ETA {self._eta()}  {p.describe()}{again}", final=False)

    def finish(self, p: RunPoint, row: dict, expected: float) -> None:
        self.done += 1
        self.remaining_s = max(0.0, self.remaining_s - expected)
        result = (f"ok {row['throughput_bps'] / 1e9:.3f} Gbit/s" if row["status"] == "ok"
                  else f"FAILED ({row['failure_reason']})")
        flags = f" flags={row['flags']}" if row.get("flags") else ""
        text = self.note() if self.note else None
        note = f"  [{text}]" if text else ""
        self._line(f"[{self.done}/{self.total}] {result}{flags}  {p.describe()}  ETA {self._eta()}{note}",
                   final=True)

    def _line(self, text: str, final: bool) -> None:
        if self.tty:
            self.out.write("\r\033[K" + text + ("\n" if final else ""))
        elif final:
            self.out.write(text + "\n")
        self.out.flush()
