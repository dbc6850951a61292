"""Racing rule 'paired' (docs/tune.md): measure every candidate a few rounds, drop those worse than the
leader with confidence, keep measuring the survivors.

A round is one run of every surviving candidate on the same link, in seeded random order: a block in
the statistical sense, so candidates are compared by **paired** differences over the rounds both have
a value for (a one-sample Student t on the differences; small-sample valid, like irace's paired t
option). After round r ≥ `first` (complete):

- leader L: the survivor with the highest mean; m = margin × mean_L;
- drop c when the upper end of the interval of mean(c − L) is below −m (worse by more than the
  margin, with confidence);
- stop when one survivor is left, when every other survivor's interval lower end is ≥ −m (a tie
  within the margin: the simplest wins, select.TIE_BREAK), when the next round would overrun the
  budget of transfer seconds, or after `max_rounds`.

`replay` is the rule on plain numbers (values[candidate][round], None for a failed run): the racing
policy applies it to the stored runs, benchmarks/bench_adaptive.py to resampled ones. Decisions after
round r depend on rounds 0 … r only, so a killed race resumes to the same decisions.
"""

from __future__ import annotations

from collections.abc import Callable

from ...choose import decide
from ..race_state import RaceState, mean_or_minus_inf

NAME = "paired"
DESCRIPTION = "paired t intervals"
FIRST = 3                # rounds before the first test, by default


def replay(values: dict, *, first: int, max_rounds: int, margin: float, confidence: float,
           simplicity: Callable = str,
           affordable: Callable[[int, list], bool] = lambda r, alive: True) -> RaceState:
    """The race's state given values[c] = [round 0, round 1, …] (None: failed; shorter: not run yet)."""
    st = RaceState(alive=sorted(values, key=str), counts={c: 0 for c in values})
    r = 0
    while True:
        if r >= max_rounds:
            st.need, st.stop = None, "rounds"
            return st
        if any(len(values[c]) <= r for c in st.alive):     # round r not complete: run (the rest of) it
            started = any(len(values[c]) > r for c in st.alive)
            if not started and r > 0 and not affordable(r, st.alive):
                st.need, st.stop = None, "budget"
            else:
                st.need, st.next = r, {c: r for c in st.alive if len(values[c]) <= r}
            return st
        st.rounds = r + 1
        for c in st.alive:                                  # every survivor's run of round r is used
            st.counts[c] = st.rounds
        if st.rounds >= first:
            _test(st, values, r, margin, confidence, simplicity)
            if st.stop:
                st.need = None
                return st
        r += 1


def _test(st: RaceState, values: dict, r: int, margin: float, confidence: float, simplicity: Callable) -> None:
    means = {c: mean_or_minus_inf(values[c][: r + 1]) for c in st.alive}
    leader = max(st.alive, key=lambda c: (means[c], str(c)))
    m = margin * abs(means[leader])

    def diff(a, b):      # paired mean of a − b over the rounds both have a value for
        pairs = [(x, y) for x, y in zip(values[a][: r + 1], values[b][: r + 1]) if x is not None and y is not None]
        return decide.paired(*zip(*pairs)) if len(pairs) >= 2 else None

    keep = [leader]
    for c in st.alive:
        if c == leader:
            continue
        d = diff(c, leader)
        upper = d.bound(confidence, "upper") if d else None
        if upper is not None and upper < -m:          # worse than the leader by more than the margin
            st.dropped[c] = (r + 1, leader)
        else:
            keep.append(c)
    st.alive = sorted(keep, key=str)
    st.leader = leader
    # the decision is the simplest survivor S once no survivor can be better than S by more than the margin
    # (survivors are only ever dropped as worse than the leader, so the best stays among them)
    s = min(st.alive, key=simplicity)
    st.ties = [x for x in st.alive if x != s]
    if len(st.alive) == 1:
        st.stop = "one left"
    elif all((d := diff(x, s)) is not None and d.bound(confidence, "upper") <= m for x in st.ties):
        st.stop = "tie"
