"""When a fit cannot explain the data: a fitted parameter at its bound, residuals with structure over τ.

Both are reported as flags (plain dicts, the same keys everywhere) by `model fit`, the report's model
figure, `model validate` and `select --extrapolate`; a flagged fit is never shown as a plain number.

* **At a bound.** The fit searches each parameter in a range (lsq.BUFFER_BOUNDS, WMAX_BOUNDS,
  fit.RELATIVE_BOUNDS). A value within BOUND_REL (relative) of an end of its range is where the
  optimiser stopped, not where the data put it: the data asked for more than the model can give, or
  do not depend on the parameter (not identified; e.g. W_max at its upper end: no limit binds).
* **Structure over τ** (residuals r = (M − P)/M per configuration). Test: a stratified rank test of
  two contrasts over the τ order, strata = stream counts (each n is its own residual profile over τ).
  Within a stratum of k RTTs the residuals are ranked (average ranks for ties) and scored with the
  integer orthogonal-polynomial contrasts over the τ positions i = 0…k−1, m = (k−1)/2:
  trend c₁ = 2(i − m), curvature c₂ = 12(i − m)² − (k² − 1) (a U or ∩ shape: the model bends the wrong
  way). Statistic S = Σ_strata Σ_i c_i·2·rank_i; H0: within each stratum the residuals are exchangeable
  over τ; the exact permutation distribution of S (every permutation of each stratum's ranks, strata
  convolved; strata of more than EXACT_MAX RTTs by 20,000 seeded random permutations and the observed order) gives
  p = P(|S| ≥ |s|). Level LEVEL overall, LEVEL/2 per contrast (Bonferroni). A contrast whose smallest
  attainable p exceeds LEVEL/2 is "not testable" (one stratum: 3 or 4 RTTs for the trend, ≤ 5 for the
  curvature); when neither is testable the verdict is "not testable", never "no structure".
  Residuals all below MATERIAL (0.5 %) are not flagged whatever their order (a fit within 0.5 % explains
  the runs; its rounding-level residuals have an order but no consequence).
  Fitted residuals are not exactly exchangeable (two parameters were fitted to them); the false-alarm
  rate on correctly specified noisy profiles is checked in tests/test_models_diagnostics.py.
"""

from __future__ import annotations

import itertools

import numpy as np

LEVEL = 0.05          # overall level of the structure test (two contrasts at LEVEL/2 each)
BOUND_REL = 0.05      # a fitted value within 5 % of an end of its range is "at the bound"
MATERIAL = 0.005      # residuals all below 0.5 % are never "structure"
EXACT_MAX = 8         # strata up to 8 RTTs: all 8! permutations; larger ones sampled
SAMPLES = 20_000


def at_bound(name: str, value: float, bounds: tuple[float, float], *, rel: float = BOUND_REL) -> dict | None:
    """A flag when `value` lies within `rel` (relative) of an end of `bounds`, else None."""
    lo, hi = bounds
    if value <= lo * (1 + rel):
        side, bound = "lower", lo
    elif value >= hi / (1 + rel):
        side, bound = "upper", hi
    else:
        return None
    return {"flag": "at_bound", "parameter": name, "side": side, "value": float(value), "bound": float(bound),
            "text": f"{name} at its {side} bound ({value:.3g}, range {lo:.3g}–{hi:.3g}): the fit ran to the end "
                    "of its range (the data ask for a value the model cannot give, or do not pin it)"}


