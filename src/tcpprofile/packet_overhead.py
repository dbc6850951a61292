"""Bytes that every layer counts the same way: a TCP segment's headers and an Ethernet frame's overhead
(the delay engine, native/delayd/delayd.c, has the same two numbers as SEG_HEADERS and WIRE_OVERHEAD)."""

TCP_IP_HEADERS = 52           # bytes per segment: IPv4 20 + TCP 20 + timestamp option 12; MSS = MTU − 52
ETH_HEADER = 14               # bytes per frame: the Ethernet header on top of the IP packet
ETH_WIRE_OVERHEAD = 38        # bytes per frame on the wire: header 14 + FCS 4 + preamble 8 + inter-frame gap 12


def mss_bytes(mtu: int) -> int:
    """TCP payload per segment [bytes]: MTU − TCP_IP_HEADERS (1448 at MTU 1500, 8948 at 9000)."""
    return int(mtu) - TCP_IP_HEADERS


def wire_frame_bytes(mtu: int) -> int:
    """Bytes one full-size frame occupies on the wire: MTU + 38 (1538 at MTU 1500)."""
    return int(mtu) + ETH_WIRE_OVERHEAD


def goodput_ceiling_bps(rate_bps: float, mtu: int) -> float:
    """TCP payload rate of a saturated link [bit/s]: C·MSS/(MTU + 38), C the line rate."""
    return rate_bps * mss_bytes(mtu) / wire_frame_bytes(mtu)


def line_rate_bps(goodput_bps: float, mtu: int) -> float:
    """The line rate [bit/s] that carries `goodput_bps` of TCP payload: the inverse of goodput_ceiling_bps."""
    return goodput_bps * wire_frame_bytes(mtu) / mss_bytes(mtu)
