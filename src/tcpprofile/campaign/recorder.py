"""How results are recorded: the store, written only by the driver (whatever executes the runs).

The Recorder turns executor events into store writes (a link row when a link is up; a 'running'
marker before each attempt; the run with its intervals and cwnd samples when it ends) and answers
the questions policies ask of what is recorded (which runs are finished, their throughputs).

With rerun_flagged() (spec `rerun_flagged = true`), ok runs that carry an instrument flag
(fidelity.thresholds.rerun_flags) when this invocation starts do not count as finished until this invocation has
run them again (once: a run flagged again stays so until the next invocation); the new row replaces the
old one and says so in failure_reason ("rerun_flagged: replaces an ok run flagged host_contended, 7.9
Gbit/s [its failure_reason: …]"), so the reruns of a run stay on record, one note per replacement."""

from __future__ import annotations

import json

from ..measure.fidelity.thresholds import rerun_flags
from ..spec import CampaignSpec, draw_seed
from ..store.db import Store, dumps
from .environments import path_rtt
from .executor import Event, LinkUp, RunDone, RunStarted


class Recorder:
    def __init__(self, store: Store, campaign_id: str):
        self.store = store
        self.campaign_id = campaign_id
        self._redo: dict[str, str] = {}     # run_id -> what the row it replaces was (rerun_flagged)
        self._remote: dict[str, dict] = {}  # remote link_id -> its set-up ping (environments.remote)

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

    def rerun_flagged(self) -> int:
        """Count the ok runs with instrument flags as unfinished until this invocation reruns them;
        returns how many there are."""
        rows = self.store.query(
            "SELECT run_id, flags, throughput_bps, failure_reason FROM runs "
            "WHERE campaign_id = ? AND status = 'ok' AND flags IS NOT NULL", [self.campaign_id])
        for r in rows:
            if flags := rerun_flags(r["flags"]):
                thr = "" if r["throughput_bps"] is None else f", {r['throughput_bps'] / 1e9:.3f} Gbit/s"
                earlier = f" [its failure_reason: {r['failure_reason']}]" if r["failure_reason"] else ""
                self._redo[r["run_id"]] = f"rerun_flagged: replaces an ok run flagged {','.join(flags)}{thr}{earlier}"
        return len(self._redo)

    def record(self, event: Event) -> None:
        if isinstance(event, LinkUp):
            self.store.insert_link(event.row)
            if event.row.get("kind") == "remote":
                self._remote[event.row["link_id"]] = json.loads(event.row.get("calibration_json") or "{}").get("ping") or {}
        elif isinstance(event, RunStarted):
            self.store.put_run(self._noted(event.row))
        elif isinstance(event, RunDone):
            with self.store.transaction():
                self.store.put_run(self._noted(event.row), intervals=event.intervals, cwnd=event.cwnd)
                self._path_rtt(event.row)
            self._redo.pop(event.row["run_id"], None)

    def _path_rtt(self, row: dict) -> None:
        """A remote link's RTT becomes TCP's once its runs measured one (environments.path_rtt)."""
        link_id = row.get("link_id")
        if link_id not in self._remote or row["status"] != "ok":
            return
        runs = self.store.query("SELECT rtt_base_ms FROM runs WHERE link_id = ? AND status = 'ok'", [link_id])
        columns = path_rtt(self._remote[link_id], [r["rtt_base_ms"] for r in runs])
        if columns is not None:
            self.store.update_link(link_id, columns)

    def _noted(self, row: dict) -> dict:
        """A rerun's row keeps what it replaces in failure_reason (after its own failed attempts)."""
        note = self._redo.get(row["run_id"])
        if note is None:
            return row
        return {**row, "failure_reason": "; ".join(x for x in (row.get("failure_reason"), note) if x)}

    def record_stops(self, rows: list[dict]) -> None:
        """Why each configuration stopped (table stops), replacing what an earlier invocation wrote."""
        self.store.put_stops(self.campaign_id, rows)

    # -- what policies read -------------------------------------------------------------------------
    def finished_run_ids(self) -> set[str]:
        return self.store.finished_run_ids(self.campaign_id) - self._redo.keys()

    def finished(self) -> dict[str, dict]:
        """Finished runs by run_id: status, repetition, throughput_bps (None if failed), duration_s."""
        rows = self.store.query(
            "SELECT run_id, status, repetition, throughput_bps, duration_s, duration_target_s FROM runs "
            "WHERE campaign_id = ? AND status IN ('ok', 'failed')", [self.campaign_id])
        return {r["run_id"]: r for r in rows if r["run_id"] not in self._redo}
