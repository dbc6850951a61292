"""tcpprofile: throughput profiles of TCP over dedicated high bandwidth-delay connections."""

__version__ = "0.1.0"
