"""bench_adaptive's measured multi-RTT pool (`--pool`) and its model-guided replays (campaign/rules/model.py).

The pool: benchmarks/data/models-validation-runs.csv, -2-runs.csv, -3-runs.csv, three stores of the same
design (models-validation*.toml: 10 Gbit/s, MTU 9000, 10 GB transfers, τ ∈ {11.8, 45.6, 91.6, 183, 366} ms,
β ∈ {0.1, 0.3, 1} × BDP, CUBIC/H-TCP/STCP × n ∈ {1, 4, 10}, autotuned buffers, 2 repetitions each; seeds
2020, 2021, 2024). A race is one link (τ, β): its 9 candidates. Their runs pooled per cell (checked: the
same configuration in each store) give 6 repetitions per cell. physics-dev*-runs.csv add a 7th to some
CUBIC/H-TCP cells only (none to STCP): a race's candidates would not have equal repetitions, so they are
counted in the printout and left out of the races.

Fixed-size runs: a run's transfer seconds are its duration. The model's prior for a candidate is
campaign/priors.prior_for at the cell's configuration (the default model configuration, E per variant × n).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tcpprofile.choose import decide
from tcpprofile.campaign.priors import prior_for
from tcpprofile.campaign.race_state import choose
from tcpprofile.campaign.rules import confirm, model
from tcpprofile.choose.select import Config
from tcpprofile.packet_overhead import goodput_ceiling_bps

DATA = Path(__file__).parent / "data"
POOL = ("models-validation-runs.csv", "models-validation-2-runs.csv", "models-validation-3-runs.csv")
EXTRA = ("physics-dev-0.2bdp-runs.csv", "physics-dev2-buffers-runs.csv", "physics-dev3-shallow-runs.csv",
         "physics-dev4-shallow-runs.csv")
CELL = ("rtt_ms", "buffer_bytes", "variant", "streams", "transfer_bytes", "capacity_bps")


def _read(name: str) -> dict:
    out = defaultdict(list)
    with open(DATA / name, newline="") as f:
        for r in csv.DictReader(f):
            key = (float(r["rtt_ms"]), int(r["buffer_bytes"]), r["variant"], int(r["streams"]),
                   int(r["transfer_bytes"]), round(float(r["capacity_bps"])))
            out[key].append((float(r["throughput_bps"]), float(r["duration_s"])))
    return out


def load_pool() -> tuple[dict, list[str]]:
    """({(τ ms, β bytes): {Config: (throughput [bit/s], duration [s]) arrays}}, notes on the pooling)."""
    stores = [_read(n) for n in POOL]
    cells = set(stores[0])
    notes = []
    for name, s in zip(POOL[1:], stores[1:]):
        if set(s) != cells:
            raise SystemExit(f"{name}: not the same cells as {POOL[0]} ({len(set(s) ^ cells)} differ)")
    reps = defaultdict(int)
    runs = {c: sum((s[c] for s in stores), []) for c in cells}
    for c, xs in runs.items():
        reps[len(xs)] += 1
    per_store = sorted({len(s[c]) for s in stores for c in cells})
    notes.append(f"pool: {', '.join(POOL)}: the same {len(cells)} cells in each (τ, β, variant, n, 10 GB), "
                 f"{'/'.join(map(str, per_store))} repetitions per store; pooled: "
                 + ", ".join(f"{n} repetitions in {k} cells" for n, k in sorted(reps.items())))
    extra = defaultdict(int)
    for name in EXTRA:
        for c, xs in _read(name).items():
            if c in cells:
                extra[name] += len(xs)
    notes.append("physics-dev cells that coincide: " + (", ".join(f"{n} {k} runs" for n, k in extra.items())
                                                        or "none")
                 + " (CUBIC/H-TCP only: left out, a race's candidates keep equal repetitions)")
    groups = defaultdict(dict)
    for (rtt, beta, v, n, size, _), xs in runs.items():
        x, d = np.array(xs).T
        groups[Race(rtt, beta, 10e9, size, 9000)][Config(v, "", n, None)] = (x, d)   # the specs' rate and MTU
    return dict(groups), notes


def load_store_pool(path: str, campaign: str) -> tuple[dict, list[str]]:
    """The pool from a store's campaign (e.g. benchmarks/data/adaptive-1g-multirtt.toml measured): its ok
    runs, one race per link. A candidate short of the campaign's repetitions (a failed run) is said and
    left with fewer: the replays draw orders of the smallest count (run_pool)."""
    if path.endswith(".csv"):      # the store's runs as STORE_CSV_COLUMNS (benchmarks/data/adaptive-1g-multirtt-runs.csv)
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["campaign"] == campaign]
    else:
        rows = store_rows(path, campaign)
    if not rows:
        raise SystemExit(f"{path}: no ok fixed-size runs of a campaign named {campaign!r}")
    runs = defaultdict(list)
    def link(r):
        return (float(r["rtt_ms"]), int(r["buffer_bytes"]), float(r["rate_bps"]), int(r["transfer_bytes"]),
                int(r["mtu"] or 1500))

    links = [link(r) for r in rows]
    undelivered = defaultdict(int)      # runs rated by iperf3's end, not by their delivery: the priors' backlog
    for r, key in zip(rows, links):
        undelivered[key] += "size_undelivered" in (r["flags"] or "")
    for r, key in zip(rows, links):
        r["throughput_bps"], r["duration_s"] = float(r["throughput_bps"]), float(r["duration_s"])
        race = Race(*key, delivered=undelivered[key] == 0)
        runs[race, Config(r["variant"], "", int(r["streams"]), None)].append((r["throughput_bps"], r["duration_s"]))
    groups = defaultdict(dict)
    for (race, c), xs in runs.items():
        x, d = np.array(xs, dtype=float).T
        groups[race][c] = (x, d)
    counts = sorted({len(xs) for xs in runs.values()})
    note = (f"pool: {path}, campaign {campaign!r}: {len(groups)} links, {len(runs)} candidates, "
            f"{'/'.join(map(str, counts))} ok repetitions per candidate")
    return dict(groups), [note]


STORE_CSV_COLUMNS = ("campaign", "rtt_ms", "buffer_bytes", "rate_bps", "mtu", "transfer_bytes", "variant", "streams",
                     "throughput_bps", "duration_s", "flags")


def store_rows(path: str, campaign: str) -> list[dict]:
    """A store's ok fixed-size runs of the campaign named `campaign`, as STORE_CSV_COLUMNS."""
    from tcpprofile.store import Store
    with Store.open(path, read_only=True) as store:
        return store.query(
            "SELECT c.name AS campaign, l.rtt_ms, l.buffer_bytes, l.rate_bps, l.mtu, r.transfer_bytes, r.variant, "
            "r.streams, r.throughput_bps, r.duration_s, r.flags FROM runs r JOIN links l ON l.link_id = r.link_id "
            "JOIN campaigns c ON c.campaign_id = r.campaign_id "
            "WHERE c.name = ? AND r.status = 'ok' AND r.transfer_bytes IS NOT NULL ORDER BY r.seq", [campaign])


