"""LinkConfig validation: every error names its field; configurations the engine cannot hold are refused."""

from __future__ import annotations

import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.testbed.config import (MEMORY_BUDGET_BYTES, QUEUE_MAXLEN_MAX, RATE_MAX_BPS, RTT_MAX_S,
                                       LinkConfig)

GOOD = dict(rate_bps="10Gbit", rtt_s="45.6ms", buffer_bytes="50MB")


def make(**changes):
    return LinkConfig.checked(**{**GOOD, **changes})


def test_units_are_parsed_to_si():
    cfg = make(loss_mode="periodic", loss_rate="1/1000", mtu=9000)
    assert cfg.rate_bps == 10e9 and cfg.rtt_s == pytest.approx(0.0456) and cfg.buffer_bytes == 50_000_000
    assert cfg.loss_every == 1000


@pytest.mark.parametrize("changes, field", [
    (dict(rate_bps="0.5Mbit"), "rate_bps"),
    (dict(rate_bps="11Gbit"), "rate_bps"),
    (dict(rate_bps="fast"), "rate_bps"),
    (dict(rate_bps=float("nan")), "rate_bps"),
    (dict(rtt_s="0.05ms"), "rtt_s"),
    (dict(rtt_s="401ms"), "rtt_s"),
    (dict(rtt_s=True), "rtt_s"),
    (dict(buffer_bytes=1000), "buffer_bytes"),
    (dict(buffer_bytes="5GB"), "buffer_bytes"),
    (dict(mtu=1400), "mtu"),
    (dict(mtu="1500"), "mtu"),
    (dict(loss_mode="bursty"), "loss_mode"),
    (dict(loss_rate=0.01), "loss_rate"),
    (dict(loss_mode="uniform", loss_rate=0), "loss_rate"),
    (dict(loss_mode="uniform", loss_rate=1), "loss_rate"),
    (dict(loss_mode="periodic", loss_rate=0.003), "loss_rate"),
    (dict(loss_mode="periodic", loss_rate=1), "loss_rate"),
    (dict(loss_mode="periodic", loss_rate="x"), "loss_rate"),
    (dict(offloads="maybe"), "offloads"),
    (dict(loss_mode="uniform", loss_rate=1e-4, offloads="on"), "offloads"),
])
def test_each_error_names_its_field(changes, field):
    with pytest.raises(ValidationError) as info:
        make(**changes)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_buffer_must_hold_one_frame():
    assert make(buffer_bytes=1514).buffer_bytes == 1514
    with pytest.raises(ValidationError, match="at least one frame"):
        make(buffer_bytes=1513)
    with pytest.raises(ValidationError, match="9014"):
        make(buffer_bytes=9013, mtu=9000)


def test_refuses_what_the_engine_cannot_hold():
    # 10 Gbit/s x 400 ms plus a 2.5 GB buffer exceeds the memory budget.
    big = dict(rate_bps="10Gbit", rtt_s="400ms")
    assert make(**big, buffer_bytes="2GB").memory_bytes <= MEMORY_BUDGET_BYTES
    with pytest.raises(ValidationError) as info:
        make(**big, buffer_bytes="2.5GB")
    assert info.value.field == "buffer_bytes" and "budget" in str(info.value)


def test_queue_length_fits_at_every_allowed_rate_and_rtt():
    worst = LinkConfig(rate_bps=RATE_MAX_BPS, rtt_s=RTT_MAX_S, buffer_bytes=1514, mtu=1500)
    # one direction holds C·tau/2 of full frames; with margin still under the engine's queue limit
    assert worst.queue_maxlen >= RATE_MAX_BPS * RTT_MAX_S / 2 / 8 / 1514
    assert worst.queue_maxlen <= QUEUE_MAXLEN_MAX


def test_direct_construction_is_validated_too():
    with pytest.raises(ValidationError) as info:
        LinkConfig(rate_bps=1e9, rtt_s=0.01, buffer_bytes=10**6, mtu=9001)
    assert info.value.field == "mtu"


@pytest.mark.parametrize("mtu, ceiling", [(1500, 1448 / 1538), (9000, 8948 / 9038)])
def test_rate_semantics_line_rate(mtu, ceiling):
    cfg = make(mtu=mtu, rate_bps=1e9)
    assert cfg.goodput_ceiling_bps == pytest.approx(1e9 * ceiling)     # MSS / (MTU + 38 B framing) of C


def test_offloads_auto_follows_loss():
    assert make().segmentation_offload
    assert not make(loss_mode="uniform", loss_rate=0.001).segmentation_offload
    assert not make(offloads="off").segmentation_offload


def test_gso_size():
    cfg = make()                                         # 10 Gbit/s, 45.6 ms: BDP 57 MB
    assert cfg.gso_max_bytes == 400_000                  # BIG TCP, capped
    small = make(rtt_s="0.4ms", buffer_bytes="500kB")    # BDP 500 kB: 1/16 is below 64 KiB
    assert small.gso_max_bytes == 65536
    assert make(buffer_bytes="300kB").gso_max_bytes == 75_000   # a quarter of the buffer
    assert make(rate_bps="1Gbit").gso_max_bytes == 65536       # 0.5 ms at 1 Gbit/s is below 64 KiB


def test_owner_record_reserves_a_tag(tmp_path, monkeypatch):
    from tcpprofile.errors import TcpProfileError
    from tcpprofile.testbed import state
    monkeypatch.setenv("TCPPROFILE_RUN_DIR", str(tmp_path))
    state.claim_owner("abc", {"owner": state.me()})
    with pytest.raises(TcpProfileError, match="in use"):
        state.claim_owner("abc", {"owner": state.me()})
    state.write_owner("dead", {"owner": {"pid": 2**22 + 1, "start": 1}})
    with pytest.raises(TcpProfileError, match="leftovers"):
        state.claim_owner("dead", {"owner": state.me()})
    state.remove_owner("abc")
    state.claim_owner("abc", {"owner": state.me()})


def test_engines_take_turns_only_when_both_fifo_at_one_priority():
    from tcpprofile.testbed.link import ENGINE_POLICY, engines_take_turns
    assert engines_take_turns({"forward": ("SCHED_FIFO", 10), "reverse": ("SCHED_FIFO", 10)})
    assert not engines_take_turns({"forward": ("SCHED_FIFO", 9), "reverse": ("SCHED_FIFO", 10)})
    assert not engines_take_turns({"forward": ("SCHED_OTHER", 0), "reverse": ("SCHED_FIFO", 10)})
    assert not engines_take_turns({"forward": ("SCHED_OTHER", 0), "reverse": ("SCHED_OTHER", 0)})
    assert not engines_take_turns({"forward": ("SCHED_FIFO", 10), "reverse": ("SCHED_OTHER", 10)})
    assert engines_take_turns() is engines_take_turns(ENGINE_POLICY) is False   # the shipped design
