"""Who ran when a delay engine stalled (issue 21): the kernel's own counters sampled beside a run.

A background thread reads, every `interval_s` (10 ms), with CLOCK_MONOTONIC stamps (the clock of
delayd's stall log): /proc/stat per CPU (user, system, irq, softirq, steal: USER_HZ ticks),
/proc/softirqs and /proc/interrupts per CPU, /proc/pressure/cpu, and /proc/PID/schedstat (ns on the
CPU, ns runnable but waiting) of the named tasks (both engines, both iperf3 ends, ksoftirqd and the
kworkers of the engines' CPU, kdamond); every `all_every` samples it also reads schedstat of every
task on the host, so that a stall window names the tasks that ran in it. `explain(stall)` gives the
counters' changes over a stall's window. Costs ~2-4 % of a core on the CPU it runs on (say which).

Used by bench_link.py --probe; not part of the product.
"""

from __future__ import annotations

import bisect
import os
import threading
import time

SOFTIRQS = ("TIMER", "NET_TX", "NET_RX", "BLOCK", "TASKLET", "SCHED", "HRTIMER", "RCU")
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _cpu_stat(ncpu: int) -> list[tuple[int, ...]]:
    """Per CPU: (user+nice, system, irq, softirq, steal, idle+iowait) in ticks."""
    out = []
    for line in _read("/proc/stat").splitlines()[1:ncpu + 1]:
        f = [int(x) for x in line.split()[1:9]]
        out.append((f[0] + f[1], f[2], f[5], f[6], f[7], f[3] + f[4]))
    return out


def _softirqs(ncpu: int) -> dict[str, tuple[int, ...]]:
    out = {}
    for line in _read("/proc/softirqs").splitlines()[1:]:
        name, *vals = line.split()
        name = name.rstrip(":")
        if name in SOFTIRQS:
            out[name] = tuple(int(v) for v in vals[:ncpu])
    return out


def _interrupts(ncpu: int) -> dict[str, tuple[int, ...]]:
    """Per CPU counts of the interrupt lines that matter here: local timer, rescheduling and
    function-call IPIs, and the device queues summed (virtio)."""
    out = {"LOC": [0] * ncpu, "RES": [0] * ncpu, "CAL": [0] * ncpu, "dev": [0] * ncpu}
    for line in _read("/proc/interrupts").splitlines()[1:]:
        parts = line.split()
        if not parts:
            continue
        key = parts[0].rstrip(":")
        try:
            vals = [int(v) for v in parts[1:ncpu + 1]]
        except ValueError:
            continue
        slot = key if key in out else ("dev" if key.isdigit() else None)
        if slot:
            out[slot] = [a + b for a, b in zip(out[slot], vals)]
    return {k: tuple(v) for k, v in out.items()}


def _psi_some_us() -> int:
    for line in (_read("/proc/pressure/cpu") or "").splitlines():
        if line.startswith("some"):
            return int(line.rsplit("total=", 1)[1])
    return 0


def _schedstat(pid: int) -> tuple[int, int] | None:
    text = _read(f"/proc/{pid}/schedstat")
    if not text:
        return None
    run, wait, _ = text.split()
    return int(run), int(wait)


def _comm(pid: int) -> str:
    return (_read(f"/proc/{pid}/comm") or "?").strip()


