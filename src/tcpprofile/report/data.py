"""What the report reads from the store: comparable groups of profiles, traces, links, cwnd."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .. import analysis
from ..choose import select as sel
from ..store import Store, reads


def loss_free(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows of a fit table (store.reads.fit_table) of loss-free transfers of a known size or duration: what the
    model figures draw."""
    keep = np.array([(m in (None, "none")) and (t is not None or (d is not None and d == d))
                     for m, t, d in zip(table["loss_mode"], table["transfer_bytes"], table["duration_target_s"])],
                    dtype=bool)
    return {k: v[keep] for k, v in table.items()}


@dataclass
class Group:
    """One comparable condition group (see select.CONDITION_FIELDS) and its profiles."""
    conditions: dict
    profiles: list[sel.Profile]

    @property
    def label(self) -> str:
        return sel.describe_conditions(self.conditions)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.profiles)

    def variants(self) -> list[str]:
        return sorted({p.config.variant for p in self.profiles})


@dataclass
class ReportData:
    store: Store
    groups: list[Group]
    exclude_flagged: bool = False
    flagged: int = 0             # flagged runs (grouping.FLAGGED_SQL) the report could draw on
    candidates: int = 0          # ok runs with a throughput and an RTT, flagged or not
    model_configuration: str = ""   # the model figures' configuration (models/configurations.py); "": the default
    _model_fits: dict = field(default_factory=dict, init=False, repr=False)   # model_fit's, by row indices
    _traces: dict = field(default_factory=dict, init=False, repr=False)       # traces' answers, by run_id

    @classmethod
    def load(cls, store: Store, *, exclude_flagged: bool = False) -> "ReportData":
        keys = sorted(sel.condition_groups(store, exclude_flagged=exclude_flagged).items(), key=lambda kv: -kv[1])
        groups = []
        for key, _ in keys:
            cond = dict(zip(sel.CONDITION_FIELDS, key))
            groups.append(Group(cond, sel.load_profiles(store, conditions=cond,
                                                        exclude_flagged=exclude_flagged).profiles))
        flagged, candidates = sel.flagged_candidates(store)
        return cls(store, groups, exclude_flagged, flagged, candidates)

    @cached_property
    def fit_table(self) -> dict:
        """`model fit`'s profile table of this store (models.fit_table_from_store), read once for every model
        figure (the model figure and the papers' Figs. 6–8)."""
        from ..models import fit_table_from_store
        return fit_table_from_store(self.store.con, exclude_flagged=self.exclude_flagged)

    @cached_property
    def model_table(self) -> dict:
        """The loss-free rows of fit_table (loss_free): what the model figures draw."""
        return loss_free(self.fit_table)

    @cached_property
    def model_datasets(self) -> list[tuple[dict, np.ndarray]]:
        """model_table's datasets as `model fit` forms them (models.fit.datasets): (key, row indices)."""
        from ..models.fit import datasets
        return datasets(self.model_table) if self.model_table["variant"].size else []

    @property
    def model_config(self) -> str:
        """The model configuration the model figures fit: model_configuration, or `model fit`'s default (the
        validated one, models.configurations.DEFAULT_CONFIGURATION)."""
        from ..models.configurations import DEFAULT_CONFIGURATION
        return self.model_configuration or DEFAULT_CONFIGURATION

    def model_config_text(self) -> str:
        """The configuration in words for a caption: its name, what it adds, whether it is the default."""
        from ..models.configurations import DEFAULT_CONFIGURATION, SUMMARY
        name = self.model_config
        return f"model configuration {name} ({SUMMARY[name]}" + (
            "; `model fit`'s default, the validated one)" if name == DEFAULT_CONFIGURATION else ")")

    def model_fit(self, idx: np.ndarray):
        """`model fit`'s in-sample fit (models.fit_profiles, heldout=False, with model_config) of the rows `idx` of
        model_table (one dataset), computed once for every figure that draws that dataset (the model figure,
        the papers' Figs. 6–8)."""
        key = tuple(int(i) for i in idx)
        if key not in self._model_fits:
            from ..models import fit_profiles
            from ..models.configurations import configuration
            params, per_variant = configuration(self.model_config)
            (self._model_fits[key],) = fit_profiles({k: v[idx] for k, v in self.model_table.items()},
                                                    heldout=False, variant_params=per_variant, **params)
        return self._model_fits[key]

    def flag_note(self) -> str:
        """The header line: whether flagged runs were left out, and how many."""
        what = ("flagged: link calibration missed, or the run carries flags such as host_contended, "
                "engine_late, rtt_base_off; docs/analysis.md")
        if self.exclude_flagged:
            return f"Flagged runs left out (--exclude-flagged): {self.flagged} of {self.candidates} ok runs ({what})."
        return (f"Flagged runs included: {self.flagged} of {self.candidates} ok runs ({what}); "
                f"--exclude-flagged leaves them out.")

    # -- traces ----------------------------------------------------------------------------------
    def runs_with_intervals(self, run_ids: list[str]) -> set[str]:
        return reads.runs_with_intervals(self.store, run_ids)

    def prefetch(self, run_ids) -> None:
        """Read the traces of these runs in one query (analysis.load_traces) for `traces` to serve: each query
        scans the intervals table, so a figure that draws many runs reads them together."""
        todo = sorted({r for r in run_ids} - self._traces.keys())
        if not todo:
            return
        got = analysis.load_traces(self.store.con, todo, per_stream=True)
        by_run: dict[str, dict] = {r: {} for r in todo}
        for (r, s), t in got.items():
            by_run[r][s] = t
        for r, parts in by_run.items():
            per = {s: np.column_stack([t.start_s, t.bps]) for s, t in sorted(
                ((s, t) for s, t in parts.items() if s is not None), key=lambda kv: kv[0])}
            agg = parts.get(None)
            self._traces[r] = ((np.empty(0), per, np.empty(0)) if agg is None else (agg.start_s, per, agg.bps))

    def traces(self, run_id: str) -> tuple[np.ndarray, dict[int, np.ndarray], np.ndarray]:
        """(interval start times, per-stream [[start_s, bits/s], ...], aggregate bits/s) of one run, read by
        analysis.load_traces (omitted intervals left out; aggregate = iperf3's sum, else the streams' sum);
        from `prefetch`'s read where it holds the run."""
        if run_id not in self._traces:
            self.prefetch([run_id])
        return self._traces[run_id]

    def cwnd_runs(self, limit: int) -> list[str]:
        return reads.cwnd_run_ids(self.store, limit, exclude_flagged=self.exclude_flagged)

    def cwnd(self, run_id: str) -> dict[int, np.ndarray]:
        out: dict[int, list] = {}
        for s, t, w in reads.cwnd_samples(self.store, run_id):
            out.setdefault(s, []).append((t, w))
        return {s: np.array(v, float) for s, v in out.items()}

    def run_info(self, run_id: str) -> dict:
        return reads.run_summary(self.store, run_id)

    # -- calibration -----------------------------------------------------------------------------
    def links(self) -> list[dict]:
        return reads.links_with_run_counts(self.store)
