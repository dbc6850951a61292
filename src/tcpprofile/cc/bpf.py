"""Register and unregister our BPF congestion-control objects with bpftool, by id.

Only registrations we made are ever touched: a struct_ops map counts as ours when its name has the
"tp_" prefix AND its id is in the state file (/run/tcpprofile/bpf-cc.json, or $TCPPROFILE_RUN_DIR),
which also records the sha256 of the object registered.  Registrations are global (every network
namespace sees them); an flock on the state file serialises tcpprofile processes.  Never set a BPF
algorithm as a namespace default (a kernel bug then leaks a reference): select it per socket.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EnvironmentNotReady, TcpProfileError
from ..paths import run_dir
from .registry import BPF_PREFIX, kernel_available


@dataclass(frozen=True)
class Registration:
    id: int
    name: str       # kernel name, tp_...
    sha256: str     # of the object file registered
    object: str     # its path at registration time


def _state_path() -> Path:
    return run_dir() / "bpf-cc.json"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _bpftool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("bpftool")
    if tool is None:
        raise EnvironmentNotReady("bpftool not found (apt package bpftool)")
    if os.geteuid() != 0:
        raise EnvironmentNotReady("registering BPF congestion control needs root")
    return subprocess.run([tool, *args], capture_output=True, text=True)


def struct_ops() -> list[dict]:
    """`bpftool struct_ops list -j`: every registered struct_ops map (id, name, kernel_struct_ops)."""
    r = _bpftool("struct_ops", "list", "-j")
    if r.returncode != 0:
        raise TcpProfileError(f"bpftool struct_ops list failed: {r.stderr.strip()}")
    return json.loads(r.stdout or "[]")


@dataclass
class State:
    regs: dict[str, Registration]   # by kernel name, only ids still registered
    modules: list[str]              # kernel modules tcpprofile loaded (kernels with modules only)


@contextlib.contextmanager
def locked_state() -> Iterator[State]:
    """The state file under an exclusive flock, pruned of ids no longer registered; saved on exit."""
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            raw = json.loads(path.read_text()) if path.exists() else {}
        except json.JSONDecodeError:
            raw = {}
        live = {(m["id"], m["name"]) for m in struct_ops()}
        state = State(
            regs={r["name"]: Registration(**r) for r in raw.get("registrations", [])
                  if (r["id"], r["name"]) in live},
            modules=list(raw.get("modules", [])),
        )
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"registrations": [vars(r) for r in state.regs.values()],
                                   "modules": state.modules}, indent=1))
        tmp.replace(path)


def registrations() -> dict[str, Registration]:
    """Our live registrations by kernel name."""
    with locked_state() as state:
        return dict(state.regs)


def register(state: State, obj: Path, name: str) -> Registration | None:
    """Register obj (whose struct_ops is named `name`) under the held state; None if already ours.

    Raises if the name is taken by someone else (bpftool reports that refusal as "Success", so the
    kernel's lists are read back).
    """
    if not name.startswith(BPF_PREFIX):
        raise TcpProfileError(f"refusing to register {name!r}: ours all start with {BPF_PREFIX!r}")
    if name in state.regs:
        return None
    if name in kernel_available():
        raise TcpProfileError(f"{name} is registered, but not by tcpprofile (not in {_state_path()})")
    before = {m["id"] for m in struct_ops()}
    digest = sha256_file(obj)
    r = _bpftool("struct_ops", "register", str(obj))
    new = [m for m in struct_ops() if m["id"] not in before and m["name"] == name]
    if not new or name not in kernel_available():
        for m in new:  # half-registered: undo what we created
            _bpftool("struct_ops", "unregister", "id", str(m["id"]))
        raise TcpProfileError(f"bpftool could not register {obj} as {name}: "
                              f"{(r.stderr or r.stdout).strip() or 'not in the kernel list afterwards'}")
    reg = Registration(id=int(new[0]["id"]), name=name, sha256=digest, object=str(obj))
    state.regs[name] = reg
    return reg


def unregister(state: State, name: str) -> bool:
    """Unregister our registration of `name` by id; False when we have none.  Verified read-back."""
    reg = state.regs.get(name)
    if reg is None or not name.startswith(BPF_PREFIX):
        return False
    r = _bpftool("struct_ops", "unregister", "id", str(reg.id))
    if any(m["id"] == reg.id for m in struct_ops()):
        raise TcpProfileError(f"bpftool could not unregister {name} (id {reg.id}): "
                              f"{(r.stderr or r.stdout).strip()}")
    del state.regs[name]
    return True

