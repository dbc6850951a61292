"""Congestion-control catalogue: which of the twelve variants this kernel provides, and how.

    available() -> list[CcInfo]              every variant, its implementation and state
    ensure_loaded(names, hold=False)         provide them (register BPF ports, load modules); names loaded now.
                                             hold=True (campaigns): this process holds them until release();
                                             otherwise they stay until unload() (`tcpprofile cc load`)
    release(names) -> list[str]              drop this process's hold; unregister what nobody needs; names unloaded
    unload(names) -> list[Unload]            undo what tcpprofile loaded, each variant reported (`cc unload`)
    cleanup_orphans() -> list[str]           unregister what dead campaigns registered (testbed down)
    kernel_name(name) -> str                 what to select per socket (iperf3 -C NAME)
    implementation_record(name) -> dict      cc_kernel_name, cc_impl, cc_object_sha256 for the runs table

Selection is per socket only: never make a BPF algorithm a namespace default.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from ..errors import EnvironmentNotReady, TcpProfileError
from . import bpf
from .registry import (
    NAMES,
    VARIANTS,
    Implementation,
    Variant,
    bpf_kernel_name,
    expand,
    kernel_available,
    provider,
    require_object,
    variant,
)

__all__ = ["CcInfo", "NAMES", "Unload", "VARIANTS", "available", "cleanup_orphans", "ensure_loaded", "expand",
           "implementation_record", "kernel_name", "release", "unload"]

cleanup_orphans = bpf.cleanup_orphans


@dataclass(frozen=True)
class CcInfo:
    name: str                            # usual name
    implementation: Implementation | None  # None: this kernel cannot provide it
    kernel_name: str | None              # what the socket selects
    loaded: bool                         # selectable right now
    object_sha256: str | None            # BPF object registered (bpf only, when loaded)


def _kernel_name(v: Variant, impl: Implementation | None) -> str | None:
    if impl == "bpf":
        return bpf_kernel_name(v)
    return v.kernel if impl else None


def _info(v: Variant, avail: list[str], regs: dict[str, bpf.Registration]) -> CcInfo:
    impl = provider(v, avail)
    kname = _kernel_name(v, impl)
    reg = regs.get(kname) if impl == "bpf" else None
    return CcInfo(v.name, impl, kname, kname in avail, reg.sha256 if reg else None)


def available() -> list[CcInfo]:
    """The twelve variants in table order, with how each is provided and whether it is loaded."""
    regs = bpf.registrations()
    avail = kernel_available()
    return [_info(v, avail, regs) for v in VARIANTS.values()]


def kernel_name(name: str) -> str:
    """The kernel name to select for a usual name (e.g. htcp -> tp_htcp on this kernel)."""
    v = variant(name)
    kname = _kernel_name(v, provider(v))
    if kname is None:
        raise EnvironmentNotReady(f"{name}: this kernel has no {v.kernel} and tcpprofile has no port of it")
    return kname


def implementation_record(name: str) -> dict:
    """What to store with a run: cc_kernel_name, cc_impl, cc_object_sha256 (None unless bpf)."""
    v = variant(name)
    info = _info(v, kernel_available(), bpf.registrations())
    if not info.loaded:
        raise EnvironmentNotReady(f"{name} is not loaded (tcpprofile cc load {name})")
    return {"cc_kernel_name": info.kernel_name, "cc_impl": info.implementation,
            "cc_object_sha256": info.object_sha256}


def ensure_loaded(names: list[str], *, hold: bool = False) -> list[str]:
    """Make every named variant offered to sockets; returns the names this call loaded.

    hold=True: this process holds the BPF registrations (release() drops the hold; if the process
    dies, the next campaign or `testbed down` unregisters what nobody else needs).  Otherwise they
    are pinned until unload().  What dead owners left registered is removed first.
    """
    loaded: list[str] = []
    with bpf.locked_state() as state:
        bpf.remove_orphans(state)
        for name in expand(names):
            v = variant(name)
            impl = provider(v)
            if impl is None:
                raise EnvironmentNotReady(f"{name}: not built in, no module, no BPF port")
            if impl == "builtin" or (impl == "module" and v.kernel in kernel_available()):
                continue
            if impl == "module":
                r = subprocess.run(["modprobe", v.module], capture_output=True, text=True)
                if r.returncode != 0 or v.kernel not in kernel_available():
                    raise TcpProfileError(f"modprobe {v.module} failed: {r.stderr.strip()}")
                state.modules.append(v.module)
                loaded.append(name)
            elif bpf.register(state, require_object(v), bpf_kernel_name(v), pin=not hold) is not None:
                loaded.append(name)
    return loaded


def release(names: list[str]) -> list[str]:
    """Drop this process's hold on the BPF registrations of `names`; returns the names unregistered
    (nobody else held or pinned them).  Raises if one could not be unregistered, after trying all."""
    done, failed = [], []
    with bpf.locked_state() as state:
        for name in expand(names):
            v = variant(name)
            result = bpf.release(state, bpf_kernel_name(v)) if v.bpf else None
            if result is not None and result.ok:
                done.append(name)
            elif result is not None:
                failed.append(result.message)
    if failed:
        raise TcpProfileError("; ".join(failed))
    return done


@dataclass(frozen=True)
class Unload:
    name: str          # usual name
    unloaded: bool     # this call removed it
    ok: bool           # False: a real failure (still offered, or in use by a running campaign)
    message: str


def _unload_one(state: bpf.State, v: Variant) -> Unload:
    if v.module and v.module in state.modules:
        r = subprocess.run(["modprobe", "-r", v.module], capture_output=True, text=True)
        if r.returncode != 0:
            return Unload(v.name, False, False, f"modprobe -r {v.module} failed: {r.stderr.strip()}")
        state.modules.remove(v.module)
        return Unload(v.name, True, True, f"module {v.module} removed")
    kname = bpf_kernel_name(v) if v.bpf else None
    if kname is None or kname not in state.regs:
        offered = kname is not None and kname in kernel_available()
        return Unload(v.name, False, True, f"{kname} is registered, not by tcpprofile: left alone" if offered
                      else "not loaded by tcpprofile")
    users = bpf.live_holders(state, kname)
    if users:
        pids = ", ".join(str(h["pid"]) for h in users)
        return Unload(v.name, False, False, f"{kname} is in use by running campaign(s) (pid {pids}): kept")
    result = bpf.unregister(state, kname)
    return Unload(v.name, result.ok, result.ok, result.message)


def unload(names: list[str]) -> list[Unload]:
    """Unregister the BPF ports / remove the modules that tcpprofile loaded, one variant at a time:
    a failure is reported and the rest are still unloaded."""
    with bpf.locked_state() as state:
        return [_unload_one(state, variant(name)) for name in expand(names)]
