"""The papers' findings checked on a store's data, each as a statistic with an interval and a verdict.

(i)   Θ(τ) decreases with τ                       HPDC'17 §2, Figs. 3-6
(ii)  more streams and larger buffers push τ_T up  HPDC'17 §2.3, Figs. 9-10
(iii) BBR varies more at low RTT and falls below H-TCP/STCP on clean links at large τ   slides, Group 1
(iv)  at 1-in-500 loss BBR stays concave and far above CUBIC and H-TCP                   slides, losses
(v)   larger Lyapunov exponents go with lower throughput (exponents distinguishable from noise only)

Runs are the units: intervals come from the spread of repeated runs (stats.py: Student t, at least
3 repetitions per group). Throughput comparisons are made on log throughput (ratios), cell by cell
(same τ and n), and averaged over cells. Constants below define "low"/"large" τ and "far above".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from ..analysis.dynamics import ramp_up
from ..analysis.load import Runs, load_runs, load_traces
from ..analysis.regions import classify_regions
from ..analysis.sigmoid import fit_dual_sigmoid
from ..dimensions import FLAGGED_SQL
from . import stats
from .campaigns import PREFIX
from .stats import Interval, combine, mean_difference, verdict

LOW_TAU_MS = 12.0      # "low RTT": τ ≤ 12 ms (0.4 and 11.8 ms in the campaigns)
LARGE_TAU_MS = 90.0    # "large τ": τ ≥ 90 ms (91.6, 183, 366 ms)
FAR_ABOVE = 2.0        # "far above": a throughput ratio of at least 2
LOSS_500 = 1 / 500
TAU_T_DRAWS = 60       # plausible profiles per τ_T interval (fit_dual_sigmoid each)
SURROGATES = 19        # the smallest p a surrogate test can give is 1/20 = 0.05
BBR, OTHERS_CLEAN = "bbr", ("cubic", "htcp", "scalable", "stcp")


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    statistic: str        # what `interval` estimates
    interval: Interval
    verdict: str
    measured: str         # what was measured, in words (always filled, whatever the verdict)

    def row(self) -> dict:
        iv = self.interval
        return {"id": self.id, "claim": self.claim, "statistic": self.statistic, "estimate": iv.estimate,
                "low": iv.low, "high": iv.high, "level": iv.level, "n": iv.n, "verdict": self.verdict,
                "measured": self.measured}


# -- data ------------------------------------------------------------------------------------------
@dataclass
class Data:
    """The runs of the reproduce campaigns (or of the given campaign ids) and access to their traces."""
    con: object
    runs: Runs

    @classmethod
    def load(cls, con, campaign_ids: Sequence[str] | None = None, *, exclude_flagged: bool = False) -> "Data":
        con = getattr(con, "con", con)
        runs = load_runs(con, exclude_flagged=exclude_flagged)
        if campaign_ids is None:
            rows = con.execute("SELECT run_id FROM runs r JOIN campaigns c USING (campaign_id) "
                               "WHERE c.name LIKE ?", [PREFIX + "%"]).fetchall()
        else:
            rows = con.execute("SELECT run_id FROM runs WHERE campaign_id IN (SELECT unnest(?))",
                               [list(campaign_ids)]).fetchall()
        keep = np.isin(runs.run_id, np.asarray([r[0] for r in rows], dtype=object))
        sub = Runs(runs.run_id[keep], runs.tau_ms[keep], runs.throughput_bps[keep], runs.capacity_bps[keep],
                   runs.flagged[keep], {k: v[keep] for k, v in runs.dims.items()})
        return cls(con, sub)

    def mask(self, *, variant=None, streams=None, loss=None, socket_buffer="any") -> np.ndarray:
        d = self.runs.dims
        m = np.ones(len(self.runs), bool)
        if variant is not None:
            names = (variant,) if isinstance(variant, str) else tuple(variant)
            m &= np.isin(d["variant"].astype(str), names)
        if streams is not None:
            m &= d["streams"] == streams
        if loss == "none":
            m &= np.array([v in (None, "none") for v in d["loss_mode"]], dtype=bool)   # bool also when empty
        elif loss is not None:
            mode, rate = loss
            m &= (d["loss_mode"] == mode) & np.isclose(d["loss_rate"].astype(float), rate, rtol=1e-6, atol=0)
        if socket_buffer != "any":
            m &= np.array([v == socket_buffer for v in d["socket_buffer_bytes"]], dtype=bool)
        return m

    def values(self, mask, *, tau=None, log=True) -> np.ndarray:
        if tau is not None:
            mask = mask & np.isclose(self.runs.tau_ms, tau)
        v = self.runs.throughput_bps[mask]
        return np.log(v) if log else v

    def taus(self, mask) -> np.ndarray:
        return np.unique(self.runs.tau_ms[mask])

    def profiles(self, mask, by=("variant", "streams", "socket_buffer_bytes", "duration_target_s",
                                 "transfer_bytes")) -> list[tuple[dict, np.ndarray]]:
        idx = np.flatnonzero(mask)
        groups: dict[tuple, list[int]] = {}
        for i in idx:
            groups.setdefault(tuple(self.runs.dims[b][i] for b in by), []).append(i)
        out = []
        for k in sorted(groups, key=lambda k: tuple((v is not None, str(v)) for v in k)):
            m = np.zeros(len(self.runs), bool)
            m[groups[k]] = True
            out.append((dict(zip(by, k)), m))
        return out


def _exp(iv: Interval) -> Interval:
    """A log-ratio interval as a ratio interval."""
    return Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.n, iv.level)


def _label(key: dict) -> str:
    buf = key.get("socket_buffer_bytes")
    buf = "auto" if buf is None else f"{buf / 2**20:g}MiB"
    return f"{key['variant']} n={key['streams']} w={buf}"


def _ratio(iv: Interval) -> str:
    if not math.isfinite(iv.estimate):
        return "n/a"
    if not iv.known:
        return f"{math.exp(iv.estimate):.3g} (no interval: < {stats.MIN_REPS} runs per group)"
    return f"{math.exp(iv.estimate):.3g} [{math.exp(iv.low):.3g}, {math.exp(iv.high):.3g}]"


# -- (i) -------------------------------------------------------------------------------------------
def decreasing(data: Data) -> Finding:
    claim = "Θ(τ) decreases with τ"
    stat = "Θ(τ_max)/Θ(τ_min) per clean profile (least decreasing shown)"
    parts, worst, lines = [], None, []
    profiles = [(k, m) for k, m in data.profiles(data.mask(loss="none")) if data.taus(m).size >= 3]
    steps = sum(data.taus(m).size - 1 for _, m in profiles)
    for key, m in profiles:
        taus = data.taus(m)
        iv = mean_difference([data.values(m, tau=taus[-1])], [data.values(m, tau=taus[0])])
        v = verdict(iv, below=0.0)
        # no step between neighbouring τ may increase significantly (Bonferroni over all steps)
        rises = [float(t1) for t0, t1 in zip(taus[:-1], taus[1:])
                 if verdict(mean_difference([data.values(m, tau=t1)], [data.values(m, tau=t0)],
                                            level=1 - 0.05 / max(steps, 1)), above=0.0) == stats.REPRODUCED]
        parts.append(stats.NOT_REPRODUCED if rises else v)
        lines.append(f"{_label(key)}: {_ratio(iv)}" + (f", rises significantly to {', '.join(f'{t:g}' for t in rises)} ms" if rises else ""))
        if worst is None or iv.estimate > worst.estimate:
            worst = iv
    if not profiles:
        return Finding("i", claim, stat, stats.unknown(), stats.UNDETERMINED, "no clean profile with ≥ 3 RTTs")
    n_ok = sum(p == stats.REPRODUCED for p in parts)
    return Finding("i", claim, stat, _exp(worst), combine(parts),
                   f"{n_ok}/{len(parts)} profiles decrease significantly; " + "; ".join(lines))


# -- (ii) ------------------------------------------------------------------------------------------
def _tau_T(data: Data, m, rng) -> tuple[float, np.ndarray] | None:
    """τ_T of a profile and TAU_T_DRAWS plausible values (per-τ means drawn from their t posterior)."""
    taus = data.taus(m)
    samples = [data.values(m, tau=t, log=False) for t in taus]
    if taus.size < 3 or min(s.size for s in samples) < stats.MIN_REPS:
        return None
    cap = data.runs.capacity_bps[m]
    cap = float(np.median(cap[np.isfinite(cap)])) if np.isfinite(cap).any() else None
    point = fit_dual_sigmoid(taus, [s.mean() for s in samples], capacity=cap).tau_T
    Y = np.clip(stats.mean_draws(samples, TAU_T_DRAWS, rng), 1.0, None)
    return point, np.array([fit_dual_sigmoid(taus, y, capacity=cap).tau_T for y in Y])


def _diff(a, b, level=stats.LEVEL) -> Interval:
    (pa, da), (pb, db) = a, b
    d = da - db
    q = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return Interval(pa - pb, float(q[0]), float(q[1]), d.size, level)


def transition_shift(data: Data, seed: int = 0) -> Finding:
    claim = "more streams and larger buffers push τ_T up"
    stat = "τ_T(more) − τ_T(fewer) in ms (streams and socket buffers; smallest shift shown)"
    rng = np.random.default_rng(seed)
    clean = data.profiles(data.mask(loss="none"))
    cache: dict[int, object] = {}

    def tt(i):
        if i not in cache:
            cache[i] = _tau_T(data, clean[i][1], rng)
        return cache[i]

    comparisons = []  # (label, i_more, i_fewer)
    for axis, other in (("streams", "socket_buffer_bytes"), ("socket_buffer_bytes", "streams")):
        groups: dict[tuple, list[int]] = {}
        for i, (k, _) in enumerate(clean):
            groups.setdefault((k["variant"], k[other], k["duration_target_s"], k["transfer_bytes"]), []).append(i)
        for g, idx in groups.items():
            if len(idx) < 2:
                continue
            rank = (lambda i: clean[i][0]["streams"]) if axis == "streams" else \
                (lambda i: math.inf if clean[i][0]["socket_buffer_bytes"] is None else clean[i][0]["socket_buffer_bytes"])
            idx = sorted(idx, key=rank)
            comparisons.append((axis, idx[-1], idx[0]))
    parts, lines, worst = [], [], None
    for axis, hi, lo in comparisons:
        a, b = tt(hi), tt(lo)
        name = f"{_label(clean[hi][0])} vs {_label(clean[lo][0])}"
        if a is None or b is None:
            parts.append(stats.UNDETERMINED)
            lines.append(f"{name}: too few RTTs or repetitions")
            continue
        iv = _diff(a, b)
        parts.append(verdict(iv, above=0.0))
        lines.append(f"{name}: τ_T {a[0]:.3g} vs {b[0]:.3g} ms, Δ [{iv.low:.3g}, {iv.high:.3g}]")
        if worst is None or iv.estimate < worst.estimate:
            worst = iv
    if not comparisons:
        return Finding("ii", claim, stat, stats.unknown(), stats.UNDETERMINED,
                       "no clean profiles differing only in streams or socket buffer")
    axes = {c[0] for c in comparisons}
    missing = {"streams", "socket_buffer_bytes"} - axes
    v = combine(parts)
    if missing and v == stats.REPRODUCED:
        v = stats.UNDETERMINED
    note = f" (no comparison over {', '.join(missing)})" if missing else ""
    return Finding("ii", claim, stat, worst or stats.unknown(), v, "; ".join(lines) + note)


# -- (iii) -----------------------------------------------------------------------------------------
def variability(data: Data, ids: np.ndarray) -> dict[str, float]:
    """Per run: log of the coefficient of variation of its 1 s aggregate trace after the ramp-up."""
    out = {}
    for (rid, _), t in load_traces(data.con, list(ids)).items():
        if t.bps.size < 4 or not np.all(np.isfinite(t.bps)):
            continue
        s = t.bps[ramp_up(t.bps, t.start_s, t.end_s).index:]
        if s.size >= 3 and s.mean() > 0 and s.std(ddof=1) > 0:
            out[rid] = math.log(s.std(ddof=1) / s.mean())
    return out


def _cells(data: Data, mask_a, mask_b, taus, streams, value) -> tuple[list, list]:
    A, B = [], []
    for t in taus:
        for n in streams:
            sel = np.isclose(data.runs.tau_ms, t) & (data.runs.dims["streams"] == n)
            a, b = value(mask_a & sel), value(mask_b & sel)
            if a.size and b.size:
                A.append(a)
                B.append(b)
    return A, B


def bbr_clean(data: Data) -> Finding:
    claim = "BBR varies more at low RTT and falls below H-TCP/STCP on clean links at large τ"
    stat = "CoV(BBR)/CoV(others) at τ ≤ 12 ms (1 s traces after ramp-up)"
    clean = data.mask(loss="none")
    bbr, others = clean & data.mask(variant=BBR), clean & data.mask(variant=OTHERS_CLEAN)
    streams = np.unique(data.runs.dims["streams"][clean].astype(int)) if clean.any() else []
    low = [t for t in data.taus(bbr) if t <= LOW_TAU_MS]
    large = [t for t in data.taus(bbr) if t >= LARGE_TAU_MS]
    cov = variability(data, data.runs.run_id[(bbr | others) & (data.runs.tau_ms <= LOW_TAU_MS)])
    covs = lambda m: np.array([cov[r] for r in data.runs.run_id[m] if r in cov])  # noqa: E731
    iv_var = mean_difference(*_cells(data, bbr, others, low, streams, covs))
    parts = [verdict(iv_var, above=0.0)]
    lines = [f"variability ratio {_ratio(iv_var)} ({len(cov)} traces)"]
    for name, variants in (("H-TCP", ("htcp",)), ("STCP", ("scalable", "stcp"))):
        other = clean & data.mask(variant=variants)
        iv = mean_difference(*_cells(data, bbr, other, large, streams, data.values))
        parts.append(verdict(iv, below=0.0))
        lines.append(f"Θ_BBR/Θ_{name} at τ ≥ {LARGE_TAU_MS:g} ms: {_ratio(iv)}")
    return Finding("iii", claim, stat, _exp(iv_var), combine(parts), "; ".join(lines))


# -- (iv) ------------------------------------------------------------------------------------------
def bbr_loss(data: Data) -> Finding:
    claim = "at 1-in-500 loss BBR stays concave and far above CUBIC and H-TCP"
    stat = f"Θ_BBR/Θ_other at periodic 1/500 loss (smallest shown; 'far' = ≥ {FAR_ABOVE:g}×)"
    lossy = data.mask(loss=("periodic", LOSS_500))
    bbr = lossy & data.mask(variant=BBR)
    if not bbr.any():
        return Finding("iv", claim, stat, stats.unknown(), stats.UNDETERMINED, "no BBR runs at 1-in-500 loss")
    taus = data.taus(bbr)
    streams = np.unique(data.runs.dims["streams"][bbr].astype(int))
    parts, lines, worst = [], [], None
    for name in ("cubic", "htcp"):
        iv = mean_difference(*_cells(data, bbr, lossy & data.mask(variant=name), taus, streams, data.values))
        parts.append(verdict(iv, above=math.log(FAR_ABOVE)))
        lines.append(f"Θ_BBR/Θ_{name} {_ratio(iv)}")
        if worst is None or iv.estimate < worst.estimate:
            worst = iv
    for n in streams:
        m = bbr & (data.runs.dims["streams"] == n)
        samples = [data.values(m, tau=t, log=False) for t in data.taus(m)]
        if len(samples) < 3 or min(s.size for s in samples) < stats.MIN_REPS:
            parts.append(stats.UNDETERMINED)
            lines.append(f"BBR n={n} shape: too few RTTs or repetitions")
            continue
        mean = np.array([s.mean() for s in samples])
        se = np.array([s.std(ddof=1) / math.sqrt(s.size) for s in samples])
        z = stats.t_quantile(min(s.size for s in samples))
        reg = classify_regions(data.taus(m), mean, se, z=z)
        labels = list(reg.label[1:-1])
        shape = (stats.NOT_REPRODUCED if "convex" in labels else
                 stats.REPRODUCED if "concave" in labels else stats.UNDETERMINED)
        parts.append(shape)
        lines.append(f"BBR n={n} second differences at {[float(t) for t in data.taus(m)[1:-1]]} ms: {labels} "
                     f"(t-quantile {z:.2f})")
    return Finding("iv", claim, stat, _exp(worst), combine(parts), "; ".join(lines))


# -- (v) -------------------------------------------------------------------------------------------
def _distinguishable(dyn) -> bool:
    """The exponent beat its IAAFT surrogates (TraceDynamics.distinguishable; untested counts as not)."""
    return bool(dyn.distinguishable)


def lyapunov_throughput(data: Data, seed: int = 0, min_runs: int = 10) -> Finding:
    from ..analysis.fromstore import dynamics_from_store

    claim = "larger Lyapunov exponents go with lower throughput"
    stat = "Spearman ρ(exponent, throughput) within (τ, n), Fisher-combined; distinguishable traces only"
    clean = data.mask(loss="none")
    dyn = dynamics_from_store(data.con, run_ids=list(data.runs.run_id[clean]), n_surrogates=SURROGATES, seed=seed)
    pos = {r: i for i, r in enumerate(data.runs.run_id)}
    # an exponent only where one was estimated (None: undetermined, e.g. an 8 s trace is too short)
    finite = [d for d in dyn if d.dynamics.lyapunov is not None and math.isfinite(d.dynamics.lyapunov)]
    kept = [d for d in finite if _distinguishable(d.dynamics)]
    points = [d.dynamics.n_points for d in dyn]
    head = (f"{len(dyn)} traces ({min(points) if points else 0}-{max(points) if points else 0} s), "
            f"{len(finite)} with an exponent, {len(kept)} distinguishable from surrogates")
    if len(kept) < min_runs:
        return Finding("v", claim, stat, stats.unknown(n=len(kept)), stats.UNDETERMINED,
                       head + f" (need ≥ {min_runs})")
    strata: dict[tuple, list] = {}
    for d in kept:
        i = pos[d.run_id]
        strata.setdefault((data.runs.tau_ms[i], data.runs.dims["streams"][i]), []).append(d.dynamics)
    rhos, sizes = [], []
    for ds in strata.values():
        lam = [x.lyapunov for x in ds]
        thr = [x.mean_bps for x in ds]
        if len(ds) >= 4 and np.ptp(lam) > 0 and np.ptp(thr) > 0:
            rhos.append(float(sps.spearmanr(lam, thr).statistic))
            sizes.append(len(ds))
    iv = stats.fisher_combined(rhos, sizes)
    return Finding("v", claim, stat, iv, verdict(iv, below=0.0),
                   head + f"; ρ {iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}] over {len(rhos)} strata")


FINDINGS = (decreasing, transition_shift, bbr_clean, bbr_loss, lyapunov_throughput)


def check_findings(con, campaign_ids: Sequence[str] | None = None, *, exclude_flagged: bool = False
                   ) -> list[Finding]:
    """All five findings on the runs of the reproduce campaigns (or of `campaign_ids`); exclude_flagged:
    without flagged runs (analysis.load_runs)."""
    data = Data.load(con, campaign_ids, exclude_flagged=exclude_flagged)
    return [f(data) for f in FINDINGS]


def flagged_runs(con, campaign_ids: Sequence[str]) -> int:
    """Ok runs of these campaigns that carry a fidelity flag (dimensions.FLAGGED_SQL)."""
    con = getattr(con, "con", con)
    return con.execute(f"SELECT count(*) FROM runs r LEFT JOIN links l ON r.link_id = l.link_id "
                       f"WHERE r.status = 'ok' AND r.campaign_id IN (SELECT unnest(?)) AND {FLAGGED_SQL}",
                       [list(campaign_ids)]).fetchone()[0]


def format_table(findings: Sequence[Finding]) -> str:
    lines = [f"{'':4} {'verdict':<15} {'estimate [interval]':<28} claim"]
    for f in findings:
        iv = f.interval
        est = "n/a" if not math.isfinite(iv.estimate) else (
            f"{iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}]" if iv.known else f"{iv.estimate:.3g} [none]")
        lines.append(f"({f.id}){'':{3 - len(f.id)}} {f.verdict:<15} {est:<28} {f.claim}")
        lines.append(f"{'':21}statistic: {f.statistic}")
        lines.append(f"{'':21}measured: {f.measured}")
    return "\n".join(lines)
