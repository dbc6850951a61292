"""The papers' findings checked on a store's data, each as a statistic with an interval and a verdict.

(i)   Θ(τ) generally decreases with τ              HPDC'17 §2, Figs. 3-6 (a trend over the whole grid)
(ii)  more streams and larger buffers push τ_T up  HPDC'17 §2.3, Figs. 9-10 (τ_T: the fit's crossing of one
      half, reproduce/transition.py; censored at a grid end)
(iii) BBR varies more at low RTT, less as RTT grows, and Group 1 is above it at every RTT   slides, Group 1
      (100 s traces: BBR's ProbeRTT every 10 s, start-up a small part)
(iv)  at 1-in-500 loss BBR stays concave (above its chord, HPDC'17 §1) and far above CUBIC and H-TCP  slides
(v)   larger Lyapunov exponents go with lower throughput  HPDC'17 §4, Fig. 14: the local exponent
      ln|dM/dX| of the Poincaré map of each 1 s trace against its sustainment-phase mean θ̄_S, over all
      traces of a configuration

Runs are the units: intervals come from the spread of repeated runs (stats.py: Student t, at least
3 repetitions per group). Throughput comparisons are made on log throughput (ratios), cell by cell
(same τ and n), and averaged over cells. Constants below define "low" τ and "far above". τ is in s (the
analysis' Runs.tau_s) throughout; the findings' texts, and (ii)'s interval, print it in ms (units.to_ms).
Verdicts have four outcomes (stats.VERDICTS): reproduced, not reproduced, undetermined (the interval
straddles, or too few runs for one yet: with the runs that would decide) and not testable (the design or
the instrument cannot show it at any number of runs). Fixed-size (`-n`) and
duration (`-t`) runs both make profiles: a profile is one (variant, streams, socket buffer, size or
duration). Each Finding lists its parts (Part: the configurations behind it and their verdict), which
the standard mode's sequential design reads to spend runs only where a part still straddles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from ..analysis.dynamics import ramp_up
from ..analysis.runs import Runs, load_runs, load_traces
from ..analysis.censoring import ABOVE, BELOW, MEASURED
from ..cc.registry import spellings
from ..store import reads
from ..store.reads import flagged_ok_runs
from ..units import to_ms
from . import stats
from .campaigns import PREFIX
from .levels import level_of
from .stats import Interval, combine, mean_difference, verdict
from .transition import Crossing, crossing

LOW_TAU_S = 12e-3      # "low RTT": τ ≤ 12 ms [s] (0.4 and 11.8 ms in the campaigns)
SAME_TAU = {"rtol": 1e-5, "atol": 1e-11}   # np.isclose of one τ [s]: its default tolerance (atol 1e-8 ms) in s
FAR_ABOVE = 2.0        # "far above": a throughput ratio of at least 2
LOSS_500 = 1 / 500
SURROGATES = 19        # the smallest p a surrogate test can give is 1/20 = 0.05
BBR, OTHERS_CLEAN = "bbr", ("cubic", "htcp", *spellings("scalable"))
LONG_TRACE_S = 100.0   # (iii): BBR's ProbeRTT every 10 s, start-up a small part (slides: 100 s traces)
MIN_LOCAL_POINTS = 50  # (v): 1 s points after the ramp-up a trace's mean local exponent needs
MIN_CONFIG_TRACES = 4  # (v): traces per configuration for a rank correlation with an interval (n − 3 > 0)
ONE_S_TOLERANCE = 0.1  # (v): the paper's 1 s traces: median interval within 1 ± 0.1 s


@dataclass(frozen=True)
class Part:
    """One part of a finding: what was compared, its verdict, and the configurations behind it
    ((variant, streams) pairs, or (variant, streams, socket buffer, transfer bytes, duration) for a
    profile; the standard mode adds runs to the cells they match while the part is undetermined)."""
    name: str
    verdict: str
    configs: tuple[tuple, ...] = ()


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    statistic: str        # what `interval` estimates
    interval: Interval
    verdict: str
    measured: str         # what was measured, in words (always filled, whatever the verdict)
    parts: tuple[Part, ...] = ()

    def row(self) -> dict:
        iv = self.interval
        return {"id": self.id, "claim": self.claim, "statistic": self.statistic, "estimate": iv.estimate,
                "low": iv.low, "high": iv.high, "level": iv.level, "n": iv.n, "verdict": self.verdict,
                "measured": self.measured,
                "parts": [{"name": p.name, "verdict": p.verdict} for p in self.parts]}


# -- data ------------------------------------------------------------------------------------------
@dataclass
class Data:
    """The runs of the reproduce campaigns (or of the given campaign ids) and access to their traces."""
    con: object
    runs: Runs
    duration_s: np.ndarray | None = None   # each run's measured transfer time (nan when unknown)

    @classmethod
    def load(cls, con, campaign_ids: Sequence[str] | None = None, *, exclude_flagged: bool = False) -> "Data":
        con = getattr(con, "con", con)
        runs = load_runs(con, exclude_flagged=exclude_flagged)
        ids = reads.run_ids_of_campaigns(con, campaign_ids=campaign_ids, named=PREFIX + "%")
        keep = np.isin(runs.run_id, np.asarray(ids, dtype=object))
        sub = Runs(runs.run_id[keep], runs.tau_s[keep], runs.throughput_bps[keep], runs.capacity_bps[keep],
                   runs.flagged[keep], {k: v[keep] for k, v in runs.dims.items()})
        took = reads.ok_run_durations(con)
        duration = np.array([math.nan if took.get(r) is None else float(took[r]) for r in sub.run_id], float)
        return cls(con, sub, duration)

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

    def values(self, mask, *, tau_s=None, log=True) -> np.ndarray:
        """Throughputs (log by default) of the masked runs, at τ = tau_s [s] when given."""
        if tau_s is not None:
            mask = mask & np.isclose(self.runs.tau_s, tau_s, **SAME_TAU)
        v = self.runs.throughput_bps[mask]
        return np.log(v) if log else v

    def taus(self, mask) -> np.ndarray:
        """The distinct τ [s] of the masked runs, ascending."""
        return np.unique(self.runs.tau_s[mask])

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
    buf = "auto" if buf is None else f"{buf / 2**20:g}MiB" if buf >= 2**20 else f"{buf / 1e3:g}KB"
    return f"{key['variant']} n={key['streams']} w={buf}"


def _few(iv: Interval, unit: str = "group") -> str:
    """Why a point estimate has no interval yet, and how many runs would decide it (stats.runs_to_decide)."""
    more = f"; about {iv.needs} runs per {unit} would decide it" if iv.needs else ""
    return f"no interval: < {stats.MIN_REPS} runs per {unit}, undetermined{more}"


def _ratio(iv: Interval) -> str:
    if not math.isfinite(iv.estimate):
        return "n/a"
    if not iv.known:
        return f"{math.exp(iv.estimate):.3g} ({_few(iv)})"
    return f"{math.exp(iv.estimate):.3g} [{math.exp(iv.low):.3g}, {math.exp(iv.high):.3g}]"


def _config(key: dict) -> tuple:
    """A profile's configuration as Part.configs holds it: (variant, streams, socket buffer request,
    transfer bytes, duration target), None where absent."""
    return (str(key["variant"]), int(key["streams"]), key.get("socket_buffer_bytes"), key.get("transfer_bytes"),
            key.get("duration_target_s"))


def _size(key: dict) -> str:
    if key.get("transfer_bytes") is not None:
        return f" F={key['transfer_bytes'] / 1e9:g}GB"
    return f" t={key['duration_target_s']:g}s" if key.get("duration_target_s") is not None else ""


# -- (i) -------------------------------------------------------------------------------------------
def decreasing(data: Data, *, level: float = stats.LEVEL) -> Finding:
    """HPDC'17 §2: "the mean throughput generally decreases with increasing RTTs" (Figs. 3-6, with local
    rises as in Fig. 8b). Per clean profile (fixed-size or fixed-duration) with ≥ 3 RTTs: the slope of
    ln Θ over ln τ through the per-τ means, Welch interval (stats.loglog_slope); reproduced when < 0.
    Significant rises between neighbouring τ (Bonferroni over all steps) are listed, not judged."""
    claim = "Θ(τ) generally decreases with τ"
    stat = "slope of ln Θ over ln τ per clean profile, whole grid (least negative shown)"
    parts, worst, lines = [], None, []
    profiles = [(k, m) for k, m in data.profiles(data.mask(loss="none")) if data.taus(m).size >= 3]
    steps = sum(data.taus(m).size - 1 for _, m in profiles)
    for key, m in profiles:
        taus = data.taus(m)
        iv = stats.loglog_slope(np.log(taus), [data.values(m, tau_s=t) for t in taus], level=level)
        v = verdict(iv, below=0.0)
        rises = [f"{to_ms(t0):g}→{to_ms(t1):g}" for t0, t1 in zip(taus[:-1], taus[1:])
                 if verdict(mean_difference([data.values(m, tau_s=t1)], [data.values(m, tau_s=t0)],
                                            level=1 - (1 - level) / max(steps, 1)), above=0.0) == stats.REPRODUCED]
        name = _label(key) + _size(key)
        parts.append(Part(name, v, (_config(key),)))
        est = "n/a" if not math.isfinite(iv.estimate) else (
            f"{iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}]" if iv.known else
            f"{iv.estimate:.3g} ({_few(iv, 'τ')})")
        lines.append(f"{name} over {to_ms(taus[0]):g}-{to_ms(taus[-1]):g} ms: slope {est}"
                     + (f"; local rises {', '.join(rises)} ms" if rises else ""))
        if worst is None or iv.estimate > worst.estimate:
            worst = iv
    if not profiles:
        return Finding("i", claim, stat, stats.unknown(), stats.NOT_TESTABLE, "no clean profile with ≥ 3 RTTs")
    n_ok = sum(p.verdict == stats.REPRODUCED for p in parts)
    return Finding("i", claim, stat, worst, stats.combine_testable(p.verdict for p in parts),
                   f"{n_ok}/{len(parts)} profiles decrease significantly; " + "; ".join(lines), tuple(parts))


# -- (ii) ------------------------------------------------------------------------------------------
RIGHT, LEFT, INSIDE = ABOVE, BELOW, MEASURED


def _tau_T(data: Data, m, rng, level: float) -> Crossing | None:
    """τ_T of a profile: the dual-sigmoid fit's crossing with draws_for(level) plausible values
    (reproduce.transition); None with fewer than 3 RTTs or 2 runs at an RTT (nothing to fit or spread)."""
    taus = data.taus(m)
    samples = [data.values(m, tau_s=t, log=False) for t in taus]
    if taus.size < 3 or min(s.size for s in samples) < 2:
        return None
    cap = data.runs.capacity_bps[m]
    cap = float(np.median(cap[np.isfinite(cap)])) if np.isfinite(cap).any() else None
    return crossing(taus, samples, cap, level=level, rng=rng)


def _reps(data: Data, m) -> int:
    return int(min(np.sum(np.isclose(data.runs.tau_s[m], t, **SAME_TAU)) for t in data.taus(m)))


def _tau_text(c: Crossing, level: float, reps: int) -> str:
    """τ_T with its own interval (none from fewer than MIN_REPS runs per τ: those draws are provisional)."""
    if reps < stats.MIN_REPS:
        return c.text()
    iv = c.interval(level)
    return f"{c.text()} [{to_ms(iv.low):.3g}, {to_ms(iv.high):.3g}]"


def _shift(a: Crossing, b: Crossing, level: float, reps: int) -> tuple[str, Interval]:
    """τ_T(more) − τ_T(fewer) with censoring: both beyond the same grid end → not testable (the design
    cannot order them; never a tie against the claim); otherwise the censored interval decides in the
    direction the data allow (stats.censored_difference): a τ_T(more) beyond the grid's end has an
    infinite upper bound, so it is never read as lower. An interval touching 0 is undetermined. Fewer
    than MIN_REPS runs per τ (`reps`): no interval, undetermined, with the runs per τ that would decide.
    The interval in s, as the crossings."""
    if a.side == b.side != INSIDE:
        return stats.NOT_TESTABLE, Interval(math.nan, -math.inf, math.inf, a.lo.size, level)
    est = {(RIGHT, INSIDE): math.inf, (RIGHT, LEFT): math.inf, (INSIDE, RIGHT): -math.inf,
           (LEFT, RIGHT): -math.inf, (LEFT, INSIDE): -math.inf, (INSIDE, LEFT): math.inf}.get(
        (a.side, b.side), a.point - b.point)
    iv = stats.censored_difference(a.lo, a.hi, b.lo, b.hi, est, level=level)
    if reps < stats.MIN_REPS:   # a provisional spread from normal draws: how many runs, never a verdict
        half = iv.high - est if est <= 0 else est - iv.low
        return stats.UNDETERMINED, stats.unknown(est, iv.n, stats.runs_to_decide(reps, est, half, 0.0))
    v = stats.REPRODUCED if iv.low > 0 else stats.NOT_REPRODUCED if iv.high < 0 else stats.UNDETERMINED
    return v, iv


def _in_ms(iv: Interval) -> Interval:
    """A τ interval [s] as printed [ms] (units.to_ms; ±inf and nan stay)."""
    return Interval(to_ms(iv.estimate), to_ms(iv.low), to_ms(iv.high), iv.n, iv.level, iv.needs)


def transition_shift(data: Data, seed: int = 0, *, level: float = stats.LEVEL) -> Finding:
    claim = "more streams and larger buffers push τ_T up"
    stat = "τ_T(more) − τ_T(fewer) in ms (streams and socket buffers; smallest shift shown; ±inf: censored)"
    rng = np.random.default_rng(seed)
    clean = data.profiles(data.mask(loss="none"))
    cache: dict[int, object] = {}

    def tt(i):
        if i not in cache:
            cache[i] = _tau_T(data, clean[i][1], rng, level)
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
        name = f"{_label(clean[hi][0])} vs {_label(clean[lo][0])}{_size(clean[hi][0])}"
        configs = (_config(clean[hi][0]), _config(clean[lo][0]))
        if a is None or b is None:
            parts.append(Part(name, stats.NOT_TESTABLE, configs))
            lines.append(f"{name}: not testable (< 3 RTTs, or an RTT with < 2 runs)")
            continue
        reps = min(_reps(data, clean[hi][1]), _reps(data, clean[lo][1]))
        v, iv = _shift(a, b, level, reps)
        iv = _in_ms(iv)      # the finding's statistic, printed and in its JSON: a shift in ms
        parts.append(Part(name, v, configs))
        why = " (both censored at the same grid end: not testable)" if v == stats.NOT_TESTABLE else ""
        delta = f"Δ [{iv.low:.3g}, {iv.high:.3g}]" if iv.known else f"Δ {iv.estimate:.3g} ({_few(iv, 'τ')})"
        lines.append(f"{name}: τ_T {_tau_text(a, level, reps)} vs {_tau_text(b, level, reps)} ms, {delta}{why}")
        if iv.known and v != stats.NOT_TESTABLE and (worst is None or iv.low < worst.low):
            worst = iv
    if not comparisons:
        return Finding("ii", claim, stat, stats.unknown(), stats.NOT_TESTABLE,
                       "no clean profiles differing only in streams or socket buffer")
    axes = {c[0] for c in comparisons}
    missing = {"streams", "socket_buffer_bytes"} - axes
    # per axis, the comparisons this design can show decide (stats.combine_testable); both axes needed
    v = combine([stats.combine_testable(p.verdict for (ax, _, _), p in zip(comparisons, parts) if ax == axis)
                 for axis in sorted(axes)] + [stats.NOT_TESTABLE] * bool(missing))
    note = f" (no comparison over {', '.join(missing)}: that half is not testable here)" if missing else ""
    return Finding("ii", claim, stat, worst or stats.unknown(), v, "; ".join(lines) + note, tuple(parts))


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
            sel = np.isclose(data.runs.tau_s, t, **SAME_TAU) & (data.runs.dims["streams"] == n)
            a, b = value(mask_a & sel), value(mask_b & sel)
            if a.size and b.size:
                A.append(a)
                B.append(b)
    return A, B


def _long(data: Data) -> np.ndarray:
    """Runs whose transfer lasted at least LONG_TRACE_S (1 s short of it allowed: iperf3's last interval)."""
    d = data.duration_s if data.duration_s is not None else np.full(len(data.runs), math.nan)
    return np.nan_to_num(d, nan=0.0) >= LONG_TRACE_S - 1


def _uniformly_below(data: Data, a, b, taus, streams, level: float) -> tuple[str, Interval | None, list]:
    """The slides' "higher than BBR uniformly for all RTTs": ln(Θ_a/Θ_b) < 0 at EVERY τ of the design.
    Reproduced when every τ's interval (level) lies below 0 (an intersection-union test needs no
    correction); not reproduced when some τ's interval at the Bonferroni level 1 − (1 − level)/T lies at
    or above 0; else undetermined. Returns the verdict, the τ least favourable to the claim and the per-τ text."""
    per = [(t, mean_difference(*_cells(data, a, b, [t], streams, data.values), level=level),
            mean_difference(*_cells(data, a, b, [t], streams, data.values), level=1 - (1 - level) / max(len(taus), 1)))
           for t in taus]
    per = [(t, iv, ivb) for t, iv, ivb in per if math.isfinite(iv.estimate)]
    if not per:
        return stats.NOT_TESTABLE, None, []
    if all(verdict(iv, below=0.0) == stats.REPRODUCED for _, iv, _ in per):
        v = stats.REPRODUCED
    elif any(verdict(ivb, below=0.0) == stats.NOT_REPRODUCED for _, _, ivb in per):
        v = stats.NOT_REPRODUCED
    else:
        v = stats.UNDETERMINED
    worst = max(per, key=lambda p: p[1].estimate)[1]
    return v, worst, [f"{to_ms(t):g} ms {_ratio(iv)}" for t, iv, _ in per]


def bbr_clean(data: Data, *, level: float = stats.LEVEL) -> Finding:
    """The slides (Group 1 vs BBR, clean links, 100 s traces): "their throughput is higher than BBR uniformly
    for all RTTs" (Θ at every τ of the design); "variations for lower RTTs are noticeably higher for BBR
    compared to all others" (CoV at τ ≤ LOW_TAU_S); and for BBR "extent of variations decreases overall with
    increasing RTT" (the least-squares slope of BBR's ln CoV over ln τ through every τ, < 0)."""
    claim = "BBR varies more at low RTT, less as RTT grows, and stays below H-TCP/STCP at every RTT (clean links)"
    stat = (f"CoV(BBR)/CoV(others) at τ ≤ {to_ms(LOW_TAU_S):g} ms (1 s traces of ≥ {LONG_TRACE_S:g} s after ramp-up); "
            "parts: BBR's ln CoV slope over ln τ, Θ_BBR/Θ_H-TCP and Θ_BBR/Θ_STCP at every τ")
    clean = data.mask(loss="none")
    short = int((clean & data.mask(variant=(BBR,) + OTHERS_CLEAN) & ~_long(data)).sum())
    clean &= _long(data)
    bbr, others = clean & data.mask(variant=BBR), clean & data.mask(variant=OTHERS_CLEAN)
    streams = np.unique(data.runs.dims["streams"][clean].astype(int)) if clean.any() else []
    taus = data.taus(bbr)
    low = [t for t in taus if t <= LOW_TAU_S]
    cov = variability(data, data.runs.run_id[bbr | others])
    covs = lambda m: np.array([cov[r] for r in data.runs.run_id[m] if r in cov])  # noqa: E731
    iv_var = mean_difference(*_cells(data, bbr, others, low, streams, covs), level=level)
    bbr_cfg = tuple((BBR, int(n)) for n in streams)
    parts = [Part("variability at low τ", verdict(iv_var, above=0.0),
                  bbr_cfg + tuple((v, int(n)) for v in ("cubic", "htcp", "scalable") for n in streams))]
    lines = [f"variability ratio at τ ≤ {to_ms(LOW_TAU_S):g} ms {_ratio(iv_var)} ({len(cov)} traces)"]
    groups = [covs(bbr & np.isclose(data.runs.tau_s, t, **SAME_TAU)) for t in taus]
    if len(taus) >= 2 and all(g.size for g in groups):
        iv_slope = stats.linear_combination(stats.slope_weights(np.log(taus)), groups, level=level)
        parts.append(Part("BBR's variability falls with τ", verdict(iv_slope, below=0.0), bbr_cfg))
        lines.append(f"slope of BBR's ln CoV over ln τ ({to_ms(taus[0]):g}-{to_ms(taus[-1]):g} ms): "
                     + (f"{iv_slope.estimate:.3g} [{iv_slope.low:.3g}, {iv_slope.high:.3g}]" if iv_slope.known
                        else f"{iv_slope.estimate:.3g} ({_few(iv_slope, 'τ')})"))
    else:
        parts.append(Part("BBR's variability falls with τ", stats.NOT_TESTABLE, bbr_cfg))
        lines.append("BBR's variability over τ: not testable (traces at fewer than 2 RTTs)")
    for name, variants in (("H-TCP", ("htcp",)), ("STCP", spellings("scalable"))):
        v, _, per = _uniformly_below(data, bbr, clean & data.mask(variant=variants), taus, streams, level)
        parts.append(Part(f"Θ_BBR/Θ_{name} at every τ", v, bbr_cfg + tuple((variants[0], int(n)) for n in streams)))
        lines.append(f"Θ_BBR/Θ_{name}: " + ("; ".join(per) if per else "no common cells"))
    if short:
        lines.append(f"{short} clean runs shorter than {LONG_TRACE_S:g} s left out (start-up, no ProbeRTT)")
    if not clean.any():
        lines = [f"no clean BBR/CUBIC/H-TCP/STCP traces of ≥ {LONG_TRACE_S:g} s ({short} runs shorter than "
                 f"{LONG_TRACE_S:g} s: start-up, no ProbeRTT): not testable with this design"]
        parts = [Part(p.name, stats.NOT_TESTABLE, p.configs) for p in parts]
    return Finding("iii", claim, stat, _exp(iv_var), combine(p.verdict for p in parts), "; ".join(lines),
                   tuple(parts))


# -- (iv) ------------------------------------------------------------------------------------------
def bbr_loss(data: Data, *, level: float = stats.LEVEL) -> Finding:
    """The slides, losses: at periodic 1-in-500 loss BBR is far above CUBIC and H-TCP (Θ ratio > FAR_ABOVE,
    cell by cell) and its profile stays concave, by the paper's own criterion (HPDC'17 §1: a concave profile
    "is higher than the linear interpolation of the end points"): the mean excess of Θ over the chord at
    the interior RTTs (stats.chord_weights), > 0."""
    claim = "at 1-in-500 loss BBR stays concave and far above CUBIC and H-TCP"
    stat = f"Θ_BBR/Θ_other at periodic 1/500 loss (smallest shown; 'far' = ≥ {FAR_ABOVE:g}×); BBR's excess over the chord"
    lossy = data.mask(loss=("periodic", LOSS_500))
    bbr = lossy & data.mask(variant=BBR)
    if not bbr.any():
        return Finding("iv", claim, stat, stats.unknown(), stats.NOT_TESTABLE, "no BBR runs at 1-in-500 loss")
    taus = data.taus(bbr)
    streams = np.unique(data.runs.dims["streams"][bbr].astype(int))
    parts, lines, worst = [], [], None
    for name in ("cubic", "htcp"):
        iv = mean_difference(*_cells(data, bbr, lossy & data.mask(variant=name), taus, streams, data.values),
                             level=level, bound=math.log(FAR_ABOVE))
        parts.append(Part(f"Θ_BBR/Θ_{name}", verdict(iv, above=math.log(FAR_ABOVE)),
                          tuple((v, int(n)) for v in (BBR, name) for n in streams)))
        lines.append(f"Θ_BBR/Θ_{name} {_ratio(iv)}")
        if worst is None or iv.estimate < worst.estimate:
            worst = iv
    for n in streams:
        m = bbr & (data.runs.dims["streams"] == n)
        t = data.taus(m)
        name = f"BBR n={n} shape"
        if t.size < 3:
            parts.append(Part(name, stats.NOT_TESTABLE, ((BBR, int(n)),)))
            lines.append(f"{name}: not testable (< 3 RTTs: no interior point above or below a chord)")
            continue
        iv = stats.linear_combination(stats.chord_weights(t), [data.values(m, tau_s=x, log=False) for x in t],
                                      level=level)
        parts.append(Part(name, verdict(iv, above=0.0), ((BBR, int(n)),)))
        g = lambda x: x / 1e9  # noqa: E731  Gbit/s
        lines.append(f"BBR n={n} mean excess over the chord {to_ms(t[0]):g}-{to_ms(t[-1]):g} ms at "
                     f"{[float(x) for x in to_ms(t[1:-1])]} ms: "
                     + (f"{g(iv.estimate):.3g} [{g(iv.low):.3g}, {g(iv.high):.3g}] Gbit/s" if iv.known
                        else f"{g(iv.estimate):.3g} Gbit/s ({_few(iv, 'τ')})"))
    return Finding("iv", claim, stat, _exp(worst), combine(p.verdict for p in parts), "; ".join(lines),
                   tuple(parts))


# -- (v) -------------------------------------------------------------------------------------------
def _rho(pairs: dict[tuple, list[tuple[float, float]]], level: float) -> tuple[Interval, int]:
    """Spearman ρ within each configuration (all its traces), Fisher-combined; strata with fewer than
    MIN_CONFIG_TRACES traces or no spread left out."""
    rhos, sizes = [], []
    for xy in pairs.values():
        lam, thr = np.array(xy).T if xy else (np.empty(0), np.empty(0))
        if len(xy) >= MIN_CONFIG_TRACES and np.ptp(lam) > 0 and np.ptp(thr) > 0:
            rhos.append(float(sps.spearmanr(lam, thr).statistic))
            sizes.append(len(xy))
    return stats.fisher_combined(rhos, sizes, level=level), len(rhos)


def lyapunov_throughput(data: Data, seed: int = 0, *, level: float = stats.LEVEL) -> Finding:
    """HPDC'17 §4, Fig. 14 (10-stream CUBIC at 183 ms): larger exponents, lower average throughput. The
    exponent is the paper's local exponent ln|dM/dX| of the Poincaré map of each 1 s trace, estimated
    by nearest-neighbour secants (poincare.neighbour_exponents, the mean of which estimates E ln|M'|)
    over the sustainment phase; ρ over ALL traces of each configuration (variant, n, buffer, size or
    duration, τ), Fisher-combined. Traces with fewer than MIN_LOCAL_POINTS points after the ramp-up
    are too short (not testable). Rosenstein's exponent with IAAFT surrogates is a sensitivity check
    reported beside it (all traces, and those distinguishable from their surrogates), never a filter.
    Throughput is the sustainment-phase mean θ̄_S of each trace (after its ramp-up: HPDC'17 §3's
    Θ_O = θ̄_S − f_R(θ̄_S − θ̄_R), and §4 relates the dynamics to the sustainment phase), not the whole run's
    mean, which mixes in the ramp-up. No spread rule: a configuration whose θ̄_S do not differ gives ρ no
    ranks (left out); one with small differences gives a wide interval, undetermined."""
    from ..analysis.fromstore import dynamics_from_store

    claim = "larger Lyapunov exponents go with lower throughput"
    stat = ("Spearman ρ(local exponent ln|dM/dX|, θ̄_S) over all traces of each configuration, Fisher-combined "
            "(θ̄_S: the trace's sustainment-phase mean, HPDC'17 §3-4)")
    clean = data.mask(loss="none")
    dyn = dynamics_from_store(data.con, run_ids=list(data.runs.run_id[clean]), n_surrogates=SURROGATES, seed=seed)
    pos = {r: i for i, r in enumerate(data.runs.run_id)}
    step = {rid: float(np.median(t.end_s - t.start_s))
            for (rid, _), t in load_traces(data.con, [d.run_id for d in dyn]).items() if t.bps.size}
    one_s = [d for d in dyn if abs(step.get(d.run_id, math.nan) - 1.0) <= ONE_S_TOLERANCE]
    sus = [d for d in one_s if d.dynamics.n_points - d.dynamics.ramp.index >= MIN_LOCAL_POINTS
           and math.isfinite(d.dynamics.neighbour_mean)]
    points = [d.dynamics.n_points for d in one_s]
    other = f" ({len(dyn) - len(one_s)} with other than 1 s intervals left out)" if len(one_s) < len(dyn) else ""
    head = (f"{len(one_s)} traces of 1 s intervals ({min(points) if points else 0}-{max(points) if points else 0} s)"
            f"{other}, {len(sus)} with ≥ {MIN_LOCAL_POINTS} s after the ramp-up")
    ramp = {d.run_id: d.dynamics.ramp.index for d in sus}
    bar = {rid: t.bps[ramp[rid]:] for (rid, s), t in load_traces(data.con, list(ramp)).items() if s is None}
    by_cfg: dict[tuple, list] = {}
    for d in sus:
        i = pos[d.run_id]
        k = tuple(data.runs.dims[b][i] for b in ("variant", "streams", "socket_buffer_bytes", "transfer_bytes",
                                                  "duration_target_s")) + (float(data.runs.tau_s[i]),)
        theta_s = bar.get(d.run_id, np.empty(0))
        if theta_s.size and np.all(np.isfinite(theta_s)):     # θ̄_S: the trace's mean after its ramp-up
            by_cfg.setdefault(k, []).append((d, float(theta_s.mean())))
    enough = {k: v for k, v in by_cfg.items() if len(v) >= MIN_CONFIG_TRACES}
    pick = lambda f: {k: [(f(d.dynamics), t) for d, t in v if f(d.dynamics) is not None]  # noqa: E731
                      for k, v in enough.items()}
    iv, strata = _rho(pick(lambda x: x.neighbour_mean), level)
    configs = tuple({(str(k[0]), int(k[1])) for k in by_cfg})
    if strata == 0:
        if by_cfg and not enough:      # traces long enough, too few of them: more runs decide
            most = max(len(v) for v in by_cfg.values())
            return Finding("v", claim, stat, stats.unknown(n=len(sus), needs=MIN_CONFIG_TRACES), stats.UNDETERMINED,
                           head + f": at most {most} such traces per configuration; {MIN_CONFIG_TRACES} per "
                           "configuration give ρ an interval (undetermined until then)",
                           (Part("ρ(local exponent, θ̄_S)", stats.UNDETERMINED, configs),))
        why = (f"no configuration with such traces (traces too short for the local exponent)" if not enough else
               "θ̄_S identical within every configuration: no throughput differences for the exponents to go with")
        return Finding("v", claim, stat, stats.unknown(n=len(sus)), stats.NOT_TESTABLE, head + ": " + why,
                       (Part("ρ(local exponent, θ̄_S)", stats.NOT_TESTABLE, configs),))
    v = verdict(iv, below=0.0)
    ros, _ = _rho(pick(lambda x: x.lyapunov), level)
    dis, n_dis = _rho(pick(lambda x: x.lyapunov if x.distinguishable else None), level)
    per_tau = {}
    for k, xs in enough.items():
        per_tau.setdefault((k[0], k[1], k[-1]), []).extend(d.dynamics.neighbour_mean for d, _ in xs)
    means = "; ".join(f"{c} n={n} τ={to_ms(t):g} ms: mean local exponent {np.mean(x):.3g}"
                      for (c, n, t), x in sorted(per_tau.items(), key=lambda kv: (str(kv[0][0]), kv[0][1], kv[0][2])))
    return Finding("v", claim, stat, iv, v,
                   head + f"; ρ {iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}] over {strata} configurations; "
                   f"sensitivity (Rosenstein): ρ {ros.estimate:.2f} [{ros.low:.2f}, {ros.high:.2f}] all traces, "
                   f"{dis.estimate:.2f} over the traces distinguishable from {SURROGATES} IAAFT surrogates "
                   f"({n_dis} configurations); {means}",
                   (Part("ρ(local exponent, θ̄_S)", v, configs),))


FINDINGS = (decreasing, transition_shift, bbr_clean, bbr_loss, lyapunov_throughput)


def check_findings(con, campaign_ids: Sequence[str] | None = None, *, exclude_flagged: bool = False,
                   level: float | None = None) -> list[Finding]:
    """All five findings on the runs of the reproduce campaigns (or of `campaign_ids`); exclude_flagged:
    without flagged runs (analysis.load_runs); level: of every interval, by default the one the stored
    campaigns' looks give (levels.level_of: a Bonferroni share of 0.05 over the standard mode's looks);
    the CLI, --check-only and the report all call this, so one store gives one table."""
    level = level_of(con, campaign_ids) if level is None else level
    data = Data.load(con, campaign_ids, exclude_flagged=exclude_flagged)
    return [f(data, level=level) for f in FINDINGS]


def flagged_runs(con, campaign_ids: Sequence[str]) -> int:
    """How many ok runs of these campaigns carry a fidelity flag (store.reads.flagged_ok_runs)."""
    return len(flagged_ok_runs(con, campaign_ids))


def format_table(findings: Sequence[Finding]) -> str:
    lines = [f"{'':4} {'verdict':<15} {'estimate [interval]':<28} claim"]
    for f in findings:
        iv = f.interval
        est = "n/a" if math.isnan(iv.estimate) else (
            f"{iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}]" if iv.known else f"{iv.estimate:.3g} [none]")
        lines.append(f"({f.id}){'':{3 - len(f.id)}} {f.verdict:<15} {est:<28} {f.claim}")
        lines.append(f"{'':21}statistic: {f.statistic}")
        lines.append(f"{'':21}measured: {f.measured}")
    return "\n".join(lines)
