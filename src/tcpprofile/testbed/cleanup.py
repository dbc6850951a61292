"""Finding and removing what links of dead processes left behind (after a crash or SIGKILL).

A link's namespaces are tcpp-<tag>-{snd,rcv} (rtr: the older three-namespace design); its owner record (state.py) names the owning
process. Leftovers are the namespaces of tags whose owner is not alive, our delayd processes in them
(identified by /proc/PID/exe being build/delayd and by running in such a namespace), the processes the
owner started (recorded PID and start time must both match), the owner record, and the global
sysctl override once no live link holds it. Namespaces of live links, and tcpp-* namespaces that do
not follow the link naming (other tools' throwaway namespaces), are left alone.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from . import netns, state
from .calibrate import wait_until
from .engine import delayd_path
from .link import NS_RE

KILL_TIMEOUT_S = 10.0


def _link_namespaces() -> dict[str, list[str]]:
    """tag -> namespaces named like a link's."""
    tags: dict[str, list[str]] = {}
    for ns in netns.netns_list():
        m = NS_RE.fullmatch(ns)
        if m:
            tags.setdefault(m.group(1), []).append(ns)
    return tags


def _is_our_delayd(pid: int) -> bool:
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return os.path.realpath(exe) == os.path.realpath(delayd_path())


def _kill(pid: int, start: int | None) -> bool:
    """SIGKILL pid if it is still the recorded process; wait until it has exited."""
    if start is None or not netns.process_alive(pid, start):
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    wait_until(lambda: not netns.process_alive(pid, start), timeout=KILL_TIMEOUT_S, what=f"process {pid} to exit")
    return True


def status() -> list[dict]:
    """Every link-named namespace set and owner record: tag, owner, alive, namespaces, processes."""
    owners = state.read_owners()
    spaces = _link_namespaces()
    rows = []
    for tag in sorted(set(owners) | set(spaces)):
        record = owners.get(tag, {})
        procs = []
        for ns in spaces.get(tag, []):
            for pid in netns.netns_pids(ns):
                procs.append({"ns": ns, "pid": pid, "cmdline": " ".join(netns.process_cmdline(pid))})
        rows.append({"tag": tag, "owner_pid": (record.get("owner") or {}).get("pid"),
                     "alive": state.owner_alive(record), "namespaces": sorted(spaces.get(tag, [])),
                     "processes": procs, "config": record.get("config")})
    return rows


def cleanup_leftovers() -> list[str]:
    """Remove leftovers of links whose owner process is dead; return a description of each removal."""
    removed: list[str] = []
    owners = state.read_owners()
    spaces = _link_namespaces()
    for tag in sorted(set(owners) | set(spaces)):
        record = owners.get(tag, {})
        if state.owner_alive(record):
            continue
        for ns in spaces.get(tag, []):
            for pid in netns.netns_pids(ns):
                if _is_our_delayd(pid) and _kill(pid, netns.process_start_time(pid)):
                    removed.append(f"process {pid} (delayd in {ns})")
        for pid, start in record.get("pids", []):
            if _kill(pid, start):
                removed.append(f"process {pid} (started by link {tag})")
        for ns in spaces.get(tag, []):
            if netns.sh(["ip", "netns", "del", ns], check=False).returncode == 0:
                removed.append(f"namespace {ns}")
        if tag in owners:
            state.remove_owner(tag)
            removed.append(f"owner record of link {tag}")
        for log in Path(state.run_dir(), "links").glob(f"{tag}-*.log"):
            log.unlink(missing_ok=True)
    removed += state.release_host_sysctls("")
    return removed
