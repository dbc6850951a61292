"""Largest Lyapunov exponent of a scalar trace after Rosenstein, Collins & De Luca (1993), fitted where
the divergence grows beyond the noise floor; and the paper's local estimate (HPDC'17 §4.1).

Units: exponents are per sample step (per second for iperf3's 1 s intervals).

Result: every estimate is a `Divergence` whose `status` says what it is —
  "estimated":    `exponent` is the slope of the mean log divergence (a float);
  "periodic":     the trace recurs exactly (constant, or nearest neighbours that stay within
                  1e-9 standard deviations for the whole trajectory): nothing diverges; `exponent` = 0.0,
                  an upper bound (an exactly periodic orbit has a non-positive exponent);
  "undetermined": the trace is shorter than `min_length` needs (or leaves fewer than 2 finite points to
                  fit): `exponent` is None, never a number.

Noise floor: the nearest neighbour of a noisy state is the closest of many candidates, so the first step
k = 0 → 1 jumps from that minimum to the typical noise distance even when nothing diverges (a period-4
orbit with 1 % noise: ≈ 2.5 nats). The fit therefore starts at k = fit_offset = (emb_dim − 1)·lag + 1
(the first steps also share coordinates with the chosen pair), and ends where the curve has covered 60 %
of its rise to saturation — but only when that rise is significant (more than 3 standard errors of the
level difference and more than RISE_MIN nats); otherwise the curve is flat at the noise floor and the
slope is taken over every k ≥ fit_offset (≈ 0). Whether a positive exponent is more than
linear correlated noise is the surrogate test's job (surrogates.lyapunov_test).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..errors import ValidationError

STATUSES = ("estimated", "periodic", "undetermined")
RECURRENCE = 1e-9     # distances below this × the trace's std are exact recurrences
RISE_MIN = 0.5        # nats: a smaller rise of the divergence curve is within the noise floor
_BLOCK = 2_000_000    # elements per dense distance block (traces × vectors × vectors)
_SEARCH_DTYPE = np.float32
_KDTREE_MIN = 700     # a trace with at least this many neighbour candidates uses a KD-tree


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


def default_min_tsep(x) -> int:
    """Theiler window: the mean period, rounded, at most a quarter of the trace, at least 1."""
    x = np.asarray(x, dtype=float)
    return max(1, min(int(round(mean_period(x))), x.size // 4))


def min_length(emb_dim: int, lag: int, min_tsep: int, trajectory_len: int) -> int:
    """Shortest trace Rosenstein can use: one embedded vector, a trajectory_len-step trajectory, and
    2·min_tsep + 1 vectors so every vector has a neighbour outside the window (nolds.lyap_r_len)."""
    return (emb_dim - 1) * lag + 1 + trajectory_len - 1 + 2 * min_tsep + 1


def nearest_neighbours(points: np.ndarray, min_tsep: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row i its nearest other row j with |i − j| > min_tsep (Euclidean; exact, KD-tree).
    Returns (index, distance); index −1 where no row qualifies."""
    points = np.asarray(points, dtype=float)
    n = points.shape[0]
    idx, dist = np.full(n, -1), np.full(n, np.inf)
    if n <= 2 * min_tsep + 1:
        return idx, dist
    tree = cKDTree(points)
    todo, k = np.arange(n), min(n, 8)
    while todo.size:   # 2·min_tsep + 2 candidates always include one outside the window
        d, j = tree.query(points[todo], k=k)
        ok = (np.abs(j - todo[:, None]) > min_tsep) & np.isfinite(d)
        first = ok.argmax(axis=1)
        found = ok[np.arange(todo.size), first]
        idx[todo[found]] = j[found, first[found]]
        dist[todo[found]] = d[found, first[found]]
        todo, k = todo[~found], min(n, 2 * k)
    return idx, dist


@dataclass(frozen=True)
class Divergence:
    """Rosenstein's mean log divergence y(k) = ⟨ln d_j(k)⟩_j, the fitted slope and what it means."""
    status: str                 # "estimated" | "periodic" | "undetermined" (see module docstring)
    exponent: float | None      # per step; None iff undetermined
    k: np.ndarray
    y: np.ndarray               # nan where every pair recurred exactly (or undetermined)
    fit_range: tuple[int, int]  # [k0, k1) the slope was fitted on
    min_tsep: int
    grows: bool                 # the curve rose significantly above its k = fit_offset level


