"""Surrogate-data test: does a trace's structure differ from linear Gaussian noise with its spectrum?

A positive Lyapunov estimate alone does not prove chaos (noise gives one too). We compare a
discriminating statistic of the trace against the same statistic on surrogates that keep the trace's
amplitude distribution and (approximately) its power spectrum but destroy nonlinear structure.

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
from .lyapunov import delay_embed


def phase_randomise(x, n: int, rng: np.random.Generator) -> np.ndarray:
    """n surrogates (n, len(x)) with the amplitude spectrum of x and uniform random phases."""
    x = np.asarray(x, dtype=float)
    spec = np.fft.rfft(x - x.mean())
    phases = rng.uniform(0, 2 * np.pi, size=(n, spec.size))
    phases[:, 0] = 0.0
    if x.size % 2 == 0:
        phases[:, -1] = 0.0  # the Nyquist term stays real
    return np.fft.irfft(np.abs(spec) * np.exp(1j * phases), n=x.size, axis=1) + x.mean()


def iaaft(x, n: int, rng: np.random.Generator, *, max_iter: int = 200) -> np.ndarray:
    """n IAAFT surrogates (n, len(x)): exactly x's values, spectrum matched iteratively (all n at once)."""
    x = np.asarray(x, dtype=float)
    amp = np.abs(np.fft.rfft(x))
    sorted_x = np.sort(x)
    s = rng.permuted(np.broadcast_to(x, (n, x.size)), axis=1)
    ranks = np.argsort(np.argsort(s, axis=1), axis=1)
    for _ in range(max_iter):
        spec = np.fft.rfft(s, axis=1)
        s = np.fft.irfft(amp * np.exp(1j * np.angle(spec)), n=x.size, axis=1)
        new = np.argsort(np.argsort(s, axis=1), axis=1)
        s = sorted_x[new]
        if np.array_equal(new, ranks):
            break
        ranks = new
    return s


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
