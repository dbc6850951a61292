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
from dataclasses import dataclass

import numpy as np

from ..decide import MIN_INTERVAL_RUNS
from .sigmoid import DualSigmoidFit, Transition, transition_rtt

MEASURED, ABOVE, BELOW = "measured", "above", "below"


@dataclass(frozen=True)
class TauT:
    """τ_T as a reader sees it: measured inside the grid, or censored beyond one of its ends."""
    side: str              # MEASURED | ABOVE (τ_T > tau_max_ms) | BELOW (τ_T < tau_min_ms)
    fit_ms: float          # the fit's τ_T (for a censored one: the grid end it sits on)
    tau_min_ms: float
    tau_max_ms: float

    @property
    def censored(self) -> bool:
        return self.side != MEASURED

    @property
    def value_ms(self) -> float | None:
        """The measured τ_T [ms]; None when censored (a bound is not a value)."""
        return None if self.censored else self.fit_ms

    @property
    def bound_ms(self) -> float:
        """Where to draw it [ms]: the value, or the grid end a censored τ_T lies beyond."""
        return {ABOVE: self.tau_max_ms, BELOW: self.tau_min_ms}.get(self.side, self.fit_ms)

    def text(self) -> str:
        """'137 ms', '> 366 ms' (censored above), '< 0.4 ms' (censored below)."""
        if self.side == ABOVE:
            return f"> {self.tau_max_ms:g} ms"
        if self.side == BELOW:
            return f"< {self.tau_min_ms:g} ms"
        return f"{self.fit_ms:.3g} ms"


def side_of(fit: DualSigmoidFit) -> str:
    """Where the fit's τ_T lies: ABOVE the grid (no convex part), BELOW it (no concave part), or MEASURED."""
    return {"concave": ABOVE, "convex": BELOW}.get(fit.kind, MEASURED)


def tau_t_of(fit: DualSigmoidFit, rtts_ms) -> TauT:
    """The fit's τ_T over the measured RTTs `rtts_ms`, censored when the fit has one piece only."""
    return TauT(side_of(fit), float(fit.tau_T), float(np.min(rtts_ms)), float(np.max(rtts_ms)))


def capacity_of(capacities) -> float | None:
    """The capacity a profile is scaled by [bit/s]: the median of its runs' link capacities (payload
    ceiling, else rate; nan where unknown), None when none is known (the fit then uses the profile's max)."""
    c = np.asarray(capacities, float)
    c = c[np.isfinite(c)]
    return float(np.median(c)) if c.size else None


def transition(samples, tau_ms, capacity_bps: float | None, *, key: dict | None = None, n_boot: int = 200,
               level: float = 0.95, seed=None) -> Transition:
    """τ_T of one profile (per-τ run throughputs [bit/s] at strictly increasing τ [ms]): the one entry
    point every reader uses. Transition.tau_T (a TauT) is what they print and draw. No bootstrap
    interval when any τ has fewer than MIN_INTERVAL_RUNS runs (a bootstrap of 2 runs is their range)."""
    few = min(len(s) for s in samples) < MIN_INTERVAL_RUNS
    return transition_rtt(samples, tau_ms, capacity=capacity_bps if capacity_bps and math.isfinite(capacity_bps)
                          else None, key=key, n_boot=0 if few else n_boot, level=level, seed=seed)
