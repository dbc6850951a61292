"""Records that let a later process find and remove what a crashed link left behind.

Everything lives under /run/tcpprofile (or $TCPPROFILE_RUN_DIR):
- links/<tag>.json: the owner process (pid + start time) of a link and the PIDs it started;
- host-sysctl.json: the original values of the global sysctls raised while links are up, and which
  links hold the override. Updates take an exclusive lock (host-sysctl.lock).

Global sysctls: net.core.rmem_max / wmem_max are not per namespace on this kernel, and they cap what
an application may ask for with SO_RCVBUF/SO_SNDBUF (iperf3 -w). The first link raises them, the last
one to go (or cleanup_leftovers, once no owner is alive) restores the recorded original values.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from .netns import process_alive, process_start_time

# Raised while any link is up: allows SO_RCVBUF/SO_SNDBUF (iperf3 -w) up to 1 GiB and beyond.
HOST_SYSCTLS = {"net.core.rmem_max": 2147483647, "net.core.wmem_max": 2147483647}


def run_dir() -> Path:
    path = Path(os.environ.get("TCPPROFILE_RUN_DIR", "/run/tcpprofile"))
    (path / "links").mkdir(parents=True, exist_ok=True)
    return path


def _owner_path(tag: str) -> Path:
    return run_dir() / "links" / f"{tag}.json"


def me() -> dict:
    pid = os.getpid()
    return {"pid": pid, "start": process_start_time(pid)}


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


def _restore_if_unheld(state: dict) -> list[str]:
    state["holders"] = {tag: h for tag, h in state["holders"].items() if process_alive(h["pid"], h["start"])}
    if state["holders"]:
        return []
    restored = []
    for key, value in state["original"].items():
        _sysctl_path(key).write_text(str(value))
        restored.append(f"sysctl {key} restored to {value}")
    state["original"] = {}
    return restored


def acquire_host_sysctls(tag: str) -> None:
    """Raise HOST_SYSCTLS (never lowers a value), recording originals the first time."""
    with _host_state() as state:
        _restore_if_unheld(state)  # a crashed holder's override is superseded by ours
        for key, wanted in HOST_SYSCTLS.items():
            current = int(_sysctl_path(key).read_text())
            state["original"].setdefault(key, current)
            if current < wanted:
                _sysctl_path(key).write_text(str(wanted))
        state["holders"][tag] = me()


def release_host_sysctls(tag: str) -> list[str]:
    """Drop tag's hold; restore the original values when no live holder remains."""
    with _host_state() as state:
        state["holders"].pop(tag, None)
        return _restore_if_unheld(state)


def host_sysctl_state() -> dict:
    path = run_dir() / "host-sysctl.json"
    return json.loads(path.read_text()) if path.exists() else {"original": {}, "holders": {}}
