"""One parser per quantity for every command and the spec, names checked against one list.

Each case is an exact command an operator typed, with the message and exit code it gives."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from synthetic_store import build
from tcpprofile import spec
from tcpprofile.cc.registry import ALIASES, NAMES
from tcpprofile.cli import main
from tcpprofile.errors import ValidationError
from tcpprofile.models.configurations import CONFIGURATIONS, DEFAULT_CONFIGURATION
from tcpprofile.store import Store

DATA = Path(__file__).parent / "data" / "iperf3"
BARE_RTT = "--rtt: 45 has no unit; give it as 45ms or 45s"
PREDICT = ["model", "--variant", "cubic", "--buffer", "50MB"]


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    """Every command here must stop at its arguments: were one accepted (the old code took `tune --budget 20`),
    no race starts and no link comes up."""
    import tcpprofile.testbed
    import tcpprofile.choose.tune

    def refuse(*args, **kwargs):
        raise AssertionError("the arguments were accepted: a race or a link would have started")
    monkeypatch.setattr(tcpprofile.choose.tune, "tune", refuse)
    monkeypatch.setattr(tcpprofile.testbed, "EmulatedLink", refuse)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A synthetic store (tests/synthetic_store.py) holding cubic and scalable runs."""
    path = tmp_path_factory.mktemp("inputs") / "s.duckdb"
    with Store.open(path) as s:
        build(s, variants=("cubic", "scalable"), streams=(1,), rtts=(11.8, 45.6, 91.6), reps=3)
    return str(path)


# -- a bare number is read as seconds: three parsers for one quantity ----------------------------
def test_import_refuses_a_bare_rtt_and_stores_nothing(tmp_path, capsys):
    # before: exit 0 and τ = 45,000 ms stored
    db = tmp_path / "s.duckdb"
    assert run(["import", str(DATA / "one_stream.json"), "--db", str(db), "--rtt", "45"], capsys) == \
        (2, "", f"tcpprofile import: {BARE_RTT}\n")
    assert not db.exists()


def test_model_refuses_a_bare_rtt(capsys):
    # before: exit 0 and a 45,000 ms row
    assert run([*PREDICT, "--rtt", "45"], capsys) == (2, "", f"tcpprofile model: {BARE_RTT}\n")


def test_select_refuses_a_bare_rtt_with_the_same_words(db, capsys):
    # before: its own parser's "give the RTT with a unit, e.g. 45ms or 0.2s (got '45')"
    assert run(["select", "--db", db, "--rtt", "45"], capsys) == (2, "", f"tcpprofile select: {BARE_RTT}\n")


@pytest.mark.parametrize("rtt", ["0ms", "-5ms", "11s"])
def test_the_three_commands_share_the_rtt_range(db, tmp_path, capsys, rtt):
    # before: import and model took 0 and 11 s, and read "-5ms" as unreadable
    words = f"--rtt: {rtt!r} is out of range: must be above 0s and at most 10s\n"
    for argv in (["import", str(DATA / "one_stream.json"), "--db", str(tmp_path / "s.duckdb")],
                 PREDICT, ["select", "--db", db]):
        assert run([*argv, f"--rtt={rtt}"], capsys) == (2, "", f"tcpprofile {argv[0]}: {words}")


