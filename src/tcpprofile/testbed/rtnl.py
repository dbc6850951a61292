"""Set IPv4 BIG TCP sizes (IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE) with one rtnetlink request.

iproute2 6.1 (Debian bookworm) cannot set them; the kernel (6.3+) can. Run inside the device's
namespace: `ip netns exec NS python -m tcpprofile.testbed.rtnl SIZE DEV [DEV ...]`.
"""

from __future__ import annotations

import socket
import struct
import sys

RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
IFLA_GSO_IPV4_MAX_SIZE = 63     # include/uapi/linux/if_link.h (kernel 6.3+)
IFLA_GRO_IPV4_MAX_SIZE = 64


def _attr_u32(kind: int, value: int) -> bytes:
    return struct.pack("=HHI", 8, kind, value)


def set_ipv4_gso_gro_max(dev: str, size: int) -> None:
    """RTM_NEWLINK on dev's index with both attributes; raises OSError with the kernel's error."""
    index = socket.if_nametoindex(dev)
    body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, index, 0, 0)        # struct ifinfomsg
    body += _attr_u32(IFLA_GSO_IPV4_MAX_SIZE, size) + _attr_u32(IFLA_GRO_IPV4_MAX_SIZE, size)
    header = struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.send(header + body)
        reply = sock.recv(65536)
    _length, kind = struct.unpack_from("=IH", reply)
    if kind == NLMSG_ERROR:
        (error,) = struct.unpack_from("=i", reply, 16)
        if error:
            raise OSError(-error, f"setting IPv4 GSO/GRO max size {size} on {dev}")


def main(argv: list[str]) -> int:
    size = int(argv[0])
    for dev in argv[1:]:
        set_ipv4_gso_gro_max(dev, size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
