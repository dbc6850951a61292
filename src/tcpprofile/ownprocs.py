"""Which processes on this host work for the run being measured, so that host_contended (measure/fidelity/)
counts only the CPU of the others.

A run's own processes, besides the measuring process and its descendants (iperf3 client; on an
emulated link also the engines and the server):
  path     the delay engines (and other processes) of a tcpprofile testbed link whose namespaces hold
           the one this process runs in: remote mode over this project's own emulated link (`testbed
           up`, then `tune --host` from its sender namespace). Found in the link's state record
           (testbed/state.py: links/<tag>.json lists the owner and the PIDs it started, each with its
           start time, so a reused PID is not taken for it).
  server   an iperf3 process that holds the far end of one of the run's connections: a server on this
           host (an iperf3 -s started by hand in the receiver's namespace, or a DTN's own). Its sockets
           are found by their ports in the process's own network namespace (/proc/PID/net/tcp{,6},
           proc(5)) and matched to its descriptors (/proc/PID/fd/N -> socket:[inode]); an iperf3 that
           serves someone else's test holds no such socket and stays foreign.
Kernel threads are not foreign either (fidelity.host.foreign_cores): softirq work done for the run's packets.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import paths
from .testbed.netns import process_start_time

ESTABLISHED = "01"       # st column of /proc/net/tcp (include/net/tcp_states.h: TCP_ESTABLISHED = 1)


def _netns_inode(pid: int | str = "self") -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def testbed_pids(run_dir: Path | None = None, netns_inode: int | None = None) -> set[int]:
    """PIDs of the testbed link(s) whose namespaces include this process's (the path this host emulates
    for the run): every recorded process still alive with its recorded start time, and the owner."""
    here = _netns_inode() if netns_inode is None else netns_inode
    records = []
    for path in sorted(((run_dir or paths.run_dir()) / "links").glob("*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue          # being written, or a crashed link's: testbed/cleanup.py deals with it
    pids: set[int] = set()
    for rec in records:
        inodes = set()
        for ns in rec.get("namespaces", []):
            try:
                inodes.add(os.stat(f"/run/netns/{ns}").st_ino)     # ip-netns(8) mounts each namespace here
            except OSError:
                pass
        if here is None or here not in inodes:
            continue
        owner = rec.get("owner") or {}
        for pid, start in [(owner.get("pid"), owner.get("start"))] + [tuple(p) for p in rec.get("pids", [])]:
            if pid and process_start_time(pid) == start:
                pids.add(int(pid))
    return pids


def parse_proc_net_tcp(text: str) -> list[tuple[int, int, str, int]]:
    """(local port, remote port, state, inode) of each socket in /proc/net/tcp or tcp6 (proc(5): the
    addresses are hex ADDR:PORT, the state hex, the inode the socket's)."""
    out = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 10:
            continue
        out.append((int(f[1].rsplit(":", 1)[1], 16), int(f[2].rsplit(":", 1)[1], 16), f[3], int(f[9])))
    return out


def _sockets(pid: int | str) -> list[tuple[int, int, str, int]]:
    """The TCP sockets of pid's network namespace."""
    socks = []
    for name in ("tcp", "tcp6"):
        try:
            socks += parse_proc_net_tcp(Path(f"/proc/{pid}/net/{name}").read_text())
        except OSError:
            pass
    return socks


def client_ports(port: int) -> set[int]:
    """Local ports of this namespace's established connections to server port `port` (the run's)."""
    return {lp for lp, rp, st, _ in _sockets("self") if rp == port and st == ESTABLISHED}


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def server_pids(port: int, ports: set[int], name: str = "iperf3") -> set[int]:
    """Processes called `name` that hold an established socket on local port `port` whose peer port is
    one of `ports` (the far end of the run's connections, client_ports)."""
    found: set[int] = set()
    if not ports:
        return found
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if Path(f"/proc/{d}/comm").read_text().strip() != name:
                continue
        except OSError:
            continue
        ends = {ino for lp, rp, st, ino in _sockets(d) if lp == port and rp in ports and st == ESTABLISHED}
        if ends & _socket_inodes(int(d)):
            found.add(int(d))
    return found
