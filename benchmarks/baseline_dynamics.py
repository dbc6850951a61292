"""The benchmark's baseline for the per-trace dynamics: dense nearest-neighbour search per trace,
Rosenstein fitted from k = 0, one trace at a time (the plain method that analysis/lyapunov.py's is
timed against). Not used by the package; bench_analysis.py times it on a subset of the same traces."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from tcpprofile.analysis import ramp_up
from tcpprofile.analysis.lyapunov import delay_embed, local_lyapunov, mean_period

_CHUNK = 1 << 22


def nearest_neighbours(points, min_tsep):
    n = points.shape[0]
    idx, dist = np.full(n, -1), np.full(n, np.inf)
    rows = max(1, _CHUNK // max(1, n * points.shape[1]))
    cols = np.arange(n)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        d2 = ((points[a:b, None, :] - points[None, :, :]) ** 2).sum(-1)
        d2[np.abs(np.arange(a, b)[:, None] - cols[None, :]) <= min_tsep] = np.inf
        j = np.argmin(d2, axis=1)
        dj = d2[np.arange(b - a), j]
        ok = np.isfinite(dj)
        idx[a:b] = np.where(ok, j, -1)
        dist[a:b] = np.sqrt(dj)
    return idx, dist


def _auto_range(y):
    finite = np.isfinite(y)
    if finite.sum() < 2:
        return (0, y.size)
    y0 = y[finite][0]
    sat = np.nanmean(np.where(finite, y, np.nan)[-max(1, y.size // 3):])
    if not sat > y0:
        return (0, y.size)
    reach = np.flatnonzero(finite & (y >= y0 + 0.6 * (sat - y0)))
    end = int(reach[0]) + 1 if reach.size else y.size
    return (0, max(end, 2))


def rosenstein(x, *, emb_dim=3, lag=1, min_tsep=None, trajectory_len=20, fit_range=None) -> float:
    x = np.asarray(x, dtype=float)
    if min_tsep is None:
        min_tsep = int(round(mean_period(x)))
    emb = delay_embed(x, emb_dim, lag)
    ntraj = emb.shape[0] - trajectory_len + 1
    nn, _ = nearest_neighbours(emb[:ntraj], min_tsep)
    ks = np.arange(trajectory_len)
    d = np.sqrt(((emb[np.arange(ntraj)[:, None] + ks] - emb[nn[:, None] + ks]) ** 2).sum(-1))
    with np.errstate(divide="ignore"):
        logd = np.where(d > 0, np.log(np.where(d > 0, d, 1.0)), np.nan)
    cnt = np.isfinite(logd).sum(axis=0)
    y = np.where(cnt > 0, np.nansum(logd, axis=0) / np.maximum(cnt, 1), np.nan)
    lo, hi = fit_range if fit_range is not None else _auto_range(y)
    sel = np.zeros(trajectory_len, bool)
    sel[lo:hi] = True
    sel &= np.isfinite(y)
    if sel.sum() < 2:
        return math.nan
    kc = ks[sel] - ks[sel].mean()
    return float(np.dot(kc, y[sel] - y[sel].mean()) / np.dot(kc, kc))


def poincare_spread(x, *, k=8):
    pts = np.column_stack([x[:-1], x[1:]])
    if pts.shape[0] < k + 1:
        return math.nan
    sd = pts.std()
    if sd == 0:
        return 0.0
    pts = pts / sd
    _, nb = cKDTree(pts).query(pts, k=k + 1)
    local = pts[nb] - pts[nb].mean(axis=1, keepdims=True)
    sxx, syy = (local[..., 0] ** 2).mean(1), (local[..., 1] ** 2).mean(1)
    sxy = (local[..., 0] * local[..., 1]).mean(1)
    half, root = (sxx + syy) / 2, np.sqrt(((sxx - syy) / 2) ** 2 + sxy**2)
    big, small = half + root, np.clip(half - root, 0, None)
    return float(np.median(np.sqrt(small / np.where(big > 0, big, 1.0))))


def trace_dynamics(bps, start_s=None, end_s=None, *, emb_dim=3, trajectory_len=10) -> dict:
    """The old trace_dynamics without surrogates (same statistics, as a dict)."""
    y = np.asarray(bps, dtype=float)
    ramp = ramp_up(y, start_s, end_s)
    s = y[ramp.index:]
    L = local_lyapunov(s)
    q = np.percentile(L, [25, 50, 75]) if L.size else [math.nan] * 3
    tsep = max(1, min(int(round(mean_period(s))) if np.ptp(s) > 0 else 1, s.size // 4))
    lyap = math.nan
    if np.ptp(s) > 0 and s.size - (emb_dim - 1) - trajectory_len + 1 >= 2 * tsep + 2:
        lyap = rosenstein(s, emb_dim=emb_dim, min_tsep=tsep, trajectory_len=trajectory_len)
    nb = local_lyapunov(s, pairing="neighbour", min_tsep=tsep)
    return {"ramp": ramp, "spread": poincare_spread(s), "local_mean": float(L.mean()) if L.size else math.nan,
            "local_median": float(q[1]), "local_iqr": float(q[2] - q[0]),
            "neighbour_mean": float(nb.mean()) if nb.size else math.nan, "lyapunov": lyap}
