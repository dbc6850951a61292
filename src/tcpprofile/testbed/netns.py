"""Thin helpers around ip, tc, iptables, sysctl and /proc; every call is an argument list."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from ..errors import TcpProfileError


class CommandFailed(TcpProfileError):
    """A system command exited non-zero."""


def sh(argv: list[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run argv, capture text output; raise CommandFailed (with stderr) on failure when check."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise CommandFailed(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def in_ns(ns: str, argv: list[str]) -> list[str]:
    """argv run inside network namespace ns (ip netns exec execs the command: same PID)."""
    return ["ip", "netns", "exec", ns, *argv]


def netns_list() -> list[str]:
    out = sh(["ip", "-j", "netns", "list"]).stdout.strip()
    return [entry["name"] for entry in json.loads(out)] if out else []


def netns_pids(ns: str) -> list[int]:
    proc = sh(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def sysctl(ns: str, settings: dict[str, str]) -> None:
    """Set per-namespace sysctls inside ns."""
    sh(in_ns(ns, ["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in settings.items())]))


def write_sysctl(key: str, value: str, *, netns: str | None = None) -> subprocess.CompletedProcess:
    """`sysctl -w key=value` on the host, or inside namespace netns; the caller judges the result."""
    argv = ["sysctl", "-w", f"{key}={value}"]
    return subprocess.run(in_ns(netns, argv) if netns else argv, capture_output=True, text=True)


def iptables(ns: str, args: list[str]) -> None:
    sh(in_ns(ns, ["iptables", "-w", *args]))


def iptables_rules(ns: str, table: str) -> list[dict]:
    """Rules of a table with packet/byte counters, from iptables-save -c."""
    out = sh(in_ns(ns, ["iptables-save", "-c", "-t", table])).stdout
    rules = []
    for line in out.splitlines():
        m = re.match(r"\[(\d+):(\d+)\] -A (\S+) (.*)", line)
        if m:
            rules.append({"packets": int(m.group(1)), "bytes": int(m.group(2)), "chain": m.group(3),
                          "rule": m.group(4)})
    return rules


def qdiscs(ns: str, dev: str) -> list[dict]:
    """tc -s -j qdisc show for dev inside ns."""
    return json.loads(sh(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev]).stdout or "[]")


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks), or None when pid does not exist or
    has exited (zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process, in seconds (fields 14 and 15 of /proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_alive(pid: int, start_time: int) -> bool:
    """True when pid exists and is the same process (same start time) as recorded."""
    return process_start_time(pid) == start_time


def process_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
