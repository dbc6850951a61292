"""Must-show check: at every paper RTT the calibrated idle RTT is within max(1 %, 0.1 ms) of target.

Brings a 10 Gbit/s link up at each tau in {0.4, 11.8, 22.6, 45.6, 91.6, 183, 366} ms and prints its
calibration (idle RTT as TCP's min_rtt of a sparse flow, each direction held tau/2, and rate). Exit status 1 if any tau is
off. Usage (root): .venv/bin/python benchmarks/check_rtt_targets.py [--rate 10Gbit] [--mtu 1500] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.testbed.calibrate import rtt_tolerance_s

RTTS_MS = (0.4, 11.8, 22.6, 45.6, 91.6, 183.0, 366.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="10Gbit")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--buffer", default="10MB")
    ap.add_argument("--json", action="store_true", help="one JSON calibration per line")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("check_rtt_targets: FAILED: cannot measure without root", file=sys.stderr)
        return 2
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    if not args.json:
        print(f"{'tau ms':>7} {'measured':>9} {'error ms':>9} {'tol ms':>7} {'mean':>9} {'min':>8} {'max':>8} "
              f"{'mdev':>6} {'half ms':>8} {'rate Gbit/s':>11}  flags")
    all_ok = True
    for rtt in RTTS_MS:
        cfg = LinkConfig.checked(rate_bps=args.rate, rtt_s=rtt / 1e3, buffer_bytes=args.buffer, mtu=args.mtu)
        with EmulatedLink(cfg) as link:
            c = link.calibration
        rtt_ok = "rtt_off" not in c.flags
        all_ok &= rtt_ok
        if args.json:
            print(json.dumps(c.to_dict()), flush=True)
            continue
        tol_ms = rtt_tolerance_s(rtt / 1e3) * 1e3
        print(f"{rtt:>7} {c.rtt_measured_ms:>9.3f} {c.rtt_measured_ms - rtt:>+9.3f} {tol_ms:>7.3f} "
              f"{c.rtt_mean_ms:>9.3f} {c.rtt_min_ms:>8.3f} {c.rtt_max_ms:>8.3f} {c.rtt_mdev_ms:>6.3f} "
              f"{c.delay_per_direction_ms:>8.3f} {c.rate_measured_bps / 1e9:>11.3f}  "
              f"{','.join(c.flags) or 'ok'}", flush=True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