def _contrasts(k: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(k) - (k - 1) / 2
    return (2 * i).astype(np.int64), (12 * i * i - (k * k - 1)).astype(np.int64)


def _ranks2(x: np.ndarray) -> np.ndarray:
    """2 × the average ranks (1-based) of x: integers even with ties."""
    order = np.argsort(x, kind="stable")
    r = np.empty(x.size)
    r[order] = np.arange(1, x.size + 1)
    for v in np.unique(x):                       # ties: the average of their ranks
        same = x == v
        r[same] = r[same].mean()
    return np.rint(2 * r).astype(np.int64)


def _null(ranks2: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """Distribution of the integer Σ c·ranks2 over permutations of ranks2: (smallest value, probabilities
    of smallest, smallest + 1, …)."""
    if ranks2.size <= EXACT_MAX:
        perms = np.array(list(itertools.permutations(ranks2)))
    else:
        perms = np.vstack([ranks2, rng.permuted(np.tile(ranks2, (SAMPLES, 1)), axis=1)])   # the observed order too
    s = perms @ c
    lo = int(s.min())
    return lo, np.bincount(s - lo) / s.size


def _convolve(a: tuple[int, np.ndarray], b: tuple[int, np.ndarray]) -> tuple[int, np.ndarray]:
    """The distribution of the sum of two independent integer statistics (exact; by FFT, to rounding,
    when both are long: strata of many RTTs)."""
    if a[1].size * b[1].size <= 10 ** 6:
        return a[0] + b[0], np.convolve(a[1], b[1])
    from scipy.signal import fftconvolve     # here: scipy.signal costs ~0.7 s to import, every CLI start paid it
    return a[0] + b[0], np.clip(fftconvolve(a[1], b[1]), 0.0, None)


def residual_structure(tau, resid, strata, *, level: float = LEVEL, seed: int = 0) -> dict:
    """The stratified rank test of the module docstring. tau, resid, strata: one value per configuration
    (strata: e.g. the stream count). Returns {"test", "level", "trend": {"p", "testable"}, "curvature":
    {...}, "verdict": "structure" | "no structure found" | "not testable", "flag": bool, "text"}."""
    tau, resid, strata = (np.asarray(a).ravel() for a in (tau, resid, strata))
    rng = np.random.default_rng(seed)
    out = {"test": "stratified rank contrasts over τ (trend, curvature), exact permutation", "level": level}
    for j, name in enumerate(("trend", "curvature")):
        dist, s_obs = (0, np.ones(1)), 0
        for s in np.unique(strata):
            sel = strata == s
            order = np.argsort(tau[sel], kind="stable")
            r = resid[sel][order]
            if r.size < 3:
                continue                          # two points have no shape over τ
            c = _contrasts(r.size)[j]
            r2 = _ranks2(r)
            s_obs += int(r2 @ c)
            dist = _convolve(dist, _null(r2, c, rng))
        values, prob = np.abs(dist[0] + np.arange(dist[1].size)), dist[1]
        possible = prob > 0
        p_min = float(prob[possible & (values >= values[possible].max())].sum())
        p = float(prob[values >= abs(s_obs)].sum())
        testable = p_min <= level / 2
        out[name] = {"p": min(p, 1.0) if testable else None, "testable": bool(testable), "p_min": p_min}
    found = [n for n in ("trend", "curvature") if out[n]["testable"] and out[n]["p"] <= level / 2]
    if found and np.max(np.abs(resid)) < MATERIAL:
        verdict, text, found = "no structure found", f"residuals all below {MATERIAL:.1%}: nothing left to explain", []
    elif found:
        verdict = "structure"
        text = "residuals with structure over τ: " + ", ".join(f"{n} p = {out[n]['p']:.3g}" for n in found) + \
            f" (≤ {level / 2:g} each, level {level:g})"
    elif out["trend"]["testable"] or out["curvature"]["testable"]:
        verdict, text = "no structure found", "no structure over τ found at level " + f"{level:g}"
    else:
        verdict = "not testable"
        text = f"structure over τ not testable (too few RTTs per stream count for level {level:g})"
    return {**out, "verdict": verdict, "flag": bool(found), "text": text}


def flags_of(bound_flags: list, structure: dict) -> list[dict]:
    """The flags of a fit: its parameters at a bound, then structure over τ (when found)."""
    flags = [f for f in bound_flags if f is not None]
    if structure["flag"]:
        flags.append({"flag": "structure", "parameter": None, "text": structure["text"]})
    return flags


def short(flags: list[dict], structure: dict | None = None) -> str:
    """A one-word-per-flag code for tables: β:lower, W_max:upper, τ-structure; '-' when none,
    with 'τ:n/t' appended when the structure test could not be run."""
    codes = [f"{f['parameter']}:{f['side']}" if f["flag"] == "at_bound" else "τ-structure" for f in flags]
    if structure is not None and structure["verdict"] == "not testable":
        codes.append("τ:n/t")
    return ",".join(codes) or "-"

