"""Records that let a later process find and remove what a crashed link left behind.

Everything lives under /run/tcpprofile (or $TCPPROFILE_RUN_DIR):
- links/<tag>.json: the owner process (pid + start time) of a link and the PIDs it started;
- host-sysctl.json: the original values of the global sysctls raised while links are up, and which
  links hold the override. Updates take an exclusive lock (host-sysctl.lock).

Global sysctls: net.core.rmem_max / wmem_max are not per namespace on this kernel, and they cap what
an application may ask for with SO_RCVBUF/SO_SNDBUF (iperf3 -w); net.ipv4.tcp_mem (global) sets when
TCP enters memory pressure. The first link raises them (never lowers a value), the last one to go
(or cleanup_leftovers, once no owner is alive) restores the recorded original values.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from ..errors import TcpProfileError
from .netns import process_alive, process_start_time


def wanted_host_sysctls() -> dict[str, list[int]]:
    """Values raised while any link is up: SO_RCVBUF/SO_SNDBUF (iperf3 -w) up to 1 GiB and beyond,
    and TCP memory thresholds of 1/8, 1/4 and 1/2 of RAM (pages), so that several streams with
    1 GB buffers do not enter memory pressure (measured at 2.2 GB: 8 streams collapsed at 183 ms)."""
    pages = os.sysconf("SC_PHYS_PAGES")
    return {"net.core.rmem_max": [2147483647], "net.core.wmem_max": [2147483647],
            "net.ipv4.tcp_mem": [pages // 8, pages // 4, pages // 2]}


def run_dir() -> Path:
    """paths.run_dir(), with its links/ directory created."""
    path = paths.run_dir()
    (path / "links").mkdir(parents=True, exist_ok=True)
    return path


def _owner_path(tag: str) -> Path:
    return run_dir() / "links" / f"{tag}.json"


def me() -> dict:
    pid = os.getpid()
    return {"pid": pid, "start": process_start_time(pid)}


def claim_owner(tag: str, record: dict) -> None:
    """Create tag's owner record; refuse if it exists (a live link, or a crashed one's leftovers)."""
    path = _owner_path(tag)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        existing = read_owners().get(tag, {})
        if owner_alive(existing):
            raise TcpProfileError(f"tag {tag!r} is in use by process {existing['owner']['pid']}") from None
        raise TcpProfileError(f"tag {tag!r} has leftovers of a crashed link: run `tcpprofile testbed down`") from None
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(record))


def write_owner(tag: str, record: dict) -> None:
    path = _owner_path(tag)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)


def read_owners() -> dict[str, dict]:
    owners = {}
    for path in sorted((run_dir() / "links").glob("*.json")):
        try:
            owners[path.stem] = json.loads(path.read_text())
        except (json.JSONDecodeError, OSError):
            owners[path.stem] = {}
    return owners


def remove_owner(tag: str) -> None:
    _owner_path(tag).unlink(missing_ok=True)


def owner_alive(record: dict) -> bool:
    owner = record.get("owner") or {}
    return bool(owner.get("pid")) and process_alive(owner["pid"], owner.get("start"))


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


@contextmanager
def _host_state():
    """Yields the host-sysctl record (a dict, mutated in place) under an exclusive lock."""
    directory = run_dir()
    with open(directory / "host-sysctl.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = directory / "host-sysctl.json"
        state = json.loads(path.read_text()) if path.exists() else {"original": {}, "holders": {}}
        yield state
        if state["holders"]:
            path.write_text(json.dumps(state))
        else:
            path.unlink(missing_ok=True)


def _read(key: str) -> list[int]:
    return [int(v) for v in _sysctl_path(key).read_text().split()]


def _write(key: str, values: list[int] | int) -> None:
    values = values if isinstance(values, list) else [values]   # records of the first version held ints
    _sysctl_path(key).write_text(" ".join(str(v) for v in values))


def _restore_if_unheld(state: dict) -> list[str]:
    state["holders"] = {tag: h for tag, h in state["holders"].items() if process_alive(h["pid"], h["start"])}
    if state["holders"]:
        return []
    restored = []
    for key, values in state["original"].items():
        _write(key, values)
        restored.append(f"sysctl {key} restored to {values}")
    state["original"] = {}
    return restored


def acquire_host_sysctls(tag: str) -> None:
    """Raise the global sysctls (element-wise, never lowering), recording originals the first time."""
    with _host_state() as state:
        _restore_if_unheld(state)  # a crashed holder's override is superseded by ours
        for key, wanted in wanted_host_sysctls().items():
            current = _read(key)
            state["original"].setdefault(key, current)
            raised = [max(c, w) for c, w in zip(current, wanted)]
            if raised != current:
                _write(key, raised)
        state["holders"][tag] = me()


def release_host_sysctls(tag: str) -> list[str]:
    """Drop tag's hold; restore the original values when no live holder remains."""
    with _host_state() as state:
        state["holders"].pop(tag, None)
        return _restore_if_unheld(state)


def host_sysctl_state() -> dict:
    path = run_dir() / "host-sysctl.json"
    return json.loads(path.read_text()) if path.exists() else {"original": {}, "holders": {}}
