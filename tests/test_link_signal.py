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


def set_up_by_hand(monkeypatch, build) -> EmulatedLink:
    """A link whose up() runs `build` in place of creating namespaces (nothing privileged happens)."""
    lnk = EmulatedLink(LinkConfig(rate_bps=1e9, rtt_s=0.01, buffer_bytes=10**6, mtu=1500))
    monkeypatch.setattr(link_module, "_check_environment", lambda config: None)
    monkeypatch.setattr(link_module.state, "claim_owner", lambda tag, record: None)
    monkeypatch.setattr(link_module.netns, "netns_list", lambda: [])
    monkeypatch.setattr(lnk, "down", lambda: setattr(lnk, "_up", False))
    monkeypatch.setattr(lnk, "_build", build)
    monkeypatch.setattr(link_module, "_register", lambda link: link_module._active.__setitem__(link.tag, link))
    monkeypatch.setattr(link_module, "_active", {})
    return lnk


def test_a_signal_during_set_up_is_reported_as_the_interrupt_not_the_failed_step(monkeypatch):
    # the RPS step (a subprocess in the namespace) dies with the signal and raises its own error
    def build():
        link_module._on_signal(signal.SIGINT, None)
        raise TcpProfileError("rps set-up failed: exit -2")
    monkeypatch.setitem(link_module._previous_handlers, signal.SIGINT, lambda s, f: None)
    lnk = set_up_by_hand(monkeypatch, build)
    with pytest.raises(KeyboardInterrupt, match="set-up was interrupted by SIGINT") as got:
        lnk.up()
    assert isinstance(got.value.__cause__, TcpProfileError) and not lnk._up


def test_a_failed_set_up_without_a_signal_keeps_its_own_error(monkeypatch):
    def build():
        raise TcpProfileError("rps set-up failed: exit 1")
    lnk = set_up_by_hand(monkeypatch, build)
    with pytest.raises(TcpProfileError, match="exit 1"):
        lnk.up()
    assert lnk.stopped_by_signal is None and not lnk._up