def write_csv(rows: list[dict], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, STORE_CSV_COLUMNS)
        w.writeheader()
        w.writerows(rows)


@dataclass(frozen=True, order=True)
class Race:
    """One race's link and transfer: τ [ms], bottleneck buffer β [bytes], rate [bit/s], size [bytes], MTU."""
    rtt_ms: float
    buffer_bytes: int
    rate_bps: float
    size_bytes: int
    mtu: int
    delivered: bool = False   # its runs timed by their delivery of F (else iperf3's rate: the validation stores')


GAP_BANDS = ("≤ 1 %", "1–3 %", "3–6 %", "6–12 %", "> 12 %")


def gap_bands(group: dict) -> dict:
    """{candidate: its GAP_BANDS band}: how far its mean of every repetition lies below the best one's."""
    means = {c: float(x.mean()) for c, (x, _) in group.items()}
    top = max(means.values())
    edges = (0.01, 0.03, 0.06, 0.12)
    return {c: GAP_BANDS[sum(m < top - e * abs(top) for e in edges)] for c, m in means.items()}   # as decide.ties


def priors_of(race: Race, group: dict) -> dict:
    return {c: prior_for(c.variant, c.streams, rtt_s=race.rtt_ms / 1e3, rate_bps=race.rate_bps,
                         buffer_bytes=race.buffer_bytes, mtu=race.mtu, size_bytes=race.size_bytes,
                         delivered=race.delivered) for c in group}


def exhaustive(group: dict, margin: float) -> tuple[Config, set]:
    means = {c: x.mean() for c, (x, _) in group.items()}
    tie = set(decide.ties(means, margin))
    return min(tie, key=Config.simplicity), tie


# misleading models: what the replay's priors are made of, given the true priors and the exhaustive tie
def winner_low(priors: dict, tie: set, factor: float = 0.7) -> dict:
    """Every candidate of the exhaustive tie predicted `factor` × its prediction (30 % low by default)."""
    return {c: replace(p, bps=p.bps * factor) if c in tie and p else p for c, p in priors.items()}


