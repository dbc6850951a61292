"""Benchmark: power and false-verdict rate of every verdict rule of `tcpprofile reproduce` (issue 30, item 3).

For each rule: stores generated with a known effect of the size the papers (or our measured standard store)
report, and stores with no effect (the effect at the rule's bound), at the standard mode's level 1 − 0.05/3
and its looks' repetitions. Prints, per rule and repetitions: the share of stores with the right verdict
(power; target ≥ 80 % at the last look) and the share with a false "reproduced" or "not reproduced" under
no effect (target ≤ 5 %). (i), (ii), (iii)'s level claim and (iv) run the findings' own functions on
in-memory stores (findings.Data without DuckDB: the same profiles, masks and statistics as a stored
campaign); (iii)'s variability parts and (v) draw the per-run statistics the findings compute from traces
(ln CoV of a 1 s trace; exponent and θ̄_S of a trace) and pass them through the same stats functions.

Effects and noise (run-to-run, relative, per run):
  (i)   CUBIC 10 GB profile 9.4, 8.0, 7.9, 8.8, 6.0, 3.0, 1.2 Gbit/s over the seven RTTs (our 10 GB store),
        3 % noise; null: flat 5 Gbit/s (slope 0).
  (ii)  τ_T 75 vs 102 ms (the crossings a slow-start model puts at n = 1 and 10, issue 30), Θ = 0.94 C /
        (1 + (τ/reach)^2.2), 3 % noise; null: both reaches equal (Δτ_T = 0).
  (iii) Θ_BBR/Θ_H-TCP = Θ_BBR/Θ_STCP = 0.947 at 11.8 and 183 ms (measured, docs/measured.md), 1.5 % noise;
        CoV(BBR) 2× the others' at 11.8 ms and halving by 183 ms, ln CoV sd 0.3 per trace; null: ratio 1, CoV equal.
  (iv)  BBR 9.3 → 2.0 Gbit/s over 11.8-183 ms (the slides' 1-in-500 values) on a concave parabola, CUBIC/H-TCP
        Mathis-like 1.95e6/τ[s] bit/s, 10 % noise; nulls: BBR linear between the same ends (chord excess 0)
        and BBR exactly 2× the others ("far" = 2).
  (v)   within each of 2 configurations, (exponent, θ̄_S) bivariate normal with Pearson −0.6 (Spearman ≈ −0.58;
        HPDC'17 Fig. 14's falling relation, not given as a number); null: independent.
Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_verdicts.py [--stores N] (about 5 min on 2 cores).
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats as sps

from tcpprofile.analysis.runs import Runs
from tcpprofile.reproduce import findings, stats
from tcpprofile.reproduce.campaigns import DYNAMICS_LOOKS, LOOKS, PAPER_RTTS
from tcpprofile.reproduce.standard import LEVEL

C = 10e9
GRID = np.array(PAPER_RTTS)
LOSS_TAUS = np.array([11.8, 45.6, 91.6, 183.0])


def _data(rows) -> findings.Data:
    """An in-memory store: rows of (variant, streams, buffer, τ [ms], throughput, loss mode, loss rate)."""
    cols = list(zip(*rows))
    n = len(rows)
    dims = {"variant": np.array(cols[0], object), "streams": np.array(cols[1], object),
            "socket_buffer_bytes": np.array(cols[2], object), "duration_target_s": np.array([None] * n, object),
            "transfer_bytes": np.array([10**10] * n, object), "loss_mode": np.array(cols[5], object),
            "loss_rate": np.array(cols[6], float)}
    runs = Runs(np.array([f"r{i}" for i in range(n)], object), np.array(cols[3], float) / 1e3, np.array(cols[4], float),
                np.full(n, C), np.zeros(n, bool), dims)
    return findings.Data(None, runs, np.full(n, math.nan))


def _profile(rng, mean, reps, noise, variant="cubic", streams=1, buf=128 * 2**20, taus=GRID, loss=("none", 0.0)):
    return [(variant, streams, buf, t, float(m * (1 + noise * rng.standard_normal())), *loss)
            for t, m in zip(taus, mean) for _ in range(reps)]


def rule_i(seed, reps, effect):
    rng = np.random.default_rng(seed)
    mean = np.array([9.4, 8.0, 7.9, 8.8, 6.0, 3.0, 1.2]) * 1e9 if effect else np.full(GRID.size, 5e9)
    return findings.decreasing(_data(_profile(rng, mean, reps, 0.03)), level=LEVEL).verdict


def _reach(tau_T):
    """The reach whose profile 0.94 C/(1 + (τ/reach)^2.2) crosses C/2 at tau_T: (τ/reach)^2.2 = 0.88."""
    return tau_T / 0.88 ** (1 / 2.2)


def rule_ii(seed, reps, effect):
    rng = np.random.default_rng(seed)
    rows = []
    for n, tt in ((1, 75.0), (10, 102.0 if effect else 75.0)):
        rows += _profile(rng, C * 0.94 / (1 + (GRID / _reach(tt)) ** 2.2), reps, 0.03, streams=n)
    f = findings.transition_shift(_data(rows), seed=seed, level=LEVEL)
    return f.parts[0].verdict       # the streams comparison (one buffer: the buffer half is not in this store)


def rule_iii_level(seed, reps, effect):
    rng = np.random.default_rng(seed)
    taus = np.array([11.8, 183.0])
    rows = []
    for v, level in (("bbr", 0.947 if effect else 1.0), ("htcp", 1.0), ("scalable", 1.0)):
        rows += _profile(rng, np.full(2, 5e9 * level), reps, 0.015, variant=v, taus=taus)
    d = _data(rows)
    v, _, _ = findings._uniformly_below(d, d.mask(variant="bbr"), d.mask(variant="htcp"), taus / 1e3, [1], LEVEL)
    return v


def rule_iii_variability(seed, reps, effect):
    """ln CoV per trace: BBR vs others at 11.8 ms (> 0), and BBR's slope over ln τ (< 0); both parts."""
    rng = np.random.default_rng(seed)
    base, sd = math.log(0.05), 0.3
    bbr_low, bbr_high = (base + math.log(2), base) if effect else (base, base)
    bbr = [bbr_low + sd * rng.standard_normal(reps), bbr_high + sd * rng.standard_normal(reps)]
    others = base + sd * rng.standard_normal(reps)
    low = stats.verdict(stats.mean_difference([bbr[0]], [others], level=LEVEL), above=0.0)
    slope = stats.verdict(stats.linear_combination(stats.slope_weights(np.log([11.8, 183.0])), bbr, level=LEVEL),
                          below=0.0)
    return stats.combine([low, slope])


