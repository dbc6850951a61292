"""Lyapunov exponents of a scalar trace: the paper's local estimate (§4.1) and Rosenstein et al. (1993).

Units: exponents are per sample step (per second for iperf3's 1 s intervals).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError

_CHUNK = 1 << 22  # elements per dense distance block


def delay_embed(x, dim: int, lag: int = 1) -> np.ndarray:
    """Rows [x_i, x_{i+lag}, …, x_{i+(dim−1)lag}]: shape (len(x) − (dim−1)·lag, dim)."""
    x = np.asarray(x, dtype=float)
    n = x.size - (dim - 1) * lag
    if dim < 1 or lag < 1 or n < 1:
        raise ValidationError("emb_dim", f"cannot embed {x.size} points with dim={dim}, lag={lag}")
    return x[np.arange(n)[:, None] + lag * np.arange(dim)[None, :]]


def mean_period(x) -> float:
    """Mean period 1/f̄ with f̄ the power-weighted mean frequency (Rosenstein's choice of min_tsep)."""
    x = np.asarray(x, dtype=float)
    p = np.abs(np.fft.rfft(x - x.mean())) ** 2
    f = np.fft.rfftfreq(x.size)
    if p[1:].sum() == 0:
        return 1.0
    return float(1.0 / (np.sum(f[1:] * p[1:]) / p[1:].sum()))


def nearest_neighbours(points: np.ndarray, min_tsep: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row i its nearest other row j with |i − j| > min_tsep (Euclidean; exact, dense in
    blocks). Returns (index, distance); index −1 where no row qualifies."""
    n = points.shape[0]
    idx = np.full(n, -1)
    dist = np.full(n, np.inf)
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


@dataclass(frozen=True)
class Divergence:
    """Rosenstein's mean log divergence y(k) = ⟨ln d_j(k)⟩_j and the fitted slope over fit_range."""
    k: np.ndarray
    y: np.ndarray
    fit_range: tuple[int, int]
    exponent: float


def _auto_range(y: np.ndarray) -> tuple[int, int]:
    """Linear region: from k=0 to the first k where y has covered 60% of its rise to saturation
    (saturation = mean of the last third of y); at least two points."""
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


def rosenstein(x, *, emb_dim: int = 3, lag: int = 1, min_tsep: int | None = None,
               trajectory_len: int = 20, fit_range: tuple[int, int] | None = None) -> Divergence:
    """Largest Lyapunov exponent after Rosenstein, Collins & De Luca (1993).

    Delay-embed x; pair each of the first N − trajectory_len + 1 vectors with its nearest neighbour at
    least min_tsep steps away (default: the mean period, rounded); follow both for trajectory_len
    steps; y(k) = mean over pairs of ln‖Y_{i+k} − Y_{j+k}‖ (zero distances left out); the exponent is
    the least-squares slope of y over fit_range = [k0, k1) (default: automatic linear region, see
    _auto_range). Same conventions as nolds.lyap_r when fit_range=(0, trajectory_len).
    """
    x = np.asarray(x, dtype=float)
    if min_tsep is None:
        min_tsep = int(round(mean_period(x)))
    emb = delay_embed(x, emb_dim, lag)
    ntraj = emb.shape[0] - trajectory_len + 1
    if ntraj < 2 * min_tsep + 2:
        raise ValidationError("x", f"trace too short: {x.size} points for emb_dim={emb_dim}, lag={lag}, "
                              f"min_tsep={min_tsep}, trajectory_len={trajectory_len}")
    nn, _ = nearest_neighbours(emb[:ntraj], min_tsep)
    ks = np.arange(trajectory_len)
    d = np.sqrt(((emb[np.arange(ntraj)[:, None] + ks] - emb[nn[:, None] + ks]) ** 2).sum(-1))  # (ntraj, L)
    with np.errstate(divide="ignore"):
        logd = np.where(d > 0, np.log(np.where(d > 0, d, 1.0)), np.nan)
    cnt = np.isfinite(logd).sum(axis=0)
    y = np.where(cnt > 0, np.nansum(logd, axis=0) / np.maximum(cnt, 1), np.nan)
    lo, hi = fit_range if fit_range is not None else _auto_range(y)
    sel = np.zeros(trajectory_len, bool)
    sel[lo:hi] = True
    sel &= np.isfinite(y)
    slope = np.nan
    if sel.sum() >= 2:  # least-squares slope of y on k
        kc = ks[sel] - ks[sel].mean()
        slope = float(np.dot(kc, y[sel] - y[sel].mean()) / np.dot(kc, kc))
    return Divergence(ks, y, (int(lo), int(hi)), slope)


def lyap_rosenstein(x, **kwargs) -> float:
    """The exponent of rosenstein(x, **kwargs) [per step]."""
    return rosenstein(x, **kwargs).exponent


PAIRINGS = ("successive", "neighbour")


def local_lyapunov(x, *, pairing: str = "successive", min_tsep: int = 1) -> np.ndarray:
    """Local exponents L_i = ln|dM/dX| estimated by secants of the Poincaré map (§4.1).

    pairing="successive" is the paper's estimate from successive differences,
        L_i = ln|(θ_{i+2} − θ_{i+1}) / (θ_{i+1} − θ_i)|;
    its mean telescopes to (ln|Δ_last| − ln|Δ_first|)/count, so it tends to 0 for any bounded trace:
    read it as a distribution (Fig. 13), not as an average exponent.
    pairing="neighbour" takes the secant between θ_i and its nearest value θ_j (|i − j| > min_tsep):
        L_i = ln|(θ_{j+1} − θ_{i+1}) / (θ_j − θ_i)|,
    whose mean estimates E[ln|M'|], the exponent of a one-dimensional map.
    Zero differences give no finite value and are dropped.
    """
    x = np.asarray(x, dtype=float)
    if pairing not in PAIRINGS:
        raise ValidationError("pairing", f"one of {', '.join(PAIRINGS)}, got {pairing!r}")
    if pairing == "successive":
        dx = np.diff(x)
        num, den = dx[1:], dx[:-1]
    else:
        if x.size < 2 * min_tsep + 3:
            return np.empty(0)
        nn, _ = nearest_neighbours(x[:-1, None], min_tsep)
        i = np.flatnonzero(nn >= 0)
        num, den = x[nn[i] + 1] - x[i + 1], x[nn[i]] - x[i]
    ok = (num != 0) & (den != 0)
    return np.log(np.abs(num[ok] / den[ok]))
