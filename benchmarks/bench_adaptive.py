"""Benchmark: adaptive repetitions and racing replayed on stored measurements, against the fixed
10-repetition design.

Needs a store with ≥ 10 repetitions per configuration. `--db STORE` uses a real one; `--csv FILE` the
runs of one as CSV — the benchmark ships one, measured here: benchmarks/data/adaptive-45.6ms-10rep.csv
(the spec beside it: 10 Gbit/s at 45.6 ms, β = BDP, MTU 9000, 4 variants × {1, 4, 8} streams,
autotuned buffers, 10 repetitions of 5 s runs, 0 flagged; `tcpprofile run` under an exclusive CPU
lock, 2026-11-23). Without either the benchmark writes a SYNTHETIC store (no measured store of that size exists on this machine): 4 variants
× {1, 4, 8} streams × {autotuning, 256 MiB} × 4 RTTs × 10 repetitions of 10 s runs, means from a
concave-then-convex profile (HPDC'17's shape), repetition noise modelled on measured runs: a
coefficient of variation from 0.5 % (near the rate) to 4 % (long RTT, one stream), a 5 % chance of a
slow run (× 0.75–0.95, the left tail of loss episodes) and a ±0.3 % shared effect per repetition
(host load: what rounds share). The numbers below are then properties of the rules on modelled data.

Replays (each a fresh random order of the stored repetitions: permutations, so a configuration run to
the maximum sees exactly its stored values):
- adaptive: every configuration repeated by campaign/policies/adaptive.stop_reason; the decision per RTT is
  the simplest configuration within the margin of the best mean (select's rule); "same decision" =
  that configuration is the exhaustive winner or within its tie (all 10 repetitions, same rule).
- racing 'paired' (campaign/rules/paired.replay): every RTT's candidates raced in rounds of every survivor
  (rounds = repetitions); same criterion for the winner.
- racing 'confirm' (campaign/rules/confirm.replay, tune's default before 'model'): only the runs that can change the decision
  (a candidate's k-th run is its k-th stored value of the replay's order); same criterion.
Prints transfer seconds of the fixed design ÷ used, the share of replays with the same decision, for
the races the share whose winner is exactly the exhaustive winner (the simplest of its tie), and on the
synthetic store the share whose winner is within the margin of the *modelled* best (the truth the
exhaustive design itself only estimates: its own verdict per RTT is printed at the end).
Goal: ≥ 3× fewer transfer seconds with the same decision in ≥ 95 % of replays.

`--pool`: the measured multi-RTT pool instead (benchmarks/adaptive_pool.py: the three validation stores'
runs pooled, 15 links × 9 candidates × 6 repetitions of 10 GB transfers), 'confirm' beside the model-guided
rule 'model' (campaign/rules/model.py) with correct priors and with misleading ones. Goal (issue 31): ≥ 5×
fewer transfer seconds than every stored repetition, same decision in ≥ 95 %, misled ones too. Under the model
rule's row: its runs per candidate by how far the candidate lies below the best (adaptive_pool.gap_bands).
`--modelled-pool`: the same rows on a MODELLED pool of the operator's whole candidate set (CUBIC/H-TCP/STCP ×
n = 1–10 at 5 Gbit/s, adaptive_pool.modelled_pool): whether more candidates than a store measures reach 5×.

Run: .venv/bin/python benchmarks/bench_adaptive.py [--db STORE | --csv FILE | --pool | --pool-db RUNS | --modelled-pool]
     [--replays 200] [--precision 0.02]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from tcpprofile.choose import decide
from tcpprofile.campaign.policies.adaptive import stop_reason
from tcpprofile.campaign.race_state import choose
from tcpprofile.campaign.rules import confirm
from tcpprofile.campaign.rules.paired import replay
from tcpprofile.cc.registry import implementation_of
from tcpprofile.choose.select import Config
from tcpprofile.store import Store

G = 1e9
RTTS = (11.8, 45.6, 91.6, 183.0)
VARIANTS = {"cubic": 1.0, "htcp": 1.08, "bbr": 0.92, "scalable": 1.15}   # reach of the concave regime
STREAMS = (1, 4, 8)
BUFFERS = (None, 256 * 2**20)


def modelled_level(variant: str, n: int, b: int | None, rtt: float) -> float:
    """The model's typical share of the rate (every configuration has the same slow-run chance, so
    true means are proportional to it)."""
    reach = 70.0 * VARIANTS[variant] * (1 + 0.35 * (n - 1)) * (1 if b is None else 1.6)
    return 0.94 / (1 + (rtt / reach) ** 2.4)                         # concave, then convex in τ


def within_modelled(c: Config, group: dict, rtt: float, margin: float) -> bool:
    """Is c within the margin of the modelled (true) best of its group?"""
    best = max(modelled_level(x.variant, x.streams, x.buffer_bytes, rtt) for x in group)
    return modelled_level(c.variant, c.streams, c.buffer_bytes, rtt) >= (1 - margin) * best


def synthetic_store(path: Path, seed: int = 0, reps: int = 10, slow_share: float = 0.05) -> Store:
    rng = np.random.default_rng(seed)
    store = Store.open(path)
    store.insert_campaign({"campaign_id": "synthetic", "name": "synthetic", "mode": "emulated"})
    for rtt in RTTS:
        link = f"L{rtt:g}"
        store.insert_link({"link_id": link, "campaign_id": "synthetic", "kind": "emulated", "rate_bps": 10e9,
                           "rtt_ms": rtt, "loss_mode": "none", "loss_rate": 0.0, "calibration_ok": True})
        shared = 1 + 0.003 * rng.standard_normal(reps)                   # what a repetition's runs share
        rows = defaultdict(list)
        for v in VARIANTS:
            for n in STREAMS:
                for b in BUFFERS:
                    level = modelled_level(v, n, b, rtt)
                    cv = 0.005 + 0.035 * (1 - level / 0.94) / n ** 0.5
                    x = 10e9 * level * shared * (1 + cv * rng.standard_normal(reps))
                    slow = rng.random(reps) < slow_share
                    x[slow] *= rng.uniform(0.75, 0.95, slow.sum())
                    for r in range(reps):
                        for k, val in (("run_id", f"{v}-{n}-{b}-{rtt:g}-{r}"), ("variant", v), ("streams", n),
                                       ("socket_buffer_bytes", b), ("repetition", r), ("throughput_bps", float(x[r])),
                                       ("duration_s", 10.0)):
                            rows[k].append(val)
        n_rows = len(rows["run_id"])
        store.insert_columns("runs", {**rows, "campaign_id": ["synthetic"] * n_rows, "link_id": [link] * n_rows,
                                      "cc_impl": [implementation_of(v, None) or "bpf" for v in rows["variant"]],
                                      "duration_target_s": [10.0] * n_rows, "status": ["ok"] * n_rows})
    return store


def _groups(runs, min_reps: int) -> dict:
    """{rtt: {config: (values by repetition, mean duration)}} from (rtt, config, values, duration) of
    configurations with ≥ min_reps ok runs; RTTs with at least 2 such configurations."""
    out = defaultdict(dict)
    for rtt, cfg, x, d in runs:
        if len(x) >= min_reps:
            out[round(rtt, 1)][cfg] = (np.array(x[:min_reps]), d or 10.0)
    return {k: v for k, v in out.items() if len(v) >= 2}


def load(store: Store, min_reps: int) -> dict:
    """The groups of a store's ok runs."""
    rows = store.query(
        "SELECT coalesce(l.rtt_ms, l.rtt_measured_ms) AS rtt, r.variant, coalesce(r.cc_impl, '') AS impl, r.streams, "
        "r.socket_buffer_bytes AS b, list(r.throughput_bps ORDER BY r.repetition) AS x, avg(r.duration_s) AS d "
        "FROM runs r JOIN links l USING (link_id) WHERE r.status = 'ok' GROUP BY ALL")
    return _groups(((r["rtt"], Config(r["variant"], r["impl"], r["streams"], r["b"]), r["x"], r["d"]) for r in rows),
                   min_reps)


