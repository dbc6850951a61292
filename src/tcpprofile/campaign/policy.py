"""What to run next: a Policy looks at what is recorded and plans the next round of link blocks.

    blocks = policy.plan(recorder)     # [] when the campaign is complete

Plans are a deterministic function of the recorded results and the campaign seed, so a killed
campaign resumes to the same decisions. A policy never runs anything and never writes the store.
Registry: POLICIES (name -> factory(spec, seed)); `for_spec` picks the spec's policy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Callable, Protocol

from ..spec import CampaignSpec, RunPoint
from .executor import Block
from .recorder import Recorder


class Policy(Protocol):
    def plan(self, recorder: Recorder) -> list[Block]: ...
    def total(self, recorder: Recorder) -> int: ...     # runs in the design, for the summary


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


class FixedSchedule:
    """Today's design: every configuration `repetitions` times, in the spec's schedule (spec.schedule)."""

    def __init__(self, spec: CampaignSpec, seed: int | None):
        self.campaign_id = spec.campaign_id
        self.schedule = spec.schedule(seed)

    def plan(self, recorder: Recorder) -> list[Block]:
        finished = recorder.finished_run_ids()
        return blocks_of([(seq, p) for seq, p in enumerate(self.schedule)
                          if p.run_id(self.campaign_id) not in finished])

    def total(self, recorder: Recorder) -> int:
        return len(self.schedule)


POLICIES: dict[str, Callable[[CampaignSpec, int | None], Policy]] = {
    "fixed": FixedSchedule,
}


def for_spec(spec: CampaignSpec, seed: int | None) -> Policy:
    if spec.adaptive:
        from .adaptive import AdaptiveRepetitions
        return AdaptiveRepetitions(spec, seed)
    return POLICIES["fixed"](spec, seed)