@pytest.mark.parametrize("argv, words", [
    (["tune", "--rtt", "87ms", "--budget", "20"], "--budget: 20 has no unit; give it as 20ms or 20s"),
    (["tune", "--rtt", "87ms", "--budget", "0s"], "--budget: '0s' is out of range: must be above 0s"),
    (["tune", "--rtt", "87", "--budget", "1m"], "--rtt: 87 has no unit; give it as 87ms or 87s"),
    (["tune", "--rtt", "87ms", "--duration", "10"], "--duration: 10 has no unit; give it as 10ms or 10s"),
    (["tune", "--rtt", "87ms", "--buffers", "4000000"], "--buffers: 4000000 has no unit; give it as 4000000MB or "
                                                       "4000000MiB; or 'default' (512MiB is iperf3 -w's maximum; "
                                                       "the kernel grants twice the request, so 512MiB gives 1GiB)"),
    (["model", "--variant", "cubic", "--rtt", "10ms", "--buffer", "5000000"],
     "--buffer: 5000000 has no unit; give it as 5000000MB or 5000000MiB"),
    (["model", "--variant", "cubic", "--rtt", "10ms", "--buffer", "5MB", "--capacity", "0Gbit"],
     "--capacity: '0Gbit' is out of range: must be above 0bit"),
    (["model", "--variant", "cubic", "--rtt", "10ms", "--buffer", "5MB", "--wmax=-1MB"],
     "--wmax: '-1MB' is out of range: must be above 0B"),
    (["model", "--variant", "cubic", "--rtt", "10ms", "--buffer", "5MB", "--loss", "1.5"],
     "--loss: a drop probability from 0 to below 1, got 1.5"),
    (["testbed", "up", "--rate", "1Gbit", "--rtt", "10", "--buffer", "1MB"],
     "--rtt: 10 has no unit; give it as 10ms or 10s"),
    (["testbed", "up", "--rate", "1Gbit", "--rtt", "1s", "--buffer", "1MB"], "--rtt: must be in [0.0001, 0.4] s, got 1"),
])
def test_every_command_refuses_bare_numbers_and_out_of_range_values(tmp_path, capsys, argv, words):
    # read in the base unit, tune --budget 20 would be 20 s, --buffers 4000000 four million bytes, model --buffer
    # 5000000 bytes, testbed up --rtt 10 ten seconds; model --loss 1.5 is no probability
    assert run([argv[0], "--db", str(tmp_path / "s.duckdb"), *argv[1:]] if argv[0] == "tune" else argv, capsys) \
        == (2, "", f"tcpprofile {argv[0]}: {words}\n")
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("line, field, words", [
    ("rtt = 45", "link.rtt[0]", 'link.rtt[0]: 45 has no unit; give it as "45ms" or "45s"'),
    ('rtt = "45"', "link.rtt[0]", "link.rtt[0]: 45 has no unit; give it as 45ms or 45s"),
    ("rtt = [0.0456]", "link.rtt[0]", 'link.rtt[0]: 0.0456 has no unit; give it as "0.0456ms" or "0.0456s"'),
    ("rate = 10000000000", "link.rate[0]",
     'link.rate[0]: 10000000000 has no unit; give it as "10000000000Mbit" or "10000000000Gbit"'),
    ('rtt = "-5ms"', "link.rtt[0]", "link.rtt[0]: '-5ms' is out of range: must be from 400us to 400ms"),
])
def test_a_spec_refuses_numbers_without_units(line, field, words):
    # a TOML number (or a string without a unit) read in the base unit would make `rtt = 45` 45 s
    text = f'[campaign]\nname = "t"\n[link]\nrate = "10Gbit"\nrtt = "45ms"\n{line}\n[transfer]\nvariant = "cubic"\n' \
           'duration = "5s"\n'
    text = text.replace('rtt = "45ms"\n', "") if line.startswith("rtt") else text.replace('rate = "10Gbit"\n', "")
    with pytest.raises(ValidationError) as err:
        spec.parse(text)
    assert err.value.field == field and str(err.value) == words


# -- unknown names pass or vanish ------------------------------------------------------------------
KNOWN = ", ".join(NAMES) + " (aliases: stcp = scalable)"


def test_import_refuses_an_unknown_variant(tmp_path, capsys):
    # before: exit 0, variant 'foo' stored beside kernel name 'cubic'
    db = tmp_path / "s.duckdb"
    assert run(["import", str(DATA / "one_stream.json"), "--db", str(db), "--variant", "foo"], capsys) == \
        (2, "", f"tcpprofile import: --variant: unknown congestion control 'foo'; known: {KNOWN}\n")
    assert not db.exists()


