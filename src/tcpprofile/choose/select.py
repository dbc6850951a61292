"""Transport selection by RTT from measured throughput profiles, with confidence (HPDC'17 §5).

A configuration is (V, n, B): variant (with its implementation), parallel streams, socket buffer.
Its profile is the mean throughput of its ok runs at each measured RTT τ_k (§5.2, profile mean).
At a query RTT τ the estimate is the profile point where τ was measured, the linear interpolation
between the two bracketing measured RTTs otherwise (§5.1 step 2), and, only when asked, a model
extrapolation outside the measured range. Intervals are small-sample valid (Student t over the
repetitions at each RTT used, combined with the same interpolation weights, Welch–Satterthwaite df),
clipped to the physical [0, C] and never from fewer than 3 runs (then: the runs that would decide);
candidates within the indifference margin of the best go to the simplest; best and runner-up are
"separated" when the difference's interval lies above the margin, a "tie" only when it lies within
±margin, and "not separated" otherwise, with the repetitions that would decide (tcpprofile.choose.decide,
docs/select.md).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import decide
from .. import hostcheck, units
from ..measure import ping
from ..cc.registry import implementation_of
from ..hostcheck import probe, transport
from ..errors import TcpProfileError, ValidationError
from ..store import Store, reads
from ..same_rtt import rtt_tolerance_s
from ..units import fmt_buffer, fmt_bytes, to_ms

MAX_RUNS_TO_DECIDE = 1000   # beyond: "more than this" (the difference sits at the margin's edge)
# The link buffer β is a condition as the spec wrote it (link_buffer: "BDP", "50MB"): with "BDP" its byte
# count varies along the profile like τ itself (tcpprofile.store.grouping.BUFFER_SQL).
CONDITION_FIELDS = ("transfer_bytes", "duration_s", "loss_mode", "loss_rate", "rate_bps", "link_buffer", "reverse",
                    "link_kind")
TIE_BREAK = "fewest streams, then smallest socket buffer (autotuning first), then builtin variant"



# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """(V, n, B); buffer_bytes None means kernel autotuning."""
    variant: str
    cc_impl: str          # 'builtin' | 'module' | 'bpf' | '' (unknown)
    streams: int
    buffer_bytes: int | None

    def label(self) -> str:
        impl = f"[{self.cc_impl}]" if self.cc_impl and self.cc_impl != "builtin" else ""
        return f"{self.variant}{impl} n={self.streams} B={fmt_buffer(self.buffer_bytes)}"

    def simplicity(self) -> tuple:
        """Tie-break order (smaller is simpler): see TIE_BREAK."""
        builtin = implementation_of(self.variant, self.cc_impl) == "builtin"
        return (self.streams, self.buffer_bytes or 0, 0 if builtin else 1, self.variant)

    def to_json(self) -> dict:
        return {"variant": self.variant, "cc_impl": self.cc_impl or None, "streams": self.streams,
                "buffer_bytes": self.buffer_bytes}


@dataclass
class Profile:
    """A configuration's measured profile: RTTs (ascending, s) and the throughputs of the runs there."""
    config: Config
    rtts_s: list[float]
    samples: list[np.ndarray]   # bits/s, one array of repetitions per RTT
    kernel_name: str | None = None
    rate_bps: float | None = None
    run_ids: list[list[str]] = field(default_factory=list)   # per RTT, aligned with samples
    transfer_bytes: int | None = None
    duration_s: float | None = None
    flagged: list[np.ndarray] = field(default_factory=list)  # per RTT, bool per run (grouping.FLAGGED_SQL)
    link_buffer: str | None = None   # the link's β as the spec wrote it ('BDP', '50MB') or its byte count
    loss_rate: float = 0.0           # the link's external loss (drop probability; periodic 1 in N: 1/N)

    @property
    def rtts_ms(self) -> list[float]:
        """The RTTs in ms, as printed and drawn (units.to_ms)."""
        return [to_ms(t) for t in self.rtts_s]

    @property
    def means(self) -> np.ndarray:
        return np.array([s.mean() for s in self.samples])

    @property
    def runs(self) -> int:
        return int(sum(len(s) for s in self.samples))

    def flagged_at(self, k: int) -> int:
        """Flagged runs among the repetitions at the k-th RTT."""
        return int(self.flagged[k].sum()) if self.flagged else 0

    @property
    def runs_flagged(self) -> int:
        return sum(self.flagged_at(k) for k in range(len(self.samples)))


@dataclass
class ProfileSet:
    conditions: dict            # the condition group these profiles share
    profiles: list[Profile]
    exclude_flagged: bool = False
    flagged_left_out: int = 0   # flagged runs of this group (and filters) left out by exclude_flagged
    unknown_variant_left_out: int = 0   # runs whose file named no congestion control (import --variant NAME)


