"""The campaigns `tcpprofile reproduce` runs: compact versions of the papers' sweeps, as campaign specs.

Each mode is a list of specs (TOML text, the format of docs/spec.md), run one after the other with
tcpprofile.campaign.run_campaign into the same store; a rerun resumes (the campaign ids are the
specs' hashes). Names start with ``reproduce-`` so that the findings and the report find them.

quick (about 35 min on 2 cores; 183 runs of 8 s, ~8.5 s each plus ~20 s per link set-up here):
  clean    4 variants × n ∈ {1, 4} × τ ∈ {0.4, 11.8, 45.6, 91.6, 183} ms × 3 repetitions, autotuned
           socket buffers, β = BDP: findings (i)-(iii), (v); `model fit` in duration mode.
  loss     CUBIC, H-TCP, BBR × n = 1 × τ ∈ {11.8, 45.6, 91.6, 183} ms at periodic 1-in-500 loss × 4:
           finding (iv); `model fit` of the loss models.
  buffers  CUBIC × n = 1 × 5 τ × 3 with a 32 MiB socket buffer: with `clean`, the buffer half of (ii).
full (about a day): the same axes with the papers' seven RTTs, more streams, buffers and loss
  settings, 5 repetitions and 60 s runs (long enough for the Lyapunov exponents of finding (v)).
"""

from __future__ import annotations

from ..errors import ValidationError
from ..spec import CampaignSpec, parse

PREFIX = "reproduce-"
QUICK_RTTS = '["0.4ms", "11.8ms", "45.6ms", "91.6ms", "183ms"]'
FULL_RTTS = '["0.4ms", "11.8ms", "22.6ms", "45.6ms", "91.6ms", "183ms", "366ms"]'


def _spec(name: str, *, seed: int, reps: int, rtt: str, loss: str, variants: str, streams: str,
          socket_buffer: str, duration: str) -> str:
    return f"""[campaign]
name = "{PREFIX}{name}"
seed = {seed}
repetitions = {reps}

[link]
rate = "10Gbit"
rtt = {rtt}
buffer = "BDP"
mtu = 9000
loss = {loss}

[transfer]
variant = {variants}
streams = {streams}
socket_buffer = {socket_buffer}
duration = "{duration}"
"""


CLEAN = '{ mode = "none" }'
LOSS_500 = '{ mode = "periodic", every = 500 }'
MODES: dict[str, list[str]] = {
    "quick": [
        _spec("quick-clean", seed=101, reps=3, rtt=QUICK_RTTS, loss=CLEAN,
              variants='["cubic", "htcp", "scalable", "bbr"]', streams="[1, 4]", socket_buffer='"default"',
              duration="8s"),
        _spec("quick-loss", seed=102, reps=4, rtt='["11.8ms", "45.6ms", "91.6ms", "183ms"]', loss=LOSS_500,
              variants='["cubic", "htcp", "bbr"]', streams="1", socket_buffer='"default"', duration="8s"),
        _spec("quick-buffers", seed=103, reps=3, rtt=QUICK_RTTS, loss=CLEAN, variants='"cubic"', streams="1",
              socket_buffer='"32MiB"', duration="8s"),
    ],
    "full": [
        _spec("full-clean", seed=201, reps=5, rtt=FULL_RTTS, loss=CLEAN,
              variants='["cubic", "htcp", "scalable", "bbr"]', streams="[1, 2, 4, 8]",
              socket_buffer='"default"', duration="60s"),
        _spec("full-loss", seed=202, reps=5, rtt=FULL_RTTS,
              loss=f'[{LOSS_500}, {{ mode = "periodic", every = 25000 }}, {{ mode = "uniform", p = 2e-3 }}]',
              variants='["cubic", "htcp", "bbr"]', streams="1", socket_buffer='"default"', duration="60s"),
        _spec("full-buffers", seed=203, reps=5, rtt=FULL_RTTS, loss=CLEAN, variants='["cubic", "htcp"]',
              streams="[1, 4]", socket_buffer='["32MiB", "128MiB"]', duration="30s"),
    ],
}


def specs(mode: str) -> list[CampaignSpec]:
    """The validated campaign specs of a mode ('quick' or 'full')."""
    if mode not in MODES:
        raise ValidationError("mode", f"one of {', '.join(MODES)}, got {mode!r}")
    return [parse(text) for text in MODES[mode]]
