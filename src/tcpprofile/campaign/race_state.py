"""The state of a race and its decision, shared by the racing rules (racing.py 'paired',
confirm.py 'confirm')."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..choose import decide


@dataclass
class RaceState:
    alive: list                                   # candidates still racing
    dropped: dict = field(default_factory=dict)   # candidate -> (after round, leader it lost to)
    rounds: int = 0                               # complete rounds
    need: int | None = 0                          # the round to run (complete) next; None: stopped
    stop: str | None = None                       # 'one left' | 'tie' | 'shown' | 'budget' | 'rounds'
    ties: list = field(default_factory=list)      # survivors confidently within the margin of the decision
    leader: object = None
    next: dict = field(default_factory=dict)      # candidate -> index of its run that round `need` asks for
    counts: dict = field(default_factory=dict)    # candidate -> its runs the decisions used (paired: the rounds
                                                  # it raced; confirm: its runs up to where it rested)
    chosen: object = None                         # a decision the rule has shown (confirm: within the margin of
                                                  # every survivor); None: choose() decides on the means
    prior_dropped: set = field(default_factory=set)   # 'model': those of dropped that their run and prior dropped


def mean_or_minus_inf(xs) -> float:
    """The mean of the values present (None: not run), −inf with none (ranks below every measured one)."""
    v = [x for x in xs if x is not None]
    return float(np.mean(v)) if v else float("-inf")


def choose(st: RaceState, values: dict, margin: float, simplicity: Callable) -> object:
    """The decision: the rule's own (st.chosen), else the simplest survivor within the margin of the
    best survivor's mean."""
    if st.chosen is not None:
        return st.chosen
    means = {c: mean_or_minus_inf(values[c]) for c in st.alive}
    return min(decide.ties(means, margin), key=simplicity)