def reversed_ranking(priors: dict, tie: set) -> dict:
    """The predictions' ranking reversed: the best predicted gets the worst prediction, and so on."""
    ranked = sorted((c for c in priors if priors[c]), key=lambda c: -priors[c].bps)
    values = [priors[c].bps for c in ranked][::-1]
    return {**priors, **{c: replace(priors[c], bps=v) for c, v in zip(ranked, values)}}


def winner_unmodelled(priors: dict, tie: set) -> dict:
    """No model for the variants of the exhaustive tie (as BBR or a BPF variant would have none)."""
    variants = {c.variant for c in tie}
    return {c: None if c.variant in variants else p for c, p in priors.items()}


def ungrouped(priors: dict) -> dict:
    """The same predictions without their variants: the rule 'model' cannot measure the model's level on the link."""
    return {c: replace(p, variant=None) if p else p for c, p in priors.items()}


def replay_pool(group: dict, priors: dict | None, rng, *, margin, confidence, first, max_reps, settle=None,
                band=model.DEFAULT_BAND) -> tuple[Config, float]:
    """One replay (a random order of the stored repetitions): 'model' with priors, 'confirm' with None.
    Returns (decision, {candidate: transfer seconds of its runs the race used})."""
    perm = rng.permutation(max_reps)
    values = {c: list(x[perm]) for c, (x, _) in group.items()}
    if priors is None:
        st = confirm.replay(values, first=first, max_rounds=max_reps, margin=margin, confidence=confidence,
                            simplicity=Config.simplicity)
    else:
        st = model.replay(values, first=first, max_rounds=max_reps, margin=margin, confidence=confidence,
                          simplicity=Config.simplicity, priors=priors, settle=settle, band=band)
    used = {c: float(d[perm][: st.counts[c]].sum()) for c, (_, d) in group.items()}
    winner = choose(st, {c: values[c][: st.counts[c]] for c in values}, margin, Config.simplicity)
    return winner, used


def modelled_pool(rng, *, rate_bps: float = 5e9, size_bytes: int = 500_000_000, rtts_ms=(15.0, 40.0, 90.0),
                  buffer_bdp: float = 0.2, streams=tuple(range(1, 11)), variants=("cubic", "htcp", "scalable"),
                  reps: int = 10, slow_share: float = 0.05) -> tuple[dict, list[str]]:
    """A MODELLED pool (no store measured it): the operator's whole candidate set, variant × n = 1–10, where a
    race that runs every candidate once costs 1/reps of the exhaustive seconds whatever the number of candidates.
    A candidate's true mean is its prior's prediction × (1 + N(0, E)) (the model as wrong as validated), at most the
    goodput ceiling; its runs scatter around it by 3.5 % for one flow and 2 % for several (about H-TCP's run-to-run
    variation on the measured 5 Gbit/s stores, wider than CUBIC's and STCP's: the measured twin,
    adaptive-5g-allstreams, saves more than this pool) and a `slow_share` chance of a slow run (× 0.75–0.95, as the
    synthetic store's); a run's transfer seconds are 8F/x (timed by its delivery)."""
    groups = {}
    for rtt in rtts_ms:
        race = Race(rtt, int(buffer_bdp * rate_bps * rtt / 8e3), rate_bps, size_bytes, 9000, True)
        cands = [Config(v, "", n, None) for v in variants for n in streams]
        truth = priors_of(race, {c: None for c in cands})
        group = {}
        for c in cands:
            mean = min(truth[c].bps * (1 + rng.normal(0, truth[c].error)), goodput_ceiling_bps(rate_bps, 9000))
            x = mean * (1 + rng.normal(0, 0.035 if c.streams == 1 else 0.02, reps))
            slow = rng.random(reps) < slow_share
            x[slow] *= rng.uniform(0.75, 0.95, int(slow.sum()))
            group[c] = (x, 8 * size_bytes / x)
        groups[race] = group
    note = (f"MODELLED pool (no store: the model's predictions as wrong as validated, measured run-to-run variation): "
            f"{rate_bps / 1e9:g} Gbit/s, β {buffer_bdp:g} × BDP, {size_bytes / 1e6:g} MB, τ {'/'.join(f'{t:g}' for t in rtts_ms)} ms, "
            f"{len(variants)} variants × n = {min(streams)}–{max(streams)}, {reps} repetitions")
    return groups, [note]


