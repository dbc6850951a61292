"""Transport selection by RTT from measured throughput profiles, with confidence (HPDC'17 §5).

A configuration is (V, n, B): variant (with its implementation), parallel streams, socket buffer.
Its profile is the mean throughput of its ok runs at each measured RTT τ_k (§5.2, profile mean).
At a query RTT τ the estimate is the profile point where τ was measured, the linear interpolation
between the two bracketing measured RTTs otherwise (§5.1 step 2), and, only when asked, a model
extrapolation outside the measured range. Intervals are small-sample valid (Student t over the
repetitions at each RTT used, combined with the same interpolation weights, Welch–Satterthwaite df);
candidates within the indifference margin of the best go to the simplest; best and runner-up are
"separated" when the difference's interval lies above the margin, a "tie" only when it lies within
±margin, and "not separated" otherwise, with the repetitions that would decide (tcpprofile.decide,
docs/select.md).
"""

from __future__ import annotations

import math
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import decide, ping
from .errors import TcpProfileError, ValidationError
from .store import Store, reads
from .tolerance import rtt_tolerance_ms
from .testbed.netns import in_ns, netns_list

BUILTIN_VARIANTS = ("reno", "cubic", "bbr")  # compiled into this project's kernels
MAX_RUNS_TO_DECIDE = 1000   # beyond: "more than this" (the difference sits at the margin's edge)
# The link buffer β is a condition as the spec wrote it (link_buffer: "BDP", "50MB"): with "BDP" its byte
# count varies along the profile like τ itself (tcpprofile.dimensions.BUFFER_SQL).
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
        builtin = self.cc_impl == "builtin" or (not self.cc_impl and self.variant in BUILTIN_VARIANTS)
        return (self.streams, self.buffer_bytes or 0, 0 if builtin else 1, self.variant)

    def to_json(self) -> dict:
        return {"variant": self.variant, "cc_impl": self.cc_impl or None, "streams": self.streams,
                "buffer_bytes": self.buffer_bytes}


@dataclass
class Profile:
    """A configuration's measured profile: RTTs (ascending, ms) and the throughputs of the runs there."""
    config: Config
    rtts_ms: list[float]
    samples: list[np.ndarray]   # bits/s, one array of repetitions per RTT
    kernel_name: str | None = None
    rate_bps: float | None = None
    run_ids: list[list[str]] = field(default_factory=list)   # per RTT, aligned with samples
    transfer_bytes: int | None = None
    duration_s: float | None = None
    flagged: list[np.ndarray] = field(default_factory=list)  # per RTT, bool per run (dimensions.FLAGGED_SQL)

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


def _condition_key(row: dict) -> tuple:
    return tuple(row[f] for f in CONDITION_FIELDS)


def cluster_rtts(values: list[float]) -> list[list[float]]:
    """Group RTTs that lie within the matching tolerance of their neighbour (measured RTTs jitter)."""
    clusters: list[list[float]] = []
    for v in sorted(values):
        if clusters and v - clusters[-1][-1] <= rtt_tolerance_ms(clusters[-1][-1]):
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


def describe_conditions(cond: dict) -> str:
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
    if cond.get("reverse"):
        parts.append("reverse")
    if cond.get("link_kind"):
        parts.append(f"{cond['link_kind']} links")
    return " ".join(parts)


