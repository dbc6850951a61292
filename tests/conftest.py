"""Shared fixtures. Privileged tests run in throwaway namespaces that are always torn down."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess

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


def pytest_collection_modifyitems(config, items):
    reason = _can_run_privileged()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "privileged" in item.keywords:
            item.add_marker(skip)


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