def _condition_key(row: dict) -> tuple:
    return tuple(row[f] for f in CONDITION_FIELDS)


def cluster_rtts(values: list[float]) -> list[list[float]]:
    """Group RTTs [s] that lie within the matching tolerance of their neighbour (measured RTTs jitter)."""
    clusters: list[list[float]] = []
    for v in sorted(values):
        if clusters and v - clusters[-1][-1] <= rtt_tolerance_s(clusters[-1][-1]):
            clusters[-1].append(v)
        else:
            clusters.append([v])
    return clusters


def condition_groups(store: Store, *, exclude_flagged: bool = False) -> dict[tuple, int]:
    """Comparable groups present in the store (conditions -> ok runs; without flagged runs if asked)."""
    counts: dict[tuple, int] = defaultdict(int)
    for row in reads.profile_runs(store):
        if not (exclude_flagged and row["flagged"]):
            counts[_condition_key(row)] += 1
    return dict(counts)


def flagged_candidates(store: Store) -> tuple[int, int]:
    """(flagged, all) ok runs with a throughput and an RTT: what select and the report can draw on."""
    rows = reads.profile_runs(store)
    return sum(1 for r in rows if r["flagged"]), len(rows)


def describe_conditions(cond: dict, *, forward: bool = False) -> str:
    """The group's conditions in words; `forward` names the forward direction too (where groups differ
    in it; otherwise only reverse is named)."""
    parts = []
    if cond.get("transfer_bytes"):
        parts.append(f"F={fmt_bytes(cond['transfer_bytes'])}")
    if cond.get("duration_s"):
        parts.append(f"duration={cond['duration_s']:g}s")
    loss = cond.get("loss_mode") or "none"
    parts.append("loss=none" if loss == "none" else f"loss={loss}:{cond['loss_rate']:g}")
    if cond.get("rate_bps"):
        parts.append(f"C={cond['rate_bps'] / 1e9:g}Gbit/s")
    if cond.get("link_buffer"):
        buf = cond["link_buffer"]
        parts.append(f"β={fmt_bytes(int(buf)) if buf.isdigit() else buf}")  # digits: a link without buffer_spec
    if cond.get("reverse") or forward:
        parts.append("reverse" if cond.get("reverse") else "forward")
    if cond.get("link_kind"):
        parts.append(f"{cond['link_kind']} links")
    return " ".join(parts)


