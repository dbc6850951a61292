"""LinkConfig: the parameters of one emulated dedicated connection, validated once.

Rate semantics: ``rate_bps`` (C) is the Ethernet *line* rate, as for the paper's 10GigE links. The
forward delay engine (native/delayd) models the bottleneck: it charges every frame as on a wire,
IP length + 38 bytes (header 14, FCS 4, preamble 8, inter-frame gap 12; per segment for GSO packets),
at C, so the TCP goodput ceiling of the link is C·MSS/(MTU+38) with MSS = MTU − 52 (IPv4 20 + TCP 20 +
timestamps 12): 0.9415·C at MTU 1500, 0.9900·C at MTU 9000. The drop-tail buffer beta counts the same
wire bytes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .. import packet_overhead, units
from ..errors import ValidationError
from ..packet_overhead import ETH_HEADER
from . import cpuplan
from .inject import StallInject

RATE_MIN_BPS = 1e6
RATE_MAX_BPS = 10e9           # shown to work on 2 cores; higher rates are not offered
RTT_MIN_S = 0.1e-3
RTT_MAX_S = 0.4
MTUS = (1500, 9000)
LOSS_MODES = ("none", "periodic", "uniform")   # the one list: the engine's modes, which spec and select check
OFFLOADS = ("auto", "on", "off")


# Engine capacity. The kernel queue and delayd's FIFO hold one direction's packets for tau/2 (and the
# forward direction's bottleneck buffer).
QUEUE_MAXLEN_MAX = 1 << 23    # NFQUEUE length we are willing to configure (delayd FIFO: 16 B each)
QUEUE_MARGIN = 2.0            # headroom over the full-size-packet estimate (bursts, small packets)
QUEUE_MIN = 4096
MEMORY_BUDGET_BYTES = 4 << 30  # kernel memory for packets held by one link (delay queues + bottleneck buffer)
SKB_OVERHEAD = 768            # approximate per-packet kernel overhead (sk_buff + shared info)
BUFFER_MAX = (1 << 32) - 1    # the largest buffer offered (4 GiB); memory binds first
GSO_DEFAULT_BYTES = 65536     # the kernel's IPv4 GSO limit without BIG TCP
GSO_MAX_BYTES = 400_000       # largest IPv4 GSO (BIG TCP) super-packet we configure


@dataclass(frozen=True)
class LinkConfig:
    """One emulated link: line rate C [bit/s], round-trip time tau [s], drop-tail buffer beta [bytes],
    external loss on the forward path, MTU, and segmentation offloads ("auto": on without loss, off
    with loss so that loss acts per wire packet). Without offloads 10 Gbit/s needs MTU 9000 on
    2 cores (MTU 1500 is CPU-bound at 2.4-5.5 Gbit/s): use MTU 9000 for lossy 10 Gbit/s runs."""

    rate_bps: float
    rtt_s: float
    buffer_bytes: int
    loss_mode: str = "none"
    loss_rate: float = 0.0
    mtu: int = 1500
    offloads: str = "auto"
    stall_inject: StallInject | None = None   # fault injection (issue 33, inject.py); None: off
    cpu_plan: str = "auto"                    # cpuplan.PLANS: "auto" (four-core on >= 4 CPUs), or forced

    @classmethod
    def checked(cls, *, rate_bps, rtt_s, buffer_bytes, loss_mode="none", loss_rate=0.0, mtu=1500,
                offloads="auto", stall_inject=None, cpu_plan="auto") -> "LinkConfig":
        """Build from SI numbers (the field names say the unit) or strings with units ("10Gbit", "45.6ms",
        "50MB"; a string without one is refused: units.py); stall_inject a table {hold = "10ms",
        every = "2s", direction = "forward"} or None; raises ValidationError naming the field."""
        return cls(rate_bps=_si(units.rate_bps, "rate_bps", rate_bps),
                   rtt_s=_si(units.seconds, "rtt_s", rtt_s),
                   buffer_bytes=_si(units.size_bytes, "buffer_bytes", buffer_bytes),
                   loss_mode=loss_mode, loss_rate=_number("loss_rate", loss_rate),
                   mtu=mtu, offloads=offloads, stall_inject=StallInject.checked(stall_inject),
                   cpu_plan=cpu_plan)

    def __post_init__(self):
        _check_range("rate_bps", self.rate_bps, RATE_MIN_BPS, RATE_MAX_BPS, "bit/s")
        _check_range("rtt_s", self.rtt_s, RTT_MIN_S, RTT_MAX_S, "s")
        if self.mtu not in MTUS or isinstance(self.mtu, bool):
            raise ValidationError("mtu", f"must be one of {MTUS}, got {self.mtu!r}")
        if not isinstance(self.buffer_bytes, int) or isinstance(self.buffer_bytes, bool):
            raise ValidationError("buffer_bytes", f"must be an integer byte count, got {self.buffer_bytes!r}")
        if self.buffer_bytes < self.frame_bytes:
            raise ValidationError("buffer_bytes", f"must hold at least one frame ({self.frame_bytes} bytes "
                                  f"at MTU {self.mtu}), got {self.buffer_bytes}")
        if self.buffer_bytes > BUFFER_MAX:
            raise ValidationError("buffer_bytes", f"at most {BUFFER_MAX} bytes, got {self.buffer_bytes}")
        self._check_loss()
        if self.offloads not in OFFLOADS:
            raise ValidationError("offloads", f"must be one of {OFFLOADS}, got {self.offloads!r}")
        if self.offloads == "on" and self.loss_mode != "none":
            raise ValidationError("offloads", "must be 'auto' or 'off' with loss: with segmentation "
                                  "offloads the loss rule would drop GSO super-packets, not wire packets")
        if self.stall_inject is not None and not isinstance(self.stall_inject, StallInject):
            raise ValidationError("stall_inject", "must be None or a StallInject (LinkConfig.checked takes a "
                                  f"table {{hold, every, direction}}), got {self.stall_inject!r}")
        cpuplan.checked(self.cpu_plan)
        self._check_capacity()

    def _check_loss(self):
        if self.loss_mode not in LOSS_MODES:
            raise ValidationError("loss_mode", f"must be one of {LOSS_MODES}, got {self.loss_mode!r}")
        p = self.loss_rate
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not math.isfinite(p):
            raise ValidationError("loss_rate", f"must be a number, got {p!r}")
        if self.loss_mode == "none" and p != 0:
            raise ValidationError("loss_rate", f"must be 0 when loss_mode is 'none', got {p}")
        if self.loss_mode == "uniform" and not 0 < p < 1:
            raise ValidationError("loss_rate", f"uniform loss needs 0 < loss_rate < 1, got {p}")
        if self.loss_mode == "periodic":
            n = round(1 / p) if 0 < p <= 0.5 else 0
            if n < 2 or not math.isclose(1 / p, n, rel_tol=1e-9):
                raise ValidationError("loss_rate", "periodic loss drops 1 packet in N: loss_rate must be "
                                      f"1/N with N an integer >= 2, got {p}")

    def _check_capacity(self):
        # The delay queue length (queue_maxlen) stays below QUEUE_MAXLEN_MAX for every rate and RTT
        # allowed above (tested); the binding limit is memory, which the buffer can exceed.
        if self.memory_bytes > MEMORY_BUDGET_BYTES:
            raise ValidationError(
                "buffer_bytes", f"the link would hold about {self.memory_bytes / 2**30:.1f} GiB of packets "
                f"(BDP {self.bdp_bytes / 1e6:.0f} MB + buffer {self.buffer_bytes / 1e6:.0f} MB, with kernel "
                f"overhead), above the engine's budget of {MEMORY_BUDGET_BYTES / 2**30:.0f} GiB; lower the buffer")

    # Derived quantities ----------------------------------------------------------------------------
    @property
    def frame_bytes(self) -> int:
        """Bytes of a full-size frame without FCS, preamble and gap (MTU + header)."""
        return self.mtu + ETH_HEADER

    @property
    def mss_bytes(self) -> int:
        return packet_overhead.mss_bytes(self.mtu)

    @property
    def frame_time_s(self) -> float:
        """A full-size frame's time on the modelled wire: (MTU + framing)·8/C [s] (72 µs at 1 Gbit/s,
        MTU 9000). Part of every RTT sample: the engine releases a packet τ/2 after its last bit left."""
        return packet_overhead.wire_frame_bytes(self.mtu) * 8 / self.rate_bps

    @property
    def goodput_ceiling_bps(self) -> float:
        """TCP payload rate of a saturated link: C·MSS/(MTU+38) [bit/s]."""
        return packet_overhead.goodput_ceiling_bps(self.rate_bps, self.mtu)

    @property
    def bdp_bytes(self) -> int:
        """C·tau/8 [bytes]."""
        return int(self.rate_bps * self.rtt_s / 8)

    @property
    def gso_max_bytes(self) -> int:
        """IPv4 GSO super-packet limit set on the link's devices when offloads are on: 1/16 of the
        BDP, 1/4 of the buffer and 0.5 ms at line rate, within [64 KiB, GSO_MAX_BYTES]. Above 64 KiB
        this is BIG TCP; measured at 10 Gbit/s, 45.6 ms, load ~5: 64 KiB 3.6-6.4 Gbit/s, 185 kB
        7.4-9.6, 400 kB 9.42 (the ceiling) at half the engine CPU (fewer packets to handle)."""
        size = min(self.bdp_bytes / 16, self.buffer_bytes / 4, self.rate_bps / 8 * 0.5e-3)
        return int(min(max(size, GSO_DEFAULT_BYTES), GSO_MAX_BYTES))

    @property
    def segmentation_offload(self) -> bool:
        """Whether the sender keeps TSO/GSO on."""
        return self.offloads == "on" or (self.offloads == "auto" and self.loss_mode == "none")

    @property
    def queue_maxlen(self) -> int:
        """NFQUEUE length per direction: full-size frames in flight during tau/2 plus a full
        bottleneck buffer (the forward engine holds both), with margin."""
        per_direction = (self.rate_bps * self.rtt_s / 2 / 8 + self.buffer_bytes) / self.frame_bytes
        return max(QUEUE_MIN, int(math.ceil(per_direction * QUEUE_MARGIN)))

    @property
    def memory_bytes(self) -> int:
        """Kernel memory for the packets the link can hold: BDP in the delay queues plus the bottleneck
        buffer, each full-size frame costing its length plus SKB_OVERHEAD."""
        per_frame = (self.frame_bytes + SKB_OVERHEAD) / self.frame_bytes
        return int((self.bdp_bytes + self.buffer_bytes) * per_frame)

    @property
    def loss_every(self) -> int:
        """N of a periodic 1-in-N loss."""
        return round(1 / self.loss_rate)

    def to_dict(self) -> dict:
        return asdict(self)


def _si(parse, field: str, value):
    """Text with a unit through its parser (units.py); a number is already SI (checked in __post_init__)."""
    return parse(field, value) if isinstance(value, str) else value


def _number(field: str, value) -> float:
    """A number, or a string "0.001" or "1/1000"."""
    if isinstance(value, str):
        try:
            num, _, den = value.partition("/")
            return float(num) / float(den) if den else float(num)
        except (ValueError, ZeroDivisionError):
            raise ValidationError(field, f"must be a number, got {value!r}") from None
    return value


def _check_range(field: str, value, lo: float, hi: float, unit: str):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValidationError(field, f"must be a number in [{lo:g}, {hi:g}] {unit}, got {value!r}")
    if not lo <= value <= hi:
        raise ValidationError(field, f"must be in [{lo:g}, {hi:g}] {unit}, got {value:g}")
