"""Stall injection's configuration (testbed/inject.py, LinkConfig.stall_inject): units parsed, every error
names its field and what is allowed, each engine gets the holds its direction asks for; the engine's
record (EngineStats) reads delayd's new counters and an older delayd's output without them."""

from __future__ import annotations

import json

import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.testbed.config import LinkConfig
from tcpprofile.testbed.engine import _parse_stats
from tcpprofile.testbed.inject import StallInject, engine_ns

GOOD = dict(rate_bps="100Mbit", rtt_s="20ms", buffer_bytes="250kB")


def test_off_by_default_and_a_table_is_parsed_to_seconds_and_nanoseconds():
    assert LinkConfig.checked(**GOOD).stall_inject is None
    cfg = LinkConfig.checked(**GOOD, stall_inject={"hold": "50ms", "every": "1s", "direction": "forward"})
    inj = cfg.stall_inject
    assert (inj.hold_s, inj.every_s, inj.direction) == (pytest.approx(0.05), 1.0, "forward")
    assert inj.engine_ns("forward") == (1_000_000_000, 50_000_000) and inj.engine_ns("reverse") == (0, 0)
    assert cfg.to_dict()["stall_inject"] == {"hold_s": pytest.approx(0.05), "every_s": 1.0, "direction": "forward"}


@pytest.mark.parametrize("direction, fwd, rev", [("forward", True, False), ("reverse", False, True),
                                                 ("both", True, True)])
def test_each_direction_holds_only_its_engines(direction, fwd, rev):
    inj = StallInject.checked({"hold": "10ms", "every": "2s", "direction": direction})
    on = (2_000_000_000, 10_000_000)
    assert engine_ns(inj, "forward") == (on if fwd else (0, 0))
    assert engine_ns(inj, "reverse") == (on if rev else (0, 0))
    assert engine_ns(None, "forward") == (0, 0)


def test_direction_defaults_to_forward():
    assert StallInject.checked({"hold": "3ms", "every": "2s"}).direction == "forward"


@pytest.mark.parametrize("value, field, words", [
    ({"hold": 10, "every": "2s"}, "stall_inject.hold", "has no unit"),
    ({"hold": "10ms", "every": "2"}, "stall_inject.every", "has no unit"),
    ({"hold": "10kg", "every": "2s"}, "stall_inject.hold", "cannot read"),
    ({"hold": "0.05ms", "every": "2s"}, "stall_inject.hold", "from 100us to 1s"),     # below 0.1 ms
    ({"hold": "1.5s", "every": "2s"}, "stall_inject.hold", "from 100us to 1s"),
    ({"hold": "5ms", "every": "5ms"}, "stall_inject.every", "from 10ms to 1h"),
    ({"hold": "500ms", "every": "500ms"}, "stall_inject.hold", "shorter than every"),
    ({"hold": "10ms", "every": "2s", "direction": "up"}, "stall_inject.direction", "'forward', 'reverse', 'both'"),
    ({"hold": "10ms"}, "stall_inject.every", "is required"),
    ({"every": "2s"}, "stall_inject.hold", "is required"),
    ({"hold": "10ms", "every": "2s", "phase": "1s"}, "stall_inject.phase", "allowed: hold, every, direction"),
    ("10ms every 2s", "stall_inject", "must be a table"),
])
def test_each_error_names_its_field_and_what_is_allowed(value, field, words):
    with pytest.raises(ValidationError) as info:
        LinkConfig.checked(**GOOD, stall_inject=value)
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_a_hold_just_shorter_than_its_period_is_accepted():
    inj = StallInject.checked({"hold": "999ms", "every": "1s"})
    assert inj.engine_ns("forward") == (1_000_000_000, 999_000_000)


def test_linkconfig_refuses_anything_but_a_stall_inject_object():
    with pytest.raises(ValidationError) as info:
        LinkConfig(rate_bps=1e8, rtt_s=0.02, buffer_bytes=250_000, stall_inject={"hold": "10ms", "every": "2s"})
    assert info.value.field == "stall_inject"


