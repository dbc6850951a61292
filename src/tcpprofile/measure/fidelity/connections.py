"""The run's data connections from `ss -ti`: the base RTT under load (tcp_info min_rtt) and what limited
the sender (its chrono counters and app_limited marks), sampled by RttWatcher."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from .thresholds import Thresholds, beyond

RTT_SAMPLE_S = 2.0     # [s] between `ss -ti` samples of the data connections

_MINRTT = re.compile(r"\bminrtt:([0-9.]+)")
_ACKED = re.compile(r"\bbytes_acked:([0-9]+)")
DATA_CONNECTION_BYTES = 1 << 20     # iperf3's control connection moves a few kB: not a data stream


def min_rtt_s(host, role: str, port: int, min_bytes: int = DATA_CONNECTION_BYTES) -> float | None:
    """Smallest RTT sample [s] (tcp_info min_rtt) over the data connections to port, now; None if none."""
    out = host.run(role, ["ss", "-tinH", "state", "established", f"dport = :{port}"], check=False, timeout=10).stdout
    rtts = [c.min_rtt_s for c in parse_ss(out, min_bytes) if c.min_rtt_s is not None]
    return min(rtts) if rtts else None


_CONN = re.compile(r"(\S+:\d+)\s+(\S+:\d+)")
_CHRONO = {k: re.compile(rf"\b{k}:([0-9]+)ms") for k in ("busy", "rwnd_limited", "sndbuf_limited")}


@dataclass(frozen=True)
class ConnSample:
    """One `ss -ti` sample of one data connection: tcp_info's min_rtt [s] (ss prints ms, to 1 µs below 1 s), its chrono
    counters (tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited [s]; ss prints whole ms; cumulative over the
    connection's life) and whether the latest delivery-rate sample was app-limited (tcpi_delivery_rate_app_limited)."""
    local: str
    min_rtt_s: float | None
    busy_s: float
    rwnd_limited_s: float
    sndbuf_limited_s: float
    app_limited: bool


def parse_ss(out: str, min_bytes: int = DATA_CONNECTION_BYTES) -> list[ConnSample]:
    """The data connections (bytes_acked >= min_bytes) in `ss -tinH` output: each connection is one
    unindented line (local and peer address) followed by its indented tcp_info line(s)."""
    conns: list[tuple[str, str]] = []
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            m = _CONN.search(line)
            conns.append((m.group(1) if m else "?", ""))
        elif conns:
            conns[-1] = (conns[-1][0], conns[-1][1] + " " + line)
    samples = []
    for local, info in conns:
        acked = _ACKED.search(info)
        if not acked or int(acked.group(1)) < min_bytes:
            continue
        rtt = _MINRTT.search(info)
        # ss prints the chrono counters as whole ms (misc/ss.c: "busy:%llums", tcpi_busy_time / 1000)
        chrono = {k: int(m.group(1)) / 1e3 if (m := r.search(info)) else 0.0 for k, r in _CHRONO.items()}
        min_rtt_s = float(rtt.group(1)) / 1e3 if rtt else None   # ms (misc/ss.c: minrtt:%g, tcpi_min_rtt / 1000.0)
        samples.append(ConnSample(local, min_rtt_s, chrono["busy"],
                                  chrono["rwnd_limited"], chrono["sndbuf_limited"],
                                  re.search(r"\bapp_limited\b", info) is not None))
    return samples


@dataclass(frozen=True)
class SenderLimits:
    """The sender's tcp_info over a run: chrono counters [s] summed over the data connections (each
    connection's last sample), and the share of all connection samples marked app_limited."""
    busy_s: float
    rwnd_limited_s: float
    sndbuf_limited_s: float
    app_limited_share: float | None


def sender_limits(samples: list[ConnSample]) -> SenderLimits | None:
    if not samples:
        return None
    last: dict[str, ConnSample] = {}
    for c in samples:                 # chrono counters are cumulative: a connection's last sample counts
        last[c.local] = c
    return SenderLimits(sum(c.busy_s for c in last.values()), sum(c.rwnd_limited_s for c in last.values()),
                        sum(c.sndbuf_limited_s for c in last.values()),
                        sum(c.app_limited for c in samples) / len(samples))


def limited_by(limits: SenderLimits | None, t: "Thresholds") -> str | None:
    """What set the run's rate, from the sender's tcp_info: the receive window (rwnd_limited, the
    receiver's buffer or its application not reading), the send buffer (sndbuf_limited), the
    application (app_limited: the sender did not fill the window: iperf3 or its CPU), else the
    network (cwnd-limited: the path). Chrono shares are of busy time (tcp_chrono_start in
    net/ipv4/tcp_output.c: busy counts while data is unacked)."""
    if limits is None or limits.busy_s <= 0:
        return None
    if beyond(limits.rwnd_limited_s, t.limit_share * limits.busy_s):
        return "receive_window"
    if beyond(limits.sndbuf_limited_s, t.limit_share * limits.busy_s):
        return "send_buffer"
    if limits.app_limited_share is not None and limits.app_limited_share > t.app_limited_share:
        return "application"
    return "network"


def host_limited(limit: str | None, socket_buffer_bytes: int | None) -> bool:
    """The measuring host, not the path, set the rate: the application, or a socket buffer that
    autotuning chose (a run that sets the buffer, -w B, is limited by the configuration it asked for)."""
    if limit == "application":
        return True
    return limit in ("receive_window", "send_buffer") and socket_buffer_bytes is None


class RttWatcher:
    """Samples the run's data connections (`ss -ti`) every RTT_SAMPLE_S: min_rtt (.value_s [s], the
    smallest seen; min_rtt is itself a running minimum) and every sample (.samples, for the chrono
    counters: the connections close when the run ends, so the last sample before that is kept)."""

    def __init__(self, host, role: str, port: int, first_s: float = RTT_SAMPLE_S):
        """first_s: when the first sample is taken (remote runs: early, so that a 1 s run has one)."""
        self.host, self.role, self.port, self.first_s = host, role, port, first_s
        self.value_s: float | None = None
        self.samples: list[ConnSample] = []
        self._stop = threading.Event()

    def __enter__(self) -> "RttWatcher":
        self._thread = threading.Thread(target=self._loop, daemon=True, name="tcpprofile-rtt-watcher")
        self._thread.start()
        return self

    def _loop(self) -> None:
        wait = self.first_s
        while not self._stop.wait(wait):
            wait = RTT_SAMPLE_S
            try:
                out = self.host.run(self.role, ["ss", "-tinH", "state", "established", f"dport = :{self.port}"],
                                    check=False, timeout=10).stdout
            except Exception:       # a link going down mid-sample: the run's own failure says why
                return
            conns = parse_ss(out)
            self.samples += conns
            rtts = [c.min_rtt_s for c in conns if c.min_rtt_s is not None]
            if rtts:
                self.value_s = min(rtts) if self.value_s is None else min(self.value_s, *rtts)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