def run_pool(args) -> list[tuple[str, float, float]]:
    """The pool's rows: exhaustive ÷ used transfer seconds and the share of replays with the same decision."""
    if args.modelled_pool:
        groups, notes = modelled_pool(np.random.default_rng(args.seed))
    else:
        groups, notes = load_store_pool(args.pool_db, args.campaign) if args.pool_db else load_pool()
    for line in notes:
        print(line)
    reps = min(x.size for g in groups.values() for x, _ in g.values())
    groups = {k: {c: (x[:reps], d[:reps]) for c, (x, d) in g.items()} for k, g in groups.items()}
    fixed = sum(float(d.sum()) for g in groups.values() for _, d in g.values())
    rtts = {k.rtt_ms for k in groups}
    print(f"{'modelled' if args.modelled_pool else 'measured'} pool: {len(groups)} links over {len(rtts)} RTTs, "
          f"{sum(len(g) for g in groups.values())} "
          f"candidates × {reps} repetitions; exhaustive = every stored repetition ({fixed:.0f} transfer s); "
          f"{args.replays} replays; margin {args.margin:.0%}, confidence {args.confidence:.0%}")
    print(f"ceiling: a race that runs every candidate once (none dropped without a run of its own) uses "
          f"1/{reps} of the exhaustive seconds ({reps}×); the tie: the candidates within the margin of the "
          f"best of all {reps} repetitions (what a prior of E ≥ the margin cannot settle)")
    truth = {k: priors_of(k, g) for k, g in groups.items()}
    ties = {k: exhaustive(g, args.margin) for k, g in groups.items()}
    # the floor of any rule that runs every candidate once and rests its decision on `on` runs of its own: the
    # decision's runs, one of every other candidate, nothing more for its tie (confirm: all reps; model: its settle)
    def floor(on):
        return sum(on * float(g[ties[k][0]][1].mean()) + sum(float(d.mean()) for c, (_, d) in g.items()
                                                             if c != ties[k][0]) for k, g in groups.items())
    settle = min(model.DEFAULT_SETTLE, reps)
    print(f"floor: the exhaustive decision's runs and one run of every other candidate, none more for its tie: "
          f"{fixed / floor(reps):.2f}× with the decision on all {reps} (confirm), {fixed / floor(settle):.2f}× on "
          f"{settle} (model)")
    kw = dict(margin=args.margin, confidence=args.confidence, max_reps=reps)
    rows = [("confirm (--rule confirm)", lambda k: None, {"first": 2}),
            ("model (correct priors)", lambda k: truth[k], {"first": 2}),
            (f"model, the decision on all {reps} runs", lambda k: truth[k], {"first": 2, "settle": reps}),
            ("model, no level on the link", lambda k: ungrouped(truth[k]), {"first": 2}),
            ("model misled: tie predicted 30% low", lambda k: winner_low(truth[k], ties[k][1]), {"first": 2}),
            ("model misled: ranking reversed", lambda k: reversed_ranking(truth[k], ties[k][1]), {"first": 2}),
            ("model misled: winner's variant unmodelled", lambda k: winner_unmodelled(truth[k], ties[k][1]),
             {"first": 2})]
    rng = np.random.default_rng(args.seed)
    gaps = {k: gap_bands(g) for k, g in groups.items()}
    sizes = {b: sum(1 for k in gaps for c in gaps[k] if gaps[k][c] == b) for b in GAP_BANDS}
    out = []
    for name, priors, extra in rows:
        used = in_tie = same = exact = trials = 0
        by_band = name.startswith("model (")     # the row whose runs are printed by distance from the best
        band_runs = defaultdict(float)      # runs the rule spent per band of distance from the exhaustive best
        for _ in range(args.replays):
            for k, g in groups.items():
                best, tie = ties[k]
                winner, u = replay_pool(g, priors(k), rng, **kw, **extra)
                for c, secs in u.items() if by_band else ():
                    band_runs[gaps[k][c]] += secs / float(g[c][1].mean())
                used += sum(u.values())
                in_tie += sum(u[c] for c in tie)
                same += winner in tie
                exact += winner == best
                trials += 1
        used /= args.replays
        print(f"{name:<44} transfer s: exhaustive {fixed:7.0f} / used {used:7.0f} = {fixed / used:5.2f}×   "
              f"same decision {same / trials:6.1%} of {trials}; exactly its winner {exact / trials:6.1%}; "
              f"{in_tie / (used * args.replays):4.0%} of the seconds in the tie")
        out.append((name, fixed / used, same / trials))
        if by_band:
            print("  runs per candidate by its distance below the exhaustive best: " + ", ".join(
                f"{b} ({sizes[b]}) {band_runs[b] / args.replays / sizes[b]:.2f}" for b in GAP_BANDS if sizes[b]))
    for k in sorted(groups):
        best, tie = ties[k]
        print(f"  exhaustive at {k.rtt_ms:g} ms, β {k.buffer_bytes / 1e6:g} MB: {best.label()} (tie of {len(tie)})")
    return out
