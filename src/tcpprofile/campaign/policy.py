"""What to run next: a Policy looks at what is recorded and plans the next round of link blocks.

    blocks = policy.plan(recorder)     # [] when the campaign is complete

Plans are a deterministic function of the recorded results and the campaign seed, so a killed
campaign resumes to the same decisions. A policy never runs anything and never writes the store.

The runner (runner.py) calls every hook of `Policy` and nothing else; `BasePolicy` gives the optional
ones their neutral default. The policies themselves are one module each in policies/ (the registry
is derived from that package: policies.POLICIES).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Protocol

from ..spec import RunPoint
from .executor import Block, Event
from .recorder import Recorder


class Policy(Protocol):
    def plan(self, recorder: Recorder) -> list[Block]: ...        # the next round; [] when complete
    def total(self, recorder: Recorder) -> int: ...                # runs in the design, for the summary
    def observe(self, event: Event) -> None: ...                   # each event, after it is recorded
    def progress_note(self) -> str | None: ...                     # shown with the progress line
    def stops(self, recorder: Recorder) -> list[dict]: ...         # why each configuration stopped (table stops)
    def summary_notes(self, recorder: Recorder) -> list[str]: ...  # lines for the campaign's summary


class BasePolicy:
    """The optional hooks' defaults: nothing observed, no note, no stops rows, no summary lines."""

    def observe(self, event: Event) -> None:
        return None

    def progress_note(self) -> str | None:
        return None

    def stops(self, recorder: Recorder) -> list[dict]:
        return []

    def summary_notes(self, recorder: Recorder) -> list[str]:
        return []


def config_key(p: RunPoint) -> str:
    """A configuration's identity (everything but the repetition): 16 hex of its sha256."""
    return hashlib.sha256(json.dumps(p.configuration(), sort_keys=True).encode()).hexdigest()[:16]


def blocks_of(runs: Sequence[tuple[int, RunPoint]]) -> list[Block]:
    """Consecutive runs on the same link configuration form one block."""
    blocks: list[tuple] = []
    for seq, p in runs:
        if not blocks or blocks[-1][0] != p.link:
            blocks.append((p.link, []))
        blocks[-1][1].append((seq, p))
    return [Block(link, tuple(rs)) for link, rs in blocks]
