"""The Poincaré map θ_{i+1} against θ_i (HPDC'17 §4, Fig. 12): its points, how far they lie from a 1-D
curve, and the nearest-neighbour secant exponent — for one trace or many at once (a KD-tree per trace,
which is faster here than one tree over all; the arithmetic on the neighbours is batched)."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree


def poincare_points(x) -> tuple[np.ndarray, np.ndarray]:
    """The Poincaré map's points (θ_i, θ_{i+1})."""
    x = np.asarray(x, dtype=float)
    return x[:-1], x[1:]


def _knn(blocks: list[np.ndarray], ks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per block its points' ks[b] nearest neighbours (KD-tree per block); global row indices (P, max k)
    padded with −1, and each row's block."""
    first = np.r_[0, np.cumsum([p.shape[0] for p in blocks])[:-1]]
    kmax = max(ks)
    nb = np.full((int(sum(p.shape[0] for p in blocks)), kmax), -1)
    for p, k, f in zip(blocks, ks, first):
        _, j = cKDTree(p).query(p, k=k)
        nb[f:f + p.shape[0], :k] = j.reshape(p.shape[0], k) + f
    return nb, np.repeat(np.arange(len(blocks)), [p.shape[0] for p in blocks])


def _group_median(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    order = np.lexsort((values, owner))
    v, o = values[order], owner[order]
    count = np.bincount(o, minlength=n)
    start = np.r_[0, np.cumsum(count)[:-1]]
    out = np.full(n, math.nan)
    has = count > 0
    lo, hi = start + (count - 1) // 2, start + count // 2
    out[has] = (v[lo[has]] + v[hi[has]]) / 2
    return out


def poincare_spreads(xs, *, k: int = 8) -> np.ndarray:
    """poincare_spread of every trace in xs."""
    out = np.full(len(xs), math.nan)
    blocks, which = [], []
    for b, x in enumerate(xs):
        a, c = poincare_points(x)
        pts = np.column_stack([a, c])
        if pts.shape[0] < k + 1:
            continue
        sd = pts.std()
        if sd == 0:
            out[b] = 0.0
            continue
        blocks.append(pts / sd)
        which.append(b)
    if not blocks:
        return out
    nb, owner = _knn(blocks, [k + 1] * len(blocks))
    pts = np.concatenate(blocks)
    local = pts[nb] - pts[nb].mean(axis=1, keepdims=True)                          # (P, k+1, 2)
    sxx, syy = (local[..., 0] ** 2).mean(1), (local[..., 1] ** 2).mean(1)
    sxy = (local[..., 0] * local[..., 1]).mean(1)
    half, root = (sxx + syy) / 2, np.sqrt(((sxx - syy) / 2) ** 2 + sxy**2)      # 2×2 eigenvalues
    big, small = half + root, np.clip(half - root, 0, None)
    ratio = np.sqrt(small / np.where(big > 0, big, 1.0))
    out[which] = _group_median(ratio, owner, len(blocks))
    return out


def poincare_spread(x, *, k: int = 8) -> float:
    """How far the map's points are from a 1-D curve: median over points of sqrt(λ2/λ1) of the local
    covariance of each point and its k nearest neighbours in the (θ_i, θ_{i+1}) plane. ≈ 0 on a curve,
    ≈ 0.6–0.7 for white noise (an isotropic cloud, k = 8); 0 when neighbourhoods collapse to points."""
    return float(poincare_spreads([x], k=k)[0])


def _nearest_1d(V: np.ndarray, n: np.ndarray, w: np.ndarray) -> np.ndarray:
    """For each row b and index i < n_b of the padded values V, the index j < n_b nearest in value with
    |i − j| > w_b (−1 if none): in sorted order the nearest valid neighbour is the first valid one on
    the left or on the right, so scan outward from every position at once."""
    B, P = V.shape
    order = np.argsort(np.where(np.arange(P)[None, :] < n[:, None], V, np.inf), axis=1, kind="stable")
    rows = np.arange(B)[:, None]
    best = np.full((B, P), -1)
    bestd = np.full((B, P), np.inf)
    r = np.arange(P)[None, :]
    live = r < n[:, None]                                  # sorted positions that are real points
    for side in (-1, 1):
        todo = live.copy()
        for o in range(1, P):
            c = r + side * o
            inside = (c >= 0) & (c < n[:, None]) & todo
            if not inside.any():
                break
            j = order[rows, np.clip(c, 0, P - 1)]
            ok = inside & (np.abs(j - order) > w[:, None])
            d = np.abs(V[rows, j] - V[rows, order])
            take = ok & (d < bestd)
            best = np.where(take, j, best)
            bestd = np.where(take, d, bestd)
            todo &= ~ok
    out = np.full((B, P), -1)
    out[rows, order] = np.where(live, best, -1)            # back from sorted positions to indices
    return out


def neighbour_exponents(xs, min_tsep) -> np.ndarray:
    """Mean of the nearest-neighbour secant exponents L_i = ln|(θ_{j+1} − θ_{i+1}) / (θ_j − θ_i)|, θ_j the
    value nearest θ_i with |i − j| > min_tsep (one per trace), for every trace — the batched
    lyapunov.local_lyapunov(x, pairing="neighbour") mean (ties in value may pick another neighbour);
    nan where no finite L_i."""
    tsep = np.broadcast_to(np.asarray(min_tsep, dtype=int), (len(xs),))
    out = np.full(len(xs), math.nan)
    xs = [np.asarray(x, dtype=float) for x in xs]
    which = [b for b, x in enumerate(xs) if x.size >= 2 * tsep[b] + 3]
    if not which:
        return out
    X = np.full((len(which), max(xs[b].size for b in which)), np.nan)
    for r, b in enumerate(which):
        X[r, :xs[b].size] = xs[b]
    n = np.array([xs[b].size for b in which]) - 1          # points θ_i with a successor
    nn = _nearest_1d(X[:, :-1], n, tsep[which])
    rows, i = np.arange(len(which))[:, None], np.arange(X.shape[1] - 1)[None, :]
    j = np.maximum(nn, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        num, den = X[rows, j + 1] - X[rows, i + 1], X[rows, j] - X[rows, i]
        ok = (nn >= 0) & (num != 0) & (den != 0) & np.isfinite(num) & np.isfinite(den)
        L = np.where(ok, np.log(np.abs(np.where(ok, num, 1.0) / np.where(ok, den, 1.0))), 0.0)
        cnt = ok.sum(axis=1)
        out[which] = np.where(cnt > 0, L.sum(axis=1) / cnt, math.nan)
    return out
