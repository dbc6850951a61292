"""`tcpprofile testbed up|down|status`: bring an emulated link up (foreground, until Ctrl-C or
SIGTERM), remove leftovers of crashed links, list our links. For a link in the background run
`tcpprofile testbed up ... &` and stop it with `kill -TERM <pid>`: teardown runs on SIGTERM too."""

from __future__ import annotations

import json
import signal

from ..testbed.config import LOSS_MODES

NAME = "testbed"
HELP = "emulated dedicated connections (network namespaces)"
ORDER = 40            # its place in `tcpprofile --help`

# LinkConfig's fields -> the flags that give them, so that its errors name the flag
FLAGS = {"rate_bps": "--rate", "rtt_s": "--rtt", "buffer_bytes": "--buffer", "loss_mode": "--loss-mode",
         "loss_rate": "--loss-rate", "mtu": "--mtu", "offloads": "--offloads"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(NAME, help=HELP)
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="bring a link up, print its calibration, stay up until Ctrl-C")
    up.add_argument("--rate", required=True, help="line rate, e.g. 10Gbit")
    up.add_argument("--rtt", required=True, help="round-trip time, e.g. 45.6ms")
    up.add_argument("--buffer", required=True, help="bottleneck drop-tail buffer, e.g. 50MB")
    up.add_argument("--loss-mode", default="none", choices=LOSS_MODES)
    up.add_argument("--loss-rate", default="0", help="periodic: 1/N (e.g. 1/1000); uniform: probability")
    up.add_argument("--mtu", type=int, default=1500, choices=[1500, 9000])
    up.add_argument("--offloads", default="auto", choices=["auto", "on", "off"])
    up.add_argument("--tag", default=None, help="1-8 characters a-z0-9 (default: random)")
    up.add_argument("--json", action="store_true", help="print the calibration as JSON")
    up.set_defaults(func=_up)
    down = sub.add_parser("down", help="remove leftovers of links whose process died")
    down.set_defaults(func=_down)
    status = sub.add_parser("status", help="list our links, namespaces and processes")
    status.set_defaults(func=_status)


def _up(args) -> int:
    from ..testbed import EmulatedLink

    cfg = link_config(args)
    with EmulatedLink(cfg, tag=args.tag) as link:
        if args.json:
            print(json.dumps({"tag": link.tag, "calibration": link.calibration.to_dict()}), flush=True)
        else:
            print(f"link {link.tag} up: sender {link.ns_sender} ({link.sender_addr}), "
                  f"receiver {link.ns_receiver} ({link.receiver_addr})")
            print(f"calibration: {link.calibration.summary()}", flush=True)
            print("press Ctrl-C (or send SIGTERM) to take it down", flush=True)
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            pass
    print(f"link {link.tag} down")
    return 0


def link_config(args):
    """The link `testbed up` asks for; an error names the flag (quantities: units.py, ranges: LinkConfig)."""
    from ..errors import ValidationError
    from ..testbed import LinkConfig

    try:
        return LinkConfig.checked(rate_bps=args.rate, rtt_s=args.rtt, buffer_bytes=args.buffer,
                                  loss_mode=args.loss_mode, loss_rate=args.loss_rate, mtu=args.mtu,
                                  offloads=args.offloads)
    except ValidationError as err:
        if err.field not in FLAGS:
            raise
        raise ValidationError(FLAGS[err.field], str(err).split(": ", 1)[1]) from err


def _down(args) -> int:
    from ..campaign.crash_cleanup import remove_leftovers

    removed = remove_leftovers()
    for item in removed:
        print(f"removed {item}")
    if not removed:
        print("nothing to remove")
    return 0


def _status(args) -> int:
    from ..testbed import status

    rows = status()
    if not rows:
        print("no tcpprofile links")
    for row in rows:
        state = "alive" if row["alive"] else "LEFTOVER (owner dead: run `tcpprofile testbed down`)"
        spaces = ", ".join(row["namespaces"]) or "-"
        print(f"link {row['tag']}: owner pid {row['owner_pid']} {state}; namespaces {spaces}")
        for proc in row["processes"]:
            print(f"  {proc['ns']} pid {proc['pid']}: {proc['cmdline']}")
    return 0
