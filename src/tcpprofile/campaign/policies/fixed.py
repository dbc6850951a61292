"""The fixed design: every configuration `repetitions` times, in the spec's schedule (spec.schedule)."""

from __future__ import annotations

from ...spec import CampaignSpec
from ..executor import Block
from ..policy import BasePolicy, blocks_of
from ..recorder import Recorder

NAME = "fixed"


class FixedSchedule(BasePolicy):
    def __init__(self, spec: CampaignSpec, seed: int | None):
        self.campaign_id = spec.campaign_id
        self.schedule = spec.schedule(seed)

    def plan(self, recorder: Recorder) -> list[Block]:
        finished = recorder.finished_run_ids()
        return blocks_of([(seq, p) for seq, p in enumerate(self.schedule)
                          if p.run_id(self.campaign_id) not in finished])

    def total(self, recorder: Recorder) -> int:
        return len(self.schedule)


POLICY = FixedSchedule
