"""What the fixture generators share: a throwaway network namespace with its loopback up, and a server
in it that a client may connect to once it listens (polled with ss, never a sleep). Root."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def namespace(prefix: str) -> Iterator[str]:
    ns = f"{prefix}{secrets.token_hex(2)}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


@contextmanager
def serving(ns: str, argv: list[str], port: int, *, stop: bool) -> Iterator[None]:
    """The server `argv` running in `ns`, listening on `port`; afterwards killed (stop) or waited for
    (a one-off server, iperf3 -1, ends by itself)."""
    server = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while not subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"],
                                 capture_output=True, text=True).stdout.strip():
            if server.poll() is not None:
                raise SystemExit(f"{argv[0]} server exited")
        yield
    finally:
        if stop:
            server.kill()
        server.wait(timeout=30)
