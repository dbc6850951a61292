"""Racing rule 'confirm' (the default of `tcpprofile tune`, docs/tune.md): race for the decision, not
for the ranking.

The decision only needs one fact: the chosen configuration C is within the margin of the best. So the
race measures what can change that fact and rests the rest. After round r ≥ `first`, with every
candidate's runs so far (candidate X has n_X runs, numbered by repetition):

- U(X, Y) is the one-sided upper t bound, at `confidence`, of μ_X − μ_Y from the two candidates' runs:
  Welch's difference of means with Satterthwaite df (rounded down to 0.1), X's runs censored from below
  at (1 − w)·ȳ, w = `clip` × margin. Censoring only raises X's runs (max(x, c) ≥ x), so U(X, Y)
  stays a valid, conservative upper bound of μ_X − μ_Y, while a slow run of X (a loss episode,
  5–25 % below its typical rate) no longer widens the interval. Y's slow runs count in full: they
  are evidence that Y is worse (and rare ones, absent from a few runs, make U optimistic: the limit
  stated in docs/tune.md).
- leader L: the survivor with the highest mean; m = margin × mean_L;
- drop X when U(X, L) < −m: X is worse than the leader by more than the margin, with confidence;
- X is *settled* against C when U(X, C) ≤ m: X is not better than C by more than the margin. C is
  *confirmed* when every other survivor is settled against it (an intersection–union test: each
  component at level α, the claim "C is within m of every survivor" at level α);
- stop with decision C = the simplest confirmed survivor once C has `max_rounds` runs (the decision
  rests on all its repetitions, as irace re-runs its elites on every instance); 'one left' when the
  others are dropped; 'rounds' when nothing the race still needs can be measured again (decision: the
  simplest confirmed survivor, else the simplest within the margin of the best mean, as 'paired').
- the next round measures the simplest confirmed survivor alone when there is one (toward its
  `max_rounds` runs: should a slow run of it turn up, it may lose its confirmation); otherwise L and
  every survivor not settled against L (those could still beat it by more than the margin, or are too
  noisy to tell). Everything else rests; a resting candidate is measured again when it is no longer
  settled against the leader of the moment.

Decisions depend only on the runs at hand, so a killed race resumes to the same decisions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...choose import decide
from ..race_state import RaceState

NAME = "confirm"
DESCRIPTION = "one-sided t bounds, censored slow runs"
FIRST = 2                # rounds before the first test, by default
DEFAULT_CLIP = 3.0       # censor a candidate's runs 3 margins below the other's mean (3 % at margin 1 %)


def upper(x, y, *, w: float, confidence: float) -> float | None:
    """U(X, Y): upper one-sided t bound of μ_X − μ_Y (Welch), X's runs censored from below at (1 − w)·ȳ;
    None with fewer than 2 runs on either side."""
    return _upper(_ok(x), _ok(y), w, confidence)


def _ok(xs) -> np.ndarray:
    return np.array([v for v in xs if v is not None], float)


def _upper(a: np.ndarray, b: np.ndarray, w: float, confidence: float) -> float | None:
    if a.size < 2 or b.size < 2:
        return None
    mb = float(b.mean())
    a = np.maximum(a, (1 - w) * mb)                 # max(x, c) ≥ x: the bound can only grow
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    if va + vb == 0:
        return float(a.mean()) - mb
    # Welch–Satterthwaite df (decide.satterthwaite), rounded *down* to 0.1: a larger t quantile, so
    # still a valid bound, and few distinct quantiles to compute (decide.t_quantile caches them)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    t = decide.t_quantile(confidence, math.floor(df * 10) / 10)
    return float(a.mean()) - mb + t * math.sqrt(va + vb)


def replay(values: dict, *, first: int, max_rounds: int, margin: float, confidence: float,
           simplicity: Callable = str, affordable: Callable[[int, list], bool] = lambda r, alive: True,
           clip: float = DEFAULT_CLIP) -> RaceState:
    """The race's state given values[c] = [run 0, run 1, …] (None: failed; shorter: not run yet)."""
    st = RaceState(alive=sorted(values, key=str))
    st.counts = {c: 0 for c in values}
    w = clip * margin

    def test(measure):
        return _test(st, values, margin, confidence, w, simplicity, max_rounds) if st.rounds >= first else measure


    def undecided(stop):
        _decide_without_showing(st, values, margin, confidence, w, simplicity, stop)

    return run_rounds(st, values, list(st.alive), 0, max_rounds=max_rounds, affordable=affordable, test=test,
                      undecided=undecided)