def load_csv(path: str, min_reps: int) -> dict:
    """The same groups from a CSV of runs (columns rtt_ms, variant, impl, streams, socket_buffer_bytes,
    repetition, throughput_bps, duration_s), as the shipped measurements are."""
    import csv
    runs = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            b = int(r["socket_buffer_bytes"]) if r["socket_buffer_bytes"] else None
            key = (float(r["rtt_ms"]), Config(r["variant"], r["impl"], int(r["streams"]), b))
            runs[key].append((int(r["repetition"]), float(r["throughput_bps"]), float(r["duration_s"])))
    return _groups(((rtt, cfg, [x for _, x, _ in sorted(xs)], float(np.mean([d for *_, d in xs])))
                    for (rtt, cfg), xs in runs.items()), min_reps)


def exhaustive_tie(group: dict, margin: float) -> tuple[Config, set]:
    means = {c: x.mean() for c, (x, _) in group.items()}
    tie = set(decide.ties(means, margin))
    return min(tie, key=Config.simplicity), tie


def replay_adaptive(group, rng, *, precision, confidence, margin, min_reps, max_reps):
    used, means = 0.0, {}
    perm = rng.permutation(max_reps)                 # one random order of repetitions per RTT
    for c, (x, d) in group.items():
        seq = x[perm]
        k = next(k for k in range(min_reps, max_reps + 1)
                 if stop_reason(list(seq[:k]), k, min_reps=min_reps, max_reps=max_reps, precision=precision,
                                confidence=confidence))
        used += k * d
        means[c] = seq[:k].mean()
    return min(decide.ties(means, margin), key=Config.simplicity), used


