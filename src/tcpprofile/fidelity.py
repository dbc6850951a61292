"""Per-run fidelity: what the instrument did while one run measured.

A monitor is a context manager around one iperf3 run: `with env.monitor(port) as fid:` and, once the
block has ended, `fid.columns` holds the runs-table columns it measured and `fid.flags` the run flags
it raises. Campaigns store both with the run (ok or failed).

Measured for every run (remote runs: the host and the base RTT only):
  host     CPU busy share (/proc/stat), CPU pressure (PSI "some" stall time / wall time), the largest
           run queue seen (procs_running, sampled every SAMPLE_S), and the CPU used by *foreign*
           processes: user-space processes that are neither this process nor its descendants
           (iperf3, delayd) nor, in remote mode, the run's own elsewhere on this host (ownprocs.py:
           the engines of a testbed link this process runs inside, an iperf3 server holding the far
           end of the run's connections), in cores; kernel threads (softirq work of our own packets)
           are not foreign.
  base RTT the smallest RTT TCP measured on the run's data connections (tcp_info min_rtt, `ss -ti`).
  engines  per direction: release lateness (mean, max) during the run, packets the engine path lost
           (kernel queue full, undeliverable, ENOBUFS), CPU share; the bottleneck's drops and
           overlimits (packets that found the modelled wire busy and queued); packets held at the end;
           stall episodes and their excess lateness, injected holds (issue 33), and from them the largest
           change in Θ the run's stalls could have caused (stall_effect_bound), which grades the stall
           flag: engine_stall beyond the instrument's resolution, else the note engine_stall_minor.
  loss     packets the loss stage (the forward engine's) saw and dropped during the run, checked
           against its rule; uniform loss is reseeded per run from the run id (loss_seed).
  limit    what set the run's rate (limited_by): the sender's tcp_info chrono counters (busy,
           rwnd_limited, sndbuf_limited) and app_limited marks of the data connections, sampled
           during the run, and the busy share of the application CPUs (both ends run there).
Flags and their thresholds (docs/testbed.md gives the measurements behind them): see THRESHOLDS.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ContextManager

from . import ownprocs
from .store.db import dumps

SAMPLE_S = 0.5
RTT_SAMPLE_S = 2.0


@dataclass(frozen=True)
class Thresholds:
    """When a run is flagged. Tolerances are per run; see docs/testbed.md for how they were chosen."""
    rtt_rel: float = 0.01            # rtt_base_off: |base RTT − τ| > max(rtt_rel·τ, rtt_abs_ms)
    rtt_abs_ms: float = 0.1
    late_mean_ms: float = 0.02       # engine_late: both directions' mean lateness together above
    late_mean_rel: float = 0.01      #   max(late_mean_ms, late_mean_rel·τ) (added to every RTT; 0.02 ms =
                                     #   G/2, delayd's release spread at its 40 µs granularity) …
    stall_ms: float = 0.5            # a stall: a release later than max(stall_ms, min(stall_rel·τ,
    stall_rel: float = 0.01          #   stall_cap_ms)): the RTT tolerance, capped at HyStart's ACK-train
    stall_cap_ms: float = 2.0        #   gap (hystart_ack_delta_us, tcp_cubic.c); docs/testbed.md
    stall_resolution_rel: float = 0.002   # engine_stall: stall_effect_bound above the instrument's run-to-run
                                     #   resolution: CoV of Θ, median 0.20 % over 12 configurations × 10 runs
                                     #   at 45.6 ms, 10 Gbit/s (benchmarks/data/adaptive-45.6ms-10rep.csv;
                                     #   0.08-0.82 % per configuration); a milder stall is engine_stall_minor
    stall_amplification: float = 1.0     # Θ's relative change per unit of the engines' excess stall time per
                                     #   second of run. 1: the link idles at most as long as the stalls. The
                                     #   dose-response (benchmarks/stall_dose.py, docs/testbed.md) found no
                                     #   amplification: injected holds cost max(0, D − β/C) each, and natural
                                     #   excess (9-14 % of a run) cost nothing, so 1 is a loose upper bound
    limit_share: float = 0.05        # limited_by: rwnd/sndbuf-limited for more than this share of busy time
    app_limited_share: float = 0.5   #   … or app_limited in more than this share of connection samples
    foreign_cores: float = 0.2       # host_contended: other processes used more CPU than this
                                     # (PSI pressure is stored, not judged: our own iperf3, engines and
                                     # softirq keep it at 0.15-0.6 on a quiet 2-core host)
    ts_tick_ms: float = 1.0          # RTT samples from the timestamp option are whole ticks (see rtt_off)
    loss_z: float = 3.29             # loss_off: dropped count outside ±3.29 σ of the binomial (99.9 %)


THRESHOLDS = Thresholds()

# The flags that say the instrument was not faithful during a run, so that the same run made again may
# be: this module's, and the link's calibration copied to the run (link_rate_low, link_rtt_off; a remote
# link's rtt_unmeasured stays on its links row, cleared once a run measured TCP's min_rtt: a path that
# filters ICMP is measured by TCP). A campaign with `rerun_flagged = true` runs ok runs carrying one again on resume.
# Not: the iperf3 output notes (throughput_sender_side, intervals_*, streams_matched_by_order) and
# cc_mismatch, which say what the run reported or loaded, and come out the same again.
# engine_stall is not rerun: on a quiet host every 10 Gbit/s run of the models' validation design so far had a
# release later than its threshold (issue 21: the stall's cause is open), so a rerun reproduces it.
RERUN_FLAGS = ("host_contended", "rtt_base_off", "engine_late", "engine_dropped", "loss_off", "host_limited",
               "host_tcp_memory")


def rerun_flags(flags: str | None) -> list[str]:
    """The instrument flags (RERUN_FLAGS and link_*) among a run's comma-separated flags."""
    return [f for f in (flags or "").split(",") if f in RERUN_FLAGS or f.startswith("link_")]


