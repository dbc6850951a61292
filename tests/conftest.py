"""Shared fixtures. Privileged tests run in throwaway namespaces that are always torn down."""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from typing import NoReturn

import pytest

# A job started in the background (as CI may start us) inherits SIGINT ignored, and exec keeps that for
# every child: the tests that interrupt a child (cleanup after SIGINT) need the default disposition.
# A Python handler is reset to the default in children at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _can_run_privileged() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("ip") is None:
        return "needs iproute2"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "network namespaces unavailable"
    return None


# CI sets this: privileged tests that cannot run (not root, no namespaces) fail the run instead of skipping.
REQUIRE_PRIVILEGED = "TCPPROFILE_REQUIRE_PRIVILEGED"


def pytest_collection_modifyitems(config, items):
    reason = _can_run_privileged()
    if reason is None:
        return
    if os.environ.get(REQUIRE_PRIVILEGED) == "1" and any("privileged" in item.keywords for item in items):
        raise pytest.UsageError(f"{REQUIRE_PRIVILEGED}=1, but the privileged tests cannot run: {reason}")
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "privileged" in item.keywords:
            item.add_marker(skip)


def require_or_skip(reason: str) -> NoReturn:
    """A test that cannot run its real check here (another process holds what it needs, a part is not
    installed): with TCPPROFILE_REQUIRE_PRIVILEGED=1 (CI) that is a failure, since on a CI machine the
    other holder can only be a leak of an earlier test; elsewhere a skip that says why."""
    if os.environ.get(REQUIRE_PRIVILEGED) == "1":
        pytest.fail(f"{REQUIRE_PRIVILEGED}=1, but {reason}", pytrace=False)
    pytest.skip(reason)


def import_or_require(module: str, reason: str):
    """importlib.import_module(module), or require_or_skip(reason) if it cannot be imported."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        require_or_skip(f"{reason} ({e})")


@pytest.fixture
def netns():
    """A fresh network namespace named tcpp-t<hex>; deleted after the test whatever happens."""
    name = f"tcpp-t{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


@pytest.fixture
def remote_pair():
    """A stand-in for a remote iperf3 host: namespaces 'server' (10.203.x.2, iperf3 -s on port 5410) and
    'client' (10.203.x.1) joined by veth; torn down, with every process in them, whatever happens."""
    tag = secrets.token_hex(2)
    srv, cli = f"tcpp-cr{tag}-s", f"tcpp-cr{tag}-c"
    octet = int(tag, 16) % 250 + 1
    server = None
    try:
        for ns in (srv, cli):
            _sh("ip", "netns", "add", ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        _sh("ip", "link", "add", f"tcppcr{tag}a", "netns", cli, "type", "veth", "peer", "name", f"tcppcr{tag}b",
            "netns", srv)
        _sh("ip", "-n", cli, "addr", "add", f"10.203.{octet}.1/24", "dev", f"tcppcr{tag}a")
        _sh("ip", "-n", srv, "addr", "add", f"10.203.{octet}.2/24", "dev", f"tcppcr{tag}b")
        _sh("ip", "-n", cli, "link", "set", f"tcppcr{tag}a", "up")
        _sh("ip", "-n", srv, "link", "set", f"tcppcr{tag}b", "up")
        server = subprocess.Popen(["ip", "netns", "exec", srv, "iperf3", "-s", "-p", "5410"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not _sh("ip", "netns", "exec", srv, "ss", "-Hltn", "sport = :5410").stdout.strip():
            assert server.poll() is None and time.monotonic() < deadline, "the iperf3 server did not listen"
            time.sleep(0.05)  # polling interval of the readiness check
        yield {"client": cli, "host": f"10.203.{octet}.2", "port": 5410}
    finally:
        if server is not None:
            server.kill()
            server.wait()
        for ns in (cli, srv):
            for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
                os.kill(int(pid), signal.SIGKILL)  # only processes inside our own throwaway namespaces
            _sh("ip", "netns", "del", ns, check=False)
