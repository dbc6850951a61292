"""`tcpprofile hostcheck --rtt [MIN..]MAX [--rate C]`: this host's TCP limits against what the path's BDP needs.

Prints an /etc/sysctl.d snippet that only ever raises a value (fasterdata's rules), fq pacing advice where the
kernel has fq, interface advice and how each congestion control is had here (docs/hostcheck.md).
Exit status: 0 when every key is at or above its target; 1 when the snippet raises or sets something;
2 with a one-line reason on bad input.
"""

from __future__ import annotations

import json
import sys

from .. import units
from ..errors import ValidationError
from .options import parse_rtt_s

NAME = "hostcheck"
HELP = "check the host's TCP limits against a path's BDP (fasterdata)"
ORDER = 110            # its place in `tcpprofile --help`


def register(subparsers) -> None:
    p = subparsers.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    p.add_argument("--rtt", required=True, help="the path's RTT, or the operator's range MIN..MAX (e.g. 10ms..150ms)")
    p.add_argument("--rate", default="10Gbit", help="the path's rate C (default 10Gbit)")
    p.add_argument("--streams", type=int, default=1, help="parallel streams per transfer (default 1)")
    p.add_argument("--buffer", help="a fixed socket buffer B the transfers set (default: autotuning, 2 x BDP)")
    p.add_argument("--netns", help="read inside this network namespace (ip netns exec)")
    p.add_argument("--dev", help="only this interface (default: every non-loopback one)")
    p.add_argument("--json", action="store_true", help="print JSON (keys in docs/hostcheck.md)")
    p.set_defaults(func=run)


def parse_rtt_range(value: str) -> tuple[float, float]:
    """'100ms' -> (0.1, 0.1); '10ms..150ms' -> (0.01, 0.15) [s]."""
    lo, sep, hi = (value or "").partition("..")
    rtts = (parse_rtt_s(lo), parse_rtt_s(hi)) if sep else (parse_rtt_s(value),) * 2
    if rtts[0] > rtts[1]:
        raise ValidationError("--rtt", f"a range is MIN..MAX with MIN <= MAX, got {value!r}")
    return rtts


def validate(args) -> tuple[tuple[float, float], float, int | None]:
    from ..hostcheck import probe
    from ..testbed.netns import netns_list

    rtt = parse_rtt_range(args.rtt)
    rate = units.rate_bps("--rate", args.rate)
    if not 0 < rate <= 10e12:
        raise ValidationError("--rate", f"must be above 0 and at most 10Tbit, got {args.rate!r}")
    if not 1 <= args.streams <= 128:
        raise ValidationError("--streams", f"must be 1..128, got {args.streams}")
    buffer = units.size_bytes("--buffer", args.buffer) if args.buffer is not None else None
    if buffer is not None and buffer <= 0:
        raise ValidationError("--buffer", f"must be above 0, got {args.buffer!r}")
    if args.netns is not None and args.netns not in netns_list():
        raise ValidationError("--netns", f"no network namespace named {args.netns!r} (see `ip netns list`)")
    if args.dev is not None and not probe.interfaces(netns=args.netns, only=args.dev):
        raise ValidationError("--dev", f"no non-loopback interface named {args.dev!r} "
                                       f"{'in ' + args.netns if args.netns else 'on this host'} (see `ip link`)")
    return rtt, rate, buffer


def run(args) -> int:
    from ..hostcheck.host import examine

    rtt, rate, buffer = validate(args)
    doc = examine(rtt, rate, streams=args.streams, buffer_bytes=buffer, netns=args.netns, dev=args.dev)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        print_text(doc)
    return 1 if doc["changes"] else 0


def print_text(doc: dict) -> None:
    p = doc["path"]
    lo, hi = p["rtt_ms"]
    rtt = f"{hi:g} ms" if lo == hi else f"{lo:g}..{hi:g} ms"
    print(f"{doc['scope']}: path {p['rate_bps'] / 1e9:g} Gbit/s x {rtt}, BDP up to {p['bdp_bytes'][1] / 1e6:.3g} MB, "
          f"buffer target {p['buffer_target_bytes']} B, {p['streams']} stream(s)")
    print("\nsysctl:")
    for r in doc["sysctls"]:
        print(f"  {r['key']:<32} {r['current'] or 'unreadable':<28} target >= {r['target']:<24} {r['status']}")
    print("")
    for line in doc["snippet"]:
        print(line)
    print("\npacing:")
    for line in doc["pacing"]:
        print(f"  {line}")
    print("\ninterfaces:")
    for line in doc["interface_advice"] or ["nothing to raise"]:
        print(f"  {line}")
    print(f"\ncongestion control (default {doc['congestion_control']['default']}):")
    for line in doc["congestion_control"]["lines"]:
        print(f"  {line}")
