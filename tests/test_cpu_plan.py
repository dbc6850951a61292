"""CPU plans (testbed/cpuplan.py, link.cpu_plan; issue 33 item 6): which plan a host gets, what each plan
puts where, the option validated at the boundary (LinkConfig, the spec) and stored with the link, and
delayd's verdict-thread counters read (an older delayd's output reads None)."""

from __future__ import annotations

import json

import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.testbed import cpuplan
from tcpprofile.testbed.config import LinkConfig
from tcpprofile.testbed.engine import _parse_stats
from tcpprofile.testbed.link import cpu_plan
from test_stall_inject import BASE, SPEC, ids   # delayd's stats without the newer fields; the ids' spec

GOOD = dict(rate_bps="100Mbit", rtt_s="20ms", buffer_bytes="250kB")


@pytest.mark.parametrize("n, name", [(1, "two-core"), (2, "two-core"), (3, "two-core"), (4, "four-core"),
                                     (5, "four-core"), (16, "four-core")])
def test_auto_takes_the_four_core_plan_from_four_cpus_on(n, name):
    assert cpu_plan("auto", range(n)).name == name


@pytest.mark.parametrize("cpus", [[0, 1], [2, 5], [0, 1, 2], [3, 7, 8]])
def test_the_two_core_plan_is_the_design_measured_on_two_cores(cpus):
    """The engines (timing and verdicts) on the last CPU, applications and RPS on the others: the plan
    link.cpu_plan returned before issue 33 ((last CPU), (the others))."""
    plan = cpu_plan("two-core", cpus)
    assert plan.engine_cpus == {cpus[-1]} and plan.app_cpus == set(cpus[:-1]) == set(plan.rps)
    assert plan.verdict_cpu("forward") is None and plan.verdict_cpu("reverse") is None


@pytest.mark.parametrize("cpus", [[0, 1, 2, 3], [4, 5, 6, 7], list(range(16)), [1, 3, 8, 9, 12]])
def test_the_four_core_plan_gives_each_role_its_own_core_and_uses_every_cpu(cpus):
    plan = cpu_plan("four-core", cpus)
    a, b, c = cpus[-1], cpus[-2], cpus[-3]
    assert plan.engine_cpus == {a}
    assert plan.verdict_cpu("forward") == b and plan.app_cpus_of("receiver") == {b}   # iperf3 -s beside
    assert plan.verdict_cpu("reverse") == c and plan.app_cpus_of("sender") == {c}     # iperf3 -c beside
    assert set(plan.rps) == set(cpus[:-3])                                            # D and the rest
    assert plan.engine_cpus | plan.app_cpus | set(plan.rps) == set(cpus)              # nothing idle
    assert not plan.rps & {a, b, c}


@pytest.mark.parametrize("cpus", [[0, 1], [0, 1, 2]])
def test_the_four_core_plan_forced_on_fewer_cpus_keeps_verdicts_off_the_timing_core(cpus):
    plan = cpu_plan("four-core", cpus)
    assert plan.engine_cpus == {cpus[-1]}
    for d in cpuplan.DIRECTIONS:
        assert plan.verdict_cpu(d) in cpus[:-1]
        assert plan.app_cpus_of(cpuplan.verdict_role(d)) == {plan.verdict_cpu(d)}
    assert plan.rps <= set(cpus[:-1])


def test_on_one_cpu_every_plan_shares_it():
    for name in ("two-core", "four-core"):
        plan = cpu_plan(name, [3])
        assert plan.engine_cpus == plan.app_cpus == set(plan.rps) == {3}


