"""What dead campaigns left on this machine, removed: links (namespaces, engines, iperf3, host sysctls),
cwnd tracers and BPF congestion-control registrations. Each part removes only the things whose
recorded owner is no longer alive (testbed/state.py, measure/trace.py, cc/bpf.py keep those records)."""

from __future__ import annotations

from ..cc import cleanup_orphans
from ..testbed import cleanup_leftovers
from ..measure.trace import cleanup_stale_tracers


def remove_leftovers() -> list[str]:
    """Everything removed, one line each (`tcpprofile testbed down` prints them)."""
    return cleanup_leftovers() + cleanup_stale_tracers() + cleanup_orphans()
