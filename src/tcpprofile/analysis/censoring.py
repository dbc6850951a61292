"""τ_T as every reader prints and draws it: measured inside the RTT grid, or censored beyond one of its ends
(the estimator and why: analysis.tau_t). Below analysis.sigmoid, whose Transition carries one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..units import to_ms

MEASURED, ABOVE, BELOW = "measured", "above", "below"


@dataclass(frozen=True)
class TauT:
    """τ_T as a reader sees it: measured inside the grid, or censored beyond one of its ends (τ in s;
    text() prints ms)."""
    side: str              # MEASURED | ABOVE (τ_T > tau_max_s) | BELOW (τ_T < tau_min_s)
    fit_s: float           # the fit's τ_T [s] (for a censored one: the grid end it sits on)
    tau_min_s: float
    tau_max_s: float

    @property
    def censored(self) -> bool:
        return self.side != MEASURED

    @property
    def value_s(self) -> float | None:
        """The measured τ_T [s]; None when censored (a bound is not a value)."""
        return None if self.censored else self.fit_s

    @property
    def bound_s(self) -> float:
        """Where to draw it [s]: the value, or the grid end a censored τ_T lies beyond."""
        return {ABOVE: self.tau_max_s, BELOW: self.tau_min_s}.get(self.side, self.fit_s)

    def text(self) -> str:
        """'137 ms', '> 366 ms' (censored above), '< 0.4 ms' (censored below): printed in ms (units.to_ms)."""
        if self.side == ABOVE:
            return f"> {to_ms(self.tau_max_s):g} ms"
        if self.side == BELOW:
            return f"< {to_ms(self.tau_min_s):g} ms"
        return f"{to_ms(self.fit_s):.3g} ms"


def side_of(fit: "DualSigmoidFit") -> str:
    """Where the fit's τ_T lies: ABOVE the grid (no convex part), BELOW it (no concave part), or MEASURED."""
    return {"concave": ABOVE, "convex": BELOW}.get(fit.kind, MEASURED)


def tau_t_of(fit: "DualSigmoidFit", rtts_s) -> TauT:
    """The fit's τ_T over the measured RTTs `rtts_s` [s], censored when the fit has one piece only."""
    return TauT(side_of(fit), float(fit.tau_T), float(np.min(rtts_s)), float(np.max(rtts_s)))
