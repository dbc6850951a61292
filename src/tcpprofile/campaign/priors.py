"""The transport model's priors for a race (campaign/rules/model.py): each candidate's throughput predicted
from its configuration alone by the validated model configuration (models/configurations.py,
DEFAULT_CONFIGURATION), with the model's prediction error E for its variant × n.

From configuration alone (docs/models.md, "Model configurations"): β is the link's configured buffer
(PHYSICAL_BUFFER), W_max per flow half the socket buffer (-w) or half the kernel's autotuning ceiling
(models/fit.py, _known_wmax: at least half of a receive buffer is window), C the link's payload ceiling
rate × MSS/(MTU + 38) (packet_overhead.py; fit.py's capacity_bps), the start-up lag a constant (below). A
candidate gets no prior (None) where the models have no validated error: a variant without a model (BBR,
a BPF variant other than the modelled ones), Reno (modelled, not validated), a remote link (β unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.framework import SEND_BACKLOG
from ..packet_overhead import goodput_ceiling_bps, mss_bytes

# E [%] per variant × n: ss-trains held out by RTT on the third sealed store, benchmarks/data/models-validation-3-table.txt
# (column "rtt"; 10 GB, β 0.1/0.3/1 × BDP, 11.8–366 ms); the default, burst-by-rate (at 10 Gbit/s bandwidth-switch's
# predictions, bit for bit), predicts the same but for H-TCP's single flow, whose E there is 2.62 (benchmarks/single_flow.py on models-validation-3-runs.csv, the start-up
# lag 1.2 RTTs: ss-trains 2.94 by the same, 2.99 in the table)
PREDICTION_ERROR_PCT = {"cubic": {1: 3.85, 4: 1.12, 10: 1.13},
                        "htcp": {1: 2.62, 4: 3.31, 10: 2.60},
                        "scalable": {1: 1.35, 4: 0.69, 10: 0.73}}
# d [RTTs]: the slow start's start-up lag the fits measured on the same store (1.16–1.24 per buffer
# setting, "fitted parameters" in that table); a race has no runs to measure it from before it starts
STARTUP_RTTS = 1.2
AUTOTUNING_CEILING = 2147483647   # bytes: tcp_rmem/tcp_wmem max the testbed sets (testbed/link.py TCP_BUFFER_MAX)


@dataclass(frozen=True)
class Prior:
    """A model's prediction for one candidate: throughput [bit/s], relative prediction error E (0.03 = 3 %), and
    the variant it models (the rule 'model' measures the model's level per variant on a link; None: not grouped)."""
    bps: float
    error: float
    variant: str | None = None


def prediction_error(variant: str, streams: int) -> float | None:
    """E (a fraction) for variant × n: the validated cell; an n between or beyond the validated ones
    takes the largest E of its variant (not validated there: the wider band). None: no validated model."""
    cells = PREDICTION_ERROR_PCT.get(variant.lower())
    if cells is None:
        return None
    return (cells[streams] if streams in cells else max(cells.values())) / 100


def predict_bps(variant: str, streams: int, *, rtt_s: float, rate_bps: float, buffer_bytes: float, mtu: int,
                size_bytes: float | None = None, duration_s: float | None = None, loss: float = 0.0,
                socket_buffer_bytes: float | None = None, config: str | None = None, delivered: bool = True) -> float:
    """The model's throughput [bit/s] for one configuration (see the module's docstring). delivered: the run
    is timed by its delivery of F (the executor's fixed-size runs on an emulated link: with -w since schema v5,
    autotuned since 2026-11-29), so nothing is left unsent (send_backlog 0); False for runs rated by iperf3's
    own end (stores measured before), whose receiver misses the unsent backlog (models/framework.py)."""
    from ..models.configurations import DEFAULT_CONFIGURATION, configuration, model_parameters
    from ..models.fit import params_for
    from ..models.registry import make_model
    params, per_variant = configuration(config or DEFAULT_CONFIGURATION)
    kd = {"variant": variant, "loss_mode": "periodic" if loss > 0 else "none", "loss_rate": loss}
    params = model_parameters(params_for(kd, params, per_variant))
    params["send_backlog"] = 0.0 if delivered else SEND_BACKLOG
    model = make_model(variant, capacity_bps=goodput_ceiling_bps(rate_bps, mtu), queue_fill=True,
                       receiver_report=True, startup_rtts=STARTUP_RTTS, mss_bytes=mss_bytes(mtu), **params)
    wmax = (AUTOTUNING_CEILING if socket_buffer_bytes is None else socket_buffer_bytes) / 2   # bytes per flow
    kw = {"duration": duration_s} if duration_s is not None else {"size": size_bytes}
    if loss > 0:
        kw["loss"] = loss
    return float(model.predict(rtt_s, n=streams, buffer=buffer_bytes, wmax=wmax, **kw))


def prior_for(variant: str, streams: int, **config) -> Prior | None:
    """A candidate's Prior (predict_bps, prediction_error), None where there is no validated model."""
    e = prediction_error(variant, streams)
    return None if e is None else Prior(predict_bps(variant, streams, **config), e, variant.lower())


def priors_for_points(points: dict) -> dict:
    """{key: Prior | None} for a race's candidates {key: RunPoint} (campaign/policies/racing.py)."""
    out = {}
    for key, p in points.items():
        link = p.link
        if link.kind != "emulated" or not link.buffer_bytes or p.reverse:
            out[key] = None        # β unknown (remote) or a reverse run: nothing validated
            continue
        out[key] = prior_for(p.variant, p.streams, rtt_s=link.rtt_s, rate_bps=link.rate_bps,
                             buffer_bytes=link.buffer_bytes, mtu=link.mtu or 1500, size_bytes=p.transfer_bytes,
                             duration_s=p.duration_s, loss=link.loss.rate if link.loss.mode != "none" else 0.0,
                             socket_buffer_bytes=p.socket_buffer_bytes)
    return out
