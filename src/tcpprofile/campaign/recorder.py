"""How results are recorded: the store, written only by the driver (whatever executes the runs).

The Recorder turns executor events into store writes (a link row when a link is up; a 'running'
marker before each attempt; the run with its intervals and cwnd samples when it ends) and answers
the questions policies ask of what is recorded (which runs are finished, their throughputs)."""

from __future__ import annotations

from ..spec import CampaignSpec, draw_seed
from ..store.db import Store, dumps
from .executor import Event, LinkUp, RunDone, RunStarted


class Recorder:
    def __init__(self, store: Store, campaign_id: str):
        self.store = store
        self.campaign_id = campaign_id

    def open(self, spec: CampaignSpec) -> int:
        """Record the campaign (once: a resumed campaign keeps its row) and return its seed: the stored
        one when resuming, else the spec's, else a freshly drawn one."""
        existing = self.store.query("SELECT seed FROM campaigns WHERE campaign_id = ?", [self.campaign_id])
        if existing:
            seed = existing[0]["seed"]
        else:
            seed = spec.seed if spec.seed is not None else draw_seed()
        self.store.insert_campaign({"campaign_id": self.campaign_id, "name": spec.name, "mode": spec.mode,
                                    "seed": seed, "spec_toml": spec.source_toml,
                                    "spec_json": dumps(spec.normalised())})
        return seed

    def record(self, event: Event) -> None:
        if isinstance(event, LinkUp):
            self.store.insert_link(event.row)
        elif isinstance(event, RunStarted):
            self.store.put_run(event.row)
        elif isinstance(event, RunDone):
            self.store.put_run(event.row, intervals=event.intervals, cwnd=event.cwnd)

    def record_stops(self, rows: list[dict]) -> None:
        """Why each configuration stopped (table stops), replacing what an earlier invocation wrote."""
        self.store.put_stops(self.campaign_id, rows)

    # -- what policies read -------------------------------------------------------------------------
    def finished_run_ids(self) -> set[str]:
        return self.store.finished_run_ids(self.campaign_id)

    def finished(self) -> dict[str, dict]:
        """Finished runs by run_id: status, repetition, throughput_bps (None if failed), duration_s."""
        rows = self.store.query(
            "SELECT run_id, status, repetition, throughput_bps, duration_s, duration_target_s FROM runs "
            "WHERE campaign_id = ? AND status IN ('ok', 'failed')", [self.campaign_id])
        return {r["run_id"]: r for r in rows}