def load_profiles(store: Store, *, variants=None, streams=None, buffers=None,
                  conditions: dict | None = None, exclude_flagged: bool = False) -> ProfileSet:
    """Profiles of every configuration in one comparable condition group.

    `conditions` fixes some of CONDITION_FIELDS; when the remaining runs still span several groups
    (different F, duration, loss, C or direction) the choice is refused with the list of groups.
    Flagged runs (grouping.FLAGGED_SQL) are included and counted per RTT (Profile.flagged), or
    left out with exclude_flagged (counted in ProfileSet.flagged_left_out).
    """
    rows = reads.profile_runs(store)
    conditions = conditions or {}
    rows = [r for r in rows if all(_same(r[k], v) for k, v in conditions.items())]
    if variants:
        rows = [r for r in rows if r["variant"] in variants]
    if streams:
        rows = [r for r in rows if r["streams"] in streams]
    if buffers:
        rows = [r for r in rows if r["buffer_bytes"] in buffers]
    unknown = [r for r in rows if r["variant"] is None]    # nothing to recommend: the file named no variant
    rows = [r for r in rows if r["variant"] is not None]
    if unknown and not rows:
        raise TcpProfileError(f"the {len(unknown)} matching runs name no congestion-control variant (their files "
                              f"did not say): import them again with --variant NAME")
    left_out = [r for r in rows if r["flagged"]] if exclude_flagged else []
    if exclude_flagged:
        rows = [r for r in rows if not r["flagged"]]
    if not rows:
        more = f" ({len(left_out)} flagged runs left out)" if left_out else ""
        raise TcpProfileError(f"no ok runs match (check --variants/--streams/--buffers and the conditions){more}")
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[_condition_key(r)].append(r)
    if len(groups) > 1:
        raise TcpProfileError(incomparable({k: len(v) for k, v in groups.items()}))
    (key, rows), = groups.items()
    clusters = cluster_rtts([r["rtt_s"] for r in rows])
    centre = {v: m for c in clusters for m in (float(np.mean(c)),) for v in c}   # one mean per cluster
    by_config: dict[Config, dict[float, list[tuple]]] = defaultdict(lambda: defaultdict(list))
    names: dict[Config, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        cfg = Config(r["variant"], r["cc_impl"], int(r["streams"] or 1), r["buffer_bytes"])
        by_config[cfg][centre[r["rtt_s"]]].append((r["throughput_bps"], r["run_id"], bool(r["flagged"])))
        names[cfg][r["cc_kernel_name"] or r["variant"]] += 1
    cond = dict(zip(CONDITION_FIELDS, key))
    profiles = []
    for cfg in sorted(by_config, key=Config.simplicity):
        pts = sorted(by_config[cfg].items())
        profiles.append(Profile(cfg, [p[0] for p in pts], [np.array([x[0] for x in p[1]]) for p in pts],
                                kernel_name=max(names[cfg], key=names[cfg].get), rate_bps=cond["rate_bps"],
                                run_ids=[[x[1] for x in p[1]] for p in pts],
                                transfer_bytes=cond["transfer_bytes"], duration_s=cond["duration_s"],
                                flagged=[np.array([x[2] for x in p[1]], bool) for p in pts],
                                link_buffer=cond["link_buffer"],
                                loss_rate=float(cond["loss_rate"] or 0.0) if cond["loss_mode"] not in (None, "none")
                                else 0.0))
    return ProfileSet(cond, profiles, exclude_flagged, sum(1 for r in left_out if _condition_key(r) == key),
                      sum(1 for r in unknown if _condition_key(r) == key))


def incomparable(groups: dict[tuple, int]) -> str:
    """The refusal of runs that span several condition groups (keys: _condition_key -> ok runs): each
    group with its runs and the flags of `tcpprofile select` that pick it (only the conditions that differ)."""
    conds = {k: dict(zip(CONDITION_FIELDS, k)) for k in groups}
    differ = [f for f in CONDITION_FIELDS if len({repr(c[f]) for c in conds.values()}) > 1]
    listing = []
    for i, (k, n) in enumerate(sorted(groups.items(), key=lambda kv: -kv[1]), 1):
        c = conds[k]
        text = describe_conditions(c, forward="reverse" in differ)
        listing.append(f"[{i}] {text} ({n} runs): {' '.join(pick_flags(c, differ))}")
    return f"the runs span {len(groups)} incomparable groups; pick one with the flags given for it: {'; '.join(listing)}"


def pick_flags(cond: dict, fields: list[str]) -> list[str]:
    """The `tcpprofile select` flags that fix `fields` of a condition group at its values (read back
    exactly by commands/select.py's _conditions: sizes in bytes, durations in s, rates in bit/s)."""
    flags = []
    if "transfer_bytes" in fields or "duration_s" in fields:
        if cond["transfer_bytes"] is not None:
            flags.append(f"--size {cond['transfer_bytes']}B")
        elif cond["duration_s"] is not None:
            flags.append(f"--duration {_exact(cond['duration_s'])}s")
        else:       # a file that stated neither (an iperf2 report without its -t): no flag picks it alone
            flags.append("(size and duration unknown: no --size/--duration picks it)")
    if "loss_mode" in fields or "loss_rate" in fields:
        mode = cond["loss_mode"] or "none"
        flags.append("--loss none" if mode == "none" else f"--loss {mode}:{_exact(cond['loss_rate'])}")
    if "rate_bps" in fields and cond["rate_bps"] is not None:
        flags.append(f"--rate {_exact(cond['rate_bps'])}bit")
    if "link_buffer" in fields and cond["link_buffer"] is not None:
        flags.append(f"--link-buffer {cond['link_buffer']}")
    if "reverse" in fields:
        flags.append("--reverse" if cond["reverse"] else "--forward")
    if "link_kind" in fields and cond["link_kind"] is not None:
        flags.append(f"--link-kind {cond['link_kind']}")
    return flags


def _exact(x: float) -> str:
    """x as the shortest text that reads back as the same float (e.g. 10, 0.002, 9.9e+09)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)
    return a == b


# -- statistics ------------------------------------------------------------------------------
def link_buffer_at(label: str | None, rate_bps: float):
    """τ [s] → the link's configured buffer β [bytes] from its label as the spec wrote it (spec.py, link.buffer:
    '<k>xBDP' = k·C·τ/8 with C the link rate, a size such as '50MB', or the byte count of a link without a
    spec); None when the label is missing or not one of these (the model then fits β)."""
    from ..spec import KBDP   # the spec's own pattern for 'BDP' and '<k>xBDP'

    if not label:
        return None
    m = KBDP.fullmatch(label.strip())
    if m:
        k = float(m.group(1) or 1)
        return lambda t_s: k * rate_bps * t_s / 8   # BDP = C·τ/8 [bytes] (spec.py), τ [s]
    try:   # digits: a byte count (BUFFER_SQL's fallback, as describe_conditions reads it)
        size = float(label) if label.strip().isdigit() else float(units.size_bytes("link_buffer", label,
                                                                                    units.POSITIVE))
    except ValidationError:
        return None
    return lambda t_s: size


def model_extrapolate(profile: Profile, rtt_s: float, confidence: float, config: str | None = None
                      ) -> tuple[float, float, float, str, list[dict], dict]:
    """Model-backed profile value outside the measured RTT range: (value, CI low, CI high, model name,
    flags, structure test).

    The variant's first-principles model in the model configuration `config` (models/configurations.py;
    None: DEFAULT_CONFIGURATION, the validated one) is fitted to this configuration's profile means as
    `model fit` fits a dataset (models/extrapolate.py: β the link's configured buffer where the
    configuration takes it and the link's is known, else fitted; W_max fitted; n fixed) and predicts at
    `rtt_s` [s]; the interval is a residual bootstrap. flags: what the fit cannot explain (models.diagnostics:
    a fitted parameter at the end of its range, residuals with structure over τ); a flagged value is shown
    as such, never as a plain number.
    """
    from .. import models     # scipy-heavy; only --extrapolate needs it
    from ..models.configurations import DEFAULT_CONFIGURATION, SUMMARY
    from ..models.extrapolate import extrapolate
    from ..models.fit import fit_flags

    config = config or DEFAULT_CONFIGURATION
    cfg = profile.config
    if len(profile.rtts_s) < 3:
        raise TcpProfileError(f"{cfg.label()}: a model needs at least 3 measured RTTs, has {len(profile.rtts_s)}")
    if cfg.variant.lower() not in models.MODELS:
        raise TcpProfileError(f"{cfg.label()}: no model for {cfg.variant} (models: {', '.join(models.MODELS)})")
    if not profile.rate_bps:
        raise TcpProfileError(f"{cfg.label()}: the link rate C is unknown; a model needs it")
    if not (profile.transfer_bytes or profile.duration_s):
        raise TcpProfileError(f"{cfg.label()}: neither transfer size nor duration known; a model needs one")
    tau = np.asarray(profile.rtts_s, float)
    buffer_at = link_buffer_at(profile.link_buffer, float(profile.rate_bps))
    ex = extrapolate(cfg.variant.lower(), float(profile.rate_bps), tau, profile.means, rtt_s,
                     streams=cfg.streams, transfer_bytes=profile.transfer_bytes or None,
                     duration_s=None if profile.transfer_bytes else profile.duration_s, loss=profile.loss_rate,
                     buffer_at=buffer_at, config=config, level=confidence)
    flags, structure = fit_flags(ex.fit, tau, ex.residuals, np.ones(len(tau)))
    beta = "fitted β" if "β" in ex.fit.bounds else "β the link's configured buffer"
    return (ex.value_bps, ex.low_bps, ex.high_bps,
            f"{type(ex.fit.model).__name__} (tcpprofile.models, model configuration {config}: {SUMMARY[config]}; "
            f"{beta}, fitted W_max)", flags, structure)


# -- estimation at one RTT -------------------------------------------------------------------
@dataclass
class Estimate:
    config: Config
    throughput_bps: float
    ci_low_bps: float | None
    ci_high_bps: float | None
    method: str                 # 'exact' | 'interpolated' | 'extrapolated'
    rtts_s: list[float]         # measured RTTs used [s]
    weights: list[float]        # their interpolation weights
    repetitions: list[int]      # runs at each of them
    runs: int                   # runs behind the whole profile
    stat: decide.Mean | None = field(repr=False)   # the estimate's t form; None when extrapolated (model interval)
    model: str | None = None
    kernel_name: str | None = None
    flagged: list[int] = field(default_factory=list)   # flagged runs among the repetitions at each RTT used
    runs_flagged: int = 0                              # flagged runs of the whole profile
    model_flags: list[dict] = field(default_factory=list)   # extrapolated: what the model fit cannot explain
    model_structure: dict | None = None                     # extrapolated: its residual-structure test
    ceiling_bps: float | None = None    # C the interval is clipped to (the link rate); None: unknown, [0, ∞)
    ci_clipped: bool = False            # the t interval reached beyond [0, C] and was clipped there
    too_few_runs: bool = False          # fewer than decide.MIN_INTERVAL_RUNS at an RTT used: no interval
    more_runs: int | None = None        # then: about this many more repetitions would decide (select())
    more_runs_against: str | None = None   # … against this configuration (the best; the runner-up for the best)
    decides_as: str | None = None       # … showing 'tie' or 'significant'
    decide_stat: decide.Mean | None = field(default=None, repr=False)  # stat, one-run spreads pooled (pooled_spread)

    @property
    def rtts_ms(self) -> list[float]:
        """The RTTs used in ms, as printed (units.to_ms)."""
        return [to_ms(t) for t in self.rtts_s]

    def interval_note(self) -> str | None:
        """Why there is no interval, in words an operator reads (None when there is one, or a model's)."""
        if not self.too_few_runs:
            return None
        text = "too few runs for an interval"
        if self.more_runs is None:
            if self.more_runs_against is not None and self.decides_as is None:
                return f"{text}; its difference from {self.more_runs_against} lies on the margin's edge"
            if self.decides_as is not None:
                return (f"{text}; more than {MAX_RUNS_TO_DECIDE} more would be needed to decide (against "
                        f"{self.more_runs_against})")
            return (f"{text}; at least {decide.MIN_INTERVAL_RUNS - min(self.repetitions)} more give one (no "
                    "configuration of this group has repeated runs to judge the spread)")
        if self.more_runs_against is None:
            return f"{text}; about {self.more_runs} more would give one"
        shows = "a tie" if self.decides_as == "tie" else "separated"
        return (f"{text}; about {self.more_runs} more would decide (against {self.more_runs_against}: "
                f"{shows}, if the means and spread stay as observed)")

    def to_json(self) -> dict:
        return {**self.config.to_json(), "label": self.config.label(), "cc_kernel_name": self.kernel_name,
                "throughput_bps": self.throughput_bps, "ci_low_bps": self.ci_low_bps,
                "ci_high_bps": self.ci_high_bps, "ci_clipped": self.ci_clipped, "ceiling_bps": self.ceiling_bps,
                "ci_reason": self.interval_note(), "more_runs": self.more_runs,
                "more_runs_against": self.more_runs_against, "decides_as": self.decides_as,
                "method": self.method, "rtts_ms": self.rtts_ms,
                "weights": self.weights, "repetitions": self.repetitions, "flagged": self.flagged,
                "runs": self.runs, "runs_flagged": self.runs_flagged, "model": self.model,
                "model_flagged": bool(self.model_flags), "model_flags": self.model_flags,
                "model_structure": self.model_structure}


def pooled_spread(profiles: list[Profile]) -> float | None:
    """The relative variance of one repetition, pooled over every (configuration, RTT) of one comparable
    group with at least 2 repetitions: Σ (n−1)·s²/x̄² / Σ (n−1) (s² the sample variance, x̄ the mean);
    None when no configuration has repeated runs. It stands in for the spread of a configuration measured
    once, to say how many runs would decide (docs/select.md, step 6)."""
    num = den = 0.0
    for p in profiles:
        for x in p.samples:
            if x.size >= 2 and x.mean() > 0:
                num += (x.size - 1) * float(x.var(ddof=1)) / float(x.mean()) ** 2
                den += x.size - 1
    return num / den if den else None


def _with_spread(profile: Profile, used: list[int], weights, spread: float | None) -> decide.Mean | None:
    """The estimate's t form with a one-run mean's variance taken from the pooled relative spread
    (pooled_spread × x², one repetition); None when a one-run mean has no spread to borrow."""
    means = []
    for k in used:
        x = profile.samples[k]
        if x.size >= 2:
            means.append(decide.mean_of(x))
        elif spread is None:
            return None
        else:
            means.append(decide.Mean(float(x[0]), spread * float(x[0]) ** 2, 0.0, 1))
    return decide.weighted(means, weights)


def estimate(profile: Profile, rtt_s: float, *, extrapolate: bool, n_boot: int, confidence: float,
             rng: np.random.Generator, spread: float | None = None) -> Estimate:
    """The profile at `rtt_s` [s] with its Student-t interval clipped to [0, C] (raises TcpProfileError when
    out of range). Fewer than decide.MIN_INTERVAL_RUNS repetitions at an RTT used: no interval
    (too_few_runs; select() fills in the runs that would decide, with `spread` for one-run means).
    n_boot and rng are unused since intervals are t intervals (kept for callers)."""
    tau = profile.rtts_s
    near = [k for k, t in enumerate(tau) if abs(t - rtt_s) <= rtt_tolerance_s(t)]
    if near:
        k = min(near, key=lambda k: abs(tau[k] - rtt_s))
        used, weights, method, model = [k], [1.0], "exact", None
    elif tau[0] < rtt_s < tau[-1]:
        hi = next(k for k, t in enumerate(tau) if t > rtt_s)
        lo = hi - 1
        w_lo = (tau[hi] - rtt_s) / (tau[hi] - tau[lo])   # linear interpolation (§5.1, §5.2)
        used, weights, method, model = [lo, hi], [w_lo, 1.0 - w_lo], "interpolated", None
    elif not extrapolate:
        raise TcpProfileError(
            f"{profile.config.label()}: {to_ms(rtt_s):g} ms is outside the measured RTTs "
            f"{to_ms(tau[0]):g}–{to_ms(tau[-1]):g} ms "
            "(measure there, or pass --extrapolate for a model-backed estimate)")
    else:
        used, weights, method = list(range(len(tau))), [], "extrapolated"
    counts = [len(profile.samples[k]) for k in used]
    flagged = [profile.flagged_at(k) for k in used]
    if method == "extrapolated":
        point, lo_ci, hi_ci, model, model_flags, structure = model_extrapolate(profile, rtt_s, confidence)
        lo_ci, hi_ci, clipped = decide.physical((lo_ci, hi_ci), profile.rate_bps)   # the model's, in [0, C] too
        return Estimate(profile.config, point, lo_ci, hi_ci, method, [tau[k] for k in used], [], counts,
                        profile.runs, None, model, profile.kernel_name, flagged, profile.runs_flagged,
                        model_flags, structure, ceiling_bps=profile.rate_bps, ci_clipped=clipped)
    # Θ̂(τ) = Σ w_k·Θ̂(τ_k) (§5.1 step 2), variance Σ w_k²·s_k²/n_k, Satterthwaite df
    stat = decide.weighted([decide.mean_of(profile.samples[k]) for k in used], weights)
    few = min(counts) < decide.MIN_INTERVAL_RUNS
    ci = None if few else stat.interval(confidence)
    lo_ci, hi_ci, clipped = (None, None, False) if ci is None else decide.physical(ci, profile.rate_bps)
    return Estimate(profile.config, stat.value, lo_ci, hi_ci, method, [tau[k] for k in used],
                    [float(x) for x in weights], counts, profile.runs, stat, model, profile.kernel_name,
                    flagged, profile.runs_flagged, ceiling_bps=profile.rate_bps, ci_clipped=clipped,
                    too_few_runs=few, decide_stat=stat if min(counts) >= 2 else _with_spread(
                        profile, used, weights, spread))


# -- selection -------------------------------------------------------------------------------
@dataclass
class Comparison:
    """Best vs runner-up: Welch t interval of the difference, against the indifference margin."""
    difference_bps: float
    ci_low_bps: float | None
    ci_high_bps: float | None
    p_value: float | None       # one-sided t test of H0: difference ≤ margin
    decision: str               # 'significant' (separated) | 'tie' (shown within ±margin) | 'unresolved' (not
                                # separated) | 'insufficient' | 'extrapolated' | 'single'
    margin_bps: float = 0.0     # margin × the best's throughput
    equivalent: bool = False    # the whole difference interval lies within the margin (= decision 'tie')
    runs_to_decide: int | None = None   # 'unresolved': repetitions of each that would decide (runs_to_decide)
    decides_as: str | None = None       # 'unresolved': what they would show, 'tie' or 'significant'

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Selection:
    rtt_s: float
    conditions: dict
    confidence: float
    n_boot: int
    seed: int
    ranking: list[Estimate]
    excluded: list[dict]
    comparison: Comparison
    recommended: Estimate
    margin: float = decide.DEFAULT_MARGIN
    exclude_flagged: bool = False
    flagged_left_out: int = 0

    @property
    def best(self) -> Estimate:
        return self.ranking[0]

    @property
    def rtt_ms(self) -> float:
        """The RTT asked for, in ms as printed (units.to_ms)."""
        return to_ms(self.rtt_s)

    def to_json(self) -> dict:
        return {"rtt_ms": self.rtt_ms, "conditions": self.conditions, "confidence": self.confidence,
                "margin": self.margin, "n_boot": self.n_boot, "seed": self.seed,
                "ranking": [{"rank": i + 1, **e.to_json()} for i, e in enumerate(self.ranking)],
                "excluded": self.excluded, "best": self.best.to_json(),
                "runner_up": self.ranking[1].to_json() if len(self.ranking) > 1 else None,
                "comparison": self.comparison.to_json(), "recommended": self.recommended.to_json(),
                "tie_break": TIE_BREAK, "exclude_flagged": self.exclude_flagged,
                "flagged_left_out": self.flagged_left_out}


def runs_to_decide(a: decide.Mean, b: decide.Mean, confidence: float, margin_bps: float
                   ) -> tuple[int | None, str | None]:
    """(repetitions of each configuration, what they would show) for the difference a − b to be decided
    if the observed means and spreads held: its t interval's half-width h(k) = t_{1−α/2, k−1}·√(u/k)
    falling to m − |d| shows a tie (d within ±m), below d − m separates them (d above m); u = n_a·v_a +
    n_b·v_b is the difference's variance with one repetition each (exact for means of n repetitions; for
    interpolated ones, with their fewest repetitions). k − 1 degrees of freedom are the fewest Welch can
    give for k repetitions each: the count errs high, never low. (None, …) when more than
    MAX_RUNS_TO_DECIDE would be needed; (None, None) when d lies on the margin's edge."""
    d = a.value - b.value
    if abs(d) == margin_bps:
        return None, None
    outcome = "tie" if abs(d) < margin_bps else "significant"
    target = abs(abs(d) - margin_bps)
    u = a.var * a.n + b.var * b.n
    for k in range(max(a.n, b.n, decide.MIN_INTERVAL_RUNS), MAX_RUNS_TO_DECIDE + 1):
        h = decide.t_quantile(0.5 + confidence / 2, k - 1) * math.sqrt(u / k)
        if h < target:
            return k, outcome
    return None, outcome


def _compare(a: Estimate, b: Estimate, confidence: float, margin: float) -> Comparison:
    """a (the best) against b: 'significant' (separated) when a is better by more than the margin with
    confidence, 'tie' when the whole difference interval lies within ±margin, 'unresolved' (not
    separated: the interval is too wide to tell) otherwise, with the repetitions that would decide."""
    diff = a.throughput_bps - b.throughput_bps
    m = margin * abs(a.throughput_bps)
    if a.stat is None or b.stat is None:
        return Comparison(diff, None, None, None, "extrapolated", m)
    if a.too_few_runs or b.too_few_runs or a.ci_low_bps is None or b.ci_low_bps is None:
        # no interval from fewer than decide.MIN_INTERVAL_RUNS: only the runs that would decide
        runs, outcome = ((None, None) if a.decide_stat is None or b.decide_stat is None
                         else runs_to_decide(a.decide_stat, b.decide_stat, confidence, m))
        return Comparison(diff, None, None, None, "insufficient", m, False, runs, outcome)
    d = decide.difference(a.stat, b.stat)           # disjoint runs: independent (Welch)
    lo, hi = d.interval(confidence)
    equivalent = bool(-m <= lo and hi <= m)
    decision = "significant" if lo > m else "tie" if equivalent else "unresolved"
    runs, outcome = runs_to_decide(a.stat, b.stat, confidence, m) if decision == "unresolved" else (None, None)
    return Comparison(diff, lo, hi, d.p_above(m), decision, m, equivalent, runs, outcome)


def _more_runs(ranking: list[Estimate], confidence: float, margin: float) -> None:
    """For each estimate with too few runs for an interval: the repetitions that would decide it against
    the best (the best: against the runner-up), runs_to_decide's count less the runs it has; alone, the
    runs that give an interval at all."""
    for i, e in enumerate(ranking):
        if not e.too_few_runs:
            continue
        now = min(e.repetitions)
        if len(ranking) == 1:
            e.more_runs = decide.MIN_INTERVAL_RUNS - now
            continue
        other = ranking[1] if i == 0 else ranking[0]
        if e.decide_stat is None or other.decide_stat is None:
            continue
        k, e.decides_as = runs_to_decide(e.decide_stat, other.decide_stat, confidence,
                                         margin * abs(ranking[0].throughput_bps))
        e.more_runs_against = other.config.label()
        e.more_runs = None if k is None else max(k - now, decide.MIN_INTERVAL_RUNS - now)


def select(profiles: ProfileSet, rtt_s: float, *, extrapolate: bool = False, confidence: float = 0.95,
           n_boot: int = 2000, seed: int = 0, margin: float = decide.DEFAULT_MARGIN) -> Selection:
    """Rank every configuration by its profile at `rtt_s` [s]; compare the best with the runner-up.

    Configurations whose estimate is within `margin` (relative) of the best are a tie, broken towards
    the simplest (TIE_BREAK). Model-backed (extrapolated) estimates carry the model's interval but no
    t form: their comparison is 'extrapolated' (not assessed).
    """
    if not (0.5 <= confidence < 1.0):
        raise ValidationError("confidence", f"must be in [0.5, 1), got {confidence}")
    if not (0.0 <= margin <= 0.5):
        raise ValidationError("margin", f"must be from 0% to 50%, got {margin:.4g}")
    rng = np.random.default_rng(seed)
    ranking, excluded = [], []
    spread = pooled_spread(profiles.profiles)
    for p in profiles.profiles:
        try:
            ranking.append(estimate(p, rtt_s, extrapolate=extrapolate, n_boot=n_boot,
                                    confidence=confidence, rng=rng, spread=spread))
        except TcpProfileError as err:
            excluded.append({**p.config.to_json(), "label": p.config.label(), "reason": str(err)})
    if not ranking:  # one line: configurations that share a reason are counted, not repeated
        reasons: dict[str, list[str]] = defaultdict(list)
        for e in excluded:
            reasons[e["reason"].removeprefix(e["label"] + ": ")].append(e["label"])
        raise TcpProfileError("no configuration can be estimated at this RTT: " + "; ".join(
            f"{reason} ({'all ' if len(labels) == len(excluded) else ''}{len(labels)} configuration"
            f"{'s' if len(labels) > 1 else ''}{'' if len(labels) > 3 else ': ' + ', '.join(labels)})"
            for reason, labels in reasons.items()))
    ranking.sort(key=lambda e: (-e.throughput_bps, e.config.simplicity()))
    _more_runs(ranking, confidence, margin)
    best = ranking[0]
    flags = dict(exclude_flagged=profiles.exclude_flagged, flagged_left_out=profiles.flagged_left_out)
    if len(ranking) == 1:
        return Selection(rtt_s, profiles.conditions, confidence, n_boot, seed, ranking, excluded,
                         Comparison(0.0, None, None, None, "single"), best, margin, **flags)
    comparison = _compare(best, ranking[1], confidence, margin)
    tied = decide.ties({i: e.throughput_bps for i, e in enumerate(ranking)}, margin)
    recommended = min((ranking[i] for i in tied), key=lambda e: e.config.simplicity())
    return Selection(rtt_s, profiles.conditions, confidence, n_boot, seed, ranking, excluded,
                     comparison, recommended, margin, **flags)


# -- RTT by ping -----------------------------------------------------------------------------
_HOST_RE = re.compile(r"[A-Za-z0-9_.:\[\]%-]+")


def validate_host(host: str) -> str:
    if not host or host.startswith("-") or not _HOST_RE.fullmatch(host):
        raise ValidationError("--host", f"expected a host name or IP address, got {host!r}")
    return host


def ping_rtt(host: str, *, count: int = 5) -> dict:
    """Idle RTT to `host` (§5.1 step 1: ping.rtt), the host and count validated as select's flags."""
    validate_host(host)
    if not (1 <= count <= 100):
        raise ValidationError("--ping-count", f"must be 1..100, got {count}")
    return ping.rtt(host, count=count)


# -- host settings ---------------------------------------------------------------------------
# The targets, the raise-only comparison and the tool lines are tcpprofile.hostcheck's (docs/hostcheck.md):
# select, tune and hostcheck recommend the same settings through the same code.
@dataclass
class Settings:
    """What applies a chosen configuration on a host: sysctl targets (each a minimum, never lowered),
    the congestion control and how to get it, the transfer-tool lines that can use it."""
    sysctls: dict[str, str]         # key -> target (every field a minimum; a name for a setting)
    congestion_control: dict        # name, impl, how ('sysctl' | 'per-socket'), steps
    commands: list[str]             # transfer-tool command lines
    targets: dict = field(default_factory=dict)     # key -> hostcheck.Target (reason, host-wide or not)

    def to_json(self) -> dict:
        return {"sysctls": self.sysctls, "congestion_control": self.congestion_control,
                "commands": self.commands,
                "reasons": {k: t.reason for k, t in self.targets.items()}}


def buffer_for(config: Config, rtt_s: float, rate_bps: float | None) -> int:
    """Socket-buffer limit to allow: B when requested, else 2 × BDP for autotuning (≥ 4 MiB)."""
    return hostcheck.buffer_target(rtt_s, rate_bps or 10e9, config.buffer_bytes)


def host_settings(est: Estimate, rtt_s: float, rate_bps: float | None, *, host: str | None = None) -> Settings:
    cfg = est.config
    impl = implementation_of(cfg.variant, cfg.cc_impl) or "unknown"
    cc = transport.plan(cfg.variant, impl, est.kernel_name, streams=cfg.streams, buffer_bytes=cfg.buffer_bytes,
                        host=host)
    wanted = hostcheck.targets(rtt_s, rate_bps or 10e9, buffer_bytes=cfg.buffer_bytes, streams=cfg.streams,
                               fq=probe.fq_available())
    if cc.pop("default"):
        wanted[transport.CC_KEY] = hostcheck.Target(transport.CC_KEY, cc["name"], "the recommended variant, "
                                                    "as the default every tool inherits")
    commands = cc.pop("commands")
    return Settings({k: t.text() for k, t in wanted.items()}, cc, commands, wanted)
