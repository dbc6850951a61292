"""Bytes that every layer counts the same way: a TCP segment's headers and an Ethernet frame's overhead
(the delay engine, native/delayd/delayd.c, has the same two numbers as SEG_HEADERS and WIRE_OVERHEAD)."""

TCP_IP_HEADERS = 52           # bytes per segment: IPv4 20 + TCP 20 + timestamp option 12; MSS = MTU − 52
ETH_HEADER = 14               # bytes per frame: the Ethernet header on top of the IP packet
ETH_WIRE_OVERHEAD = 38        # bytes per frame on the wire: header 14 + FCS 4 + preamble 8 + inter-frame gap 12
