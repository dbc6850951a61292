"""A link that SIGINT/SIGTERM took down remembers it: when the signal's KeyboardInterrupt is lost on its
way up (DuckDB turns it into a query error or drops it when the query was finishing), the next use of the
link raises KeyboardInterrupt, not "link … is not up" (seen once: `reproduce` exited 2 after Ctrl-C just
after a link's calibration). No namespace is created: the link is marked up by hand and its teardown
replaced, so the test needs no privileges."""

from __future__ import annotations

import signal

import pytest

from tcpprofile.errors import TcpProfileError
from tcpprofile.testbed import EmulatedLink, LinkConfig
from tcpprofile.testbed import link as link_module


def marked_up(monkeypatch) -> EmulatedLink:
    lnk = EmulatedLink(LinkConfig(rate_bps=1e9, rtt_s=0.01, buffer_bytes=10**6, mtu=1500))
    monkeypatch.setattr(lnk, "down", lambda: setattr(lnk, "_up", False))   # no namespaces to remove
    lnk._up = True
    monkeypatch.setitem(link_module._active, lnk.tag, lnk)
    return lnk


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_link_taken_down_by_a_signal_raises_keyboardinterrupt_when_used(monkeypatch, signum):
    lnk = marked_up(monkeypatch)
    monkeypatch.setitem(link_module._previous_handlers, signum, lambda s, f: None)   # its exception lost
    link_module._on_signal(signum, None)
    assert lnk.stopped_by_signal == signum and not lnk._up
    with pytest.raises(KeyboardInterrupt, match=signum.name):
        lnk.popen("sender", ["true"])


def test_a_link_taken_down_otherwise_says_it_is_not_up(monkeypatch):
    lnk = marked_up(monkeypatch)
    link_module._teardown_all()                  # atexit's call: no signal
    assert lnk.stopped_by_signal is None
    with pytest.raises(TcpProfileError, match="is not up"):
        lnk.popen("sender", ["true"])