# -- the batch core: traces padded into one block, neighbours by a Gram-matrix argmin ------------------
def _neighbours_dense(Z: np.ndarray, T: np.ndarray, w: np.ndarray, m: int, lag: int) -> np.ndarray:
    """Nearest-neighbour index among the first T_b embedded vectors of each padded row of Z, excluding
    |i − j| ≤ w_b. d² = |a|² + |b|² − 2a·b by one batched matmul (Z is standardised, so no cancellation
    that matters for the argmin); columns j ≥ T_b are set to inf after the product."""
    B, Tm = Z.shape[0], int(T.max())
    left = np.ones((B, Tm, m + 2), dtype=_SEARCH_DTYPE)                          # [a, |a|², 1]
    right = np.ones((B, m + 2, Tm), dtype=_SEARCH_DTYPE)                         # [−2b, 1, |b|²]
    for c in range(m):
        left[:, :, c] = Z[:, c * lag:c * lag + Tm]
    E = left[:, :, :m]
    sq = np.einsum("btc,btc->bt", E, E)
    left[:, :, m] = sq
    right[:, :m, :] = -2 * E.transpose(0, 2, 1)
    right[:, m + 1, :] = sq
    d2 = left @ right                                                          # (B, Tm, Tm)
    i = np.arange(Tm)
    # columns j ≥ T_b are no candidates: set after the product (an inf inside it meets BLAS's zero padding
    # on some CPUs: 0·inf = nan, which argmin would pick)
    np.copyto(d2, np.inf, where=i[None, None, :] >= T[:, None, None])
    band = np.abs(i[:, None] - i[None, :])
    np.copyto(d2, np.inf, where=band[None] <= w[:, None, None])               # Theiler window
    return d2.argmin(axis=2)


def _neighbours_tree(z: np.ndarray, T: int, w: int, m: int, lag: int) -> np.ndarray:
    nn, _ = nearest_neighbours(delay_embed(z, m, lag)[:T], w)
    return nn


def _follow(Z, nn, T, m, lag, L, tol):
    """Log distances of each pair followed for L steps → (sum, sum of squares, count) of the finite
    logs per k, and the number of pairs that recur exactly at every k. One gather of the scalar
    differences z_{i+s} − z_{j+s}, s < L + (m−1)·lag; the embedded distance at k sums s = k + c·lag."""
    B, Tm = nn.shape
    S = L + (m - 1) * lag
    s = np.arange(S)
    N = Z.shape[1]
    base = (np.arange(B) * N)[:, None, None]
    a = base + np.minimum(np.arange(Tm)[None, :, None] + s, N - 1)           # flat indices (B, Tm, S)
    b = base + np.minimum(nn[:, :, None] + s, N - 1)
    flat = Z.ravel()
    diff = flat.take(a) - flat.take(b)
    sq = diff * diff
    d2 = sq[..., :L].copy()
    for c in range(1, m):
        d2 += sq[..., c * lag:c * lag + L]
    valid = (np.arange(Tm)[None, :] < T[:, None])[..., None]                 # (B, Tm, 1)
    zero = d2 <= tol * tol
    use = valid & ~zero
    logd = 0.5 * np.log(np.where(use, d2, 1.0))
    recurrent = (zero.all(axis=2) & valid[..., 0]).sum(axis=1)
    return logd.sum(axis=1), (logd * logd).sum(axis=1), use.sum(axis=1), recurrent


