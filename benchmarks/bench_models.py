"""Model evaluation speed: configurations per second, vectorised over numpy arrays, against a Python loop
over the same configurations (one predict() call each), measured in the same run; prints the ratio.
H-TCP is tabulated (models/htcp_table.py); its exact path (bisection of Eq. (8)) is measured in the same
run as a second baseline, with the table's build time and its largest error against the exact path.

Modes, every variant, on the same configurations, each against the clean-link size mode measured in the same
run: duration mode (8 s); size mode of 10 GB as iperf3's receiver reports it (receiver_report, queue_fill: what
model fit predicts for -n runs), and the same with the trajectory after slow start (trajectory, H-TCP's
rtt_scaling and flows_phase2, Reno's flows_phase2: models/configurations.py; models/trajectory.py) in size mode
(10 GB) and duration mode (8 s), also in the configurations ss-burst-buffer and ss-trains; ss-trains
(DEFAULT_CONFIGURATION, what model fit, select --extrapolate and the report use) in every mode below too, its rows
marked "[default]", and single-flow (ss-trains with slow start's two outcomes: CUBIC's HyStart, H-TCP's
second event after a bandwidth sample) in size and duration mode; external loss, periodic 1 in 500 and uniform p = 10⁻⁴ (taken at its mean
N = 1/p), in size mode (F = ∞: the steady state) and in duration mode (8 s: slow start, the transient,
then the steady state). The loss-limited epoch has a closed form (STCP, Reno, CUBIC; H-TCP below Cτ) and
is solved numerically elsewhere; the reference path (exact_loss = True: every epoch solved numerically;
H-TCP also untabulated) is measured in the same run, with the fast path's error against it.

Configurations: τ log-spaced 1–400 ms, n = 1…10, β 0.1–100 MB, W_max 10 MB–∞ per flow, F 1 GB–∞,
C = 10 Gbit/s (a mix of Case 1 / Case 2, both subcases, with and without Phase I).

A subset: --variant NAME (repeatable) and --configuration NAME (repeatable: only the clean size mode, the
baseline of the ratios, and the named configurations' rows in every mode of DEFAULT_MODES), --rate BIT/S (the
subset's C, default 10e9: e.g. 5e9, where trains-by-rate's and burst-by-rate's tables take their 5 Gbit/s values and
burst-by-rate evaluates CUBIC's second outcome)."""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from tcpprofile.models import make_model
from tcpprofile.models.configurations import (DEFAULT_CONFIGURATION, configuration, model_parameters,
                                              variant_parameters)


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


def bench_mode(variant: str, count: int, exact: bool = False, report: bool = False, trajectory: str | None = None,
               capacity_bps: float = 10e9, **kw) -> float:
    """trajectory: the name of a model configuration (`model fit --configuration NAME`), or None: the plain model;
    capacity_bps: the link's C (--rate: where a configuration's by-rate tables take another value)."""
    model = mode_model(variant, exact).set_params(receiver_report=report, queue_fill=report, capacity_bps=capacity_bps)
    if trajectory:  # e.g. 'trajectory': H-TCP rtt_scaling, flows_phase2; Reno flows_phase2; 'ss-trains' the trains
        params, per_variant = configuration(trajectory)
        model.set_params(**model_parameters(params), **variant_parameters(variant, per_variant, lossy="loss" in kw))
    tau, n, beta, wmax, _ = configs(count)
    return rate(lambda: model.predict(tau, n=n, buffer=beta, wmax=wmax, **kw), count)


def mode_model(variant: str, exact: bool = False):
    extra = {"tabulated": False} if exact and variant == "htcp" else {}
    model = make_model(variant, buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=8948, **extra)
    model.exact_loss = exact
    model.predict(0.01, loss=1e-3)  # builds a table once
    return model


LOSS_MODES = (("periodic 1/500", dict(size=math.inf, loss=1 / 500)),
              ("periodic -t 8s", dict(duration=8.0, loss=1 / 500)),
              ("uniform 1e-4", dict(size=math.inf, loss=1e-4)),
              ("uniform -t 8s", dict(duration=8.0, loss=1e-4)))
# every mode the default configuration is measured in: clean (F = ∞), as model fit predicts -n and -t runs, and
# the loss modes (what model fit fits for runs on lossy links)
DEFAULT_MODES = (("clean", dict(size=math.inf)), ("-n 10GB", dict(size=1e10)), ("-t 8s", dict(duration=8.0)),
                 *LOSS_MODES)


def loss_error(variant: str, count: int = 20_000, tabulated: bool = True) -> tuple[float, float]:
    """Max and 99th percentile of |fast/exact − 1| in throughput over `count` configurations × LOSS_MODES;
    tabulated=False: H-TCP's reference also solves W_m exactly (the table's error is included)."""
    fast, exact = mode_model(variant), mode_model(variant, exact=True)
    if variant == "htcp":
        exact.set_params(tabulated=tabulated)
    tau, n, beta, wmax, _ = configs(count, seed=1)
    err = np.concatenate([np.abs(fast.predict(tau, n=n, buffer=beta, wmax=wmax, **kw)
                                 / exact.predict(tau, n=n, buffer=beta, wmax=wmax, **kw) - 1)
                          for _, kw in LOSS_MODES])
    return float(err.max()), float(np.quantile(err, 0.99))


VARIANTS = ("stcp", "reno", "cubic", "htcp")