def test_the_plan_follows_this_process_cpus_by_default():
    import os
    assert cpu_plan("auto").engine_cpus | cpu_plan("auto").app_cpus == set(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", ["eight-core", "Four-Core", "", 4, None])
def test_linkconfig_refuses_an_unknown_plan_naming_the_field_and_the_plans(value):
    with pytest.raises(ValidationError) as info:
        LinkConfig.checked(**GOOD, cpu_plan=value)
    assert info.value.field == "cpu_plan" and "auto, two-core, four-core" in str(info.value)


def test_linkconfig_defaults_to_auto_and_keeps_a_forced_plan():
    assert LinkConfig.checked(**GOOD).cpu_plan == "auto"
    assert LinkConfig.checked(**GOOD, cpu_plan="four-core").to_dict()["cpu_plan"] == "four-core"


def test_a_spec_without_a_plan_or_with_auto_keeps_its_ids():
    # the ids computed before cpu_plan existed (tests/test_stall_inject.py holds the same pair)
    assert ids() == ids('cpu_plan = "auto"') == ("aa5a4e336b2d00f0", "3bb75542389aa5c7ce4f")


def test_a_forced_plan_is_another_campaign_and_reaches_the_testbed():
    from tcpprofile.campaign.environments import link_config
    from tcpprofile.spec import parse
    extra = 'cpu_plan = "two-core"'
    assert ids(extra)[0] != ids()[0] and ids(extra)[1] != ids()[1]
    s = parse(SPEC.format(extra=extra))
    assert all(p.cpu_plan == "two-core" for p in s.links) and "cpu_plan=two-core" in s.links[0].describe()
    assert link_config(s.links[1]).cpu_plan == "two-core"


@pytest.mark.parametrize("extra", ['cpu_plan = "three-core"', "cpu_plan = 4", 'cpu_plan = ["auto"]'])
def test_a_specs_plan_error_names_its_field(extra):
    from tcpprofile.spec import parse
    with pytest.raises(ValidationError) as info:
        parse(SPEC.format(extra=extra))
    assert info.value.field == "link.cpu_plan" and "auto, two-core, four-core" in str(info.value)


def test_the_store_keeps_the_links_plan(tmp_path):
    from tcpprofile.store import Store
    with Store.open(tmp_path / "s.duckdb") as s:
        s.insert_link({"link_id": "l1", "campaign_id": "c1", "kind": "emulated", "cpu_plan": "four-core"})
        assert s.query("SELECT cpu_plan FROM links") == [{"cpu_plan": "four-core"}]


def test_the_verdict_threads_counters_are_read_and_an_older_engine_reads_none():
    new = {**BASE, "verdict_cpu": 2, "verdict_batches": 40, "verdict_lag_sum_ns": 400_000,
           "verdict_lag_max_ns": 30_000, "verdict_ring_full": 0, "verdict_lag_hist": [0, 39, 1]}
    s = _parse_stats("stats " + json.dumps(new))
    assert (s.verdict_cpu, s.verdict_batches, s.verdict_lag_max_ns, s.verdict_lag_hist) == (2, 40, 30_000, (0, 39, 1))
    old = _parse_stats("stats " + json.dumps(BASE))
    assert (old.verdict_cpu, old.verdict_batches, old.verdict_lag_hist) == (None, None, None)


class _Started(Exception):
    pass


@pytest.mark.parametrize("verdict_cpu, priority, expected", [
    (None, 10, []),                                                   # two-core: delayd as before
    (2, 0, ["--verdict-cpu", "2"]),
    (3, 10, ["--verdict-cpu", "3", "--verdict-rt-priority", "10"]),
])
def test_the_engine_asks_delayd_for_a_verdict_thread_only_with_a_verdict_cpu(monkeypatch, tmp_path,
                                                                            verdict_cpu, priority, expected):
    from tcpprofile.testbed import engine
    seen = []

    def popen(argv, **kw):
        seen.append(argv)
        raise _Started
    monkeypatch.setattr(engine, "delayd_path", lambda: "delayd")
    monkeypatch.setattr(engine.subprocess, "Popen", popen)
    with pytest.raises(_Started):
        engine.DelayEngine("ns", queue=0, delay_ns=1000, maxlen=4096, rcvbuf=1 << 20, log_path=tmp_path / "log",
                           verdict_cpu=verdict_cpu, verdict_rt_priority=priority)
    argv = seen[0]
    got = [a for i, a in enumerate(argv) if a.startswith("--verdict") or (i and argv[i - 1].startswith("--verdict"))]
    assert got == expected
