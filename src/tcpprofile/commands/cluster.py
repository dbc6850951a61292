"""`tcpprofile cluster start (--head | --address HEAD:PORT)`: make this machine a testbed node of a Ray
cluster, i.e. run the documented `ray start ... --resources='{"tcpprofile_testbed": 1}'` line after
checking that it can hold a link (root, the delay engine built). `--print` shows the line only.
Campaigns then run with `tcpprofile run SPEC --db DB --cluster HEAD:PORT` (docs/cluster.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("cluster", help="make this machine a testbed node of a Ray cluster")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = sub.add_parser("start", help="ray start with the tcpprofile_testbed resource (one link at a time)")
    where = start.add_mutually_exclusive_group(required=True)
    where.add_argument("--head", action="store_true", help="start the cluster's head here (a testbed node too)")
    where.add_argument("--address", metavar="HEAD:PORT", help="join the cluster whose head is at HEAD:PORT")
    start.add_argument("--port", type=int, default=6379, help="with --head: the head's port (default 6379)")
    start.add_argument("--print", dest="print_only", action="store_true", help="print the ray start line only")
    start.set_defaults(func=_start)


def start_argv(head: bool, address: str | None, port: int = 6379) -> list[str]:
    """THE `ray start` line of a testbed node (docs/cluster.md quotes it)."""
    argv = ["ray", "start", '--resources={"tcpprofile_testbed": 1}']
    return argv + (["--head", f"--port={port}"] if head else [f"--address={address}"])


def _start(args) -> int:
    from ..errors import EnvironmentNotReady

    argv = start_argv(args.head, args.address, args.port)
    print(shlex.join(argv))
    if args.print_only:
        return 0
    if os.geteuid() != 0:
        raise EnvironmentNotReady("a testbed node needs root (network namespaces, qdiscs, BPF)")
    from ..testbed.engine import delayd_path
    delayd_path()                                   # raises when the delay engine is not built
    ray = shutil.which("ray") or shutil.which("ray", path=os.path.dirname(sys.executable))
    if ray is None:
        raise EnvironmentNotReady("ray is not installed: pip install 'tcpprofile[cluster]' (scripts/bootstrap does)")
    return subprocess.run([ray, *argv[1:]]).returncode