def run_rounds(st: RaceState, values: dict, measure: list, r: int, *, max_rounds: int, affordable: Callable,
               test: Callable, undecided: Callable) -> RaceState:
    """The rounds from round r on (rules 'confirm' and 'model'): run `measure` once more (each below
    max_rounds runs), then measure = test(measure) (it may stop the race); undecided('rounds' | 'budget')
    when nothing can be measured again or the next round is not affordable."""
    while True:
        measure = [c for c in measure if st.counts[c] < max_rounds]
        if not measure:
            undecided("rounds")
            return st
        missing = [c for c in measure if len(values[c]) <= st.counts[c]]
        if missing:                                  # round r is not (completely) at hand: run (the rest of) it
            if len(missing) == len(measure) and r > 0 and not affordable(r, measure):
                undecided("budget")
            else:
                st.need, st.next = r, {c: st.counts[c] for c in missing}
            return st
        for c in measure:
            st.counts[c] += 1
        r += 1
        st.rounds = r
        measure = test(measure)
        if st.stop:
            st.need = None
            return st


def _bounds(st, values, margin, confidence, w):
    """The leader, m, U(x, y) (memoised for this state) and open_against(c): survivors not settled against c."""
    runs = {c: _ok(values[c][: st.counts[c]]) for c in st.alive}
    means = {c: float(runs[c].mean()) if runs[c].size else float("-inf") for c in st.alive}
    leader = max(st.alive, key=lambda c: (means[c], str(c)))
    m = margin * abs(means[leader])
    memo = {}

    def up(x, y):
        if (x, y) not in memo:
            memo[x, y] = _upper(runs[x], runs[y], w, confidence)
        return memo[x, y]

    def settled(x, c):
        return (u := up(x, c)) is not None and u <= m

    def open_against(c):
        return [x for x in st.alive if x != c and not settled(x, c)]

    def confirmed(simplicity):
        # U(L, C) ≥ mean_L − mean_C (censoring only raises L): below the leader by more than m, never confirmed
        near = [c for c in st.alive if means[c] >= means[leader] - m]
        return [c for c in sorted(near, key=simplicity) if all(settled(x, c) for x in st.alive if x != c)]
    return leader, m, up, open_against, confirmed


def _confirmed(st, values, margin, confidence, w, simplicity) -> list:
    if not st.alive:
        return []
    return _bounds(st, values, margin, confidence, w)[4](simplicity)


def _test(st: RaceState, values: dict, margin: float, confidence: float, w: float, simplicity: Callable,
          max_rounds: int) -> list:
    # one set of bounds for the whole test: open_against and confirmed read st.alive when called, and
    # dropping never removes the leader, so U, the leader and m stay valid after the drops
    leader, m, up, open_against, confirmed_of = _bounds(st, values, margin, confidence, w)
    for c in list(st.alive):
        if c != leader and (u := up(c, leader)) is not None and u < -m:
            st.dropped[c] = (st.rounds, leader)
    st.alive = [c for c in st.alive if c not in st.dropped]
    st.leader = leader
    if len(st.alive) == 1:
        st.stop, st.chosen = "one left", leader
        return []
    confirmed = confirmed_of(simplicity)
    if confirmed and st.counts[confirmed[0]] >= max_rounds:
        st.stop, st.chosen = "shown", confirmed[0]
        st.ties = [x for x in st.alive if x != st.chosen]
        return []
    if confirmed:                    # only the decision-to-be is measured on, to its `max_rounds` runs
        return confirmed[:1]
    return [leader, *open_against(leader)]


def _decide_without_showing(st: RaceState, values: dict, margin: float, confidence: float, w: float,
                            simplicity: Callable, stop: str) -> None:
    """Stopped by the budget or the most rounds: the simplest confirmed survivor, if there is one
    (else choose() falls back to the means)."""
    st.need, st.stop = None, stop
    confirmed = _confirmed(st, values, margin, confidence, w, simplicity)
    if confirmed:
        st.chosen = confirmed[0]
        st.ties = [x for x in st.alive if x != st.chosen]
