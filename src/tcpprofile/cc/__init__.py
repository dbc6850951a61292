"""Congestion-control catalogue: which of the twelve variants this kernel provides, and how.

    available() -> list[CcInfo]              every variant, its implementation and state
    ensure_loaded(names) -> list[str]        provide them (register BPF ports, load modules); names loaded now
    unload(names) -> list[str]               undo what tcpprofile loaded; names unloaded now
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

__all__ = ["CcInfo", "NAMES", "VARIANTS", "available", "ensure_loaded", "unload", "kernel_name",
           "implementation_record", "expand"]


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


def ensure_loaded(names: list[str]) -> list[str]:
    """Make every named variant selectable; returns the names this call loaded."""
    loaded: list[str] = []
    with bpf.locked_state() as state:
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
            elif bpf.register(state, require_object(v), bpf_kernel_name(v)) is not None:
                loaded.append(name)
    return loaded


def unload(names: list[str]) -> list[str]:
    """Unregister the BPF ports / remove the modules that tcpprofile loaded; returns names unloaded."""
    done: list[str] = []
    with bpf.locked_state() as state:
        for name in expand(names):
            v = variant(name)
            if v.bpf and bpf.unregister(state, bpf_kernel_name(v)):
                done.append(name)
            if v.module and v.module in state.modules:
                r = subprocess.run(["modprobe", "-r", v.module], capture_output=True, text=True)
                if r.returncode != 0:
                    raise TcpProfileError(f"modprobe -r {v.module} failed: {r.stderr.strip()}")
                state.modules.remove(v.module)
                done.append(name)
    return done
