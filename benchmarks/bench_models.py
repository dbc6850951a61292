"""Model evaluation speed: configurations per second, vectorised over numpy arrays, against a Python loop
over the same configurations (one predict() call each), measured in the same run; prints the ratio.
H-TCP is tabulated (models/htcp_table.py); its exact path (bisection of Eq. (8)) is measured in the same
run as a second baseline, with the table's build time and its largest error against the exact path.
Duration mode (8 s) and periodic 1-in-500 loss are measured on the same configurations.

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


def bench(variant: str, vector_count: int, loop_count: int, **params) -> tuple[float, float]:
    model = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, **params)
    tau, n, beta, wmax, size = configs(vector_count)
    model.predict(tau[:10], n=n[:10], buffer=beta[:10], wmax=wmax[:10], size=size[:10])  # builds a table once
    vec = rate(lambda: model.predict(tau, n=n, buffer=beta, wmax=wmax, size=size), vector_count)

    def loop():
        for i in range(loop_count):
            model.predict(tau[i], n=n[i], buffer=beta[i], wmax=wmax[i], size=size[i])

    # same answers either way
    one = [float(model.predict(tau[i], n=n[i], buffer=beta[i], wmax=wmax[i], size=size[i])) for i in range(20)]
    np.testing.assert_allclose(one, model.predict(tau[:20], n=n[:20], buffer=beta[:20], wmax=wmax[:20],
                                                  size=size[:20]), rtol=1e-9)
    return vec, rate(loop, loop_count)          # best of 3 both ways: like with like


def bench_mode(variant: str, count: int, **kw) -> float:
    model = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=8948)
    tau, n, beta, wmax, _ = configs(count)
    return rate(lambda: model.predict(tau, n=n, buffer=beta, wmax=wmax, **kw), count)


def main() -> None:
    from tcpprofile.models import htcp_table

    htcp_table.table.cache_clear()
    t0 = time.perf_counter()
    make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9).predict(0.01)
    build = time.perf_counter() - t0
    print(f"{'variant':>14} {'vectorised cfg/s':>17} {'baseline cfg/s':>15} {'ratio':>8}  baseline")
    exact, _ = bench("htcp", 20_000, 10, tabulated=False)
    for variant, nvec, nloop in (("stcp", 1_000_000, 2000), ("cubic", 1_000_000, 2000), ("reno", 1_000_000, 2000),
                                 ("htcp", 1_000_000, 1000)):
        vec, loop = bench(variant, nvec, nloop)
        print(f"{variant:>14} {vec:17.3g} {loop:15.3g} {vec / loop:8.0f}  python loop")
        if variant == "htcp":
            print(f"{'htcp':>14} {vec:17.3g} {exact:15.3g} {vec / exact:8.0f}  exact path (bisection of Eq. (8))")
    for variant in ("cubic", "htcp"):
        base = bench_mode(variant, 200_000, size=math.inf)
        dur = bench_mode(variant, 200_000, duration=8.0)
        loss = bench_mode(variant, 20_000, size=math.inf, loss=1 / 500)
        print(f"{variant + ' -t 8s':>14} {dur:17.3g} {base:15.3g} {dur / base:8.2f}  size mode, same configurations")
        print(f"{variant + ' loss':>14} {loss:17.3g} {base:15.3g} {loss / base:8.2f}  clean, same configurations")
    tab = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9)
    ex = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9, tabulated=False)
    tau, n, beta, wmax, size = configs(20_000, seed=1)
    err = np.abs(tab.predict(tau, n=n, buffer=beta, wmax=wmax, size=size)
                 / ex.predict(tau, n=n, buffer=beta, wmax=wmax, size=size) - 1)
    print(f"htcp table: built in {build:.2f} s; throughput vs exact path: max {err.max():.2%}, "
          f"99th percentile {np.quantile(err, 0.99):.3%} over 20,000 configurations")
    print("closed forms: stcp, cubic, reno (numeric only where Phase I is empty); htcp: tabulated W_m; "
          "loss: the loss-limited epoch is solved numerically (Illinois regula falsi)")


if __name__ == "__main__":
    main()
