"""One transition RTT τ_T for every reader: `analyze --what transition`, the report's Transition RTTs
figure and "The papers side by side" all call `transition` and print or draw its `TauT`.

The estimator: the paper's constrained dual-sigmoid regression (HPDC'17 §2.3, Figs. 9–10;
tcpprofile.analysis.sigmoid): τ_T is where the fitted concave piece hands over to the convex one, near
where the profile scaled by the capacity crosses one half. Not the last concave grid RTT (Fig. 10's
plotted values, `DualSigmoidFit.tau_T_grid`): between two grid RTTs the fit's τ_T is their midpoint
(91.6 and 183 ms give 137 ms), and a second number under the same name said two things.

Capacity: the median over the profile's runs of their link's payload ceiling (`goodput_ceiling_bps`),
else its configured rate (store.reads._CAPACITY_SQL, the column analysis.load_runs reads).

Censoring: a fit with no convex part (kind 'concave') puts τ_T at the largest measured RTT, but the
concave region reaches beyond it: τ_T > τ_max, a bound. No concave part (kind 'convex'): τ_T < τ_min.
A censored τ_T is printed "> 366 ms" / "< 0.4 ms" and drawn as an open triangle at the grid's end,
never as a measured point (report/profiles.py, report/papers).
"""

from __future__ import annotations

import math
import numpy as np

from ..choose.decide import MIN_INTERVAL_RUNS
from .censoring import ABOVE, BELOW, MEASURED, TauT, side_of, tau_t_of  # noqa: F401 (re-exported)
from .sigmoid import Transition, transition_rtt

def capacity_of(capacities) -> float | None:
    """The capacity a profile is scaled by [bit/s]: the median of its runs' link capacities (payload
    ceiling, else rate; nan where unknown), None when none is known (the fit then uses the profile's max)."""
    c = np.asarray(capacities, float)
    c = c[np.isfinite(c)]
    return float(np.median(c)) if c.size else None


def transition(samples, tau_s, capacity_bps: float | None, *, key: dict | None = None, n_boot: int = 200,
               level: float = 0.95, seed=None) -> Transition:
    """τ_T of one profile (per-τ run throughputs [bit/s] at strictly increasing τ [s]): the one entry
    point every reader uses. Transition.tau_T (a TauT) is what they print and draw. No bootstrap
    interval when any τ has fewer than MIN_INTERVAL_RUNS runs (a bootstrap of 2 runs is their range)."""
    few = min(len(s) for s in samples) < MIN_INTERVAL_RUNS
    return transition_rtt(samples, tau_s, capacity=capacity_bps if capacity_bps and math.isfinite(capacity_bps)
                          else None, key=key, n_boot=0 if few else n_boot, level=level, seed=seed)