def replay_race(group, rng, *, margin, confidence, first, max_reps, max_rounds=None):
    perm = rng.permutation(max_reps)
    values = {c: list(x[perm]) for c, (x, _) in group.items()}
    st = replay(values, first=first, max_rounds=max_rounds or max_reps, margin=margin, confidence=confidence,
                simplicity=Config.simplicity)
    rounds = {c: st.dropped[c][0] if c in st.dropped else st.rounds for c in values}
    used = sum(rounds[c] * group[c][1] for c in values)
    winner = choose(st, {c: values[c][: rounds[c]] for c in values}, margin, Config.simplicity)
    return winner, used


def replay_confirm(group, rng, *, margin, confidence, first, max_reps, clip=confirm.DEFAULT_CLIP):
    perm = rng.permutation(max_reps)
    values = {c: list(x[perm]) for c, (x, _) in group.items()}
    st = confirm.replay(values, first=first, max_rounds=max_reps, margin=margin, confidence=confidence,
                        simplicity=Config.simplicity, clip=clip)
    used = sum(st.counts[c] * group[c][1] for c in values)
    winner = choose(st, {c: values[c][: st.counts[c]] for c in values}, margin, Config.simplicity)
    return winner, used


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--db", help="a store with ≥ 10 repetitions per configuration (default: synthetic)")
    src.add_argument("--csv", help="runs as CSV, e.g. the shipped benchmarks/data/adaptive-45.6ms-10rep.csv")
    src.add_argument("--pool", action="store_true", help="the measured multi-RTT pool with the model-guided rule")
    src.add_argument("--pool-db", help="the model-guided rule on a store's campaign instead (--campaign NAME), or "
                                       "its runs as CSV: benchmarks/data/adaptive-1g-multirtt-runs.csv (measured)")
    src.add_argument("--modelled-pool", action="store_true",
                     help="the model-guided rule on a MODELLED pool of 30 candidates (variant × n = 1–10, 5 Gbit/s): "
                          "does a larger candidate set reach 5×?")
    ap.add_argument("--campaign", default="adaptive-1g-multirtt", help="--pool-db: the campaign's name")
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--precision", type=float, default=0.02)
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow-share", type=float, default=0.05, help="synthetic: share of slow runs (default 0.05)")
    args = ap.parse_args()
    if args.pool or args.pool_db or args.modelled_pool:
        from adaptive_pool import run_pool
        rows = run_pool(args)
        met = [r[0] for r in rows if r[0].startswith("model (") and r[1] >= 5 and r[2] >= 0.95]
        misled = [r for r in rows if "misled" in r[0]]
        print("goal (≥ 5× fewer transfer seconds, same decision in ≥ 95 %): "
              + (f"met by {', '.join(met)}" if met else "NOT met by the model rule here")
              + "; misled, same decision in ≥ 95 %: "
              + ("every misleading replay" if all(r[2] >= 0.95 for r in misled)
                 else "NOT " + ", ".join(r[0] for r in misled if r[2] < 0.95)))
        return
    reps = 10
    with tempfile.TemporaryDirectory() as tmp:
        if args.csv:
            groups, source = load_csv(args.csv, reps), f"runs {args.csv} (measured)"
        else:
            if args.db:
                store, source = Store.open(args.db, read_only=True), f"store {args.db} (measured)"
            else:
                store = synthetic_store(Path(tmp) / "synthetic.duckdb", slow_share=args.slow_share)
                source = f"SYNTHETIC store (modelled, see docstring; slow runs {args.slow_share:.0%})"
            groups = load(store, reps)
            store.close()
    measured = bool(args.db or args.csv)
    n_cfg = sum(len(g) for g in groups.values())
    print(f"{source}: {len(groups)} RTTs, {n_cfg} configurations × {reps} repetitions; {args.replays} replays; "
          f"margin {args.margin:.0%}, confidence {args.confidence:.0%}")
    fixed = sum(d * reps for g in groups.values() for _, d in g.values())
    rng = np.random.default_rng(args.seed)
    results = []
    for name, rule in (
            (f"adaptive (±{args.precision:.0%}, 3–10)", lambda g: replay_adaptive(
                g, rng, precision=args.precision, confidence=args.confidence, margin=args.margin, min_reps=3, max_reps=reps)),
            (f"adaptive (±{2 * args.precision:.0%}, 3–10)", lambda g: replay_adaptive(
                g, rng, precision=2 * args.precision, confidence=args.confidence, margin=args.margin, min_reps=3, max_reps=reps)),
            ("racing (first test after 3 rounds)", lambda g: replay_race(
                g, rng, margin=args.margin, confidence=args.confidence, first=3, max_reps=reps)),
            ("racing (first test after 2 rounds)", lambda g: replay_race(
                g, rng, margin=args.margin, confidence=args.confidence, first=2, max_reps=reps)),
            ("racing, at most 5 rounds", lambda g: replay_race(
                g, rng, margin=args.margin, confidence=args.confidence, first=3, max_reps=reps, max_rounds=5)),
            ("racing, at most 4 rounds", lambda g: replay_race(
                g, rng, margin=args.margin, confidence=args.confidence, first=3, max_reps=reps, max_rounds=4)),
            ("racing, confidence 90 %", lambda g: replay_race(
                g, rng, margin=args.margin, confidence=0.90, first=3, max_reps=reps)),
            ("confirm (first 2)", lambda g: replay_confirm(
                g, rng, margin=args.margin, confidence=args.confidence, first=2, max_reps=reps)),
            ("confirm, first test after 3 rounds", lambda g: replay_confirm(
                g, rng, margin=args.margin, confidence=args.confidence, first=3, max_reps=reps)),
            ("confirm, confidence 99 %", lambda g: replay_confirm(
                g, rng, margin=args.margin, confidence=0.99, first=2, max_reps=reps)),
            ("confirm without censoring", lambda g: replay_confirm(
                g, rng, margin=args.margin, confidence=args.confidence, first=2, max_reps=reps, clip=1e9))):
        t0 = time.perf_counter()
        used = same = exact = true = trials = 0
        for _ in range(args.replays):
            for rtt, g in groups.items():
                best, tie = exhaustive_tie(g, args.margin)
                winner, u = rule(g)
                used += u
                same += winner in tie
                exact += winner == best
                true += not measured and within_modelled(winner, g, rtt, args.margin)
                trials += 1
        used /= args.replays
        extra = "" if name.startswith("adaptive") else f"; exactly its winner {exact / trials:6.1%}"
        extra += "" if measured else f"; within {args.margin:.0%} of the modelled best {true / trials:6.1%}"
        print(f"{name:<36} transfer s: fixed {fixed:8.0f} / used {used:8.0f} = {fixed / used:5.2f}×   "
              f"same decision {same / trials:6.1%} of {trials}{extra}   ({time.perf_counter() - t0:.1f} s)")
        results.append((name, fixed / used, same / trials))
    met = [r for r in results if r[1] >= 3 and r[2] >= 0.95]
    print("goal (≥ 3× fewer transfer seconds, same decision in ≥ 95 %): "
          + (f"met by {', '.join(r[0] for r in met)}" if met else "NOT met by any rule here"))
    for rtt, g in sorted(groups.items()):
        w, tie = exhaustive_tie(g, args.margin)
        truth = "" if measured else \
            f"; {'' if within_modelled(w, g, rtt, args.margin) else 'NOT '}within the margin of the modelled best"
        print(f"  exhaustive at {rtt:g} ms: {w.label()}{truth} (tie of {len(tie)}: "
              f"{', '.join(sorted(c.label() for c in tie))[:120]})")


if __name__ == "__main__":
    main()
