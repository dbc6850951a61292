"""Least squares of a first-principles profile: the fit of β and W_max that both the model's own
`fit` (framework.py) and the dataset fits (fit.py) call. Below both: it imports neither, and asks of the
model only `predict(tau, n=, size=, buffer=, wmax=, duration=, loss=)` and its `size_bytes`/`duration_s`."""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from ..errors import ValidationError
from .base import positive_array

BUFFER_BOUNDS = (1e3, 1e10)   # bytes: the ranges the fits search β and W_max in
WMAX_BOUNDS = (1e4, 1e11)


def fit_buffer_wmax(model, tau, throughput, *, n=1, size=None, duration=None, loss=None,
                    buffer_scale=None, buffer_bounds=BUFFER_BOUNDS, wmax_bounds=WMAX_BOUNDS, grid: int = 16,
                    starts: int = 3):
    """(buffer_bytes, wmax_bytes, relative residuals) minimising Σ((P − M)/M)² over the profile.

    Log-spaced grids (vectorised over all grid points and profile points at once) give the start of a
    bounded least-squares refinement in log space. tau [s], throughput [bit/s]. With buffer_scale
    (bytes per row, e.g. the configured BDP at each τ) the first value returned is the multiple m of
    it, β_row = m·buffer_scale_row, and buffer_bounds bound m.
    """
    tau = positive_array("tau", tau, units="s")
    M = positive_array("throughput", throughput, units="bit/s")
    n = np.asarray(n, float)
    size = model.size_bytes if size is None else size
    size = np.asarray(size, float)
    scale = np.asarray(1.0 if buffer_scale is None else positive_array("buffer_scale", buffer_scale, units="bytes"))
    duration = model.duration_s if duration is None else duration
    extra = [np.asarray(x, float) for x in (duration, loss) if x is not None]
    tau, M, n, size, scale, *extra = (a.ravel() for a in np.broadcast_arrays(tau, M, n, size, scale, *extra))
    kw = {}
    if duration is not None:
        kw["duration"] = extra.pop(0)
    if loss is not None:
        kw["loss"] = extra.pop(0)
    for name, (lo, hi) in (("buffer_bounds", buffer_bounds), ("wmax_bounds", wmax_bounds)):
        if not (0 < lo < hi < np.inf):
            raise ValidationError(name, f"need 0 < low < high < inf bytes, got {(lo, hi)}")
    lb, lw = np.log(buffer_bounds), np.log(wmax_bounds)

    def sse_of(xb, xw):  # Σ relative squared error for arrays of log-parameters, all at once
        P = model.predict(tau, n=n, size=size, buffer=np.exp(xb)[..., None] * scale, wmax=np.exp(xw)[..., None], **kw)
        return np.sum(((P - M) / M) ** 2, axis=-1)

    def resid(x):
        return (model.predict(tau, n=n, size=size, buffer=np.exp(x[0]) * scale, wmax=np.exp(x[1]), **kw) - M) / M

    # The profile is piecewise in (β, W_max) (cases, subcases, no gradient across their borders):
    # a coarse grid, a finer grid around its `starts` best points, then least squares from the best.
    xb, xw = np.meshgrid(np.linspace(*lb, grid), np.linspace(*lw, grid), indexing="ij")
    coarse = sse_of(xb, xw).ravel()
    hb, hw = (lb[1] - lb[0]) / (grid - 1), (lw[1] - lw[0]) / (grid - 1)
    u = np.linspace(-1, 1, grid)
    centres = np.argsort(coarse)[:starts]
    fb = np.clip(xb.ravel()[centres][:, None, None] + hb * u[None, :, None], *lb)
    fw = np.clip(xw.ravel()[centres][:, None, None] + hw * u[None, None, :], *lw)
    fb, fw = np.broadcast_arrays(fb, fw)
    fine = sse_of(fb, fw).ravel()
    best = int(np.argmin(fine))
    x0 = np.array([fb.ravel()[best], fw.ravel()[best]])
    sol = least_squares(resid, x0, bounds=([lb[0], lw[0]], [lb[1], lw[1]]), diff_step=1e-3)
    best_x = sol.x if np.sum(sol.fun ** 2) <= fine[best] else x0
    return float(np.exp(best_x[0])), float(np.exp(best_x[1])), resid(best_x)
