"""Per-run fidelity: what the instrument did while one run measured.

A monitor is a context manager around one iperf3 run: `with env.monitor(port) as fid:` and, once the
block has ended, `fid.columns` holds the runs-table columns it measured and `fid.flags` the run flags
it raises. Campaigns store both with the run (ok or failed). docs/testbed.md lists the thresholds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ContextManager


@dataclass
class RunFidelity:
    """Filled in when the monitored block ends."""
    columns: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


Monitor = Callable[[int], ContextManager[RunFidelity]]


@contextlib.contextmanager
def unmonitored(port: int) -> Iterator[RunFidelity]:
    """A monitor that measures nothing (tests' fake environments)."""
    yield RunFidelity()