def rule_iv(seed, reps, effect, part):
    rng = np.random.default_rng(seed)
    x = (LOSS_TAUS - LOSS_TAUS[0]) / (LOSS_TAUS[-1] - LOSS_TAUS[0])
    others = 1.95e6 / (LOSS_TAUS / 1e3)
    if part == "shape":
        bbr = 9.3e9 - 7.3e9 * (x ** 2 if effect else x)
    else:
        bbr = 9.3e9 - 7.3e9 * x ** 2 if effect else 2.0 * others
    rows = _profile(rng, bbr, reps, 0.10, variant="bbr", taus=LOSS_TAUS, loss=("periodic", 0.002))
    for v in ("cubic", "htcp"):
        rows += _profile(rng, others, reps, 0.10, variant=v, taus=LOSS_TAUS, loss=("periodic", 0.002))
    f = findings.bbr_loss(_data(rows), level=LEVEL)
    by = {p.name: p.verdict for p in f.parts}
    return by["BBR n=1 shape"] if part == "shape" else stats.combine([by["Θ_BBR/Θ_cubic"], by["Θ_BBR/Θ_htcp"]])


def rule_v(seed, reps, effect):
    rng = np.random.default_rng(seed)
    r = -0.6 if effect else 0.0
    rhos = []
    for _ in range(2):
        z = rng.multivariate_normal([0, 0], [[1, r], [r, 1]], size=reps)
        rhos.append(float(sps.spearmanr(z[:, 0], z[:, 1]).statistic))
    return stats.verdict(stats.fisher_combined(rhos, [reps, reps], level=LEVEL), below=0.0)


RIGHT = {True: stats.REPRODUCED}
RULES = [("(i) slope of ln Θ over ln τ < 0", rule_i, LOOKS, {}),
         ("(ii) τ_T(n=10) − τ_T(n=1) > 0", rule_ii, LOOKS, {}),
         ("(iii) Θ_BBR/Θ_H-TCP < 1 at every τ", rule_iii_level, LOOKS, {}),
         ("(iii) CoV: BBR > others at 11.8 ms, falls with τ", rule_iii_variability, LOOKS, {}),
         ("(iv) BBR above the chord (concave)", rule_iv, LOOKS, {"part": "shape"}),
         ("(iv) Θ_BBR/Θ_CUBIC, Θ_BBR/Θ_H-TCP > 2", rule_iv, LOOKS, {"part": "far"}),
         ("(v) ρ(exponent, θ̄_S) < 0", rule_v, DYNAMICS_LOOKS, {})]


def _one(args):
    rule, seed, reps, effect, kw = args
    return rule(seed, reps, effect, **kw)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=200, help="stores per rule, repetitions and effect")
    ap.add_argument("--tau-stores", type=int, default=20, help="stores for (ii) (each refits τ_T 720 times)")
    a = ap.parse_args()
    print(f"level {LEVEL:.4f}; power: share of stores with the right verdict under the papers' effect (≥ 80 %); "
          "false: share with 'reproduced' or 'not reproduced' under no effect (≤ 5 %)")
    print(f"{'rule':<48} {'reps':>5} {'stores':>6} {'power':>6} {'false':>6}  {'s':>5}")
    with ProcessPoolExecutor(2) as pool:
        for name, rule, looks, kw in RULES:
            S = a.tau_stores if rule is rule_ii else a.stores
            for reps in (looks if rule is not rule_ii else looks[-1:]):
                t = time.time()
                yes = list(pool.map(_one, [(rule, s, reps, True, kw) for s in range(S)]))
                no = list(pool.map(_one, [(rule, 10**6 + s, reps, False, kw) for s in range(S)]))
                power = np.mean([v == stats.REPRODUCED for v in yes])
                false = np.mean([v in (stats.REPRODUCED, stats.NOT_REPRODUCED) for v in no])
                print(f"{name:<48} {reps:>5} {S:>6} {power:>6.0%} {false:>6.1%}  {time.time() - t:>5.0f}", flush=True)


if __name__ == "__main__":
    main()
