"""Register and unregister our BPF congestion-control objects with bpftool, by id, with owners.

State files in /run/tcpprofile (or $TCPPROFILE_RUN_DIR), under one flock (bpf-cc.lock):
- bpf-cc.json "registrations": what we registered (id, kernel name tp_..., sha256 and path of the
  object); "modules": kernel modules we loaded.  Its format is unchanged from the first version.
- bpf-cc-owners.json "owners": per kernel name, who needs it: "pinned" (`tcpprofile cc load`: kept until
  `cc unload`) and "holders" (campaigns, as pid + start time, like the testbed's link owner records);
  "pending": written BEFORE bpftool registers anything (owner, and the struct_ops ids listed before),
  so a process killed between registering and saving the id leaves a record of what it was doing.
A registration no live holder needs and nobody pinned is an orphan: the next campaign and
`tcpprofile testbed down` unregister it (remove_orphans).  A registration without an owners entry
(made by a version without owner records) counts as pinned.

"Registered" means offered to sockets: the name is in net.ipv4.tcp_available_congestion_control and
the recorded struct_ops map is in use.  An unregistered map can stay listed for minutes (until its
last flow closes) in state TOBEFREE; a name can therefore match stale maps, so only ids are used.
Never set a BPF algorithm as a namespace default (a kernel bug then leaks a reference).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EnvironmentNotReady, TcpProfileError
from ..paths import run_dir
from .registry import BPF_PREFIX, kernel_available

# Tests only: SIGKILL ourselves at a named point (e.g. "registered": after bpftool registered, before
# the id is saved), to check that what a crash leaves behind is found and removed.
KILL_AT_ENV = "TCPPROFILE_TEST_KILL_AT"


@dataclass(frozen=True)
class Registration:
    id: int
    name: str       # kernel name, tp_...
    sha256: str     # of the object file registered
    object: str     # its path at registration time


def _state_path() -> Path:
    return run_dir() / "bpf-cc.json"


def _owners_path() -> Path:
    return run_dir() / "bpf-cc-owners.json"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _bpftool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("bpftool")
    if tool is None:
        raise EnvironmentNotReady("bpftool not found (apt package bpftool)")
    if os.geteuid() != 0:
        raise EnvironmentNotReady("registering BPF congestion control needs root")
    return subprocess.run([tool, *args], capture_output=True, text=True)


def _said(r: subprocess.CompletedProcess) -> str:
    return " ".join((r.stderr + " " + r.stdout).split())


def struct_ops() -> list[dict]:
    """`bpftool struct_ops list -j`: every listed struct_ops map (id, name, kernel_struct_ops)."""
    r = _bpftool("struct_ops", "list", "-j")
    if r.returncode != 0:
        raise TcpProfileError(f"bpftool struct_ops list failed: {r.stderr.strip()}")
    return json.loads(r.stdout or "[]")


def map_state(map_id: int) -> str | None:
    """The struct_ops map's state (INUSE while registered, TOBEFREE once unregistered), None if gone."""
    r = _bpftool("struct_ops", "dump", "id", str(map_id))
    m = re.search(r'"state":\s*"BPF_STRUCT_OPS_STATE_(\w+)"', r.stdout)
    return m.group(1) if r.returncode == 0 and m else None


def _me() -> dict:
    from ..testbed.netns import process_start_time
    return {"pid": os.getpid(), "start": process_start_time(os.getpid())}


def _alive(owner: dict) -> bool:
    from ..testbed.netns import process_alive
    return bool(owner.get("pid")) and process_alive(owner["pid"], owner.get("start"))


