"""Model evaluation speed: configurations per second, vectorised over numpy arrays, against a Python loop
over the same configurations (one predict() call each), measured in the same run; prints the ratio.

Configurations: τ log-spaced 1–400 ms, n = 1…10, β 0.1–100 MB, W_max 10 MB–∞ per flow, F 1 GB–∞,
C = 10 Gbit/s (a mix of Case 1 / Case 2, both subcases, with and without Phase I)."""

from __future__ import annotations

import math
import time

import numpy as np

from tcpprofile.models import make_model


def configs(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    tau = np.exp(rng.uniform(math.log(1e-3), math.log(0.4), count))
    n = rng.integers(1, 11, count).astype(float)
    beta = np.exp(rng.uniform(math.log(1e5), math.log(1e8), count))
    wmax = rng.choice([1e7, 1e8, 1e9, math.inf], count)
    size = rng.choice([1e9, 2e10, 1e11, math.inf], count)
    return tau, n, beta, wmax, size


def rate(fn, count: int, repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return count / best


def bench(variant: str, vector_count: int, loop_count: int) -> tuple[float, float]:
    model = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9)
    tau, n, beta, wmax, size = configs(vector_count)
    vec = rate(lambda: model.predict(tau, n=n, buffer=beta, wmax=wmax, size=size), vector_count)

    def loop():
        for i in range(loop_count):
            model.predict(tau[i], n=n[i], buffer=beta[i], wmax=wmax[i], size=size[i])

    # same answers either way
    one = [float(model.predict(tau[i], n=n[i], buffer=beta[i], wmax=wmax[i], size=size[i])) for i in range(20)]
    np.testing.assert_allclose(one, model.predict(tau[:20], n=n[:20], buffer=beta[:20], wmax=wmax[:20],
                                                  size=size[:20]), rtol=1e-9)
    return vec, rate(loop, loop_count)          # best of 3 both ways: like with like


def main() -> None:
    print(f"{'variant':>8} {'vectorised cfg/s':>17} {'loop cfg/s':>11} {'ratio':>8}")
    for variant, nvec, nloop in (("stcp", 1_000_000, 2000), ("cubic", 1_000_000, 2000), ("reno", 1_000_000, 2000),
                                 ("htcp", 20_000, 100)):
        vec, loop = bench(variant, nvec, nloop)
        print(f"{variant:>8} {vec:17.3g} {loop:11.3g} {vec / loop:8.0f}")
    print("closed forms: stcp, cubic, reno (numeric only where Phase I is empty); htcp: numeric throughout")


if __name__ == "__main__":
    main()