@dataclass
class RunFidelity:
    """Filled in when the monitored block ends."""
    columns: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


Monitor = Callable[..., ContextManager[RunFidelity]]   # monitor(port, run=None): run is the run's row so far


@contextlib.contextmanager
def unmonitored(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
    """A monitor that measures nothing (tests' fake environments)."""
    yield RunFidelity()


# -- the host ----------------------------------------------------------------------------------------
def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat (idle and iowait are not busy)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])                       # user nice system idle iowait irq softirq steal
    return total - fields[3] - fields[4], total


def _cpu_times_of(cpus) -> tuple[int, int]:
    """(busy, total) jiffies of the given CPUs from /proc/stat's cpuN lines."""
    busy = total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        name = line.split(maxsplit=1)[0]
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            fields = [int(x) for x in line.split()[1:9]]
            total += sum(fields)
            busy += sum(fields) - fields[3] - fields[4]
    return busy, total


def _procs_running() -> int:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("procs_running"):
            return int(line.split()[1])
    return 0


def _pressure_some_us() -> int | None:
    """Total µs some task waited for a CPU (PSI), or None without PSI."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return None
    return int(first.rsplit("total=", 1)[1])


_KTHREAD = 0x00200000    # PF_KTHREAD in /proc/PID/stat flags


def _processes() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, utime+stime jiffies, is-kernel-thread) for every process now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        f = raw[raw.rindex(")") + 2:].split()
        out[int(d)] = (int(f[1]), int(f[11]) + int(f[12]), int(f[6]) & _KTHREAD)
    return out


def _descendants(procs: dict, root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    ours, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo.extend(children.get(pid, ()))
    return ours


def foreign_usage(before: dict, after: dict, root: int, hz: int, wall_s: float, own=()) -> dict[int, float]:
    """CPU [cores] used between two process tables (_processes), per user-space process that is
    neither root nor its descendant, nor one of `own` (the run's processes outside root's tree,
    ownprocs.py: themselves only, what they started is not known to be the run's); processes that
    started in between count from zero, those that ended are not seen."""
    ours = _descendants(after, root) | set(own)
    used = {pid: (t - before.get(pid, (0, 0, 0))[1]) / hz / wall_s for pid, (_, t, kthread) in after.items()
            if pid not in ours and not kthread}
    return {pid: c for pid, c in used.items() if c > 0}


def foreign_cores(before: dict, after: dict, root: int, hz: int, wall_s: float, own=()) -> float:
    """The CPU [cores] of foreign_usage, all together."""
    return sum(foreign_usage(before, after, root, hz, wall_s, own).values())


def top_foreign(usage: dict[int, float], n: int = 5) -> list[list]:
    """The n foreign processes that used the most CPU: [pid, comm, cores] (what host_contended saw)."""
    top = sorted(usage.items(), key=lambda kv: -kv[1])[:n]
    return [[pid, _read_text(f"/proc/{pid}/comm").strip() or "?", round(c, 4)] for pid, c in top]


@dataclass(frozen=True)
class HostLoad:
    busy_share: float          # of all CPUs, 0–1
    pressure_share: float | None
    runqueue_max: int
    foreign_cores: float       # CPU used by foreign processes [cores]
    wall_s: float
    cpus_busy_share: float | None = None   # busy share of the CPUs asked for (the link's application CPUs)
    tcp_mem_pages_max: int | None = None     # the most memory TCP held during the run [pages] (/proc/net/sockstat)
    tcp_mem_pressure_pages: int | None = None   # tcp_mem[1]: above it TCP is under memory pressure
    own_pids: dict | None = None     # remote: the run's processes outside our tree (ownprocs.py): path, server
    foreign_top: list | None = None  # the foreign processes that used the most CPU: [pid, comm, cores]


def tcp_memory(sockstat: str, tcp_mem: str) -> tuple[int | None, int | None]:
    """(pages TCP holds now, tcp_mem's pressure threshold [pages]) from /proc/net/sockstat and
    /proc/sys/net/ipv4/tcp_mem. Above the threshold the kernel clamps every socket's buffers
    (tcp_under_memory_pressure → tcp_moderate_sndbuf / tcp_clamp_window): the host, not the path, limits
    the run (seen: 10 streams of 1 GiB buffers held 1.75 M pages over the threshold 1.54 M and ran at
    1.35 Gbit/s at 11.8 ms)."""
    m = re.search(r"^TCP:.*\bmem (\d+)", sockstat, re.M)
    parts = tcp_mem.split()
    return (int(m.group(1)) if m else None), (int(parts[1]) if len(parts) == 3 else None)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


class HostSampler:
    """Context manager sampling the host's CPU while a run measures; .result() after the block."""

    def __init__(self, interval_s: float = SAMPLE_S, cpus: set[int] | None = None, port: int | None = None):
        """port: a remote run's server port: the run's processes outside our tree are looked for
        (ownprocs.py) and not counted as foreign."""
        self.interval_s = interval_s
        self.cpus = cpus
        self.port = port
        self._path: set[int] = set()
        self._server: set[int] = set()
        self._stop = threading.Event()
        self._runqueue_max = 0
        self._tcp_mem_max: int | None = None
        self._tcp_mem_pressure: int | None = None
        self._result: HostLoad | None = None

    def __enter__(self) -> "HostSampler":
        self._t0 = time.monotonic()
        self._cpu0 = _cpu_times()
        self._cpus0 = _cpu_times_of(self.cpus) if self.cpus else None
        self._psi0 = _pressure_some_us()
        self._procs0 = _processes()
        if self.port is not None:
            self._path = ownprocs.testbed_pids()
        # tcp_mem is a sysctl, fixed during a run: read once; sockstat is sampled
        self._tcp_mem_pressure = tcp_memory("", _read_text("/proc/sys/net/ipv4/tcp_mem"))[1]
        self._thread = threading.Thread(target=self._sample, daemon=True, name="tcpprofile-host-sampler")
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            # procs_running counts this sampler too: subtract it
            self._runqueue_max = max(self._runqueue_max, _procs_running() - 1)
            if self.port is not None and not self._server:     # a server stays one process: found once
                self._server = ownprocs.server_pids(self.port, ownprocs.client_ports(self.port))
            pages = tcp_memory(_read_text("/proc/net/sockstat"), "")[0]
            if pages is not None:
                self._tcp_mem_max = max(self._tcp_mem_max or 0, pages)
            self._stop.wait(self.interval_s)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        wall = max(time.monotonic() - self._t0, 1e-9)
        busy1, total1 = _cpu_times()
        busy = (busy1 - self._cpu0[0]) / max(total1 - self._cpu0[1], 1)
        psi1 = _pressure_some_us()
        pressure = (psi1 - self._psi0) / 1e6 / wall if psi1 is not None and self._psi0 is not None else None
        usage = foreign_usage(self._procs0, _processes(), os.getpid(), os.sysconf("SC_CLK_TCK"), wall,
                              self._path | self._server)
        foreign = sum(usage.values())
        cpus_busy = None
        if self._cpus0 is not None:
            b1, t1 = _cpu_times_of(self.cpus)
            cpus_busy = (b1 - self._cpus0[0]) / max(t1 - self._cpus0[1], 1)
        own = None if self.port is None else {"path": sorted(self._path), "server": sorted(self._server)}
        self._result = HostLoad(busy, pressure, self._runqueue_max, foreign, wall, cpus_busy,
                                self._tcp_mem_max, self._tcp_mem_pressure, own, top_foreign(usage))

    def result(self) -> HostLoad:
        if self._result is None:
            raise RuntimeError("HostSampler.result() before the block ended")
        return self._result


# -- the base RTT under load ---------------------------------------------------------------------------
_MINRTT = re.compile(r"\bminrtt:([0-9.]+)")
_ACKED = re.compile(r"\bbytes_acked:([0-9]+)")
DATA_CONNECTION_BYTES = 1 << 20     # iperf3's control connection moves a few kB: not a data stream


def min_rtt_ms(host, role: str, port: int, min_bytes: int = DATA_CONNECTION_BYTES) -> float | None:
    """Smallest RTT sample [ms] (tcp_info min_rtt) over the data connections to port, now; None if none."""
    out = host.run(role, ["ss", "-tinH", "state", "established", f"dport = :{port}"], check=False, timeout=10).stdout
    rtts = [c.min_rtt_ms for c in parse_ss(out, min_bytes) if c.min_rtt_ms is not None]
    return min(rtts) if rtts else None


_CONN = re.compile(r"(\S+:\d+)\s+(\S+:\d+)")
_CHRONO = {k: re.compile(rf"\b{k}:([0-9]+)ms") for k in ("busy", "rwnd_limited", "sndbuf_limited")}


@dataclass(frozen=True)
class ConnSample:
    """One `ss -ti` sample of one data connection: tcp_info's min_rtt [ms], its chrono counters
    (tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited [ms], cumulative over the connection's
    life) and whether the latest delivery-rate sample was app-limited (tcpi_delivery_rate_app_limited)."""
    local: str
    min_rtt_ms: float | None
    busy_ms: int
    rwnd_limited_ms: int
    sndbuf_limited_ms: int
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
        chrono = {k: int(m.group(1)) if (m := r.search(info)) else 0 for k, r in _CHRONO.items()}
        samples.append(ConnSample(local, float(rtt.group(1)) if rtt else None, chrono["busy"],
                                  chrono["rwnd_limited"], chrono["sndbuf_limited"],
                                  re.search(r"\bapp_limited\b", info) is not None))
    return samples


@dataclass(frozen=True)
class SenderLimits:
    """The sender's tcp_info over a run: chrono counters summed over the data connections (each
    connection's last sample), and the share of all connection samples marked app_limited."""
    busy_ms: float
    rwnd_limited_ms: float
    sndbuf_limited_ms: float
    app_limited_share: float | None


def sender_limits(samples: list[ConnSample]) -> SenderLimits | None:
    if not samples:
        return None
    last: dict[str, ConnSample] = {}
    for c in samples:                 # chrono counters are cumulative: a connection's last sample counts
        last[c.local] = c
    return SenderLimits(sum(c.busy_ms for c in last.values()), sum(c.rwnd_limited_ms for c in last.values()),
                        sum(c.sndbuf_limited_ms for c in last.values()),
                        sum(c.app_limited for c in samples) / len(samples))


def limited_by(limits: SenderLimits | None, t: "Thresholds") -> str | None:
    """What set the run's rate, from the sender's tcp_info: the receive window (rwnd_limited, the
    receiver's buffer or its application not reading), the send buffer (sndbuf_limited), the
    application (app_limited: the sender did not fill the window: iperf3 or its CPU), else the
    network (cwnd-limited: the path). Chrono shares are of busy time (tcp_chrono_start in
    net/ipv4/tcp_output.c: busy counts while data is unacked)."""
    if limits is None or limits.busy_ms <= 0:
        return None
    if limits.rwnd_limited_ms > t.limit_share * limits.busy_ms:
        return "receive_window"
    if limits.sndbuf_limited_ms > t.limit_share * limits.busy_ms:
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
    """Samples the run's data connections (`ss -ti`) every RTT_SAMPLE_S: min_rtt (.value, the
    smallest seen; min_rtt is itself a running minimum) and every sample (.samples, for the chrono
    counters: the connections close when the run ends, so the last sample before that is kept)."""

    def __init__(self, host, role: str, port: int, first_s: float = RTT_SAMPLE_S):
        """first_s: when the first sample is taken (remote runs: early, so that a 1 s run has one)."""
        self.host, self.role, self.port, self.first_s = host, role, port, first_s
        self.value: float | None = None
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
            rtts = [c.min_rtt_ms for c in conns if c.min_rtt_ms is not None]
            if rtts:
                self.value = min(rtts) if self.value is None else min(self.value, *rtts)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# -- verdicts ----------------------------------------------------------------------------------------
def rtt_off(base_ms: float, target_ms: float, t: Thresholds = THRESHOLDS, frame_ms: float = 0.0) -> bool:
    """Base RTT outside max(1 %, 0.1 ms) of τ. Above τ, a data frame's serialisation at the line rate
    (frame_ms = frame bits / C) is part of the wire: the engine releases a packet τ/2 after its last
    bit left the modelled wire, so an RTT sample is τ + frame_ms (72 µs at 1 Gbit/s, MTU 9000: a quiet
    run read 10.132 ms at 10 ms). One exception below τ: in loss recovery the kernel
    takes RTT samples from the timestamp option (tcp_rtt_tsopt_us) in whole 1 ms ticks, so tcp_info's
    min_rtt can read floor(τ) (seen: 11.000 at 11.8 ms, 45.000 at 45.6 ms on lossy links and BBR runs,
    whose other samples sat at τ). A whole number of ms up to one tick below τ is that, not the wire
    (the engine never releases more than G/2 = 20 µs early)."""
    tol = max(t.rtt_rel * target_ms, t.rtt_abs_ms)
    if target_ms - tol <= base_ms <= target_ms + frame_ms + tol:
        return False
    tick_sample = base_ms < target_ms and abs(base_ms - round(base_ms)) < 1e-9
    return not (tick_sample and base_ms >= target_ms - t.ts_tick_ms - tol)


def loss_off(mode: str, rate: float, every: int, seen: int, dropped: int, t: Thresholds = THRESHOLDS) -> bool:
    """Did the loss stage drop what its rule says? periodic (1 in N): exactly seen/N up to ±1 (the
    rule's counter runs on across runs); uniform: within ±z σ of the binomial mean."""
    if mode == "none" or seen == 0:
        return False
    if mode == "periodic":
        return abs(dropped - seen / every) > 1
    sd = math.sqrt(seen * rate * (1 - rate))
    return abs(dropped - seen * rate) > t.loss_z * sd + 0.5       # + ½: continuity


def engine_late(cols: dict, target_ms: float, t: Thresholds = THRESHOLDS) -> bool:
    """The engines added more than the tolerated delay on average."""
    means = [cols.get(f"engine_{d}_late_mean_us") for d in ("fwd", "rev")]
    added_ms = sum(m for m in means if m is not None) / 1e3
    return added_ms > max(t.late_mean_ms, t.late_mean_rel * target_ms)


def stall_threshold_ms(target_ms: float, t: Thresholds = THRESHOLDS) -> float:
    """max(0.5 ms, min(1 % τ, 2 ms)): a held release shifts every RTT sample behind it; beyond 1 % τ
    they leave the RTT tolerance, and beyond 2 ms the ACK stream has a gap that HyStart's ACK-train
    test reads (hystart_ack_delta_us = 2000 in net/ipv4/tcp_cubic.c: a gap ends the train), the
    smallest hold at which the kernel's TCP changes what it does (docs/testbed.md, "the worst case")."""
    return max(t.stall_ms, min(t.stall_rel * target_ms, t.stall_cap_ms))


def engine_stall(cols: dict, target_ms: float, t: Thresholds = THRESHOLDS) -> bool:
    """Some release, in either direction, was later than stall_threshold_ms (a stall was seen; whether
    it matters is stall_flag's question)."""
    worst = [cols.get(f"engine_{d}_late_max_us") for d in ("fwd", "rev")]
    worst_ms = max((w for w in worst if w is not None), default=0.0) / 1e3
    return worst_ms > stall_threshold_ms(target_ms, t)


def stall_effect_bound(cols: dict, wall_s: float, t: Thresholds = THRESHOLDS) -> float | None:
    """The largest relative change in Θ the run's observed stalls could have caused (issue 33): both
    engines' summed *uncovered* stall excess over the run's wall time, times t.stall_amplification.

    A stall episode of e (delayd.c, "Stall episodes": how long the emulated wire delivered nothing it
    should have) stops the ACK clock for e; the bottleneck's backlog q keeps the wire busy for q/C of it,
    so the wire idles max(0, e − q/C) (delayd.c, "Uncovered excess", q read per episode), and a
    fixed-size transfer takes at most that much longer: Θ changes by at most Σ max(0, e − q/C) / T
    (amplification 1: benchmarks/stall_dose.py measured the cost following D − β/C with a full queue,
    no amplification). An engine without the uncovered record (delayd before schema 8) counts its whole
    excess (nothing covers: the bound of issue 33's first step, ~10× too high here). Capped at 1 (Θ
    cannot fall by more than itself). None when no engine reported the record (delayd before issue 33)
    or the wall time is unknown."""
    per_direction = []
    for d in ("fwd", "rev"):
        uncovered, excess = cols.get(f"engine_{d}_stall_uncovered_ms"), cols.get(f"engine_{d}_stall_excess_ms")
        per_direction.append(uncovered if uncovered is not None else excess)
    if all(e is None for e in per_direction) or not wall_s or wall_s <= 0:
        return None
    lost_s = sum(e for e in per_direction if e is not None) / 1e3
    return min(1.0, t.stall_amplification * lost_s / wall_s)


def stall_flag(cols: dict, target_ms: float, t: Thresholds = THRESHOLDS) -> str | None:
    """'engine_stall' where the run's stall_effect_bound (cols) exceeds the instrument's resolution
    (t.stall_resolution_rel): the stalls could have changed Θ by more than runs differ anyway;
    'engine_stall_minor' where a release was later than stall_threshold_ms but the bound stays within
    the resolution (recorded, not a reason to leave the run out: dimensions.NOTE_FLAGS); None without a
    stall. Without the engines' record (bound None) every stall is 'engine_stall', as before issue 33."""
    bound = cols.get("stall_effect_bound")
    if bound is not None and bound > t.stall_resolution_rel:
        return "engine_stall"
    if not engine_stall(cols, target_ms, t):
        return None
    return "engine_stall" if bound is None else "engine_stall_minor"


def host_flags(load: HostLoad, t: Thresholds = THRESHOLDS) -> list[str]:
    """host_contended: foreign processes used more CPU than t.foreign_cores; host_tcp_memory: TCP's memory
    reached tcp_mem's pressure threshold during the run (tcp_memory)."""
    flags = ["host_contended"] if load.foreign_cores > t.foreign_cores else []
    if None not in (load.tcp_mem_pages_max, load.tcp_mem_pressure_pages) and \
            load.tcp_mem_pages_max >= load.tcp_mem_pressure_pages:
        flags.append("host_tcp_memory")
    return flags


def host_columns(load: HostLoad) -> dict:
    return {"host_cpu_busy": load.busy_share, "host_cpu_pressure": load.pressure_share,
            "host_runqueue_max": load.runqueue_max, "host_cpu_foreign": load.foreign_cores}


# -- monitors ------------------------------------------------------------------------------------------
def remote_monitor(host, role: str = "sender") -> Monitor:
    """Host load and base RTT for runs against a remote server (no target RTT: nothing to compare)."""
    @contextlib.contextmanager
    def monitor(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
        fid = RunFidelity()
        with HostSampler(port=port) as sampler, RttWatcher(host, role, port, first_s=SAMPLE_S) as rtt:
            yield fid
        load = sampler.result()
        fid.columns.update(host_columns(load), rtt_base_ms=rtt.value,
                           rtt_base_source="tcp_info min_rtt" if rtt.value is not None else None,
                           fidelity_json=dumps({"host": load.__dict__}))
        fid.flags += host_flags(load)
    return monitor


def emulated_monitor(link, t: Thresholds = THRESHOLDS) -> Monitor:
    """Everything above for a run on an EmulatedLink."""
    @contextlib.contextmanager
    def monitor(port: int, run: dict | None = None) -> Iterator[RunFidelity]:
        fid = RunFidelity()
        cfg = link.config
        run = run or {}
        seed = None
        if cfg.loss_mode == "uniform" and run.get("run_id"):
            seed = loss_seed(run["run_id"])
            link.seed_loss(seed)
        before = link.engine_stats(period=True, answering=True)
        with HostSampler(cpus=getattr(link, "app_cpus", None)) as sampler, RttWatcher(link, "sender", port) as rtt:
            yield fid
        after = link.engine_stats(period=True, answering=True)
        load = sampler.result()
        fid.columns.update(engine_columns(before, after, load.wall_s))
        fid.columns["stall_effect_bound"] = stall_effect_bound(fid.columns, load.wall_s, t)
        fwd_b, fwd_a = before.get("forward"), after.get("forward")
        seen = dropped = None
        if cfg.loss_mode != "none" and fwd_b is not None and fwd_a is not None:
            seen, dropped = fwd_a.loss_seen - fwd_b.loss_seen, fwd_a.loss_dropped - fwd_b.loss_dropped
        limits = sender_limits(rtt.samples)
        limit = limited_by(limits, t)
        fid.columns.update(host_columns(load), rtt_base_ms=rtt.value,
                           rtt_base_source="tcp_info min_rtt" if rtt.value is not None else None,
                           loss_seen_packets=seen, loss_dropped_packets=dropped, loss_seed=seed,
                           limited_by=limit, app_cpu_busy=load.cpus_busy_share,
                           **limit_columns(limits))
        flags = host_flags(load, t)
        if rtt.value is not None and rtt_off(rtt.value, cfg.rtt_s * 1e3, t, frame_ms=cfg.frame_time_s * 1e3):
            flags.append("rtt_base_off")
        if engine_late(fid.columns, cfg.rtt_s * 1e3, t):
            flags.append("engine_late")
        stall = stall_flag(fid.columns, cfg.rtt_s * 1e3, t)
        if stall:
            flags.append(stall)
        if fid.columns.get("engine_fwd_drops") or fid.columns.get("engine_rev_drops"):
            flags.append("engine_dropped")
        if seen is not None and loss_off(cfg.loss_mode, cfg.loss_rate,
                                         cfg.loss_every if cfg.loss_mode == "periodic" else 0, seen, dropped, t):
            flags.append("loss_off")
        if host_limited(limit, run.get("socket_buffer_bytes")):
            flags.append("host_limited")
        fid.flags += flags
        fid.columns["fidelity_json"] = dumps({
            "host": load.__dict__, "thresholds": t.__dict__, "target_rtt_ms": cfg.rtt_s * 1e3,
            "sender_limits": limits.__dict__ if limits else None,
            "stall_threshold_ms": stall_threshold_ms(cfg.rtt_s * 1e3, t),
            "engines": {k: {"before": v.to_dict(), "after": after[k].to_dict()} for k, v in before.items()
                        if k in after}})
    return monitor


def loss_seed(run_id: str) -> int:
    """The uniform loss stage's seed for a run: the first 63 bits of sha256(run id) (a BIGINT; the
    same run id, e.g. a retried attempt, replays the same generator sequence)."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") >> 1


def limit_columns(limits: SenderLimits | None) -> dict:
    keys = ("tcp_busy_ms", "tcp_rwnd_limited_ms", "tcp_sndbuf_limited_ms", "tcp_app_limited_share")
    if limits is None:
        return dict.fromkeys(keys)
    return dict(zip(keys, (limits.busy_ms, limits.rwnd_limited_ms, limits.sndbuf_limited_ms,
                           limits.app_limited_share)))


def engine_columns(before: dict, after: dict, wall_s: float) -> dict:
    """Per-direction deltas of two engine snapshots (period=True at both ends) as runs columns."""
    cols: dict = {}
    for name, d in (("forward", "fwd"), ("reverse", "rev")):
        b, a = before.get(name), after.get(name)
        if b is None or a is None:
            cols.update({f"engine_{d}_{k}": None for k in ("late_mean_us", "late_max_us", "late_p99_us",
                                                            "late_p999_us", "drops", "cpu_share", *_STALL_KEYS)})
            continue
        released = a.released - b.released
        cols[f"engine_{d}_late_mean_us"] = (a.late_sum_ns - b.late_sum_ns) / released / 1e3 if released else None
        cols[f"engine_{d}_late_max_us"] = a.period_late_max_ns / 1e3 if released else None
        for q, k in ((0.99, "p99"), (0.999, "p999")):    # a's histogram covers the period since `before`
            v = a.period_late_quantile_ns(q) if released else None
            cols[f"engine_{d}_late_{k}_us"] = v / 1e3 if v is not None else None
        cols[f"engine_{d}_drops"] = (a.lost + a.enobufs) - (b.lost + b.enobufs)
        cols[f"engine_{d}_cpu_share"] = (a.cpu_s - b.cpu_s) / wall_s
        cols.update(_stall_columns(d, b, a))
    fwd_b, fwd_a = before.get("forward"), after.get("forward")
    if fwd_b is not None and fwd_a is not None:
        cols["bottleneck_drops"] = fwd_a.bottleneck_drops - fwd_b.bottleneck_drops
        cols["bottleneck_overlimits"] = fwd_a.bottleneck_overlimits - fwd_b.bottleneck_overlimits
    cols["inflight_end_packets"] = sum(s.held for s in after.values())
    return cols


_STALL_KEYS = ("stall_episodes", "stall_excess_ms", "stall_injected_holds", "stall_inject_hold_ms",
               "stall_inject_every_s", "stall_uncovered_ms")


def _stall_columns(d: str, b, a) -> dict:
    """One direction's stall record during the run (delayd.c, "Stall episodes", "Stall injection"): the
    episodes and their summed excess [ms], the injected holds that deferred a release, the
    injection in force at the run's end (hold [ms], every [s]; None: off), and the part of the excess
    the bottleneck's queue did not cover [ms] ("Uncovered excess"; None from an engine before schema 8).
    All None from an engine built before issue 33."""
    keys = [f"engine_{d}_{k}" for k in _STALL_KEYS]
    if a.late_excess_ns is None or b.late_excess_ns is None:
        return dict.fromkeys(keys)
    on = bool(a.stall_every_ns)
    uncovered = None if a.late_uncovered_ns is None or b.late_uncovered_ns is None else \
        (a.late_uncovered_ns - b.late_uncovered_ns) / 1e6
    return dict(zip(keys, (a.late_episodes - b.late_episodes, (a.late_excess_ns - b.late_excess_ns) / 1e6,
                           a.stall_holds - b.stall_holds, a.stall_hold_ns / 1e6 if on else None,
                           a.stall_every_ns / 1e9 if on else None, uncovered)))
