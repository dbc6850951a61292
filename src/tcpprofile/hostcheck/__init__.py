"""`tcpprofile hostcheck`: a host's limits against what a path's BDP needs (fasterdata's rules), as an
/etc/sysctl.d snippet that only ever raises a value, fq pacing advice, and how to get each congestion
control. rules.py is pure (targets, comparison, snippet); probe.py reads a live host or namespace;
transport.py says how a variant is had and which transfer tools can use it; apply.py raises a chosen
configuration's sysctls (`--apply`). `select` and `tune` print and apply their settings through the same
functions (docs/hostcheck.md)."""

from .rules import Row, Target, buffer_target, check, pacing, row, snippet, targets

__all__ = ["Row", "Target", "buffer_target", "check", "pacing", "row", "snippet", "targets"]
