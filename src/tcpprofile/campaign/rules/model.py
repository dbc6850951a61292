"""Racing rule 'model' (docs/tune.md, "`model`: the transport model's predictions as priors"): 'confirm'
with the transport model's predictions as priors that can only order and skip runs, never decide.

Each candidate X may carry a prior (campaign/priors.py): the throughput P_X the validated model predicts
from X's configuration alone, and the model's prediction error E_X for X's variant × n (docs/models.md,
the validation tables). A candidate without one (a variant the models do not cover: BBR, a BPF variant;
a remote link) races on measurements alone. With the band k = `band`:

1. *Lead*: the predicted best (highest P) is measured first, `first` runs: a measured leader.
2. *Probe*: every other candidate gets one run (predicted best first). No candidate is dropped, and
   none wins, without runs of its own.
3. *The model's level on the link*: P_X is scaled by s_X, the median over the other candidates of X's
   variant with runs at hand of (their mean run ÷ their P), when there are ≥ `LEVEL_MIN` of them (else
   s_X = 1). What a model gets wrong for a whole variant on one link (a transfer size no validation store
   used, a link that calibrated below its rate) is measured there, by runs other than X's own.
4. X's prior is *credible* while no ok run of X lies above its upper end s_X·P_X·(1 + k·E_X); one run
   above it (the model under-rates X, or under-rates X against its variant's others) and X races on its
   runs alone from then on. A run below the band does not discredit it: a drop uses only the upper end,
   and a model that over-rates X only makes that end safer.
   X is *dropped on its prior* when its prior is credible, the leader L2 (the best mean among the
   candidates with ≥ `first` runs) has ≥ `first` runs, and both the prior's upper end and X's best run
   lie below (1 − margin)·(L2's smallest run): X's own run says it is below L2, and the model (credible
   for X) says its mean cannot reach L2's within the margin.
5. Everything else is 'confirm' (campaign/rules/confirm.py) on the runs at hand: drop X when the upper
   t bound U(X, L) < −m; the decision is the simplest survivor confirmed within the margin of every other
   survivor once it has `settle` runs of its own ('shown'; default `DEFAULT_SETTLE`), or the one left.

Why a wrong model cannot change the decision: a prior only drops X when X's own run agrees with it and
lies below a measured leader by more than the margin; a model that under-rates X puts X's run above the
band, and X loses its prior and must be beaten by measurements (step 5). The decision itself is always
confirm's, on measured runs. What a wrong model can cost is runs, not the decision; the residual risk is a
run of X that is both slow (a loss episode) and below an upper end that a wrong prediction put low.
The rule as it stands (steps 3 and 4, k = 2, settle 5) was frozen at 0d32a8f, chosen on the measured
store adaptive-5g-allstreams and judged on adaptive-5g-allstreams-b, pre-registered before it was measured.
Decisions depend only on the runs at hand, so a killed race resumes to the same decisions.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace

from ..priors import Prior, priors_for_points
from ..race_state import RaceState
from . import confirm

NAME = "model"
DESCRIPTION = "model priors order and skip runs, one-sided t bounds decide"
FIRST = 2                # runs of the predicted best before any drop; rounds before confirm's first test
DEFAULT_BAND = 2.0       # k: a prior's upper end P·(1 + k·E), E the model's mean relative error for the cell
#   (normal errors of mean |e| = E have σ = E·√(π/2); P·(1 + 2E) covers the truth one-sidedly at 1.6σ: ≈ 95 %)
DEFAULT_SETTLE = 5       # runs of its own the decision rests on (its t bounds decide; all 10: 4.96× for 5.44×)
LEVEL_MIN = 3            # other candidates of a variant with runs before the model's level on the link is measured


def race_options(points: dict) -> dict:
    """What the racing policy passes to `replay` besides the runs: the model's priors of its candidates
    {key: RunPoint} (campaign/priors.py)."""
    return {"priors": priors_for_points(points)}


def order_of(candidates, priors: dict) -> list:
    """Candidates by predicted throughput, best first; those without a prior after them (by name)."""
    modelled = sorted((c for c in candidates if priors.get(c)), key=lambda c: (-priors[c].bps, str(c)))
    return modelled + sorted((c for c in candidates if not priors.get(c)), key=str)


def credible(prior: Prior | None, runs: list, band: float) -> bool:
    """Whether a prior still speaks for its candidate: no ok run above its upper end P·(1 + band·E)."""
    if prior is None:
        return False
    return all(x <= prior.bps * (1 + band * prior.error) for x in runs if x is not None)


def level(c, priors: dict, runs: dict) -> float:
    """s_c (step 3): the median over the other candidates of c's variant with a prior and runs of (mean run ÷ P);
    1 with fewer than LEVEL_MIN of them or a prior without a variant."""
    variant = priors[c].variant
    if variant is None:
        return 1.0
    ratios = [sum(xs) / len(xs) / priors[y].bps for y, xs in runs.items()
              if y != c and xs and priors.get(y) and priors[y].variant == variant]
    return statistics.median(ratios) if len(ratios) >= LEVEL_MIN else 1.0


def replay(values: dict, *, first: int, max_rounds: int, margin: float, confidence: float,
           simplicity: Callable = str, affordable: Callable[[int, list], bool] = lambda r, alive: True,
           priors: dict | None = None, band: float = DEFAULT_BAND, clip: float = confirm.DEFAULT_CLIP,
           settle: int | None = None) -> RaceState:
    """The race's state given values[c] = [run 0, run 1, …] (None: failed; shorter: not run yet) and
    priors[c] = Prior or None (no model for c)."""
    priors = priors or {}
    settle = min(DEFAULT_SETTLE if settle is None else settle, max_rounds)
    st = RaceState(alive=sorted(values, key=str))
    st.counts = {c: 0 for c in values}
    w = clip * margin
    order = order_of(values, priors)
    # the lead and the probes: the wanted runs per candidate, in predicted order
    stages = [{order[0]: min(first, max_rounds)}, {c: 1 for c in order[1:]}]

    def undecided(stop):
        confirm._decide_without_showing(st, values, margin, confidence, w, simplicity, stop)

    r = 0
    for want in stages:                              # the lead, then the probes, in predicted order
        missing = {c: n for c, n in want.items() if len(values[c]) < n}
        if missing:
            if r > 0 and not affordable(r, list(missing)):
                undecided("budget")
            else:
                st.need, st.next = r, {c: len(values[c]) for c in missing}   # its next run, one at a time
            return st
        for c, n in want.items():
            st.counts[c] = n
        r += 1
        st.rounds = r
    # the probes are in: the priors' drops and confirm's first test, then confirm's rounds

    def test(measure):
        return _test(st, values, priors, band, margin, confidence, w, simplicity, settle, first)

    measure = test(None)
    if st.stop:
        st.need = None
        return st
    return confirm.run_rounds(st, values, measure, r, max_rounds=max_rounds, affordable=affordable, test=test,
                              undecided=undecided)


def prior_drops(st: RaceState, values: dict, priors: dict, band: float, margin: float, first: int) -> list:
    """The survivors the priors drop now (step 4 of the module's docstring): each with a credible prior (scaled
    by the model's level, step 3), an ok run, both the prior's upper end and its best run below (1 − margin) × the
    smallest run of L2."""
    every = {c: [x for x in values[c][: st.counts[c]] if x is not None] for c in values}   # dropped ones' too
    runs = {c: every[c] for c in st.alive}
    measured = [c for c in st.alive if len(runs[c]) >= first]
    if not measured:
        return []
    l2 = max(measured, key=lambda c: (sum(runs[c]) / len(runs[c]), str(c)))
    floor = (1 - margin) * min(runs[l2])
    out = []
    for c in st.alive:
        if c == l2 or not runs[c] or not priors.get(c):
            continue
        p = replace(priors[c], bps=priors[c].bps * level(c, priors, every))
        if credible(p, runs[c], band) and p.bps * (1 + band * p.error) < floor and max(runs[c]) < floor:
            out.append((c, l2))
    return out


def _test(st, values, priors, band, margin, confidence, w, simplicity, settle, first) -> list:
    for c, leader in prior_drops(st, values, priors, band, margin, first):
        st.dropped[c] = (st.rounds, leader)
        st.prior_dropped.add(c)
    st.alive = [c for c in st.alive if c not in st.dropped]
    return confirm._test(st, values, margin, confidence, w, simplicity, settle)
