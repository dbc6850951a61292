"""The emulated dedicated connection: namespaces, veth, the delay engines' bottleneck, external loss and the native
delay engine (build/delayd), calibrated at every set-up.

    from tcpprofile.testbed import LinkConfig, EmulatedLink
    cfg = LinkConfig.checked(rate_bps="10Gbit", rtt_s="45.6ms", buffer_bytes="50MB")
    with EmulatedLink(cfg) as link:
        link.run("sender", ["iperf3", "-c", link.receiver_addr, ...])
"""

from .calibrate import Calibration
from .cleanup import cleanup_leftovers, status
from .config import LinkConfig
from .engine import EngineStats
from .link import EmulatedLink

__all__ = ["Calibration", "EmulatedLink", "EngineStats", "LinkConfig", "cleanup_leftovers", "status"]
