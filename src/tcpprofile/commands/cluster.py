"""`tcpprofile cluster start (--head | --address HEAD:PORT) --node-ip-address ADDR`: make this machine a
testbed node of a Ray cluster, i.e. run the documented `ray start ... --resources='{"tcpprofile_testbed": 1}'`
line with Ray's token authentication on, after checking that it can hold a link (root, the delay engine
built). `--print` shows the line only. `tcpprofile cluster token [--rotate]` creates (or replaces) the
cluster's token file. Campaigns then run with `tcpprofile run SPEC --db DB --cluster HEAD:PORT`, reading
the same token file (docs/cluster.md).

The token is passed to Ray by file (RAY_AUTH_TOKEN_PATH, campaign/cluster_auth.py), never on a command
line or in the output. A testbed node is never started without token authentication.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..campaign import cluster_auth
from ..campaign.cluster_node import start_argv, start_environment

NAME = "cluster"
HELP = "make this machine a testbed node of a Ray cluster"
ORDER = 50            # its place in `tcpprofile --help`


def register(subparsers) -> None:
    parser = subparsers.add_parser(NAME, help=HELP)
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = sub.add_parser("start", help="ray start with the tcpprofile_testbed resource (one link at a time), "
                                         "token authentication on")
    where = start.add_mutually_exclusive_group(required=True)
    where.add_argument("--head", action="store_true", help="start the cluster's head here (a testbed node too)")
    where.add_argument("--address", metavar="HEAD:PORT", help="join the cluster whose head is at HEAD:PORT")
    start.add_argument("--node-ip-address", required=True, metavar="ADDR", type=node_address,
                       help="this machine's address that the other nodes and the driver reach (required: "
                            "Ray does not guess it, and no wildcard address)")
    start.add_argument("--port", type=int, default=6379, help="with --head: the head's port (default 6379)")
    _token_file_option(start)
    start.add_argument("--print", dest="print_only", action="store_true", help="print the ray start line only")
    start.set_defaults(func=_start)
    token = sub.add_parser("token", help="create the cluster's token file (mode 0600), or replace it (--rotate)")
    _token_file_option(token)
    token.add_argument("--rotate", action="store_true",
                       help="replace the token by a new one (stop every node first; docs/cluster.md)")
    token.set_defaults(func=_token)


def _token_file_option(parser) -> None:
    parser.add_argument("--token-file", metavar="FILE", default=None,
                        help=f"the cluster's token file (default: ${cluster_auth.ENV_VAR}, else "
                             f"{cluster_auth.SYSTEM_PATH} for root, ~/.config/tcpprofile/cluster-token otherwise)")


def node_address(text: str) -> str:
    """--node-ip-address: one IP address of this machine; a wildcard (0.0.0.0, ::) is refused."""
    import argparse
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address (allowed: an IPv4 or IPv6 address "
                                         f"of this machine)") from None
    if ip.is_unspecified:
        raise argparse.ArgumentTypeError(f"{text} is the wildcard address: name the address of this machine "
                                         f"that the other nodes reach")
    return str(ip)


def shown(argv: list[str], node_ip: str, token: Path) -> str:
    """The line as one would type it: the environment assignments (a path, not the token), then argv."""
    env = cluster_auth.ray_environment(token, base={}) | start_environment(node_ip)
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv)


def _start(args) -> int:
    from ..errors import EnvironmentNotReady

    argv = start_argv(args.head, args.address, args.node_ip_address, args.port)
    path = cluster_auth.token_path(args.token_file)
    if args.print_only:
        print(shown(argv, args.node_ip_address, path))
        return 0
    if os.geteuid() != 0:
        raise EnvironmentNotReady("a testbed node needs root (network namespaces, qdiscs, BPF)")
    if args.head:
        path, created = cluster_auth.ensure(path)
        if created:
            print(f"created the cluster's token file {path} (mode 0600): copy it to every node and driver "
                  f"(same path, or {cluster_auth.ENV_VAR}=PATH there)", file=sys.stderr)
    else:
        cluster_auth.check(path)                    # the head's token, copied here
    from ..testbed.engine import delayd_path
    delayd_path()                                   # raises when the delay engine is not built
    ray = shutil.which("ray") or shutil.which("ray", path=os.path.dirname(sys.executable))
    if ray is None:
        raise EnvironmentNotReady("ray is not installed: pip install 'tcpprofile[cluster]' (scripts/bootstrap does)")
    print(shown(argv, args.node_ip_address, path))
    if not ipaddress.ip_address(args.node_ip_address).is_loopback:
        print(f"note: Ray 2.60 listens on every interface of this machine whatever --node-ip-address says "
              f"({args.node_ip_address} is what it advertises); only holders of the token get in. Restrict its "
              f"ports to the cluster's machines with a firewall (docs/cluster.md, Threat model)", file=sys.stderr)
    env = cluster_auth.ray_environment(path) | start_environment(args.node_ip_address)
    return subprocess.run([ray, *argv[1:]], env=env).returncode


def _token(args) -> int:
    path = cluster_auth.token_path(args.token_file)
    if args.rotate:
        cluster_auth.create(path, replace=True)
        print(f"new token in {path} (mode 0600). The running nodes still hold the old one: stop every node "
              f"(`ray stop` on each), copy {path} to every node and driver, start the nodes again; the old "
              f"token is refused from then on")
        return 0
    path, created = cluster_auth.ensure(path)
    print(f"{'created' if created else 'checked'} {path} (mode 0600): copy it to every node and driver")
    return 0