def _affinity(pid: int) -> str:
    for line in (_read(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list"):
            return line.split(":", 1)[1].strip()
    return "?"


def kernel_threads_of_cpu(cpu: int) -> dict[str, int]:
    """ksoftirqd/N, kworker/N:* and kdamond: the kernel's own tasks that run on CPU N."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        comm = _comm(int(d))
        if comm == f"ksoftirqd/{cpu}" or comm.startswith(f"kworker/{cpu}:") or comm.startswith("kdamond"):
            out[f"{comm}[{d}]"] = int(d)
    return out


class Probe:
    """Context manager: samples while the block runs; .samples afterwards."""

    def __init__(self, pids: dict[str, int], *, interval_s: float = 0.01, all_every: int = 5):
        self.pids = dict(pids)
        self.interval_s, self.all_every = interval_s, all_every
        self.ncpu = os.cpu_count()
        self.samples: list[dict] = []
        self.all_tasks: list[tuple[int, dict[int, tuple[int, int]]]] = []
        self._stop = threading.Event()
        self.names: dict[int, tuple[str, str]] = {}     # pid -> (comm, Cpus_allowed_list), read once per pid

    def _sample_once(self, i: int) -> None:
        t = time.monotonic_ns()
        s = {"t": t, "cpu": _cpu_stat(self.ncpu), "softirq": _softirqs(self.ncpu),
             "irq": _interrupts(self.ncpu), "psi": _psi_some_us(),
             "task": {k: _schedstat(p) for k, p in self.pids.items()}}
        self.samples.append(s)
        if i % self.all_every == 0:
            snap = {}
            for d in os.listdir("/proc"):
                if d.isdigit():
                    v = _schedstat(int(d))
                    if v:
                        snap[int(d)] = v
                        if int(d) not in self.names:
                            self.names[int(d)] = (_comm(int(d)), _affinity(int(d)))
            self.all_tasks.append((t, snap))

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self._sample_once(i)
            i += 1
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "Probe":
        self._thread = threading.Thread(target=self._run, daemon=True, name="stall-probe")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    # Analysis ---------------------------------------------------------------------------------------
    def may_run_on(self, pid: int, cpu: int) -> bool:
        """Whether the task's affinity (as first seen) allows the CPU."""
        allowed = self.names.get(pid, ("?", "?"))[1]
        if allowed == "?":
            return True
        for part in allowed.split(","):
            lo, _, hi = part.partition("-")
            if int(lo) <= cpu <= int(hi or lo):
                return True
        return False

    def _bracket(self, times: list[int], a: int, b: int) -> tuple[int, int]:
        i = max(bisect.bisect_right(times, a) - 1, 0)
        j = min(bisect.bisect_left(times, b), len(times) - 1)
        return i, j

    def explain(self, start_ns: int, end_ns: int, *, engine_cpu: int, skip: set[int]) -> dict:
        """Changes of every counter over the smallest sampled window that holds [start, end]."""
        times = [s["t"] for s in self.samples]
        i, j = self._bracket(times, start_ns, end_ns)
        s0, s1 = self.samples[i], self.samples[j]
        c = engine_cpu
        cpu = {name: [(s1["cpu"][k][f] - s0["cpu"][k][f]) * TICK_MS for k in range(self.ncpu)]
               for f, name in enumerate(("user", "system", "irq", "softirq", "steal", "idle"))}
        tasks = {}
        for k in self.pids:
            a, b = s0["task"].get(k), s1["task"].get(k)
            if a and b:
                tasks[k] = ((b[0] - a[0]) / 1e3, (b[1] - a[1]) / 1e3)    # µs run, µs waiting
        others = []
        times_all = [t for t, _ in self.all_tasks]
        if len(times_all) >= 2:
            p, q = self._bracket(times_all, start_ns, end_ns)
            (ta, A), (tb, B) = self.all_tasks[p], self.all_tasks[q]
            for pid, (run, _) in B.items():
                if pid in skip or pid not in A:
                    continue
                d = (run - A[pid][0]) / 1e3
                if d > 200:
                    others.append((d, pid))
            others.sort(reverse=True)
            others = [(f"{self.names.get(pid, ('?', '?'))[0]}[{pid}] cpus {self.names.get(pid, ('?', '?'))[1]}",
                       round(d), self.may_run_on(pid, engine_cpu)) for d, pid in others[:4]]
            others_window_ms = (tb - ta) / 1e6
        else:
            others_window_ms = 0
        return {"window_ms": (s1["t"] - s0["t"]) / 1e6, "steal_ms": cpu["steal"],
                "engine_cpu_softirq_irq_ms": cpu["softirq"][c] + cpu["irq"][c],
                "engine_cpu_idle_ms": cpu["idle"][c],
                "softirqs_engine_cpu": {n: s1["softirq"][n][c] - s0["softirq"][n][c] for n in SOFTIRQS},
                "irqs_engine_cpu": {n: s1["irq"][n][c] - s0["irq"][n][c] for n in s0["irq"]},
                "psi_ms": (s1["psi"] - s0["psi"]) / 1e3, "tasks_us_run_wait": tasks,
                "others_us": others, "others_window_ms": others_window_ms}
