"""Synthetic validation-protocol stores (issue 20): 10 GB transfers on 10 Gbit/s, MTU 9000 links with
β = k × BDP, autotuned socket buffers, through the Store API only, with a known truth — either the
first-principles model (β = m_true × the configured buffer, no start-up lag: the first intervals hold
more than slow start's share, so the store measures none) or the generic ramp-up/sustainment model (its
ramp and sustained rate written into the intervals, which the baseline fits)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from tcpprofile.models import GenericModel, make_model
from tcpprofile.models.configurations import configuration, model_parameters
from tcpprofile.models.generic import transfer_throughput
from tcpprofile.store import Store

RATE, MTU, MSS = 10e9, 9000, 8948
CEILING = RATE * MSS / (MTU + 38)           # the link's payload ceiling (models/fit.py, capacity_bps)
LIMIT = 2 ** 31                              # autotuning ceiling [bytes]: W_max = LIMIT/2 per flow
SIZE = 10 * 10 ** 9                          # 10 GB (iperf3 -n)
RTTS = (11.8, 45.6, 91.6, 183.0, 366.0)
MULTIPLES = (0.1, 0.3, 1.0)
DT = 0.05                                    # interval length [s] of the generated traces
GENERIC_TRUTH = dict(ramp_scale=1.3, ramp_exponent=1.0, ramp_data=1.6, sustained_bps=9.7e9, sustained_slope=-6e9)


def _spec(k: float) -> str:
    return f"{k:g}xBDP"


def _trace(total_bits: float, duration: float, ramp_s: float, ramp_rate: float) -> list[dict]:
    """Aggregate intervals of DT: ramp_rate for ramp_s, then the constant rate that completes total_bits
    at `duration`."""
    sustain = (total_bits - ramp_rate * ramp_s) / max(duration - ramp_s, 1e-9)
    edges = np.append(np.arange(0.0, duration, DT), duration)
    rows = []
    for a, b in zip(edges[:-1], edges[1:]):
        ramp = max(0.0, min(b, ramp_s) - a)
        bits = ramp * ramp_rate + (b - a - ramp) * sustain
        rows.append({"stream": None, "start_s": float(a), "end_s": float(b), "bytes": int(bits / 8),
                     "bits_per_second": bits / (b - a)})
    return rows


def build(store: Store, *, truth: str = "model", variants=("cubic",), streams=(1, 4), multiples=MULTIPLES,
          rtts=RTTS, reps: int = 2, seed: int = 2020, noise: float = 0.02, m_true=1.0,
          distort=None, campaign: str = "models-validation", config: str = "paper") -> int:
    """Write a campaign; truth 'model' (the first-principles model of each variant, β = m_true × the
    configured buffer; m_true may be a dict per multiple) or 'generic' (GENERIC_TRUTH). distort: a factor
    per RTT position applied to the truth. config: the first-principles truth's model configuration
    (models/configurations.py). Returns the number of runs."""
    params, per_variant = configuration(config)
    params = model_parameters(params)
    rng = np.random.default_rng(seed)
    store.insert_campaign({"campaign_id": "v1", "name": campaign, "mode": "emulated"})
    for rtt, k in itertools.product(rtts, multiples):
        store.insert_link({"link_id": f"L{rtt:g}-{k:g}", "campaign_id": "v1", "kind": "emulated", "rate_bps": RATE,
                           "rtt_ms": rtt, "buffer_bytes": int(k * RATE * rtt / 1e3 / 8), "buffer_spec": _spec(k),
                           "mtu": MTU, "goodput_ceiling_bps": CEILING, "loss_mode": "none", "loss_rate": 0.0,
                           "rtt_measured_ms": rtt, "calibration_ok": True})
    count = 0
    for v, n, (i, rtt), k, rep in itertools.product(variants, streams, enumerate(rtts), multiples, range(reps)):
        tau = rtt / 1e3
        cfg = k * RATE * tau / 8
        if truth == "model":
            m = m_true[k] if isinstance(m_true, dict) else m_true
            model = make_model(v, capacity_bps=CEILING, mss_bytes=MSS, queue_fill=True, receiver_report=True,
                               **params, **per_variant.get(v, {}))   # as model fit models -n
            thr = float(model.predict(tau, n=n, size=SIZE, buffer=m * cfg, wmax=LIMIT / 2))
            ramp_s, ramp_rate = tau * math.log2(CEILING * tau / (8 * n * 10 * MSS)), None
        else:
            model = GenericModel(capacity_bps=CEILING, mss_bytes=MSS, initial_window=10 * n, duration_s=10.0,
                                 **GENERIC_TRUTH)   # duration_s: components needs a T_O; T_R, θ̄_R do not use it
            thr = float(transfer_throughput(model, tau, SIZE))
            c = model.components(tau)
            ramp_s, ramp_rate = float(c["T_R"]), float(c["theta_R"])
        thr *= (1 if distort is None else distort(i)) * (1 + noise * rng.standard_normal())
        duration = SIZE * 8 / thr
        intervals = _trace(SIZE * 8.0, duration, min(ramp_s, duration / 2), thr / 3 if ramp_rate is None else ramp_rate)
        store.put_run({"run_id": f"{v}-{n}-{rtt:g}-{k:g}-{rep}", "campaign_id": "v1", "link_id": f"L{rtt:g}-{k:g}",
                       "variant": v, "streams": n, "transfer_bytes": SIZE, "status": "ok", "throughput_bps": thr,
                       "duration_s": duration, "repetition": rep, "effective_socket_buffer_bytes": LIMIT},
                      intervals=intervals)
        count += 1
    return count
