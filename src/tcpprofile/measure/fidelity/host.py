"""The host while a run measures: CPU busy share, CPU pressure (PSI), run queue, foreign processes' CPU
(not the run's own: ownprocs.py) and TCP's memory, sampled by HostSampler."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ... import ownprocs

SAMPLE_S = 0.5


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


def _pressure_some_s() -> float | None:
    """Total time [s] some task waited for a CPU (PSI), or None without PSI."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return None
    return int(first.rsplit("total=", 1)[1]) / 1e6      # total= in µs (Documentation/accounting/psi.rst)


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
        self._psi0 = _pressure_some_s()
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
        psi1 = _pressure_some_s()
        pressure = (psi1 - self._psi0) / wall if psi1 is not None and self._psi0 is not None else None
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
