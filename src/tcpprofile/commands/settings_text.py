"""The host settings block that `select` and `tune` print or put in their JSON. Not a command itself:
it declares no NAME (commands/__init__.py)."""

from __future__ import annotations


def settings_json(settings, rows, netns=None) -> dict:
    """The settings with this host's comparison and the sysctl.d snippet (shared with `tcpprofile tune`)."""
    from ..hostcheck import snippet

    return {**settings.to_json(), "host": [r.to_json() for r in rows], "snippet": snippet(rows, netns=netns)}


def print_settings(settings, applied, rows, netns=None) -> None:
    """The host settings block (shared with `tcpprofile tune`): hostcheck's sysctl.d snippet against this
    host's values (only raises), how to get the congestion control, the tool lines that can use it."""
    from ..hostcheck import snippet

    where = f"namespace {netns}'s" if netns else "this host's"
    print(f"\nHost settings (not applied unless --apply), compared with {where} values:")
    for line in snippet(rows, netns=netns):
        print(f"  {line}")
    cc = settings.congestion_control
    print(f"Congestion control {cc['name']} ({cc['impl']}, {cc['how']}):")
    for s in cc["steps"]:
        print(f"  {s}")
    print("Transfer tools:")
    for cmd in settings.commands:
        print(f"  {cmd}")
    if applied:
        print(f"\nApplied in {applied['target']}:")
        for k, v in applied["sysctls"].items():
            print(f"  {k}: {v['before']} -> {v['after']}")
        for k, why in applied["skipped"].items():
            print(f"  {k}: skipped ({why})")
