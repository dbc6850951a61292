"""Writes outputs.npz: H-TCP's throughput and W_L on 256 of benchmarks/bench_models.py's configurations in every
mode the bench measures (models/configurations.py paper and trajectory; the fast and the exact loss path),
as the model computed them when they were pinned (main at f6c3d47, before the loss path was made faster).
The models are frozen for validation (issue 20): tests/test_models_htcp_pinned.py holds every later version
to these numbers. Run from the repository: python tests/data/htcp_pinned/generate.py (only to re-pin after a
deliberate change of the model)."""

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_models import configs  # noqa: E402

from tcpprofile.models import make_model  # noqa: E402
from tcpprofile.models.configurations import configuration  # noqa: E402

OUT = Path(__file__).with_name("outputs.npz")
PERIODIC_T, UNIFORM_T = dict(duration=8.0, loss=1 / 500), dict(duration=8.0, loss=1e-4)
# (name, configuration, exact_loss, rtt_scaling kept, mode): rtt_scaling is not modelled with external loss
MODES = [("clean", "paper", False, True, dict(size=math.inf)),
         ("-t 8s", "paper", False, True, dict(duration=8.0)),
         ("periodic 1/500", "paper", False, True, dict(size=math.inf, loss=1 / 500)),
         ("periodic -t 8s", "paper", False, True, PERIODIC_T),
         ("uniform 1e-4", "paper", False, True, dict(size=math.inf, loss=1e-4)),
         ("uniform -t 8s", "paper", False, True, UNIFORM_T),
         ("exact periodic -t 8s", "paper", True, True, PERIODIC_T),
         ("exact uniform -t 8s", "paper", True, True, UNIFORM_T),
         ("traj -n 10GB", "trajectory", False, True, dict(size=1e10)),
         ("traj -t 8s", "trajectory", False, True, dict(duration=8.0)),
         ("traj periodic -t 8s", "trajectory", False, False, PERIODIC_T),
         ("traj uniform -t 8s", "trajectory", False, False, UNIFORM_T),
         ("traj uniform 1e-3 -n 10GB", "trajectory", False, False, dict(size=1e10, loss=1e-3))]


def rows():
    """128 random configurations of the bench's 200,000, and 64 + 64 whose loss epoch peaks above Cτ
    (W_L solved by Illinois regula falsi, periodic and uniform loss)."""
    tau, n, beta, wmax, _ = configs(200_000)
    rng = np.random.default_rng(20)
    pick = [rng.choice(tau.size, 128, replace=False)]
    m = model("paper", False, True)
    for kw in (PERIODIC_T, UNIFORM_T):
        wl = m.components(tau, n=n, buffer=beta, wmax=wmax, **kw)["W_L"]
        above = np.flatnonzero(wl > 10e9 * tau)  # aggregate W_L > Cτ: Phase II in the loss epoch
        pick.append(rng.choice(above, 64, replace=False))
    i = np.concatenate(pick)
    return tau[i], n[i], beta[i], wmax[i]


def model(config, exact, rtt_scaling):
    params, per_variant = configuration(config)
    extra = per_variant.get("htcp", {})
    if not rtt_scaling:
        extra = {k: v for k, v in extra.items() if k != "rtt_scaling"}
    report = config == "trajectory"  # model fit's defaults for measured runs: queue_fill, receiver_report
    m = make_model("htcp", buffer_bytes=1e6, wmax_bytes=1e9, mss_bytes=8948, queue_fill=report,
                   receiver_report=report, **params, **extra)
    m.exact_loss = exact
    return m


def outputs(tau, n, beta, wmax) -> dict[str, np.ndarray]:
    out = {}
    for name, config, exact, rtt_scaling, kw in MODES:
        c = model(config, exact, rtt_scaling).components(tau, n=n, buffer=beta, wmax=wmax, **kw)
        out[f"{name}|throughput"], out[f"{name}|W_L"] = c["throughput"], c["W_L"]
    return out


if __name__ == "__main__":
    tau, n, beta, wmax = rows()
    np.savez_compressed(OUT, tau=tau, n=n, beta=beta, wmax=wmax, **outputs(tau, n, beta, wmax))
    print(f"{OUT}: {tau.size} configurations × {len(MODES)} modes")