def _divergence_batch(xs: list[np.ndarray], w: np.ndarray, m: int, lag: int, L: int):
    """Mean log divergence of every trace (lengths may differ) → y, se (B, L), recurrent fraction (B,),
    determined (B,) and constant (B,). Traces are standardised; ln(std) is added back to y."""
    B = len(xs)
    n = np.array([x.size for x in xs])
    T = n - (m - 1) * lag - L + 1
    det = T >= 2 * w + 2
    flat = np.concatenate(xs) if B else np.empty(0)
    starts = np.r_[0, np.cumsum(n)[:-1]].astype(int)
    nz = np.maximum(n, 1)
    mu = np.add.reduceat(flat, starts) / nz if flat.size else np.zeros(B)
    mu = np.where(n > 0, mu, 0.0)
    dev = flat - np.repeat(mu, n)
    sd = np.sqrt(np.add.reduceat(dev * dev, starts) / nz) if flat.size else np.zeros(B)
    sd = np.where(n > 0, sd, 0.0)
    const = sd <= 1e-12 * np.abs(mu)
    y, se = np.full((B, L), np.nan), np.full((B, L), np.nan)
    frac = np.zeros(B)
    todo = np.flatnonzero(det & ~const)
    todo = todo[np.argsort(n[todo], kind="stable")]            # similar lengths share a block
    pos = 0
    while pos < todo.size:
        if T[todo[pos]] >= _KDTREE_MIN:
            sel = todo[pos:pos + 1]
        else:   # sorted by length: the largest block whose biggest trace keeps it under _BLOCK
            Tr = T[todo[pos:]].astype(float)
            fits = (np.arange(1, Tr.size + 1) * Tr * Tr <= _BLOCK) & (Tr < _KDTREE_MIN)
            sel = todo[pos:pos + max(1, int(np.argmin(fits)) if not fits.all() else Tr.size)]
        pos += sel.size
        N = int(n[sel].max())
        Z = np.zeros((sel.size, N))
        for r, b in enumerate(sel):
            Z[r, :n[b]] = dev[starts[b]:starts[b] + n[b]]
        Z /= sd[sel][:, None]
        if sel.size == 1 and T[sel[0]] >= _KDTREE_MIN:
            nn = _neighbours_tree(Z[0], int(T[sel[0]]), int(w[sel[0]]), m, lag)[None, :]
        else:
            nn = _neighbours_dense(Z, T[sel], w[sel], m, lag)
        s, s2, cnt, rec = _follow(Z, nn, T[sel], m, lag, L, RECURRENCE)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = s / cnt
            var = np.maximum(s2 / cnt - mean * mean, 0.0) * cnt / np.maximum(cnt - 1, 1)
            y[sel] = np.where(cnt > 0, mean + np.log(sd[sel])[:, None], np.nan)
            se[sel] = np.where(cnt > 1, np.sqrt(var / cnt), np.nan)
        frac[sel] = rec / T[sel]
    return y, se, frac, det, const


