"""Reads a host's (or a network namespace's) limits: sysctls, interfaces, the kernel's qdiscs and
congestion controls. Only reads; the advice is rules.py's."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from functools import lru_cache
from pathlib import Path

from ..cc import registry
from ..errors import TcpProfileError
from ..testbed.netns import in_ns

# Kconfig symbol of each variant's kernel code (net/ipv4/Kconfig); reno is always built in.
CONG_SYMBOL = {"cubic": "CUBIC", "bbr": "BBR", "htcp": "HTCP", "scalable": "SCALABLE", "highspeed": "HSTCP",
               "bic": "BIC", "illinois": "ILLINOIS", "lp": "LP", "westwood": "WESTWOOD", "yeah": "YEAH",
               "vegas": "VEGAS"}
OFFLOADS = {"tcp-segmentation-offload": "tso", "generic-segmentation-offload": "gso",
            "generic-receive-offload": "gro"}        # ethtool -k names -> ethtool -K names


def _sysctl_cmd(netns: str | None, *args: str) -> list[str]:
    argv = ["sysctl", *args]
    return in_ns(netns, argv) if netns else argv


def read_sysctl(key: str, *, netns: str | None = None) -> str:
    out = subprocess.run(_sysctl_cmd(netns, "-n", key), capture_output=True, text=True)
    if out.returncode != 0:
        raise TcpProfileError(f"cannot read {key}: {out.stderr.strip()}")
    return " ".join(out.stdout.split())


def read_values(keys, *, netns: str | None = None, host_wide=()) -> dict[str, str | None]:
    """Current values; None for a key that cannot be read. In a namespace, a host-wide key the namespace
    does not show (tcp_mem, default_qdisc) is read on the host: that value is the one that applies there."""
    out: dict[str, str | None] = {}
    for key in keys:
        for ns in ((netns, None) if netns and key in host_wide else (netns,)):
            try:
                out[key] = read_sysctl(key, netns=ns)
                break
            except TcpProfileError:
                out[key] = None
    return out


@lru_cache(maxsize=1)
def kernel_config() -> dict[str, str] | None:
    """CONFIG_* = y/m of the running kernel, from /proc/config.gz or /boot/config-RELEASE; None if neither."""
    for path in (Path("/proc/config.gz"), Path("/boot") / f"config-{os.uname().release}"):
        try:
            text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        except OSError:
            continue
        return dict(line.split("=", 1) for line in text.splitlines() if line.startswith("CONFIG_") and "=" in line)
    return None


def fq_available() -> bool | None:
    """Whether the kernel has the fq qdisc (CONFIG_NET_SCH_FQ=y or m); None when its configuration is unreadable."""
    config = kernel_config()
    return None if config is None else config.get("CONFIG_NET_SCH_FQ") in ("y", "m")


def _json(argv: list[str]) -> list[dict]:
    out = subprocess.run(argv, capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []


def offloads(dev: str, *, netns: str | None = None) -> dict[str, bool]:
    argv = ["ethtool", "-k", dev]
    out = subprocess.run(in_ns(netns, argv) if netns else argv, capture_output=True, text=True)
    found = {}
    for line in out.stdout.splitlines():
        name, _, state = line.partition(":")
        if name.strip() in OFFLOADS:
            found[OFFLOADS[name.strip()]] = state.split()[0] == "on" if state.split() else False
    return found


def interfaces(*, netns: str | None = None, only: str | None = None) -> list[dict]:
    """Non-loopback interfaces: name, MTU, root qdisc, txqueuelen, offloads (ip -j link, ethtool -k)."""
    ns = ["-n", netns] if netns else []
    rows = []
    for link in _json(["ip", *ns, "-j", "link", "show"]):
        name = link.get("ifname", "")
        if "LOOPBACK" in link.get("flags", []) or (only and name != only):
            continue
        rows.append({"name": name, "mtu": link.get("mtu"), "qdisc": link.get("qdisc"),
                     "txqueuelen": link.get("txqlen"), "up": "UP" in link.get("flags", []),
                     "offloads": offloads(name, netns=netns)})
    return rows


def congestion_controls() -> list[dict]:
    """Each known variant: the kernel's own code (available now, built in, module, absent, unknown) and
    this project's BPF port (loaded, built, not built)."""
    available = registry.kernel_available()
    config = kernel_config()
    rows = []
    for v in registry.VARIANTS.values():
        symbol = CONG_SYMBOL.get(v.name)
        if v.kernel in available:
            kernel = "available"
        elif symbol is None:
            kernel = "builtin"
        elif config is not None:
            kernel = {"y": "builtin", "m": "module"}.get(config.get(f"CONFIG_TCP_CONG_{symbol}", ""), "absent")
        else:
            kernel = "module" if v.module and registry.module_installable(v.module) else "unknown"
        bpf = None
        if v.bpf:
            name = registry.bpf_kernel_name(v)
            bpf = "loaded" if name in available else ("built" if registry.bpf_object(v).is_file() else "not built")
        rows.append({"name": v.name, "kernel_name": v.kernel, "kernel": kernel, "module": v.module,
                     "bpf": bpf, "bpf_name": registry.bpf_kernel_name(v) if v.bpf else None})
    return rows
