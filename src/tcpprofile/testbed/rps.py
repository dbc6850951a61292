"""Set a device's RPS CPU mask (receive packet steering) from inside its namespace.

`ip netns exec NS python -m tcpprofile.testbed.rps DEV MASK`: writes hex MASK to every
/sys/class/net/DEV/queues/rx-*/rps_cpus (ip netns exec mounts the namespace's own sysfs) and reads
it back. link.py explains why the link steers its packets.
"""

from __future__ import annotations

import sys
from pathlib import Path


def set_rps(dev: str, mask: str) -> list[str]:
    """Write mask to each rx queue of dev; returns the values read back."""
    queues = sorted(Path(f"/sys/class/net/{dev}/queues").glob("rx-*"))
    if not queues:
        raise OSError(f"{dev}: no receive queues in sysfs")
    for q in queues:
        (q / "rps_cpus").write_text(mask + "\n")
    return [(q / "rps_cpus").read_text().strip() for q in queues]


def main(argv: list[str]) -> int:
    dev, mask = argv
    back = set_rps(dev, mask)
    if any(int(v.replace(",", ""), 16) != int(mask, 16) for v in back):
        print(f"{dev}: rps_cpus reads {back}, wanted {mask}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
