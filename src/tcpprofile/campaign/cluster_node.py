"""A testbed node of a Ray cluster, without Ray: the resource a node offers and the executor asks for, and
the `ray start` line and environment that make a node (docs/cluster.md). Both the CLI
(`tcpprofile cluster start`) and the executor (campaign/cluster.py) read these; neither imports the other."""

from __future__ import annotations

import ipaddress

RESOURCE = "tcpprofile_testbed"        # one per machine: a node holds one link configuration at a time
LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}   # Ray keeps a 127.0.0.1 node on loopback


def start_argv(head: bool, address: str | None, node_ip: str, port: int = 6379) -> list[str]:
    """THE `ray start` line of a testbed node (docs/cluster.md quotes it). Token authentication comes with
    it in the environment (start_environment); the dashboard is off."""
    argv = ["ray", "start", f'--resources={{"{RESOURCE}": 1}}', f"--node-ip-address={node_ip}"]
    return argv + (["--head", f"--port={port}", "--include-dashboard=false"] if head else [f"--address={address}"])


def start_environment(node_ip: str) -> dict[str, str]:
    """What `ray start` gets beyond the token (cluster_auth.ray_environment): a loopback node stays on
    loopback (Ray 2.60 otherwise replaces 127.0.0.1 by the machine's network address, measured)."""
    return dict(LOOPBACK_ONLY) if ipaddress.ip_address(node_ip).is_loopback else {}
