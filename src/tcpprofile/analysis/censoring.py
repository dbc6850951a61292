"""τ_T as every reader prints and draws it: measured inside the RTT grid, or censored beyond one of its ends
(the estimator and why: analysis.tau_t). Below analysis.sigmoid, whose Transition carries one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def side_of(fit: "DualSigmoidFit") -> str:
    """Where the fit's τ_T lies: ABOVE the grid (no convex part), BELOW it (no concave part), or MEASURED."""
    return {"concave": ABOVE, "convex": BELOW}.get(fit.kind, MEASURED)


def tau_t_of(fit: "DualSigmoidFit", rtts_ms) -> TauT:
    """The fit's τ_T over the measured RTTs `rtts_ms`, censored when the fit has one piece only."""
    return TauT(side_of(fit), float(fit.tau_T), float(np.min(rtts_ms)), float(np.max(rtts_ms)))
