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
  settings, 5 repetitions and 60 s runs. Duration mode, autotuned or MiB buffers: not the papers'
  conditions (kept for comparison with earlier rounds; the standard mode follows the papers).
standard (≤ 6 h of transfer; reproduce/standard.py runs it sequentially): DESIGNS below, each in the
  papers' conditions and cited, run at planned looks that add repetitions only to the cells whose
  verdict still straddles.

The papers' conditions (HPDC'17 §2, Table 1; the models paper §III):
  RTTs 0.4, 11.8, 22.6, 45.6, 91.6, 183, 366 ms (PAPER_RTTS); 1-10 parallel streams; transfer sizes
  "default (≈ 1 GB), 20 GB, 50 GB, 100 GB" (models paper: 10 GB); socket buffers "default (244 KB),
  normal (256 MB), large (1 GB)", which Table 1 gives as what was *allocated*. Linux grants twice the
  setsockopt request (net/core/sock.c: sk_sndbuf = max(val * 2, SOCK_MIN_SNDBUF)), and iperf3 caps -w at
  512 MiB, so the papers' allocations are reached with `-w 122KB` (244 KB), `-w 128MiB` (256 MiB) and
  `-w 512MiB` (1 GiB; the largest -w iperf3 takes). Traces for (iii) and (v): 100 s (the slides'
  traces; BBR's ProbeRTT every 10 s; HPDC'17 §4's 1 s traces).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError
from ..spec import CampaignSpec, parse

PREFIX = "reproduce-"
QUICK_RTTS = '["0.4ms", "11.8ms", "45.6ms", "91.6ms", "183ms"]'
FULL_RTTS = '["0.4ms", "11.8ms", "22.6ms", "45.6ms", "91.6ms", "183ms", "366ms"]'


def _spec(name: str, *, seed: int, reps: int, rtt: str, loss: str, variants: str, streams: str,
          socket_buffer: str, duration: str | None = None, transfer: str | None = None, link_buffer: str = "BDP") -> str:
    """A reproduce- campaign on the 10 Gbit/s, MTU 9000 link with bottleneck buffer β = `link_buffer` (BDP
    unless given: docs/spec.md's "<k>xBDP"); `transfer` is the spec's size or duration line (or give `duration`)."""
    return f"""[campaign]
name = "{PREFIX}{name}"
seed = {seed}
repetitions = {reps}

[link]
rate = "10Gbit"
rtt = {rtt}
buffer = "{link_buffer}"
mtu = 9000
loss = {loss}

[transfer]
variant = {variants}
streams = {streams}
socket_buffer = {socket_buffer}
{transfer or f'duration = "{duration}"'}
"""


PAPER_RTTS = (0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0)           # HPDC'17 §2 (ANUE emulator settings)
BUF_DEFAULT, BUF_NORMAL, BUF_LARGE = "122KB", "128MiB", "512MiB"   # granted 244 KB, 256 MiB, 1 GiB (Table 1)
# (v)'s 10 streams: "large" is the paper's *non-binding* buffer (the window is set by the path, not the
# socket). 10 × 1 GiB send buffers, filled by iperf3's unsent backlog, push TCP's memory over tcp_mem's
# pressure threshold on a 24 GiB host (1.75 M pages vs 1.54 M measured; the kernel then clamps every
# socket: fidelity's host_tcp_memory). A stream needs at most 2·(Cτ + β)/n of send buffer (in flight ≤
# Cτ + β = 2·BDP = 457 MB at 183 ms shared by 10, doubled for skb overhead) = 92 MB; `-w 64MiB` grants
# 128 MiB = 134 MB, still non-binding, and 10 senders + 10 receivers hold ≤ 2.7 GB (0.66 M pages).
BUF_MANY_STREAMS = "64MiB"

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
    """The validated campaign specs of a mode ('quick' or 'full'; the standard mode's specs depend on
    the data of its earlier looks: reproduce.standard)."""
    if mode not in MODES:
        raise ValidationError("mode", f"one of {', '.join(MODES)}, got {mode!r}")
    return [parse(text) for text in MODES[mode]]


# -- the standard mode's designs ------------------------------------------------------------------
def _ms(taus) -> str:
    return "[" + ", ".join(f'"{t:g}ms"' for t in taus) + "]"


@dataclass(frozen=True)
class Design:
    """One part of the standard mode: the cells (variant, streams) it runs, each over `taus`, and the
    cumulative repetitions per cell at each planned look. `transfer` is the spec's size or duration line."""
    name: str
    findings: tuple[str, ...]
    cite: str
    variants: tuple[str, ...]
    streams: tuple[int, ...]
    taus: tuple[float, ...]
    socket_buffer: str
    transfer: str                 # 'size = "1GB"' or 'duration = "100s"'
    looks: tuple[int, ...]        # cumulative repetitions per cell at each look
    loss: str = CLEAN
    link_buffer: str = "BDP"      # the bottleneck buffer β (docs/spec.md: a size, "BDP" or "<k>xBDP")
    mode: str = "standard"        # campaign names: reproduce-<mode>-<design>-<variant>-n<streams>-look<k>

    @property
    def cells(self) -> list[tuple[str, int]]:
        return [(v, n) for v in self.variants for n in self.streams]

    def spec_text(self, cell: tuple[str, int], look: int) -> str:
        """The campaign of one cell at one look: the repetitions this look adds (looks[k] − looks[k−1])."""
        variant, n = cell
        reps = self.looks[look] - (self.looks[look - 1] if look else 0)
        seed = 300 + 17 * look + sum(map(ord, f"{self.name}{variant}{n}")) % 1000
        return _spec(f"{self.mode}-{self.name}-{variant}-n{n}-look{look + 1}", seed=seed, reps=reps,
                     rtt=_ms(self.taus), loss=self.loss, variants=f'"{variant}"', streams=str(n),
                     socket_buffer=f'"{self.socket_buffer}"', transfer=self.transfer, link_buffer=self.link_buffer)

    def spec(self, cell: tuple[str, int], look: int) -> CampaignSpec:
        return parse(self.spec_text(cell, look))

    def key(self, cell: tuple[str, int]) -> tuple:
        """The cell's configuration as the findings' parts name it (findings.Part.configs)."""
        p = self.spec(cell, 0).sweep()[0]
        return (cell[0], cell[1], p.socket_buffer_bytes, p.transfer_bytes,
                None if p.duration_s is None else float(p.duration_s))


LOOKS = (3, 5, 8)          # repetitions per cell at the three planned looks (fixed maximum 8)
DYNAMICS_LOOKS = (10, 15, 20)
DESIGNS: tuple[Design, ...] = (
    Design("profiles", ("i", "ii"), "HPDC'17 Table 1: default size ≈ 1 GB, normal buffer 256 MB, 1 and 10 "
           "streams, the seven RTTs (Figs. 3-5, 9-10)", ("cubic",), (1, 10), PAPER_RTTS, BUF_NORMAL,
           'size = "1GB"', LOOKS),
    Design("small-buffer", ("ii",), "HPDC'17 Table 1: default buffer 244 KB at ≈ 1 GB (Fig. 10's buffer "
           "axis); τ ≤ 22.6 ms: beyond it one 244 KB stream moves 1 GB in minutes and Θ ≪ C/2 already",
           ("cubic",), (1, 10), PAPER_RTTS[:3], BUF_DEFAULT, 'size = "1GB"', LOOKS),
    Design("models-10GB", ("i",), "models paper §III: 'active until it transferred 10 GB'; CUBIC, H-TCP, STCP, one stream, "
           "the seven RTTs (its Fig. 3)", ("cubic", "htcp", "scalable"), (1,), PAPER_RTTS, BUF_NORMAL,
           'size = "10GB"', LOOKS),
    Design("bbr-100s", ("iii",), "slides, Group 1 vs BBR: 100 s traces, clean links; low τ 11.8 ms, "
           "large τ 183 ms", ("bbr", "htcp", "scalable"), (1,), (11.8, 183.0), BUF_LARGE,
           'duration = "100s"', LOOKS),
    Design("loss-500", ("iv",), "slides, losses: periodic 1-in-500, CUBIC, H-TCP, BBR, one stream",
           ("cubic", "htcp", "bbr"), (1,), (11.8, 45.6, 91.6, 183.0), BUF_LARGE, 'duration = "10s"', LOOKS,
           loss=LOSS_500),
    Design("dynamics-100s", ("v",), "HPDC'17 §4, Figs. 12-14: 10-stream CUBIC, large (non-binding) buffers, "
           "1 s traces of 100 s at 11.8 (the paper's 11.6) and 183 ms; 128 MiB per stream, not 1 GiB: "
           "BUF_MANY_STREAMS", ("cubic",), (10,), (11.8, 183.0), BUF_MANY_STREAMS, 'duration = "100s"',
           DYNAMICS_LOOKS),
)


# -- the confirmatory designs: a fresh store, the rules frozen --------------------------------------------
# The first standard store's three looks spent its error budget; these designs are run on a fresh store,
# sequentially as the standard mode (same looks, same level), where its verdicts stayed open.
CONFIRM_RTTS = (0.4, 11.8, 22.6, 45.6, 57.0, 68.6, 80.0, 91.6, 103.0, 114.0, 137.0, 183.0, 366.0)
CONFIRM_DESIGNS: tuple[Design, ...] = (
    Design("ii-256MB", ("i", "ii"), "HPDC'17 Figs. 9-10 at 1 GB with the normal 256 MB buffer, 1 and 10 streams; "
           "the papers' RTTs plus 57-137 ms, where the crossings a slow-start model puts at n = 1 (≈ 75 ms) and "
           "n = 10 (≈ 102 ms) lie", ("cubic",), (1, 10), CONFIRM_RTTS, BUF_NORMAL, 'size = "1GB"', LOOKS,
           mode="confirm"),
    Design("ii-1GB", ("i", "ii"), "Table 1's large (1 GB) buffer, one stream (ten 1 GiB senders exceed the host's "
           "tcp_mem pressure: BUF_MANY_STREAMS), the same fine grid: (ii)'s buffer axis against ii-256MB's n = 1",
           ("cubic",), (1,), CONFIRM_RTTS, BUF_LARGE, 'size = "1GB"', LOOKS, mode="confirm"),
    Design("iv-loss", ("iv",), "slides, losses: periodic 1-in-500, CUBIC, H-TCP, BBR, one stream, with 22.6 and "
           "366 ms added (the chord criterion gains interior points and a longer chord)", ("cubic", "htcp", "bbr"),
           (1,), (11.8, 22.6, 45.6, 91.6, 183.0, 366.0), BUF_LARGE, 'duration = "10s"', LOOKS, loss=LOSS_500,
           mode="confirm"),
    Design("v-shallow", ("v",), "HPDC'17 §4, Fig. 14: 10-stream CUBIC, 100 s traces at 11.8 and 183 ms, with a "
           "bottleneck buffer of 0.1 × BDP: after a synchronised CUBIC cut to 0.7·(Cτ + β) the link stays full "
           "whenever β ≥ 0.43·Cτ, so β = BDP left θ̄_S no spread; the paper gives no SONET buffer size and calls "
           "10GigE's larger", ("cubic",), (10,), (11.8, 183.0), BUF_MANY_STREAMS, 'duration = "100s"',
           DYNAMICS_LOOKS, link_buffer="0.1xBDP", mode="confirm"),
)