def _fit(y, se, fit_range, fit_offset):
    """Least-squares slope of each row of y on k over its fit range (see module docstring)."""
    B, L = y.shape
    k = np.arange(L)
    fin = np.isfinite(y)
    grows = np.zeros(B, bool)
    if fit_range is not None:
        lo, hi = np.full(B, fit_range[0]), np.full(B, fit_range[1])
    else:
        lo = np.full(B, min(fit_offset, L - 1))
        tail = k >= max(fit_offset + 1, L - max(2, L // 3))
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)       # all-nan rows: nanmean warns
            y0 = y[:, lo[0]]
            sat = np.nanmean(np.where(tail & fin, y, np.nan), axis=1)
            se_rise = np.sqrt(se[:, lo[0]] ** 2 + np.nanmean(np.where(tail, se, np.nan) ** 2, axis=1))
            rise = sat - y0
            grows = np.isfinite(rise) & (rise > 3 * np.nan_to_num(se_rise, nan=np.inf)) & (rise > RISE_MIN)
            reach = (k[None, :] >= lo[:, None]) & fin & (y >= (y0 + 0.6 * rise)[:, None])
        end = np.where(reach.any(axis=1), reach.argmax(axis=1) + 1, L)
        hi = np.where(grows, np.maximum(end, lo + 3), L)
    sel = (k[None, :] >= lo[:, None]) & (k[None, :] < hi[:, None]) & fin
    cnt = sel.sum(axis=1)
    kk = np.where(sel, k[None, :], 0.0)
    yy = np.where(sel, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        kbar, ybar = kk.sum(1) / cnt, yy.sum(1) / cnt
        kc = np.where(sel, k[None, :] - kbar[:, None], 0.0)
        slope = (kc * (yy - ybar[:, None])).sum(1) / (kc * kc).sum(1)   # least-squares slope of y on k
    return np.where(cnt >= 2, slope, np.nan), lo, hi, grows


def rosenstein_many(xs: Sequence, *, emb_dim: int = 3, lag: int = 1, min_tsep=None, trajectory_len: int = 20,
                    fit_range: tuple[int, int] | None = None, fit_offset: int | None = None) -> list[Divergence]:
    """rosenstein() for many traces at once (lengths may differ; min_tsep: None = each trace's
    default_min_tsep, an int, or one per trace). Same results as calling rosenstein on each."""
    if emb_dim < 1 or lag < 1:
        raise ValidationError("emb_dim", f"emb_dim and lag must be >= 1, got {emb_dim}, {lag}")
    if trajectory_len < 2:
        raise ValidationError("trajectory_len", f"must be >= 2, got {trajectory_len}")
    if fit_range is not None and not (0 <= fit_range[0] < fit_range[1] <= trajectory_len):
        raise ValidationError("fit_range", f"need 0 <= k0 < k1 <= trajectory_len, got {fit_range}")
    if fit_offset is None:
        fit_offset = min((emb_dim - 1) * lag + 1, trajectory_len - 2)
    if not 0 <= fit_offset < trajectory_len - 1:
        raise ValidationError("fit_offset", f"must be in [0, trajectory_len − 1), got {fit_offset}")
    xs = [np.asarray(x, dtype=float).ravel() for x in xs]
    if not xs:
        return []
    if not np.isfinite(np.concatenate(xs)).all():
        raise ValidationError("x", "traces must be finite")
    if min_tsep is None:
        w = np.array([default_min_tsep(x) if x.size else 1 for x in xs])
    else:
        w = np.broadcast_to(np.asarray(min_tsep, dtype=int), (len(xs),)).copy()
        if np.any(w < 0):
            raise ValidationError("min_tsep", "must be >= 0")
    L = trajectory_len
    y, se, frac, det, const = _divergence_batch(xs, w, emb_dim, lag, L)
    slope, lo, hi, grows = _fit(y, se, fit_range, fit_offset)
    out, ks = [], np.arange(L)
    for b in range(len(xs)):
        rng = (int(lo[b]), int(hi[b]))
        if not det[b]:
            out.append(Divergence("undetermined", None, ks, y[b], rng, int(w[b]), False))
        elif const[b] or frac[b] > 0.5:
            out.append(Divergence("periodic", 0.0, ks, y[b], rng, int(w[b]), False))
        elif not np.isfinite(slope[b]):
            out.append(Divergence("undetermined", None, ks, y[b], rng, int(w[b]), bool(grows[b])))
        else:
            out.append(Divergence("estimated", float(slope[b]), ks, y[b], rng, int(w[b]), bool(grows[b])))
    return out


def rosenstein(x, *, emb_dim: int = 3, lag: int = 1, min_tsep: int | None = None, trajectory_len: int = 20,
               fit_range: tuple[int, int] | None = None, fit_offset: int | None = None) -> Divergence:
    """Largest Lyapunov exponent after Rosenstein, Collins & De Luca (1993).

    Delay-embed x; pair each of the first N − (emb_dim−1)·lag − trajectory_len + 1 vectors with its
    nearest neighbour more than min_tsep steps away (Theiler window; default: the mean period, at most
    N/4); follow both for trajectory_len steps; y(k) = mean over pairs of ln‖Y_{i+k} − Y_{j+k}‖ (exact
    recurrences left out); exponent = least-squares slope of y on k over fit_range = [k0, k1) (default:
    from fit_offset to the end of significant growth, see the module docstring). With
    fit_range=(0, trajectory_len) it is nolds.lyap_r(..., fit="poly"). Short traces: "undetermined".
    """
    return rosenstein_many([x], emb_dim=emb_dim, lag=lag, min_tsep=min_tsep, trajectory_len=trajectory_len,
                           fit_range=fit_range, fit_offset=fit_offset)[0]


def lyap_rosenstein(x, **kwargs) -> float | None:
    """The exponent of rosenstein(x, **kwargs) [per step]; None when undetermined."""
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
