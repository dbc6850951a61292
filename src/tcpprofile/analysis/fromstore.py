"""The analyses applied to a store: one call per result table (`con` is a Store or DuckDB connection).

Grouping: `by` names the configuration dimensions that define a profile (see tcpprofile.store.grouping); runs
that differ only in dimensions left out are pooled. τ is always the profile's axis. Seeds: one master
seed; each group gets an independent stream spawned from it in sorted-key order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .confidence import samples_needed, vc_bound
from .dynamics import Relation, TraceDynamics, dynamics_many, throughput_vs_lyapunov
from ..store.grouping import DEFAULT_BY
from .runs import load_runs, load_traces
from .profiles import ProfileStats, profile_stats
from .sigmoid import Transition
from .tau_t import capacity_of, transition
from ..units import to_ms


def _seeds(seed, n: int) -> list[np.random.SeedSequence]:
    return np.random.SeedSequence(seed).spawn(n)


def profiles_from_store(con, *, by: Sequence[str] = DEFAULT_BY, exclude_flagged: bool = False,
                        level: float = 0.95, n_boot: int = 2000, ci_method: str = "bca",
                        seed=None) -> list[ProfileStats]:
    """One ProfileStats per configuration (key = its `by` values)."""
    runs = load_runs(con, exclude_flagged=exclude_flagged)
    groups = runs.groups(by)
    return [profile_stats(runs.tau_s[i], runs.throughput_bps[i], flagged=runs.flagged[i], key=key, level=level,
                    n_boot=n_boot, ci_method=ci_method, seed=np.random.default_rng(s))
            for (key, i), s in zip(groups, _seeds(seed, len(groups)))]


def transitions_from_store(con, *, by: Sequence[str] = DEFAULT_BY, exclude_flagged: bool = False,
                           n_boot: int = 200, level: float = 0.95, seed=None) -> list[Transition]:
    """τ_T per configuration with at least 3 measured τ, by tau_t.transition (the one τ_T the report
    draws too); capacity = median over the group's runs of their link's goodput ceiling (else configured
    rate; else the profile maximum): tau_t.capacity_of."""
    runs = load_runs(con, exclude_flagged=exclude_flagged)
    groups = runs.groups(by)
    out = []
    for (key, i), s in zip(groups, _seeds(seed, len(groups))):
        grid, inv = np.unique(runs.tau_s[i], return_inverse=True)
        if grid.size < 3:
            continue
        samples = [runs.throughput_bps[i][inv == k] for k in range(grid.size)]
        out.append(transition(samples, grid, capacity_of(runs.capacity_bps[i]), key=key, n_boot=n_boot,
                              level=level, seed=np.random.default_rng(s)))
    return out


@dataclass(frozen=True)
class RunDynamics:
    run_id: str
    stream: int | None     # None: the aggregate trace
    key: dict              # the run's configuration (DEFAULT_BY dimensions and tau_s [s])
    dynamics: TraceDynamics

    def row(self) -> dict:
        """The run's row, τ in ms as printed and exported (tau_ms)."""
        return {"run_id": self.run_id, "stream": self.stream, **row_key(self.key), **self.dynamics.row()}


def row_key(key: dict) -> dict:
    """A key as printed and exported: its τ [s] (tau_s) as the column tau_ms (units.to_ms), in the same place."""
    return {("tau_ms" if k == "tau_s" else k): (to_ms(v) if k == "tau_s" else v) for k, v in key.items()}


def dynamics_from_store(con, *, run_ids: Sequence[str] | None = None, per_stream: bool = False,
                        exclude_flagged: bool = False, n_surrogates: int = 0, seed=None,
                        **trace_kwargs) -> list[RunDynamics]:
    """trace_dynamics for every analysable run's aggregate trace (and each stream's if per_stream), in
    one batch; traces with fewer than 4 intervals are skipped. n_surrogates > 0: the exponent's IAAFT
    surrogate test on the aggregate traces (about 3–5 ms per trace with 19 surrogates here)."""
    runs = load_runs(con, exclude_flagged=exclude_flagged)
    pos = {r: k for k, r in enumerate(runs.run_id)}
    wanted = list(runs.run_id) if run_ids is None else [r for r in run_ids if r in pos]
    traces = load_traces(con, wanted, per_stream=per_stream)
    keys = sorted(traces, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    keys = [k for k in keys if traces[k].bps.size >= 4 and np.all(np.isfinite(traces[k].bps))]
    agg = [k for k in keys if k[1] is None]
    per = [k for k in keys if k[1] is not None]
    dyn = {}
    for ks, n_surr, s in ((agg, n_surrogates, 0), (per, 0, 1)):   # surrogates: aggregate traces only
        got = dynamics_many([(traces[k].bps, traces[k].start_s, traces[k].end_s) for k in ks],
                            n_surrogates=n_surr, seed=np.random.default_rng(_seeds(seed, 2)[s]), **trace_kwargs)
        dyn.update(zip(ks, got))
    out = []
    for rid, stream in keys:
        k = pos[rid]
        key = {d: runs.dims[d][k] for d in DEFAULT_BY} | {"tau_s": float(runs.tau_s[k])}
        out.append(RunDynamics(rid, stream, key, dyn[(rid, stream)]))
    return out


def relations_from_store(con, *, by: Sequence[str] = DEFAULT_BY, dynamics: Sequence[RunDynamics] | None = None,
                         exclude_flagged: bool = False, distinguishable_only: bool = False) -> list[tuple[dict, Relation]]:
    """Per configuration and τ (key: `by` and tau_s): run mean throughput vs Rosenstein exponent of the aggregate trace
    (Fig. 14). Pass `dynamics` from dynamics_from_store to avoid recomputing them. distinguishable_only:
    use only runs whose exponent beat its surrogates (needs dynamics with n_surrogates > 0)."""
    if dynamics is None:
        dynamics = dynamics_from_store(con, exclude_flagged=exclude_flagged,
                                       n_surrogates=19 if distinguishable_only else 0)
    groups: dict[tuple, list[RunDynamics]] = {}
    for d in dynamics:
        if d.stream is None and (not distinguishable_only or d.dynamics.distinguishable):
            groups.setdefault(tuple(d.key[b] for b in by) + (d.key["tau_s"],), []).append(d)
    out = []
    for k in sorted(groups, key=lambda k: tuple((v is not None, v) for v in k)):
        ds = groups[k]
        rel = throughput_vs_lyapunov([d.dynamics.mean_bps for d in ds], [d.dynamics.lyapunov for d in ds])
        out.append((dict(zip((*by, "tau_s"), k)), rel))
    return out


def bounds_from_store(con, *, by: Sequence[str] = DEFAULT_BY, eps: float = 0.1, alpha: float = 0.05,
                      exclude_flagged: bool = False) -> list[dict]:
    """Per configuration: its number of measurements n, the §5.2 bound at eps (throughput scaled by
    capacity, so C = 1) and the n the bound needs to reach alpha."""
    runs = load_runs(con, exclude_flagged=exclude_flagged)
    need = samples_needed(eps, 1.0, alpha)
    return [{**key, "n": int(i.size), "eps": eps, "bound": float(vc_bound(i.size, eps, 1.0)),
             "alpha": alpha, "samples_needed": need, "enough": bool(i.size >= need)}
            for key, i in runs.groups(by)]