def load_profiles(store: Store, *, variants=None, streams=None, buffers=None,
                  conditions: dict | None = None, exclude_flagged: bool = False) -> ProfileSet:
    """Profiles of every configuration in one comparable condition group.

    `conditions` fixes some of CONDITION_FIELDS; when the remaining runs still span several groups
    (different F, duration, loss, C or direction) the choice is refused with the list of groups.
    Flagged runs (dimensions.FLAGGED_SQL) are included and counted per RTT (Profile.flagged), or
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
        listing = "; ".join(f"{describe_conditions(dict(zip(CONDITION_FIELDS, k)))} ({len(v)} runs)"
                            for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1])))
        raise TcpProfileError(
            "the runs span incomparable groups; pick one with --size/--duration/--loss/--rate/"
            "--link-buffer/--reverse/--link-kind: "
            + listing)
    (key, rows), = groups.items()
    clusters = cluster_rtts([r["rtt_ms"] for r in rows])
    centre = {v: m for c in clusters for m in (float(np.mean(c)),) for v in c}   # one mean per cluster
    by_config: dict[Config, dict[float, list[tuple]]] = defaultdict(lambda: defaultdict(list))
    names: dict[Config, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        cfg = Config(r["variant"], r["cc_impl"], int(r["streams"] or 1), r["buffer_bytes"])
        by_config[cfg][centre[r["rtt_ms"]]].append((r["throughput_bps"], r["run_id"], bool(r["flagged"])))
        names[cfg][r["cc_kernel_name"] or r["variant"]] += 1
    cond = dict(zip(CONDITION_FIELDS, key))
    profiles = []
    for cfg in sorted(by_config, key=Config.simplicity):
        pts = sorted(by_config[cfg].items())
        profiles.append(Profile(cfg, [p[0] for p in pts], [np.array([x[0] for x in p[1]]) for p in pts],
                                kernel_name=max(names[cfg], key=names[cfg].get), rate_bps=cond["rate_bps"],
                                run_ids=[[x[1] for x in p[1]] for p in pts],
                                transfer_bytes=cond["transfer_bytes"], duration_s=cond["duration_s"],
                                flagged=[np.array([x[2] for x in p[1]], bool) for p in pts]))
    return ProfileSet(cond, profiles, exclude_flagged, sum(1 for r in left_out if _condition_key(r) == key))


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)
    return a == b


# -- statistics ------------------------------------------------------------------------------
def model_extrapolate(profile: Profile, rtt_ms: float, confidence: float
                      ) -> tuple[float, float, float, str, list[dict], dict]:
    """Model-backed profile value outside the measured RTT range: (value, CI low, CI high, model name,
    flags, structure test).

    The variant's first-principles model (tcpprofile.models) is fitted to this configuration's profile
    means (β and W_max, n fixed) and predicts at `rtt_ms`; the interval is the models' residual
    bootstrap. Transfer size per RTT: F, or mean throughput × duration for time-limited runs. flags: what
    the fit cannot explain (models.diagnostics: β or W_max at the end of its range, residuals with
    structure over τ); a flagged value is shown as such, never as a plain number.
    """
    from . import models     # scipy-heavy; only --extrapolate needs it
    from .models import diagnostics
    from .models.lsq import BUFFER_BOUNDS, WMAX_BOUNDS

    cfg = profile.config
    if len(profile.rtts_ms) < 3:
        raise TcpProfileError(f"{cfg.label()}: a model needs at least 3 measured RTTs, has {len(profile.rtts_ms)}")
    if cfg.variant.lower() not in models.MODELS:
        raise TcpProfileError(f"{cfg.label()}: no model for {cfg.variant} (models: {', '.join(models.MODELS)})")
    if not profile.rate_bps:
        raise TcpProfileError(f"{cfg.label()}: the link rate C is unknown; a model needs it")
    tau = np.asarray(profile.rtts_ms, float) / 1e3
    means = profile.means
    if profile.transfer_bytes:
        size = np.full(len(tau), float(profile.transfer_bytes))
    elif profile.duration_s:
        size = means * profile.duration_s / 8                   # F = Θ·T  [bytes]
    else:
        raise TcpProfileError(f"{cfg.label()}: neither transfer size nor duration known; a model needs one")
    edge = 0 if rtt_ms < profile.rtts_ms[0] else -1
    model = models.make_model(cfg.variant, capacity_bps=float(profile.rate_bps))
    pred, lo, hi = models.bootstrap_predict(model, tau, means, rtt_ms / 1e3, n=cfg.streams, size=size,
                                            n_new=cfg.streams, size_new=size[edge], level=confidence)
    bound = [diagnostics.at_bound("β", model.buffer_bytes_, BUFFER_BOUNDS),
             diagnostics.at_bound("W_max", model.wmax_bytes_, WMAX_BOUNDS)]
    structure = diagnostics.residual_structure(tau, model.residuals_, np.ones(len(tau)))
    return (float(pred), float(lo), float(hi), f"{type(model).__name__} (tcpprofile.models, fitted β, W_max)",
            diagnostics.flags_of(bound, structure), structure)


# -- estimation at one RTT -------------------------------------------------------------------
@dataclass
class Estimate:
    config: Config
    throughput_bps: float
    ci_low_bps: float | None
    ci_high_bps: float | None
    method: str                 # 'exact' | 'interpolated' | 'extrapolated'
    rtts_ms: list[float]        # measured RTTs used
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

    def to_json(self) -> dict:
        return {**self.config.to_json(), "label": self.config.label(), "cc_kernel_name": self.kernel_name,
                "throughput_bps": self.throughput_bps, "ci_low_bps": self.ci_low_bps,
                "ci_high_bps": self.ci_high_bps, "method": self.method, "rtts_ms": self.rtts_ms,
                "weights": self.weights, "repetitions": self.repetitions, "flagged": self.flagged,
                "runs": self.runs, "runs_flagged": self.runs_flagged, "model": self.model,
                "model_flagged": bool(self.model_flags), "model_flags": self.model_flags,
                "model_structure": self.model_structure}


def estimate(profile: Profile, rtt_ms: float, *, extrapolate: bool, n_boot: int, confidence: float,
             rng: np.random.Generator) -> Estimate:
    """The profile at `rtt_ms` with its Student-t interval (raises TcpProfileError when out of range).
    n_boot and rng are unused since intervals are t intervals (kept for callers)."""
    tau = profile.rtts_ms
    near = [k for k, t in enumerate(tau) if abs(t - rtt_ms) <= rtt_tolerance_ms(t)]
    if near:
        k = min(near, key=lambda k: abs(tau[k] - rtt_ms))
        used, weights, method, model = [k], [1.0], "exact", None
    elif tau[0] < rtt_ms < tau[-1]:
        hi = next(k for k, t in enumerate(tau) if t > rtt_ms)
        lo = hi - 1
        w_lo = (tau[hi] - rtt_ms) / (tau[hi] - tau[lo])   # linear interpolation (§5.1, §5.2)
        used, weights, method, model = [lo, hi], [w_lo, 1.0 - w_lo], "interpolated", None
    elif not extrapolate:
        raise TcpProfileError(
            f"{profile.config.label()}: {rtt_ms:g} ms is outside the measured RTTs "
            f"{tau[0]:g}–{tau[-1]:g} ms (measure there, or pass --extrapolate for a model-backed estimate)")
    else:
        used, weights, method = list(range(len(tau))), [], "extrapolated"
    counts = [len(profile.samples[k]) for k in used]
    flagged = [profile.flagged_at(k) for k in used]
    if method == "extrapolated":
        point, lo_ci, hi_ci, model, model_flags, structure = model_extrapolate(profile, rtt_ms, confidence)
        return Estimate(profile.config, point, lo_ci, hi_ci, method, [tau[k] for k in used], [], counts,
                        profile.runs, None, model, profile.kernel_name, flagged, profile.runs_flagged,
                        model_flags, structure)
    # Θ̂(τ) = Σ w_k·Θ̂(τ_k) (§5.1 step 2), variance Σ w_k²·s_k²/n_k, Satterthwaite df
    stat = decide.weighted([decide.mean_of(profile.samples[k]) for k in used], weights)
    ci = stat.interval(confidence)                # None with one repetition at an RTT used
    lo_ci, hi_ci = ci if ci is not None else (None, None)
    return Estimate(profile.config, stat.value, lo_ci, hi_ci, method, [tau[k] for k in used],
                    [float(x) for x in weights], counts, profile.runs, stat, model, profile.kernel_name,
                    flagged, profile.runs_flagged)


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
    rtt_ms: float
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
    for k in range(max(a.n, b.n, 2), MAX_RUNS_TO_DECIDE + 1):
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
    if a.ci_low_bps is None or b.ci_low_bps is None:
        return Comparison(diff, None, None, None, "insufficient", m)
    d = decide.difference(a.stat, b.stat)           # disjoint runs: independent (Welch)
    lo, hi = d.interval(confidence)
    equivalent = bool(-m <= lo and hi <= m)
    decision = "significant" if lo > m else "tie" if equivalent else "unresolved"
    runs, outcome = runs_to_decide(a.stat, b.stat, confidence, m) if decision == "unresolved" else (None, None)
    return Comparison(diff, lo, hi, d.p_above(m), decision, m, equivalent, runs, outcome)


def select(profiles: ProfileSet, rtt_ms: float, *, extrapolate: bool = False, confidence: float = 0.95,
           n_boot: int = 2000, seed: int = 0, margin: float = decide.DEFAULT_MARGIN) -> Selection:
    """Rank every configuration by its profile at `rtt_ms`; compare the best with the runner-up.

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
    for p in profiles.profiles:
        try:
            ranking.append(estimate(p, rtt_ms, extrapolate=extrapolate, n_boot=n_boot,
                                    confidence=confidence, rng=rng))
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
    best = ranking[0]
    flags = dict(exclude_flagged=profiles.exclude_flagged, flagged_left_out=profiles.flagged_left_out)
    if len(ranking) == 1:
        return Selection(rtt_ms, profiles.conditions, confidence, n_boot, seed, ranking, excluded,
                         Comparison(0.0, None, None, None, "single"), best, margin, **flags)
    comparison = _compare(best, ranking[1], confidence, margin)
    tied = decide.ties({i: e.throughput_bps for i, e in enumerate(ranking)}, margin)
    recommended = min((ranking[i] for i in tied), key=lambda e: e.config.simplicity())
    return Selection(rtt_ms, profiles.conditions, confidence, n_boot, seed, ranking, excluded,
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
TCP_MEM_DEFAULTS = {"net.ipv4.tcp_rmem": (4096, 131072), "net.ipv4.tcp_wmem": (4096, 16384)}
NETNS_GLOBAL = ("net.core.rmem_max", "net.core.wmem_max")   # not writable inside a namespace


@dataclass
class Settings:
    """What applies a chosen configuration on a host."""
    sysctls: dict[str, str]
    congestion_control: dict        # name, impl, how ('sysctl' | 'per-socket'), steps
    commands: list[str]             # transfer-tool command lines

    def to_json(self) -> dict:
        return {"sysctls": self.sysctls, "congestion_control": self.congestion_control,
                "commands": self.commands}


def buffer_for(config: Config, rtt_ms: float, rate_bps: float | None) -> int:
    """Socket-buffer limit to allow: B when requested, else 2 × BDP for autotuning (≥ 4 MiB)."""
    if config.buffer_bytes:
        return int(config.buffer_bytes)
    bdp = (rate_bps or 10e9) * rtt_ms / 1e3 / 8          # C·τ  [bytes]
    return max(4 << 20, int(math.ceil(2 * bdp / (1 << 20))) << 20)


def host_settings(est: Estimate, rtt_ms: float, rate_bps: float | None, *, host: str | None = None) -> Settings:
    cfg = est.config
    buf = buffer_for(cfg, rtt_ms, rate_bps)
    sysctls = {"net.core.rmem_max": str(buf), "net.core.wmem_max": str(buf)}
    for key, (lo, default) in TCP_MEM_DEFAULTS.items():
        sysctls[key] = f"{lo} {default} {buf}"
    name = est.kernel_name or cfg.variant
    builtin = cfg.cc_impl == "builtin" or (not cfg.cc_impl and cfg.variant in BUILTIN_VARIANTS)
    if builtin or cfg.cc_impl == "module":
        steps = [] if builtin else [f"modprobe tcp_{cfg.variant}"]
        sysctls["net.ipv4.tcp_congestion_control"] = name
        steps.append(f"sysctl -w net.ipv4.tcp_congestion_control={name}   (or per socket: "
                     f"setsockopt(TCP_CONGESTION, \"{name}\"))")
        cc = {"name": name, "impl": cfg.cc_impl or "builtin", "how": "sysctl", "steps": steps}
    else:
        cc = {"name": name, "impl": cfg.cc_impl or "unknown", "how": "per-socket",
              "steps": [f"tcpprofile cc load {cfg.variant}",
                        f"select it per socket: setsockopt(TCP_CONGESTION, \"{name}\") / iperf3 -C {name}",
                        "never as a namespace or host default (a BPF algorithm set as a namespace "
                        "default leaks a kernel reference)"]}
    target = host or "HOST"
    w = f" -w {cfg.buffer_bytes}" if cfg.buffer_bytes else ""
    commands = [f"iperf3 -c {target} -P {cfg.streams}{w} -C {name}",
                f"globus-url-copy -p {cfg.streams}" + (f" -tcp-bs {cfg.buffer_bytes}" if cfg.buffer_bytes else "")
                + " SRC_URL DST_URL",
                f"GridFTP (uberftp/gridftp clients): parallelism -p {cfg.streams}"]
    return Settings(sysctls, cc, commands)


def _sysctl_cmd(netns: str | None, *args: str) -> list[str]:
    argv = ["sysctl", *args]
    return in_ns(netns, argv) if netns else argv


def read_sysctl(key: str, *, netns: str | None = None) -> str:
    out = subprocess.run(_sysctl_cmd(netns, "-n", key), capture_output=True, text=True)
    if out.returncode != 0:
        raise TcpProfileError(f"cannot read {key}: {out.stderr.strip()}")
    return " ".join(out.stdout.split())


def apply_settings(settings: Settings, *, netns: str | None = None, host: bool = False) -> dict:
    """Write the sysctls inside namespace `netns` (ip netns exec) or, with host=True, on the host.

    Returns {key: {before, after}} for what was written and {key: reason} for what was skipped:
    net.core.{r,w}mem_max are host-wide (not writable in a namespace); a congestion control that is
    not in tcp_allowed_congestion_control cannot be a namespace default; BPF variants never are.
    """
    if (netns is None) == (not host):
        raise ValidationError("--apply", "give exactly one target: --netns NS or --host-settings")
    if netns is not None and netns not in netns_list():
        raise ValidationError("--netns", f"no network namespace named {netns!r} (see `ip netns list`)")
    changed, skipped = {}, {}
    for key, value in settings.sysctls.items():
        if netns and key in NETNS_GLOBAL:
            skipped[key] = f"host-wide; not writable inside a namespace (now {read_sysctl(key, netns=netns)})"
            continue
        if key == "net.ipv4.tcp_congestion_control" and netns:
            allowed = read_sysctl("net.ipv4.tcp_allowed_congestion_control", netns=netns).split()
            if value not in allowed:
                skipped[key] = (f"{value} is not in tcp_allowed_congestion_control ({' '.join(allowed)}); "
                                f"select it per socket instead")
                continue
        before = read_sysctl(key, netns=netns)
        out = subprocess.run(_sysctl_cmd(netns, "-w", f"{key}={value}"), capture_output=True, text=True)
        if out.returncode != 0:
            raise TcpProfileError(f"setting {key}={value} failed: {out.stderr.strip()}")
        changed[key] = {"before": before, "after": read_sysctl(key, netns=netns)}
    return {"target": f"netns:{netns}" if netns else "host", "sysctls": changed, "skipped": skipped}


def fmt_buffer(b: int | None) -> str:
    """A socket buffer: 'auto' (kernel autotuning) for None, else fmt_bytes."""
    return "auto" if b is None else fmt_bytes(b)


def fmt_bytes(n: float) -> str:
    """268435456 -> '256MiB'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}B"