def subset(variants, configurations, capacity_bps: float = 10e9) -> None:
    """The clean size mode (the ratios' baseline) and each configuration's rows, per variant, in one process; the
    configurations of one mode measured one after the other (a shared host's load drifts less between them)."""
    print(f"{'variant, mode':>34} {'cfg/s':>10} {'baseline cfg/s':>15} {'ratio':>6}  baseline (same configurations)")
    for variant in variants:
        base = bench_mode(variant, 200_000, capacity_bps=capacity_bps, size=math.inf)
        print(f"{variant + ' clean':>34} {base:10.3g}")
        for mode, kw in DEFAULT_MODES:
            for cfg in configurations:
                tra = bench_mode(variant, 200_000, report=True, trajectory=cfg, capacity_bps=capacity_bps, **kw)
                print(f"{f'{variant} {mode} {cfg}':>34} {tra:10.3g} {base:15.3g} {tra / base:6.2f}  clean, size mode")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", action="append", choices=VARIANTS, help="only this variant (repeatable)")
    p.add_argument("--configuration", action="append", metavar="NAME",
                   help="only the clean baseline and this configuration's rows (repeatable)")
    p.add_argument("--rate", type=float, default=10e9, metavar="BIT/S", help="the subset's link capacity C")
    args = p.parse_args(argv)
    if args.variant or args.configuration or args.rate != 10e9:
        subset(args.variant or VARIANTS, args.configuration or [DEFAULT_CONFIGURATION], args.rate)
        return
    from tcpprofile.models import htcp_table

    htcp_table.table.cache_clear()
    t0 = time.perf_counter()
    make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9).predict(0.01)
    build = time.perf_counter() - t0
    print(f"{'variant':>14} {'vectorised cfg/s':>17} {'baseline cfg/s':>15} {'ratio':>8}  baseline")
    ref, _ = bench("htcp", 20_000, 10, tabulated=False)
    for variant, nvec, nloop in (("stcp", 1_000_000, 2000), ("cubic", 1_000_000, 2000), ("reno", 1_000_000, 2000),
                                 ("htcp", 1_000_000, 1000)):
        vec, loop = bench(variant, nvec, nloop)
        print(f"{variant:>14} {vec:17.3g} {loop:15.3g} {vec / loop:8.0f}  python loop")
        if variant == "htcp":
            print(f"{'htcp':>14} {vec:17.3g} {ref:15.3g} {vec / ref:8.0f}  exact path (bisection of Eq. (8))")
    print(f"{'variant, mode':>22} {'cfg/s':>10} {'baseline cfg/s':>15} {'ratio':>6}  baseline (same configurations)")
    for variant in VARIANTS:
        base = bench_mode(variant, 200_000, size=math.inf)
        print(f"{variant + ' clean':>22} {base:10.3g}")
        dur = bench_mode(variant, 200_000, duration=8.0)
        print(f"{variant + ' -t 8s':>22} {dur:10.3g} {base:15.3g} {dur / base:6.2f}  clean, size mode")
        rep = bench_mode(variant, 200_000, report=True, size=1e10)  # iperf3 -n as model fit predicts it
        print(f"{variant + ' -n 10GB rcv':>22} {rep:10.3g} {base:15.3g} {rep / base:6.2f}  clean, size mode")
        for name, cfg, kw in (("-n 10GB traj", "trajectory", {"size": 1e10}), ("-t 8s traj", "trajectory", {"duration": 8.0}),
                              ("-n 10GB ss-burst-buffer", "ss-burst-buffer", {"size": 1e10}),
                              ("-t 8s ss-burst-buffer", "ss-burst-buffer", {"duration": 8.0}),
                              ("-n 10GB single-flow", "single-flow", {"size": 1e10}),
                              ("-t 8s single-flow", "single-flow", {"duration": 8.0}),
                              *((f"{mode} [default]", DEFAULT_CONFIGURATION, kw) for mode, kw in DEFAULT_MODES)):
            tra = bench_mode(variant, 200_000, report=True, trajectory=cfg, **kw)  # slow start's overshoot, burst,
            print(f"{variant + ' ' + name:>22} {tra:10.3g} {base:15.3g} {tra / base:6.2f}  clean, size mode")  # epochs
        for name, kw in LOSS_MODES:
            loss = bench_mode(variant, 200_000, **kw)
            print(f"{variant + ' ' + name:>22} {loss:10.3g} {base:15.3g} {loss / base:6.2f}  clean, size mode")
        kw = dict(LOSS_MODES[1][1])
        fast, exact = bench_mode(variant, 20_000, **kw), bench_mode(variant, 20_000, exact=True, **kw)
        worst, p99 = loss_error(variant)
        print(f"{variant + ' periodic -t 8s':>22} {fast:10.3g} {exact:15.3g} {fast / exact:6.0f}  exact path "
              f"(20,000 cfg); error vs exact, 4 loss modes × 20,000 cfg: max {worst:.1e}, 99th pct {p99:.1e}")
        if variant == "htcp":
            worst, p99 = loss_error(variant, tabulated=False)
            print(f"{'':>22} with W_m from the table (exact: bisection): max {worst:.2%}, 99th pct {p99:.3%}")
    tab = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9)
    ex = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9, tabulated=False)
    tau, n, beta, wmax, size = configs(20_000, seed=1)
    err = np.abs(tab.predict(tau, n=n, buffer=beta, wmax=wmax, size=size)
                 / ex.predict(tau, n=n, buffer=beta, wmax=wmax, size=size) - 1)
    print(f"htcp table: built in {build:.2f} s; throughput vs exact path: max {err.max():.2%}, "
          f"99th percentile {np.quantile(err, 0.99):.3%} over 20,000 configurations")
    print("closed forms: stcp, cubic, reno (numeric only where Phase I is empty); htcp: tabulated W_m; "
          "loss: W_L closed form (stcp, cubic; reno and htcp below Cτ, and reno without Phase I), else "
          "Illinois regula falsi on the unconverged rows; the transient a geometric series")


if __name__ == "__main__":
    main()
