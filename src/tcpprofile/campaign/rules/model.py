"""Racing rule 'model' (docs/tune.md, "`model`: the transport model's predictions as priors"): 'confirm'
with the transport model's predictions as priors that can only order and skip runs, never decide.

Each candidate X may carry a prior (campaign/priors.py): the throughput P_X the validated model predicts
from X's configuration alone, and the model's prediction error E_X for X's variant × n (docs/models.md,
the validation tables). A candidate without one (a variant the models do not cover: BBR, a BPF variant;
a remote link) races on measurements alone. With the band k = `band`:

1. *Lead*: the predicted best (highest P) is measured first, `first` runs: a measured leader.
2. *Probe*: every other candidate gets one run (predicted best first). No candidate is dropped, and
   none wins, without runs of its own.
3. X's prior is *credible* while every ok run of X lies in the band P_X·(1 ± k·E_X); one run outside it
   (the model is wrong for X, or the run is a slow one) and X races on its runs alone from then on.
   X is *dropped on its prior* when its prior is credible, the leader L2 (the best mean among the
   candidates with ≥ `first` runs) has ≥ `first` runs, and both the prior's upper end P_X·(1 + k·E_X)
   and X's best run lie below (1 − margin)·(L2's smallest run): X's own run says it is below L2, and
   the model (credible for X) says its mean cannot reach L2's within the margin.
4. Everything else is 'confirm' (campaign/rules/confirm.py) on the runs at hand: drop X when the upper
   t bound U(X, L) < −m; the decision is the simplest survivor confirmed within the margin of every other
   survivor once it has `settle` runs ('shown'; default `max_rounds`, as confirm), or the one left.

Why a wrong model cannot change the decision: a prior only drops X when X's own run agrees with it and
lies below a measured leader by more than the margin; a mispredicted X (its run outside the band) loses
its prior and must be beaten by measurements (step 4). The decision itself is always confirm's, on
measured runs. What a wrong model can cost is runs, not the decision; the residual risk is a run of X
that is both slow (a loss episode) and inside a band that a wrong prediction put low.
Decisions depend only on the runs at hand, so a killed race resumes to the same decisions.
"""

from __future__ import annotations

from collections.abc import Callable

from ..priors import Prior, priors_for_points
from ..race_state import RaceState
from . import confirm

NAME = "model"
DESCRIPTION = "model priors order and skip runs, one-sided t bounds decide"
FIRST = 2                # runs of the predicted best before any drop; rounds before confirm's first test
DEFAULT_BAND = 3.0       # k: a prior spans P·(1 ± k·E), E the model's mean relative error for the cell


def race_options(points: dict) -> dict:
    """What the racing policy passes to `replay` besides the runs: the model's priors of its candidates
    {key: RunPoint} (campaign/priors.py)."""
    return {"priors": priors_for_points(points)}


def order_of(candidates, priors: dict) -> list:
    """Candidates by predicted throughput, best first; those without a prior after them (by name)."""
    modelled = sorted((c for c in candidates if priors.get(c)), key=lambda c: (-priors[c].bps, str(c)))
    return modelled + sorted((c for c in candidates if not priors.get(c)), key=str)


def credible(prior: Prior | None, runs: list, band: float) -> bool:
    """Whether a prior still speaks for its candidate: every ok run within P·(1 ± band·E)."""
    if prior is None:
        return False
    lo, hi = prior.bps * (1 - band * prior.error), prior.bps * (1 + band * prior.error)
    return all(lo <= x <= hi for x in runs if x is not None)


def replay(values: dict, *, first: int, max_rounds: int, margin: float, confidence: float,
           simplicity: Callable = str, affordable: Callable[[int, list], bool] = lambda r, alive: True,
           priors: dict | None = None, band: float = DEFAULT_BAND, clip: float = confirm.DEFAULT_CLIP,
           settle: int | None = None) -> RaceState:
    """The race's state given values[c] = [run 0, run 1, …] (None: failed; shorter: not run yet) and
    priors[c] = Prior or None (no model for c)."""
    priors = priors or {}
    settle = max_rounds if settle is None else min(settle, max_rounds)
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
    """The survivors the priors drop now (step 3 of the module's docstring): each with a credible prior,
    an ok run, both the prior's upper end and its best run below (1 − margin) × the smallest run of L2."""
    runs = {c: [x for x in values[c][: st.counts[c]] if x is not None] for c in st.alive}
    measured = [c for c in st.alive if len(runs[c]) >= first]
    if not measured:
        return []
    l2 = max(measured, key=lambda c: (sum(runs[c]) / len(runs[c]), str(c)))
    floor = (1 - margin) * min(runs[l2])
    out = []
    for c in st.alive:
        p = priors.get(c)
        if c != l2 and runs[c] and credible(p, runs[c], band) \
                and p.bps * (1 + band * p.error) < floor and max(runs[c]) < floor:
            out.append((c, l2))
    return out


def _test(st, values, priors, band, margin, confidence, w, simplicity, settle, first) -> list:
    for c, leader in prior_drops(st, values, priors, band, margin, first):
        st.dropped[c] = (st.rounds, leader)
        st.prior_dropped.add(c)
    st.alive = [c for c in st.alive if c not in st.dropped]
    return confirm._test(st, values, margin, confidence, w, simplicity, settle)
