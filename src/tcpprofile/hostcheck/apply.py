"""Applying a chosen configuration's host settings (`select --apply`, `tune --apply`): each sysctl raised to
its target on this host or inside a network namespace, never lowered, and the targets read back against
the values here. `settings` is choose.select.Settings (what is read: its .targets, key -> rules.Target)."""

from __future__ import annotations

from ..errors import TcpProfileError, ValidationError
from ..testbed.netns import netns_list, write_sysctl
from . import transport
from .probe import read_sysctl, read_values
from .rules import Row, check, row


def current_rows(settings, *, netns: str | None = None) -> list[Row]:
    """The settings' targets against the values read here (this host, or namespace `netns`)."""
    host_wide = {k for k, t in settings.targets.items() if t.host_wide}
    current = read_values(settings.targets, netns=netns, host_wide=host_wide)
    return check(current, settings.targets)


def apply_settings(settings, *, netns: str | None = None, host: bool = False) -> dict:
    """Raise the sysctls inside namespace `netns` (ip netns exec) or, with host=True, on the host; never lower.

    Returns {key: {before, after}} for what was written and {key: reason} for what was skipped: a key
    already at or above its target (each field is max(current, target): nothing is ever lowered);
    host-wide keys (net.core.{r,w}mem_max, tcp_mem, default_qdisc) inside a namespace; a congestion
    control that is not in tcp_allowed_congestion_control there; BPF variants are never a default.
    """
    if (netns is None) == (not host):
        raise ValidationError("--apply", "give exactly one target: --netns NS or --host-settings")
    if netns is not None and netns not in netns_list():
        raise ValidationError("--netns", f"no network namespace named {netns!r} (see `ip netns list`)")
    changed, skipped = {}, {}
    for key, target in settings.targets.items():
        if netns and target.host_wide:
            skipped[key] = "host-wide; not writable inside a namespace"
            continue
        if key == transport.CC_KEY and netns:
            allowed = read_sysctl("net.ipv4.tcp_allowed_congestion_control", netns=netns).split()
            if target.minimum not in allowed:
                skipped[key] = (f"{target.minimum} is not in tcp_allowed_congestion_control ({' '.join(allowed)}); "
                                f"select it per socket instead")
                continue
        before = read_sysctl(key, netns=netns)
        r = row(target, before)
        if r.value is None:
            skipped[key] = f"already {before} (at or above {target.text()}): never lowered"
            continue
        out = write_sysctl(key, r.value, netns=netns)
        if out.returncode != 0:
            raise TcpProfileError(f"setting {key}={r.value} failed: {out.stderr.strip()}")
        changed[key] = {"before": before, "after": read_sysctl(key, netns=netns)}
    return {"target": f"netns:{netns}" if netns else "host", "sysctls": changed, "skipped": skipped}
