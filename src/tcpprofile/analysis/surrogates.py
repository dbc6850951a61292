"""Surrogate-data tests: does a trace's structure differ from linear Gaussian noise with its spectrum?

A positive Lyapunov estimate alone does not prove chaos (correlated noise gives one too). We compare a
statistic of the trace against the same statistic on surrogates that keep the trace's amplitude
distribution and (approximately) its power spectrum but destroy nonlinear structure.

lyapunov_test / lyapunov_tests: the statistic is the Rosenstein exponent itself (same settings and
Theiler window as the trace's); one-sided p = (1 + #{surrogates with exponent ≥ the trace's, or
undetermined})/(n_surrogates + 1). surrogate_test: any statistic, by default the nonlinear prediction
error (lower = more deterministic).

Surrogate methods (registry SURROGATES):
  "iaaft": iterative amplitude-adjusted Fourier transform (Schreiber & Schmitz 1996).
  "phase": Fourier phase randomisation (Theiler et al. 1992; keeps the spectrum, not the distribution).
Statistic: nonlinear prediction error (zeroth-order, nearest-neighbour "method of analogues"), low when
the next value is a function of the recent past. p-value is rank-based and one-sided:
p = (1 + #{surrogates with error ≤ the trace's}) / (n_surrogates + 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError
from .lyapunov import Divergence, default_min_tsep, delay_embed, rosenstein_many


def phase_randomise(x, n: int, rng: np.random.Generator) -> np.ndarray:
    """n surrogates (n, len(x)) with the amplitude spectrum of x and uniform random phases."""
    x = np.asarray(x, dtype=float)
    spec = np.fft.rfft(x - x.mean())
    phases = rng.uniform(0, 2 * np.pi, size=(n, spec.size))
    phases[:, 0] = 0.0
    if x.size % 2 == 0:
        phases[:, -1] = 0.0  # the Nyquist term stays real
    return np.fft.irfft(np.abs(spec) * np.exp(1j * phases), n=x.size, axis=1) + x.mean()


def iaaft(x, n: int, rng: np.random.Generator, *, max_iter: int = 100, tol: float = 1e-3) -> np.ndarray:
    """n IAAFT surrogates (n, len(x)): exactly x's values, spectrum matched iteratively (Schreiber &
    Schmitz 1996). A surrogate stops when its rank order is unchanged or its spectral error
    Σ| |S_f| − |X_f| | / Σ|X_f| improved by less than the fraction tol (the ranks can cycle)."""
    return iaaft_block(np.asarray(x, dtype=float)[None, :], n, rng, max_iter=max_iter, tol=tol)[0]


def iaaft_block(X, n: int, rng: np.random.Generator, *, max_iter: int = 100, tol: float = 1e-3) -> np.ndarray:
    """iaaft for R traces of equal length at once: X (R, N) -> (R, n, N)."""
    X = np.asarray(X, dtype=float)
    R, N = X.shape
    owner = np.repeat(np.arange(R), n)                   # surrogate row -> its trace
    amp = np.abs(np.fft.rfft(X, axis=1))[owner]
    total = np.maximum(amp[:, 1:].sum(axis=1), np.finfo(float).tiny)
    sorted_x = np.sort(X, axis=1)[owner]
    s = rng.permuted(X[owner], axis=1)
    order = np.argsort(s, axis=1)
    err = np.full(owner.size, np.inf)
    live = np.arange(owner.size)
    for _ in range(max_iter):
        spec = np.fft.rfft(s[live], axis=1)
        mag = np.abs(spec)
        e = np.abs(mag[:, 1:] - amp[live, 1:]).sum(axis=1) / total[live]
        keep = e < err[live] * (1 - tol)
        err[live] = e
        live, spec, mag = live[keep], spec[keep], mag[keep]
        if not live.size:
            break
        phase = np.where(mag > 0, spec / np.where(mag > 0, mag, 1.0), 1.0)
        t = np.fft.irfft(amp[live] * phase, n=N, axis=1)   # impose the spectrum, then the values:
        new = np.argsort(t, axis=1)
        out = np.empty_like(t)
        np.put_along_axis(out, new, sorted_x[live], axis=1)  # the q-th smallest of t gets the q-th of x
        s[live] = out
        moved = np.any(new != order[live], axis=1)
        order[live] = new
        live = live[moved]
        if not live.size:
            break
    return s.reshape(R, n, N)


SURROGATES: dict[str, Callable] = {"iaaft": iaaft, "phase": phase_randomise}


def prediction_error(x, *, emb_dim: int = 2, n_neighbours: int = 4, min_tsep: int = 1) -> float:
    """Normalised one-step nonlinear prediction error: predict x_{i+1} from the mean successor of the
    n_neighbours nearest delay vectors (at least min_tsep steps away); RMS error / std(x)."""
    x = np.asarray(x, dtype=float)
    sd = x.std()
    if sd == 0:
        return 0.0
    z = (x - x.mean()) / sd
    emb = delay_embed(z[:-1], emb_dim)               # vector ending at i predicts z[i + 1]
    target = z[emb_dim:]
    m = emb.shape[0]
    if m < n_neighbours + 2 * min_tsep + 2:
        raise ValidationError("x", f"trace too short ({x.size} points) for the prediction error")
    d = ((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1)
    i = np.arange(m)
    d[np.abs(i[:, None] - i[None, :]) <= min_tsep] = np.inf
    nb = np.argpartition(d, n_neighbours - 1, axis=1)[:, :n_neighbours]
    pred = target[nb].mean(axis=1)
    return float(np.sqrt(np.mean((pred - target) ** 2)))


@dataclass(frozen=True)
class SurrogateTest:
    statistic: float
    surrogate_statistics: np.ndarray
    p_value: float
    alpha: float

    @property
    def distinguishable(self) -> bool:
        """True when the trace is more predictable than its surrogates at level alpha."""
        return self.p_value <= self.alpha


def surrogate_test(x, *, n_surrogates: int = 39, method: str = "iaaft", alpha: float = 0.05,
                   statistic: Callable[[np.ndarray], float] = prediction_error, seed=None) -> SurrogateTest:
    """Rank test of statistic(x) against statistic on n_surrogates surrogates (one-sided: the trace's
    statistic is expected to be lower). The smallest attainable p is 1/(n_surrogates + 1)."""
    if method not in SURROGATES:
        raise ValidationError("method", f"one of {', '.join(SURROGATES)}, got {method!r}")
    if n_surrogates < 1:
        raise ValidationError("n_surrogates", "must be >= 1")
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    stat = statistic(x)
    surr = np.array([statistic(s) for s in SURROGATES[method](x, n_surrogates, rng)])
    p = (1 + np.sum(surr <= stat)) / (n_surrogates + 1)
    return SurrogateTest(float(stat), surr, float(p), alpha)


@dataclass(frozen=True)
class LyapunovTest:
    """A trace's largest exponent with its p-value against IAAFT surrogates."""
    divergence: Divergence              # the trace's estimate (status, exponent, curve)
    surrogate_exponents: np.ndarray     # one per surrogate; nan where undetermined
    p_value: float | None               # None: not tested (status not "estimated", or no surrogates)
    alpha: float

    @property
    def status(self) -> str:
        return self.divergence.status

    @property
    def exponent(self) -> float | None:
        return self.divergence.exponent

    @property
    def distinguishable(self) -> bool:
        """True when the exponent is larger than its surrogates' at level alpha (not noise-like)."""
        return self.p_value is not None and self.p_value <= self.alpha


