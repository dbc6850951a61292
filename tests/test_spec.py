"""Campaign spec: every field's validation error names the field; sweep size; order determinism."""

from __future__ import annotations

import copy
import sys
import tomllib
from pathlib import Path

import pytest

from tcpprofile.measure import iperf
from tcpprofile import spec
from tcpprofile.errors import ValidationError

ROOT = Path(__file__).resolve().parents[1]

BASE = {
    "campaign": {"name": "t", "seed": 7, "repetitions": 2},
    "link": {"rate": ["1Gbit", "10Gbit"], "rtt": ["0.4ms", "45.6ms"], "buffer": ["BDP", "50MB"],
             "loss": [{"mode": "none"}, {"mode": "periodic", "every": 1000}], "mtu": 9000},
    "transfer": {"variant": ["cubic", "bbr"], "streams": [1, 4], "socket_buffer": ["default", "64MB"],
                 "duration": ["5s"]},
}


class Raw(str):
    """TOML text written as it is: Raw("1e400") is the TOML float 1e400 (tomllib reads inf)."""


def dump(doc: dict) -> str:
    """Minimal TOML writer for the test documents (tables of scalars, lists and inline tables)."""
    def val(v):
        if isinstance(v, Raw):
            return str(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v + '"'
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + "}"
        return repr(v)
    out = []
    for table, body in doc.items():
        if not isinstance(body, dict):
            out.insert(0, f"{table} = {val(body)}")
            continue
        out.append(f"[{table}]")
        out += [f"{k} = {val(v)}" for k, v in body.items()]
    return "\n".join(out) + "\n"


def mutated(path: str, value) -> str:
    doc = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node.setdefault(p, {})
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return dump(doc)


class _Delete:
    """The value that removes a field (its repr names it, so the test ids are the same in every process)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()

# (path to change, new value, field the error must name)
CASES = [
    ("campaign.name", DELETE, "campaign.name"),
    ("campaign.name", "has space", "campaign.name"),
    ("campaign.name", 3, "campaign.name"),
    ("campaign.seed", -1, "campaign.seed"),
    ("campaign.seed", "x", "campaign.seed"),
    ("campaign.order", "sorted", "campaign.order"),
    ("campaign.repetitions", 0, "campaign.repetitions"),
    ("campaign.repetitions", 1001, "campaign.repetitions"),
    ("campaign.repetitions", 1.5, "campaign.repetitions"),
    ("campaign.trace_cwnd", "yes", "campaign.trace_cwnd"),
    ("campaign.rerun_flagged", "yes", "campaign.rerun_flagged"),
    ("campaign.rerun_flagged", 1, "campaign.rerun_flagged"),
    ("campaign.retries", -1, "campaign.retries"),
    ("campaign.retries", 11, "campaign.retries"),
    ("campaign.colour", 1, "campaign.colour"),
    ("campaign.precision", "two", "campaign.precision"),
    ("campaign.precision", "2%", "campaign.repetitions"),      # adaptive and fixed together
    ("campaign.min_repetitions", 3, "campaign.min_repetitions"),   # without precision
    ("campaign.max_repetitions", 3, "campaign.max_repetitions"),
    ("campaign.confidence", 0.9, "campaign.confidence"),
    ("link.rate", DELETE, "link.rate"),
    ("link.rate", ["1Gbit", "20Gbit"], "link.rate[1]"),
    ("link.rate", ["0Gbit"], "link.rate[0]"),
    ("link.rate", ["fast"], "link.rate[0]"),
    ("link.rate", [], "link.rate"),
    ("link.rate", ["1Gbit", "1Gbit"], "link.rate[1]"),
    ("link.rtt", DELETE, "link.rtt"),
    ("link.rtt", ["0.1ms"], "link.rtt[0]"),
    ("link.rtt", ["1ms", "401ms"], "link.rtt[1]"),
    ("link.rtt", ["10 parsecs"], "link.rtt[0]"),
    ("link.buffer", ["BDP", "lots"], "link.buffer[1]"),
    ("link.buffer", ["0xBDP"], "link.buffer[0]"),
    ("link.buffer", ["0"], "link.buffer[0]"),
    ("link.loss", ["none"], "link.loss[0]"),
    ("link.loss", [{"mode": "bursty"}], "link.loss[0].mode"),
    ("link.loss", [{"mode": "periodic"}], "link.loss[0].every"),
    ("link.loss", [{"mode": "none"}, {"mode": "periodic", "every": 1}], "link.loss[1].every"),
    ("link.loss", [{"mode": "uniform"}], "link.loss[0].p"),
    ("link.loss", [{"mode": "uniform", "p": 1.5}], "link.loss[0].p"),
    ("link.loss", [{"mode": "uniform", "p": 0.01, "every": 3}], "link.loss[0].every"),
    ("link.mtu", 1400, "link.mtu"),
    ("link.mtu", [1500, 1400], "link.mtu[1]"),
    ("link.stall_inject", {"hold": "2s", "every": "1s"}, "link.stall_inject.hold"),
    ("link.stall_inject", {"hold": "10ms", "every": "2s", "direction": "sideways"}, "link.stall_inject.direction"),
    ("link.stall_inject", ["10ms"], "link.stall_inject"),
    ("link.cpu_plan", "eight-core", "link.cpu_plan"),
    ("link.delay", "1ms", "link.delay"),
    ("remote.host", "x", "link"),                 # [link] and [remote] together
    ("transfer.variant", DELETE, "transfer.variant"),
    ("transfer.variant", ["cubic", "Bad-Name"], "transfer.variant[1]"),
    ("transfer.variant", ["cubic", "cubic"], "transfer.variant[1]"),
    ("transfer.variant", ["cubic", "CUBIC"], "transfer.variant[1]"),     # the kernel's names are lower case
    ("transfer.variant", ["cubic", "foo"], "transfer.variant[1]"),       # not in cc/registry.py
    ("transfer.variant", ["scalable", "stcp"], "transfer.variant[1]"),   # an alias of the other: a duplicate
    ("link.rtt", [0.0456], "link.rtt[0]"),                               # a number without its unit
    ("link.rtt", ["0.0456"], "link.rtt[0]"),
    ("link.rate", [10000000000], "link.rate[0]"),
    ("link.buffer", [50000000], "link.buffer[0]"),
    ("transfer.socket_buffer", [4000000], "transfer.socket_buffer[0]"),
    ("transfer.duration", [10], "transfer.duration[0]"),
    ("transfer.streams", [1, 0], "transfer.streams[1]"),
    ("transfer.streams", [1, 4, 129], "transfer.streams[2]"),
    ("transfer.streams", ["4"], "transfer.streams[0]"),
    ("transfer.socket_buffer", ["default", "1GB"], "transfer.socket_buffer[1]"),
    ("transfer.socket_buffer", ["huge"], "transfer.socket_buffer[0]"),
    ("transfer.duration", ["2.5s"], "transfer.duration[0]"),
    ("transfer.duration", ["0s"], "transfer.duration[0]"),
    ("transfer.duration", ["2 days"], "transfer.duration[0]"),
    ("transfer.size", ["1GB"], "transfer.size"),  # size and duration together
    ("transfer.duration", DELETE, "transfer.size"),  # neither
    ("transfer.reverse", 1, "transfer.reverse"),
    ("transfer.zerocopy", "yes", "transfer.zerocopy"),
    ("transfer.window", "1MB", "transfer.window"),
    ("extra.x", 1, "extra"),
]


@pytest.mark.parametrize("path,value,field", CASES, ids=[f"{c[0]}={c[1]!r}"[:60] for c in CASES])
def test_field_validation_names_the_field(path, value, field):
    with pytest.raises(ValidationError) as err:
        spec.parse(mutated(path, value))
    assert err.value.field == field
    assert str(err.value).startswith(field + ":")


def test_every_spec_key_has_a_case():
    covered = {c[0] for c in CASES}
    for table, keys in spec._KEYS.items():
        if table == "remote":
            continue
        for key in keys:
            assert f"{table}.{key}" in covered, f"no validation case for {table}.{key}"


@pytest.mark.parametrize("body,field", [
    ('[campaign]\nname="r"\n[remote]\nport=5201\n[transfer]\nvariant="cubic"\nduration="2s"\n', "remote.host"),
    ('[campaign]\nname="r"\n[remote]\nhost="a b"\n[transfer]\nvariant="cubic"\nduration="2s"\n', "remote.host"),
    ('[campaign]\nname="r"\n[remote]\nhost="h"\nport=70000\n[transfer]\nvariant="cubic"\nduration="2s"\n',
     "remote.port"),
    ('[campaign]\nname="r"\n[remote]\nhost="h"\nrate="x"\n[transfer]\nvariant="cubic"\nduration="2s"\n',
     "remote.rate"),
    ('[campaign]\nname="r"\n[remote]\nhost="h"\nuser="x"\n[transfer]\nvariant="cubic"\nduration="2s"\n',
     "remote.user"),
    ('[link]\nrate="1Gbit"\nrtt="1ms"\n[transfer]\nvariant="cubic"\nduration="2s"\n', "campaign"),
    ('[campaign]\nname="r"\n[link]\nrate="1Gbit"\nrtt="1ms"\n', "transfer"),
    ('[campaign]\nname="r"\n[transfer]\nvariant="cubic"\nduration="2s"\n', "link"),
    ('campaign = 3\n', "campaign"),
    ('[campaign\n', "spec"),
])
def test_table_level_errors(body, field):
    with pytest.raises(ValidationError) as err:
        spec.parse(body)
    assert err.value.field == field


def test_normalised_values_and_sweep_size():
    s = spec.parse(dump(BASE))
    # links: 2 rates × 2 RTTs × 2 buffers × 2 losses × 1 MTU
    assert len(s.links) == 16
    bdp = [p for p in s.links if p.buffer_label == "BDP" and p.rate_bps == 10e9 and p.rtt_s == 45.6e-3]
    assert bdp[0].buffer_bytes == round(10e9 * 45.6e-3 / 8)
    assert {p.loss for p in s.links} == {spec.Loss("none", 0.0), spec.Loss("periodic", 1e-3, 1000)}
    assert s.socket_buffers == (None, 64_000_000)
    assert s.durations == (5,) and s.sizes == ()
    # runs: 16 links × 2 variants × 2 streams × 2 socket buffers × 1 duration × 2 repetitions
    runs = s.sweep()
    assert len(runs) == 16 * 2 * 2 * 2 * 2 == 256
    ids = {p.run_id(s.campaign_id) for p in runs}
    assert len(ids) == len(runs)


def test_scalars_stand_for_one_element_lists():
    s = spec.parse('[campaign]\nname="x"\n[link]\nrate="1Gbit"\nrtt="10ms"\n'
                   '[transfer]\nvariant="cubic"\nsize="1GB"\n')
    assert len(s.links) == 1 and s.links[0].buffer_bytes == 1_250_000 and s.links[0].mtu == 9000
    assert s.sizes == (10**9,) and s.streams == (1,) and s.socket_buffers == (None,)
    assert s.seed is None and s.order == "random" and s.retries == 1 and s.repetitions == 1


def test_order_is_deterministic_in_the_seed_and_grouped_by_link():
    s = spec.parse(dump(BASE))
    a, b, c = s.schedule(7), s.schedule(7), s.schedule(8)
    assert a == b and a != c
    assert sorted(map(repr, a)) == sorted(map(repr, s.sweep()))
    # each link appears as one contiguous block
    seen, last = set(), None
    for p in a:
        if p.link != last:
            assert p.link not in seen
            seen.add(p.link)
            last = p.link
    given = spec.parse(dump({**BASE, "campaign": {**BASE["campaign"], "order": "given"}}))
    assert given.schedule(1) == given.sweep()


def test_an_alias_is_stored_as_the_usual_name():
    # cc/registry.py ALIASES: STCP (any case) is the kernel's scalable; the campaign is the same one
    alias, usual = (spec.parse(mutated("transfer.variant", [v, "cubic"])) for v in ("STCP", "scalable"))
    assert alias.variants == ("scalable", "cubic") and alias.campaign_id == usual.campaign_id


def test_a_spec_of_bare_numbers_rewritten_in_base_units_keeps_its_campaign():
    # A spec of bare numbers in the base units, rewritten with those units ("0.0456s"), normalises to the same
    # numbers (× 1), so its campaign id does not change and a campaign started from it resumes. The pinned id
    # is the one main at 3b385f4 gave the spec written with bare numbers (rate = 10000000000, rtt =
    # [0.0004, 0.0456, 0.183], socket_buffer = [4000000], duration = [10]).
    text = ('[campaign]\nname="t"\nseed=1\n[link]\nrate="10000000000bit"\nrtt=["0.0004s", "0.0456s", "0.183s"]\n'
            'buffer=["BDP"]\n[transfer]\nvariant="cubic"\nsocket_buffer=["4000000B"]\nduration=["10s"]\n')
    assert spec.parse(text).campaign_id == "71ae020718b97136"


def test_campaign_id_ignores_layout_but_not_content():
    s1 = spec.parse(dump(BASE))
    s2 = spec.parse("# a comment\n" + dump(BASE))
    assert s1.campaign_id == s2.campaign_id
    other = copy.deepcopy(BASE)
    other["transfer"]["streams"] = [1, 5]
    assert spec.parse(dump(other)).campaign_id != s1.campaign_id


def test_zerocopy_asks_iperf3_for_sendfile_and_keeps_earlier_ids():
    # -Z is part of a run's identity when on; off, the ids are those of a spec written before the option
    plain = spec.parse(dump(BASE))
    off = copy.deepcopy(BASE)
    off["transfer"]["zerocopy"] = False
    on = copy.deepcopy(BASE)
    on["transfer"]["zerocopy"] = True
    s_off, s_on = spec.parse(dump(off)), spec.parse(dump(on))
    assert s_off.campaign_id == plain.campaign_id != s_on.campaign_id
    assert [p.run_id(plain.campaign_id) for p in plain.sweep()] == [p.run_id(s_off.campaign_id) for p in s_off.sweep()]
    assert all(p.zerocopy and " -Z " in p.describe() for p in s_on.sweep())
    p = s_on.sweep()[0]
    argv = iperf.client_argv("10.0.0.2", 5201, cc="cubic", streams=p.streams, socket_buffer=p.socket_buffer_bytes,
                             transfer_bytes=p.transfer_bytes, duration_s=p.duration_s, reverse=p.reverse,
                             zerocopy=p.zerocopy)
    assert argv.count("-Z") == 1
    assert "-Z" not in iperf.client_argv("10.0.0.2", 5201, cc="cubic", streams=1, socket_buffer=None,
                                         transfer_bytes=None, duration_s=2, reverse=False)


def test_remote_spec():
    s = spec.parse('[campaign]\nname="r"\n[remote]\nhost="10.0.0.2"\n'
                   '[transfer]\nvariant=["cubic"]\nduration="2s"\nreverse=true\n')
    assert s.mode == "remote" and s.links[0].host == "10.0.0.2" and s.links[0].port == 5201
    assert all(p.reverse for p in s.sweep())


def test_examples_validate():
    smoke = spec.load(ROOT / "examples" / "smoke.toml")
    assert smoke.mode == "emulated" and len(smoke.sweep()) >= 4
    table1 = spec.load(ROOT / "examples" / "hpdc17-table1.toml")
    # 3 variants × 10 streams × 3 buffers × 4 sizes × 7 RTTs × 10 repetitions
    assert len(table1.sweep()) == 3 * 10 * 3 * 4 * 7 * 10 == 25200
    assert [round(p.rtt_s * 1e3, 1) for p in table1.links] == [0.4, 11.8, 22.6, 45.6, 91.6, 183, 366]
    assert tomllib.loads((ROOT / "examples" / "hpdc17-table1.toml").read_text())["campaign"]["seed"]
    adaptive = spec.load(ROOT / "examples" / "adaptive.toml")     # README's "adaptive repetitions" command
    assert adaptive.adaptive and (adaptive.precision, adaptive.min_repetitions) == (0.02, 3)
    assert len(adaptive.sweep()) == 2 * 2 * 2 * 10     # the maximum design: 8 configurations × 10


def test_eleven_variants_and_losses_examples_validate():
    eleven = spec.load(ROOT / "examples" / "eleven-variants.toml")
    # 12 variants × 10 stream counts × 7 RTTs × 10 repetitions, all with cwnd traces
    assert len(eleven.sweep()) == 12 * 10 * 7 * 10 and eleven.trace_cwnd
    assert {p.variant for p in eleven.sweep()} == {"reno", "cubic", "bbr", "htcp", "scalable", "highspeed",
                                                   "bic", "illinois", "lp", "westwood", "yeah", "vegas"}
    losses = spec.load(ROOT / "examples" / "losses.toml")
    assert len(losses.sweep()) == 3 * 9 * 7 * 10
    assert {p.link.loss.mode for p in losses.sweep()} == {"none", "periodic", "uniform"}


def test_eleven_variants_quick_example_covers_all_twelve_with_traces():
    quick = spec.load(ROOT / "examples" / "eleven-variants-quick.toml")
    assert quick.trace_cwnd and len({p.variant for p in quick.sweep()}) == 12


# TOML values on which a plain conversion raises OverflowError / ValueError / TypeError (int(inf), …), each
# in a field: each must be a ValidationError naming that field
ODD = [
    ("campaign.repetitions", Raw("1e400"), "campaign.repetitions"),        # a float: inf
    ("campaign.seed", Raw("nan"), "campaign.seed"),
    ("campaign.seed", Raw("9" * 40), "campaign.seed"),                    # beyond 64 bits
    ("campaign.retries", True, "campaign.retries"),                       # a bool where an int belongs
    ("campaign.repetitions", {"n": 2}, "campaign.repetitions"),           # a table where a scalar belongs
    ("link.rate", [Raw("1e400")], "link.rate[0]"),
    ("link.rate", [Raw("9" * 400)], "link.rate[0]"),
    ("link.rate", ["1e400Gbit"], "link.rate[0]"),
    ("link.rtt", [Raw("-inf")], "link.rtt[0]"),
    ("link.rtt", ["nanms"], "link.rtt[0]"),
    ("link.buffer", ["1e400MB"], "link.buffer[0]"),
    ("link.buffer", [Raw("inf")], "link.buffer[0]"),
    ("link.loss", [{"mode": ["periodic"]}], "link.loss[0].mode"),         # unhashable mode
    ("link.loss", [{"mode": "periodic", "every": Raw("1e400")}], "link.loss[0].every"),
    ("link.loss", [{"mode": "uniform", "p": Raw("nan")}], "link.loss[0].p"),
    ("link.mtu", Raw("1e400"), "link.mtu"),
    ("transfer.duration", [Raw("1e400")], "transfer.duration[0]"),
    ("transfer.duration", ["1e400s"], "transfer.duration[0]"),
    ("transfer.duration", [Raw("nan")], "transfer.duration[0]"),
    ("transfer.socket_buffer", [Raw("1e400")], "transfer.socket_buffer[0]"),
    ("transfer.streams", [Raw("1979-05-27")], "transfer.streams[0]"),     # a date
    ("transfer.streams", [[1]], "transfer.streams[0]"),
    ("transfer.variant", [], "transfer.variant"),
]


@pytest.mark.parametrize("path,value,field", ODD, ids=[f"{c[0]}={c[1]!r}"[:60] for c in ODD])
def test_any_toml_value_gives_a_validation_error_naming_the_field(path, value, field):
    with pytest.raises(ValidationError) as err:
        spec.parse(mutated(path, value))
    assert err.value.field == field and str(err.value).startswith(field + ":")


def test_an_integer_too_long_for_python_is_a_validation_error():
    # past Python's int-from-text limit (sys.get_int_max_str_digits, 4300 unless changed) tomllib
    # raises ValueError: the whole spec is refused; under no limit the field is
    with pytest.raises(ValidationError) as err:
        spec.parse(mutated("campaign.seed", Raw("9" * 5000)))
    limited = 0 < sys.get_int_max_str_digits() < 5000
    assert err.value.field == ("spec" if limited else "campaign.seed")