def test_import_stores_an_alias_as_the_usual_name(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    assert run(["import", str(DATA / "one_stream.json"), "--db", str(db), "--variant", "STCP"], capsys)[0] == 0
    with Store.open(db, read_only=True) as s:
        assert s.query("SELECT variant FROM runs") == [{"variant": "scalable"}]


@pytest.mark.parametrize("name, words", [
    ("foo", f"unknown congestion control 'foo'; known: {KNOWN}; the store holds: cubic, scalable"),
    ("CUBIC", "unknown congestion control 'CUBIC' (names are lower case, as the kernel spells them: 'cubic'); "
              f"known: {KNOWN}; the store holds: cubic, scalable"),
    ("htcp", "the store holds no ok runs of 'htcp'; it holds: cubic, scalable"),
])
def test_select_refuses_a_variant_the_store_does_not_hold_listing_what_it_holds(db, capsys, name, words):
    # before: "no ok runs match (check --variants/--streams/--buffers and the conditions)", nothing listed
    assert run(["select", "--db", db, "--rtt", "45.6ms", "--variants", "cubic", name], capsys) == \
        (2, "", f"tcpprofile select: --variants: {words}\n")


def test_select_takes_an_alias_in_any_case(db, capsys):
    assert set(ALIASES) == {"stcp"}
    rc, out, _ = run(["select", "--db", db, "--rtt", "45.6ms", "--variants", "Stcp", "--top", "1"], capsys)
    assert rc == 0 and "scalable n=1" in out and "cubic" not in out.split("Recommended:")[0].split("rank")[1]


def test_select_loss_modes_come_from_the_one_list(db, capsys):
    assert run(["select", "--db", db, "--rtt", "45.6ms", "--loss", "bursty:0.1"], capsys) == \
        (2, "", "tcpprofile select: --loss: expected one of none, periodic:RATE, uniform:RATE, got 'bursty:0.1'\n")
    assert run(["select", "--db", db, "--rtt", "45.6ms", "--loss", "uniform:1.5"], capsys) == \
        (2, "", "tcpprofile select: --loss: RATE must be above 0 and below 1, got '1.5'\n")
    # the spec checks the same list (testbed.config.LOSS_MODES), which `testbed up --loss-mode` offers
    with pytest.raises(ValidationError) as err:
        spec.parse('[campaign]\nname = "t"\n[link]\nrate = "1Gbit"\nrtt = "10ms"\nloss = { mode = "bursty" }\n'
                   '[transfer]\nvariant = "cubic"\nduration = "5s"\n')
    assert str(err.value) == "link.loss[0].mode: 'bursty': must be one of none, periodic, uniform"


def test_model_refuses_an_unknown_configuration_for_every_action(capsys):
    # before: `model --configuration bogus` (predict) ran and ignored it
    listing = ", ".join(CONFIGURATIONS)
    for argv in ([*PREDICT, "--rtt", "10ms"], ["model", "fit", "--db", "none.duckdb"]):
        assert run([*argv, "--configuration", "bogus"], capsys) == \
            (2, "", f"tcpprofile model: --configuration: 'bogus': one of {listing}\n")
    assert run([*PREDICT, "--rtt", "10ms", "--configuration", "trajectory"], capsys) == \
        (2, "", "tcpprofile model: --configuration: only for fit and validate (predict takes --set NAME=VALUE)\n")


def test_model_help_lists_every_configuration():
    # before: the help named 3 (default, trajectory, trajectory2), `model fit`'s error 5; now with the default
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        main(["model", "--help"])
    flat = " ".join(text.getvalue().split()).replace("- ", "-")   # argparse may wrap a name at its hyphen
    assert len(CONFIGURATIONS) == 9 and f"one of {', '.join(CONFIGURATIONS)}" in flat
    assert f"default {DEFAULT_CONFIGURATION}, the one that passed validation" in flat


def test_cc_load_takes_the_same_names():
    # `cc load` takes the names `model --variant` takes, aliases in any case (cc.registry.ALIASES)
    from tcpprofile import cc
    assert cc.expand(["STCP", "scalable", "cubic"]) == ["scalable", "cubic"]
    with pytest.raises(ValidationError) as err:
        cc.expand(["Cubic"])
    assert str(err.value) == ("variant: unknown congestion control 'Cubic' (names are lower case, as the kernel "
                              f"spells them: 'cubic'); known: {KNOWN}")