# What delayd prints (print_stats), cut to the fields this test needs to vary; the rest are zeros.
BASE = {"queue": 0, "delay_ns": 10_000_000, "packets": 0, "bytes": 0, "released": 0, "held": 0, "max_held": 0,
        "kernel_queued": 0, "queue_dropped": 0, "user_dropped": 0, "enobufs": 0, "nl_errors": 0, "ring_full": 0,
        "late_sum_ns": 0, "late_max_ns": 0, "late_min_ns": 0, "period_late_max_ns": 0, "period_late_min_ns": 0,
        "wake_late_mean_ns": 0, "wakeups": 0, "rate_bps": 0, "buffer_bytes": 0, "bottleneck_drops": 0,
        "bottleneck_drop_bytes": 0, "bottleneck_overlimits": 0, "kernel_stamped": 0, "wire_bytes": 0,
        "backlog_ns": 0, "loss_on": 0, "loss_seed": 0, "loss_seen": 0, "loss_dropped": 0, "cpu_user_s": 0.0,
        "cpu_sys_s": 0.0, "mono_ns": 0, "period_late_hist": [0, 0], "period_stalls": 0, "period_stall_log": []}


def test_the_engines_stall_record_is_read_and_an_older_engine_reads_none():
    new = {**BASE, "stall_every_ns": 1_000_000_000, "stall_hold_ns": 50_000_000, "stall_holds": 9,
           "late_episodes": 11, "late_excess_ns": 452_000_000}
    s = _parse_stats("stats " + json.dumps(new))
    assert (s.stall_every_ns, s.stall_hold_ns, s.stall_holds, s.late_episodes, s.late_excess_ns) == \
        (1_000_000_000, 50_000_000, 9, 11, 452_000_000)
    old = _parse_stats("stats " + json.dumps(BASE))
    assert (old.stall_holds, old.late_episodes, old.late_excess_ns) == (None, None, None)


SPEC = """
[campaign]
name = "ids"
seed = 7
repetitions = 2
[link]
rate = "1Gbit"
rtt = ["10ms", "20ms"]
buffer = "BDP"
{extra}
[transfer]
variant = ["cubic"]
streams = [1]
duration = "5s"
"""


def ids(extra: str = "") -> tuple[str, str]:
    from tcpprofile.spec import RunPoint, parse
    s = parse(SPEC.format(extra=extra))
    return s.campaign_id, RunPoint(s.links[0], "cubic", 1, None, None, 5, False, 1).run_id(s.campaign_id)


def test_a_spec_without_injection_keeps_the_ids_it_had_before_the_field_existed():
    # computed with the code before issue 33: a resumed campaign finds its runs
    assert ids() == ("aa5a4e336b2d00f0", "3bb75542389aa5c7ce4f")


def test_a_spec_with_injection_is_another_campaign_and_its_links_inject():
    from tcpprofile.campaign.environments import link_config
    from tcpprofile.spec import parse
    extra = 'stall_inject = { hold = "10ms", every = "2s", direction = "both" }'
    assert ids(extra)[0] != ids()[0] and ids(extra)[1] != ids()[1]
    s = parse(SPEC.format(extra=extra))
    assert all(p.stall_inject == StallInject(0.01, 2.0, "both") for p in s.links)
    assert "stalls=hold 10ms every 2s both" in s.links[0].describe()
    assert link_config(s.links[1]).stall_inject == StallInject(0.01, 2.0, "both")


@pytest.mark.parametrize("extra, field", [
    ('stall_inject = { hold = "10ms" }', "link.stall_inject.every"),
    ('stall_inject = { hold = 10, every = "2s" }', "link.stall_inject.hold"),
    ('stall_inject = "10ms"', "link.stall_inject"),
])
def test_a_specs_injection_error_names_its_field(extra, field):
    from tcpprofile.spec import parse
    with pytest.raises(ValidationError) as info:
        parse(SPEC.format(extra=extra))
    assert info.value.field == field