def lyapunov_tests(xs, *, n_surrogates: int = 19, alpha: float = 0.05, seed=None, emb_dim: int = 3,
                   lag: int = 1, min_tsep=None, trajectory_len: int = 10, fit_offset: int | None = None,
                   max_iter: int = 100) -> list[LyapunovTest]:
    """lyapunov_test for many traces: IAAFT surrogates per trace, then one batched Rosenstein over the
    traces and all their surrogates (each surrogate with its trace's Theiler window)."""
    if n_surrogates < 0:
        raise ValidationError("n_surrogates", "must be >= 0")
    if not 0 < alpha < 1:
        raise ValidationError("alpha", f"must be in (0, 1), got {alpha!r}")
    xs = [np.asarray(x, dtype=float).ravel() for x in xs]
    w = ([default_min_tsep(x) if x.size else 1 for x in xs] if min_tsep is None
         else list(np.broadcast_to(np.asarray(min_tsep, dtype=int), (len(xs),))))
    kw = dict(emb_dim=emb_dim, lag=lag, trajectory_len=trajectory_len, fit_offset=fit_offset)
    est = rosenstein_many(xs, min_tsep=w, **kw)
    rng = np.random.default_rng(seed)
    todo = [b for b, d in enumerate(est) if d.status == "estimated"] if n_surrogates else []
    surr, ws = {}, []
    by_len: dict[int, list[int]] = {}
    for b in todo:
        by_len.setdefault(xs[b].size, []).append(b)
    for size, bs in sorted(by_len.items()):            # equal lengths share one IAAFT block
        block = iaaft_block(np.stack([xs[b] for b in bs]), n_surrogates, rng, max_iter=max_iter)
        surr.update({b: block[r] for r, b in enumerate(bs)})
    surr = [row for b in todo for row in surr[b]]
    ws = [w[b] for b in todo for _ in range(n_surrogates)]
    flat = rosenstein_many(surr, min_tsep=ws, **kw) if surr else []
    out, pos = [], 0
    for b, d in enumerate(est):
        if todo and pos < len(todo) * n_surrogates and b == todo[pos // n_surrogates]:
            ds = flat[pos:pos + n_surrogates]
            pos += n_surrogates
            e = np.array([np.nan if s.exponent is None else s.exponent for s in ds])
            p = (1 + np.sum(~(e < d.exponent))) / (n_surrogates + 1)   # nan (undetermined) counts against
            out.append(LyapunovTest(d, e, float(p), alpha))
        else:
            out.append(LyapunovTest(d, np.empty(0), None, alpha))
    return out


def lyapunov_test(x, **kwargs) -> LyapunovTest:
    """Rosenstein exponent of x (see lyapunov.rosenstein; trajectory_len 10 here) against the same
    estimate on n_surrogates (default 19, so p ≥ 0.05) IAAFT surrogates; see lyapunov_tests."""
    return lyapunov_tests([x], **kwargs)[0]
