"""The twelve congestion-control variants tcpprofile knows, and how this kernel provides each.

Each usual name maps to a kernel name when the kernel has it (built in, or as module tcp_NAME) and, for
the nine variants that have a port in bpf/, to a BPF struct_ops object registered under "tp_NAME".
Resolution order: built in > kernel module > our BPF port.  The kernel's own code is preferred because
it is the reference; the run records which implementation was used (implementation_record).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import EnvironmentNotReady, ValidationError
from ..paths import build_dir

Implementation = Literal["builtin", "module", "bpf"]

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


@dataclass(frozen=True)
class Variant:
    name: str                    # usual name (what specs and reports use)
    kernel: str                  # the kernel's own name when built in or as a module
    module: str | None           # loadable module providing it (None: always built in)
    bpf: str | None              # bpf/<bpf>.bpf.c port, registered as tp_<bpf>; None: no port


# Explicit table: usual name -> how to provide it.
VARIANTS: dict[str, Variant] = {
    "reno": Variant("reno", "reno", None, None),
    "cubic": Variant("cubic", "cubic", "tcp_cubic", None),
    "bbr": Variant("bbr", "bbr", "tcp_bbr", None),
    "htcp": Variant("htcp", "htcp", "tcp_htcp", "htcp"),
    "scalable": Variant("scalable", "scalable", "tcp_scalable", "scalable"),
    "highspeed": Variant("highspeed", "highspeed", "tcp_highspeed", "highspeed"),
    "bic": Variant("bic", "bic", "tcp_bic", "bic"),
    "illinois": Variant("illinois", "illinois", "tcp_illinois", "illinois"),
    "lp": Variant("lp", "lp", "tcp_lp", "lp"),
    "westwood": Variant("westwood", "westwood", "tcp_westwood", "westwood"),
    "yeah": Variant("yeah", "yeah", "tcp_yeah", "yeah"),
    "vegas": Variant("vegas", "vegas", "tcp_vegas", "vegas"),
}
NAMES: tuple[str, ...] = tuple(VARIANTS)
# Other spellings of a usual name, matched in any case: the papers' and the model's names for a variant
# (STCP is Kelly's Scalable TCP, the kernel's tcp_scalable: net/ipv4/tcp_scalable.c).
ALIASES: dict[str, str] = {"stcp": "scalable"}
BPF_PREFIX = "tp_"


def known_names() -> str:
    """The names every help text and error prints: the usual names, then the aliases."""
    return ", ".join(NAMES) + " (aliases: " + ", ".join(f"{a} = {n}" for a, n in ALIASES.items()) + ")"


def canonical(name: str, field: str = "variant") -> str:
    """The usual name of `name`: a usual name as written (the kernel's names are lower case), or an alias
    in any case; ValidationError listing the known names otherwise."""
    if isinstance(name, str) and name in VARIANTS:
        return name
    if isinstance(name, str) and name.lower() in ALIASES:
        return ALIASES[name.lower()]
    hint = (f" (names are lower case, as the kernel spells them: {name.lower()!r})"
            if isinstance(name, str) and name.lower() in VARIANTS else "")
    raise ValidationError(field, f"unknown congestion control {name!r}{hint}; known: {known_names()}")


def spellings(name: str) -> tuple[str, ...]:
    """A usual name and its ALIASES, usual name first (scalable -> scalable, stcp): every way a stored run
    or a paper may spell the variant."""
    return (name, *(a for a, n in ALIASES.items() if n == name))


def implementation_of(name: str, recorded: str | None) -> str:
    """The implementation a run used: as recorded ('builtin' | 'module' | 'bpf'); for a run that recorded
    none, 'builtin' where only the kernel provides the variant (no port in bpf/: reno, cubic, bbr, which
    this project's kernels compile in), '' (unknown) otherwise."""
    if recorded:
        return recorded
    v = VARIANTS.get(name)
    return "builtin" if v is not None and v.bpf is None else ""


def variant(name: str, field: str = "variant") -> Variant:
    """The table entry for a usual name; ValidationError listing the allowed names otherwise."""
    try:
        return VARIANTS[name]
    except (KeyError, TypeError):
        raise ValidationError(field, f"unknown congestion control {name!r}; allowed: {', '.join(NAMES)}") from None


def expand(names: list[str], field: str = "variant") -> list[str]:
    """Validate names (usual names or ALIASES); "all" stands for the twelve.  Order kept, duplicates dropped."""
    if not names:
        raise ValidationError(field, f"give one or more of: all, {known_names()}")
    out: list[str] = []
    for n in names:
        for m in (NAMES if n == "all" else (canonical(n, field),)):
            if m not in out:
                out.append(m)
    return out


def bpf_kernel_name(v: Variant) -> str:
    return BPF_PREFIX + v.bpf  # type: ignore[operator]


def bpf_object(v: Variant) -> Path:
    return build_dir() / "bpf" / f"{v.bpf}.bpf.o"


def kernel_available() -> list[str]:
    """Names in tcp_available_congestion_control (all namespaces see the same list)."""
    return AVAILABLE.read_text().split()


def modules_supported() -> bool:
    """Whether this kernel can load modules at all (this project's machines: no)."""
    return Path("/proc/modules").exists() and shutil.which("modprobe") is not None


def module_loaded(module: str) -> bool:
    """A loadable module that is loaded has /sys/module/NAME/initstate; built-in code has none."""
    return Path("/sys/module", module, "initstate").exists()


def module_installable(module: str) -> bool:
    if not modules_supported():
        return False
    r = subprocess.run(["modprobe", "-n", "-q", module], capture_output=True)
    return r.returncode == 0


def provider(v: Variant, available: list[str] | None = None) -> Implementation | None:
    """How this kernel provides a variant now, or None when it cannot."""
    available = kernel_available() if available is None else available
    if v.kernel in available:
        return "module" if v.module and module_loaded(v.module) else "builtin"
    if v.module and module_installable(v.module):
        return "module"
    if v.bpf:
        return "bpf"
    return None


def require_object(v: Variant) -> Path:
    path = bpf_object(v)
    if not path.is_file():
        raise EnvironmentNotReady(f"{path} is missing: run `make build` (BPF port of {v.name})")
    return path