def _test_kill_point(point: str) -> None:
    if os.environ.get(KILL_AT_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class State:
    regs: dict[str, Registration]   # by kernel name, only registrations offered to sockets
    modules: list[str]              # kernel modules tcpprofile loaded (kernels with modules only)
    owners: dict[str, dict]         # kernel name -> {"pinned": bool, "holders": [{"pid", "start"}]}
    pending: dict[str, dict]        # kernel name -> {"owner", "before": [ids], "object", "sha256"}

def _write(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(doc, indent=1))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except json.JSONDecodeError:
        return {}


def _save(state: State) -> None:
    _write(_owners_path(), {"owners": state.owners, "pending": state.pending})
    _write(_state_path(), {"registrations": [vars(r) for r in state.regs.values()], "modules": state.modules})


def _offered(reg: Registration, listed: set[tuple[int, str]], available: list[str]) -> bool:
    return (reg.id, reg.name) in listed and reg.name in available and map_state(reg.id) == "INUSE"


@contextlib.contextmanager
def locked_state() -> Iterator[State]:
    """The state file under an exclusive flock, pruned of registrations no longer offered; saved on exit."""
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        raw, rec = _read(path), _read(_owners_path())
        listed = {(m["id"], m["name"]) for m in struct_ops()}
        available = kernel_available()
        regs = {r["name"]: Registration(**{k: r[k] for k in ("id", "name", "sha256", "object")})
                for r in raw.get("registrations", [])}
        regs = {name: r for name, r in regs.items() if _offered(r, listed, available)}
        owners = {name: o for name, o in rec.get("owners", {}).items() if name in regs}
        for name in regs:   # written by a version without owner records: kept until `cc unload`
            owners.setdefault(name, {"pinned": True, "holders": []})
        state = State(regs, list(raw.get("modules", [])), owners, dict(rec.get("pending", {})))
        yield state
        _save(state)


def registrations() -> dict[str, Registration]:
    """Our registrations offered to sockets, by kernel name."""
    with locked_state() as state:
        return dict(state.regs)


def register(state: State, obj: Path, name: str, *, pin: bool) -> Registration | None:
    """Make `name` (obj's struct_ops) offered and owned by us: pinned, or held by this process.

    Returns the new Registration, None if it was registered already (then only the ownership is
    added).  Raises if the name is taken by someone else (bpftool reports that refusal as "Success",
    so the kernel's lists are read back).
    """
    if not name.startswith(BPF_PREFIX):
        raise TcpProfileError(f"refusing to register {name!r}: ours all start with {BPF_PREFIX!r}")
    if name not in state.regs:
        if name in kernel_available():
            raise TcpProfileError(f"{name} is registered, but not by tcpprofile (not in {_state_path()})")
        before = [m["id"] for m in struct_ops()]
        digest = sha256_file(obj)
        state.pending[name] = {"owner": _me(), "before": before, "object": str(obj), "sha256": digest}
        _save(state)                          # the record exists before the registration does
        r = _bpftool("struct_ops", "register", str(obj))
        _test_kill_point("registered")
        new = [m for m in struct_ops() if m["id"] not in before and m["name"] == name]
        if not new or name not in kernel_available():
            for m in new:  # half-registered: undo what we created
                _bpftool("struct_ops", "unregister", "id", str(m["id"]))
            del state.pending[name]
            raise TcpProfileError(f"bpftool could not register {obj} as {name}: "
                                  f"{_said(r) or 'not in the kernel list afterwards'}")
        state.regs[name] = Registration(id=int(new[0]["id"]), name=name, sha256=digest, object=str(obj))
        state.owners[name] = {"pinned": False, "holders": []}
        created = state.regs[name]
    else:
        created = None
    owner = state.owners.setdefault(name, {"pinned": False, "holders": []})
    if pin:
        owner["pinned"] = True
    else:
        owner["holders"] = [h for h in owner["holders"] if _alive(h)] + [_me()]
    state.pending.pop(name, None)
    return created


@dataclass(frozen=True)
class Unregistered:
    name: str
    ok: bool          # False: it is still offered (the message says why)
    message: str


def unregister(state: State, name: str) -> Unregistered:
    """Unregister our registration of `name` by id.  Success means: no longer offered to sockets
    (bpftool prints "Unregistered ..." on success, to stderr)."""
    reg = state.regs[name]
    r = _bpftool("struct_ops", "unregister", "id", str(reg.id))
    if name in kernel_available() and map_state(reg.id) == "INUSE":
        return Unregistered(name, False, f"bpftool could not unregister {name} (id {reg.id}): {_said(r)}")
    del state.regs[name]
    state.owners.pop(name, None)
    return Unregistered(name, True, f"unregistered {name} (id {reg.id})")


def live_holders(state: State, name: str) -> list[dict]:
    return [h for h in state.owners.get(name, {}).get("holders", []) if _alive(h)]


def release(state: State, name: str) -> Unregistered | None:
    """Drop this process's hold on `name`; unregister it when nobody holds or pinned it."""
    if name not in state.regs:
        return None
    owner = state.owners.setdefault(name, {"pinned": True, "holders": []})
    me = _me()
    owner["holders"] = [h for h in live_holders(state, name) if h != me]
    if owner["pinned"] or owner["holders"]:
        return None
    return unregister(state, name)


def remove_orphans(state: State) -> list[str]:
    """Unregister what dead owners registered: registrations with no live holder and no pin, and
    registrations a killed process made but never recorded (its "pending" record)."""
    removed: list[str] = []
    for name in list(state.regs):
        owner = state.owners.get(name, {"pinned": True, "holders": []})
        if owner["pinned"] or live_holders(state, name):
            continue
        done = unregister(state, name)
        removed.append(f"BPF {done.message} (its campaign died)" if done.ok else done.message)
    for name, rec in list(state.pending.items()):
        if _alive(rec.get("owner") or {}):
            continue
        known = {r.id for r in state.regs.values()} | set(rec.get("before", []))
        for m in struct_ops():
            if m["name"] == name and m["id"] not in known and map_state(m["id"]) == "INUSE":
                r = _bpftool("struct_ops", "unregister", "id", str(m["id"]))
                ok = name not in kernel_available() or map_state(m["id"]) != "INUSE"
                removed.append(f"BPF unregistered {name} (id {m['id']}; registered by a process killed before "
                               f"recording it)" if ok else f"bpftool could not unregister {name} "
                               f"(id {m['id']}): {_said(r)}")
        del state.pending[name]
    return removed


def cleanup_orphans() -> list[str]:
    """remove_orphans under the lock; nothing to do (and no bpftool needed) without a state file."""
    if not (_state_path().exists() or _owners_path().exists()):
        return []
    with locked_state() as state:
        return remove_orphans(state)
