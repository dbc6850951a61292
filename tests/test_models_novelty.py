"""New-condition validation (issue 31, item 1): the stores table, the development constants without the validation
cells, the pre-registered new-condition design (two of four dimensions new against every store the models saw),
and `model validate --by-novelty` (the grouping; E per group from known predictions; the CLI on a synthetic store)."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import synthetic_validation as sv
from tcpprofile import spec
from tcpprofile.cli import main
from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
from tcpprofile.models.novelty import (DesignCell, cells_of_spec, cells_of_store_row, cells_of_table,
                                       development_cells, distance, group, too_close)
from tcpprofile.models.validation import by_novelty
from tcpprofile.store import Store

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
CTX = (10e9, 9000, "none", "auto")
TEN_GB = "F=10000000000"


def _bench(name):
    loaded = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def _spec_text(name, streams, buffers, rtts, size):
    return (f'[campaign]\nname = "{name}"\nseed = 1\nrepetitions = 1\n[link]\nrate = "10Gbit"\nrtt = {rtts}\n'
            f'buffer = {buffers}\nmtu = 9000\n[transfer]\nvariant = ["cubic"]\nstreams = {streams}\n'
            f'socket_buffer = "default"\nsize = "{size}"\n')


# -- the grouping -----------------------------------------------------------------------------------------------------
DEV = [DesignCell("cubic", n, b, t, TEN_GB, CTX) for n in (1, 4) for b in (0.1, 0.3) for t in (11.8, 45.6)]


@pytest.mark.parametrize("cell,dist,label", [
    (DesignCell("cubic", 4, 0.3, 45.6, TEN_GB, CTX), 0, "same cell"),
    (DesignCell("cubic", 4, 0.3 * 1.01, 45.6, TEN_GB, CTX), 0, "same cell"),       # β within 2 %: the same buffer
    (DesignCell("cubic", 3, 0.3, 45.6, TEN_GB, CTX), 1, "new n"),
    (DesignCell("cubic", 1, 0.15, 11.8, TEN_GB, CTX), 1, "new β"),
    (DesignCell("cubic", 1, 0.1, 30.0, TEN_GB, CTX), 1, "new τ"),
    (DesignCell("cubic", 1, 0.1, 11.8, "F=1000000000", CTX), 1, "new F"),
    (DesignCell("cubic", 8, 2.0, 250.0, "F=20000000000", CTX), 4, "new n+β+τ+F"),
    (DesignCell("cubic", 3, 0.7, 11.8, TEN_GB, CTX), 2, "new n+β"),
    (DesignCell("htcp", 1, 0.1, 11.8, TEN_GB, CTX), 5, "new n+β+τ+F+C"),           # no development cell of H-TCP
    (DesignCell("cubic", 1, 0.1, 11.8, TEN_GB, (10e9, 9000, "1/500", "auto")), 5, "new n+β+τ+F+C"),  # another link
    (DesignCell("cubic", 4, 0.3, 45.6, TEN_GB, (5e9, 9000, "none", "auto")), 1, "new C"),   # another rate: 1 dimension
    (DesignCell("cubic", 1, 0.15, 30.0, "F=500000000", (5e9, 9000, "none", "auto")), 4, "new β+τ+F+C"),
    (DesignCell("cubic", 4, 0.3, 45.6, TEN_GB, (10.02e9, 9000, "none", "auto")), 0, "same cell"),   # C within 0.5 %
])
def test_distance_and_group(cell, dist, label):
    assert distance(cell, DEV)[0] == dist
    assert group(*distance(cell, DEV)) == label


def test_each_value_seen_but_never_together_is_a_new_combination():
    """Development (n, β, τ) = (1, 0.1, 11.8) and (4, 0.3, 45.6): (1, 0.3, 11.8) has n, β and τ each measured, never
    together — one dimension from the first cell (β), no new dimension: 'new combination'."""
    dev = [DesignCell("cubic", 1, 0.1, 11.8, TEN_GB, CTX), DesignCell("cubic", 4, 0.3, 45.6, TEN_GB, CTX)]
    assert distance(DesignCell("cubic", 1, 0.3, 11.8, TEN_GB, CTX), dev) == (1, ())
    assert group(1, ()) == "new combination"


def test_cells_of_a_spec_and_of_a_store_table_agree():
    """A spec's cells (β from its bytes over C·τ/8) and a profile table's (β from the configured buffer) are the
    same cells: the grouping of a store against its own spec is 'same cell' everywhere."""
    s = spec.parse(_spec_text("x", "[1, 4]", '["0.1xBDP", "0.3xBDP"]', '["11.8ms", "91.6ms"]', "10GB"))
    cells = cells_of_spec(s)
    assert len(cells) == 8 and {c.buffer_bdp for c in cells} == {0.1, 0.3}
    cols = {"variant": np.array(["cubic"] * 2), "streams": np.array([1, 4]), "rtt_s": np.array([0.0118, 0.0916]),
            "rate_bps": np.full(2, 1e10), "configured_buffer_bytes": np.array([0.1 * 1e10 * 0.0118 / 8,
                                                                               0.3 * 1e10 * 0.0916 / 8]),
            "transfer_bytes": np.full(2, 1e10), "duration_target_s": np.full(2, np.nan),
            "socket_buffer_bytes": np.full(2, np.nan), "loss_mode": np.array(["none"] * 2), "mtu": np.full(2, 9000)}
    assert [distance(c, cells) for c in cells_of_table(cols)] == [(0, ()), (0, ())]


# -- E per group from known predictions -------------------------------------------------------------------------------
def test_E_per_group_from_known_predictions():
    """Rows with known relative errors: each group's E is the mean of its rows' |M − P|/M, per prediction and
    mode; a group with a row without a prediction has no E in that mode (nan)."""
    v = np.array(["cubic"] * 4 + ["htcp"])
    cols = {"variant": v, "streams": np.array([1, 1, 1, 1, 1]), "rtt_s": np.array([11.8, 45.6, 30.0, 70.0, 11.8]) / 1e3,
            "rate_bps": np.full(5, 1e10), "transfer_bytes": np.full(5, 1e10),
            "configured_buffer_bytes": 0.1 * 1e10 * np.array([11.8, 45.6, 30.0, 70.0, 11.8]) / 1e3 / 8,
            "mtu": np.full(5, 9000), "throughput_bps": np.full(5, 8e9), "runs": np.array([2, 2, 2, 1, 2])}
    err = np.array([0.01, 0.03, 0.10, 0.20, 0.05])
    a = {"in": 8e9 * (1 + err), "rtt": 8e9 * (1 - 2 * err)}
    b = {"in": np.full(5, 4e9), "rtt": np.array([8e9, 8e9, np.nan, 8e9, 8e9])}
    rows = by_novelty(cols, {"a": a, "b": b}, DEV, modes=("in", "rtt"))
    got = {(r.variant, r.group): r for r in rows}
    assert set(got) == {("cubic", "same cell"), ("cubic", "new τ"), ("htcp", "new n+β+τ+F+C")}
    same, new = got["cubic", "same cell"], got["cubic", "new τ"]
    assert (same.configs, same.runs, new.configs, new.runs) == (2, 4, 2, 3)
    assert same.errors["a"]["in"] == pytest.approx(2.0) and same.errors["a"]["rtt"] == pytest.approx(4.0)
    assert new.errors["a"]["in"] == pytest.approx(15.0) and new.errors["a"]["rtt"] == pytest.approx(30.0)
    assert same.errors["b"]["in"] == pytest.approx(50.0) and same.errors["b"]["rtt"] == pytest.approx(0.0)
    assert np.isnan(new.errors["b"]["rtt"])
    assert got["htcp", "new n+β+τ+F+C"].distance == (5, 5) and new.distance == (1, 1)


# -- the CLI on a synthetic store ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("novelty") / "v.duckdb"
    with Store.open(str(path)) as s:
        sv.build(s, variants=("cubic",), streams=(1, 4), multiples=(0.1, 0.3), rtts=(45.6, 91.6, 183.0), noise=0.01,
                 config="ss-trains")
    return str(path)


def test_cli_groups_a_store_and_its_groups_make_up_the_validation_cells(store, tmp_path, capsys):
    """Development: CUBIC n = 1 at 0.1 × BDP, the store's three RTTs, 10 GB. The store's (n, β) settings fall into
    same cell / new β / new n / new n+β; each group's E, weighted by its configurations, gives back the validation
    table's E of its (variant, n) cell, for the chosen configuration and the baseline; `paper` is printed beside."""
    dev = tmp_path / "dev.toml"
    dev.write_text(_spec_text("dev", "[1]", '["0.1xBDP"]', '["45.6ms", "91.6ms", "183ms"]', "10GB"))
    assert main(["model", "validate", "--db", store, "--by-novelty", str(dev), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["streams"], r["group"], r["configurations"]) for r in rows} == {
        (1, "same cell", 3), (1, "new β", 3), (4, "new n", 3), (4, "new n+β", 3)}
    assert all(set(r["E_percent"]) == {DEFAULT_CONFIGURATION, "paper", "baseline"} for r in rows)
    assert main(["model", "validate", "--db", store, "--json"]) == 0
    cells = {c["streams"]: c for c in json.loads(capsys.readouterr().out)}
    for n in (1, 4):
        mine = [r for r in rows if r["streams"] == n]
        for name, key in ((DEFAULT_CONFIGURATION, "E_model_percent"), ("baseline", "E_baseline_percent")):
            for mode in ("in", "rtt", "buffer"):
                pooled = sum(r["E_percent"][name][mode] * r["configurations"] for r in mine) / 6
                assert pooled == pytest.approx(cells[n][key][mode], rel=1e-9)
    assert main(["model", "validate", "--db", store, "--by-novelty", str(dev)]) == 0
    text = capsys.readouterr().out
    assert "same cell" in text and "new n+β" in text and "paper" in text


def test_cli_refuses_by_novelty_where_it_does_not_apply(store, tmp_path, capsys):
    assert main(["model", "fit", "--db", store, "--by-novelty", str(tmp_path / "x.toml")]) == 2
    assert "--by-novelty" in capsys.readouterr().err
    for missing in ("missing.csv", "missing.toml"):
        assert main(["model", "validate", "--db", store, "--by-novelty", str(tmp_path / missing)]) == 2
        assert "--by-novelty" in capsys.readouterr().err
    table = (DATA / "model-stores.csv").read_text().replace(",0.2,11.8 45.6", ",0.2,11.8 fast", 1)
    assert ",0.2,11.8 fast" in table
    (tmp_path / "bad.csv").write_text(table)
    assert main(["model", "validate", "--db", store, "--by-novelty", str(tmp_path / "bad.csv")]) == 2
    assert "--by-novelty" in (err := capsys.readouterr().err) and "physics-dev-0.2bdp" in err
    bad = tmp_path / "bad.toml"
    bad.write_text(_spec_text("bad", "[0]", '["0.1xBDP"]', '["45.6ms"]', "10GB"))
    assert main(["model", "validate", "--db", store, "--by-novelty", str(bad)]) == 2
    assert "--by-novelty" in (err := capsys.readouterr().err) and "transfer.streams[0]" in err


# -- the stores table and the development constants -------------------------------------------------------------------
def test_the_stores_table_is_the_specs():
    """benchmarks/data/model-stores.csv is what benchmarks/model_stores.py makes from the specs (so it cannot drift
    from them), every row's lists give back its spec's cells, and the shared counts are the ones docs/models.md
    names: dev3 and dev4 share every cell with the validation stores, dev2 its 8 at 1 × BDP."""
    stores = _bench("model_stores")
    with open(DATA / "model-stores.csv", newline="") as f:
        committed = list(csv.DictReader(f))
    made = stores.table()
    assert committed == [{k: str(v) for k, v in r.items()} for r in made]
    for r, (name, _, source, _) in zip(committed, stores.STORES):
        assert set(cells_of_store_row(r)) == set(cells_of_spec(stores.load(source, name)))
    shared = {r["store"]: int(r["shared_validation_cells"]) for r in committed}
    assert shared["physics-dev3-shallow"] == 6 and shared["physics-dev4-shallow"] == 24
    assert shared["physics-dev2-buffers"] == 8 and shared["physics-dev-0.2bdp"] == 0


def test_development_constants_without_the_validation_cells():
    """Over all traced rows the fit gives the code's W0 = 0.534, s = 2.346 (51 rows); without the rows whose cell a
    validation store has (14 of the fit's, all at 0.1 × BDP): W0 = 0.563, s = 2.217 over 37 (issue 31). κ's 8 rows at
    0.05 × BDP share no validation cell: it does not move."""
    from tcpprofile.models.trajectory import SS_TRAIN_SLOPE, SS_TRAIN_WINDOW
    got = _bench("model_stores").constants()
    every, clean = got["all"], got["no validation cell"]
    assert (round(every["W0"], 3), round(every["s"], 3), every["rows"]) == (SS_TRAIN_WINDOW, SS_TRAIN_SLOPE, 51)
    assert (round(clean["W0"], 3), round(clean["s"], 3), clean["rows"], clean["dropped_fit_rows"]) == (
        0.563, 2.217, 37, 14)
    assert clean["kappa"] == every["kappa"] and clean["kappa_rows"] == 8


# -- the pre-registered new-condition design ---------------------------------------------------------------------------
NEWCOND = [DATA / f"models-newcond-{s}.toml" for s in ("1gb", "5gb", "20gb")]


def _seen():
    return development_cells([DATA / "model-stores.csv"], spec.load, roles=("development", "validation"))


def test_every_new_condition_differs_from_every_seen_store_in_two_of_four():
    """Every configuration of the new-condition design is at distance ≥ 2 from every cell of every store in the
    table (development and validation). The check fails on a design that repeats a development cell or differs
    from one in one dimension only (the same spec with n = 1 at 0.2 × BDP, 11.8 ms, 10 GB added: physics-dev's)."""
    seen = _seen()
    for path in NEWCOND:
        assert too_close(cells_of_spec(spec.load(path)), seen) == []
    text = NEWCOND[0].read_text()
    repeat = spec.parse(text.replace('buffer = ["0.15xBDP", "0.7xBDP"]', 'buffer = ["0.15xBDP", "0.7xBDP", "0.2xBDP"]')
                        .replace('rtt = ["8ms"', 'rtt = ["11.8ms", "8ms"').replace('size = "1GB"', 'size = "10GB"'))
    close = too_close(cells_of_spec(repeat), seen)
    assert DesignCell("cubic", 1, 0.2, 11.8, TEN_GB, CTX) in {c for c, _ in close}
    assert {d for _, d in close} == {0, 1}


def test_the_new_condition_specs():
    """The pre-registered design: CUBIC, H-TCP, STCP at 10 Gbit/s, MTU 9000, autotuned, fixed-size transfers, 2
    repetitions in random order; streams, buffers, RTTs and sizes from the issue's lists (RTTs off the papers'
    grid); 468 runs; links the testbed takes; each run's estimate at least its transfer at the payload rate (8F/C)."""
    from tcpprofile.campaign.environments import link_config
    from tcpprofile.reproduce.campaigns import PAPER_RTTS
    nc = _bench("models_newcond")
    specs = [spec.load(p) for p in NEWCOND]
    assert [s.name for s in specs] == ["models-newcond-1gb", "models-newcond-5gb", "models-newcond-20gb"]
    assert len({s.seed for s in specs}) == 3 and sum(len(s.sweep()) for s in specs) == 468
    for s in specs:
        assert (s.order, s.repetitions, s.socket_buffers, s.variants) == ("random", 2, (None,),
                                                                           ("cubic", "htcp", "scalable"))
        assert set(s.streams) <= {1, 2, 3, 6, 8} and len(s.sizes) == 1 and s.sizes[0] in (10**9, 5 * 10**9, 2 * 10**10)
        assert {p.rate_bps for p in s.links} == {10e9} and {p.mtu for p in s.links} == {9000}
        assert {p.buffer_label for p in s.links} <= {"0.15xBDP", "0.45xBDP", "0.7xBDP", "2xBDP"}
        assert not {round(p.rtt_s * 1e3, 1) for p in s.links} & set(PAPER_RTTS)
        for link in s.links:
            link_config(link)        # the testbed takes every link (a ValidationError naming it otherwise)
        for p in s.sweep()[:6]:
            assert nc.run_seconds(p) >= 8 * p.transfer_bytes / (p.link.rate_bps * 8948 / 9038)
    assert nc.main([]) == 0


NEWCOND_5GBIT = [DATA / f"models-newcond-5gbit-{s}.toml" for s in ("500mb", "2500mb", "10gb")]


def test_the_5gbit_twin_is_the_design_at_half_the_rate_and_half_the_sizes():
    """The 5 Gbit/s twin (pre-registered for a host that cannot carry 10 Gbit/s per packet) is the 10 Gbit/s design
    with the rate and every size halved — so each transfer spans the same number of BDPs, F/(C·τ) — and new seeds;
    every cell is new in β and τ against every store seen before it at any rate (so ≥ 2 apart without counting the
    rate; the table now holds the twin's own measurement, which models_newcond.seen_before leaves out)."""
    seen = _bench("models_newcond").seen_before("5 Gbit/s")
    assert len(seen) < len(_seen())
    seen_beta = {c.buffer_bdp for c in seen}
    seen_tau = {c.rtt_ms for c in seen}
    for ten, five in zip(NEWCOND, NEWCOND_5GBIT):
        a, b = spec.load(ten), spec.load(five)
        assert b.name == "models-newcond-5gbit-" + {10**9: "500mb", 5 * 10**9: "2500mb", 2 * 10**10: "10gb"}[a.sizes[0]]
        assert b.seed != a.seed and b.sizes[0] * 2 == a.sizes[0]
        assert {p.rate_bps for p in b.links} == {5e9}
        assert [(p.rtt_s, p.buffer_label, p.mtu) for p in a.links] == [
            (p.rtt_s, p.buffer_label, p.mtu) for p in b.links]
        assert (a.variants, a.streams, a.repetitions, a.order, a.socket_buffers) == (
            b.variants, b.streams, b.repetitions, b.order, b.socket_buffers)
        assert {(pa.transfer_bytes * 8 / (pa.link.rate_bps * pa.link.rtt_s)) for pa in a.sweep()} == {
            (pb.transfer_bytes * 8 / (pb.link.rate_bps * pb.link.rtt_s)) for pb in b.sweep()}
        cells = cells_of_spec(b)
        assert too_close(cells, seen) == []
        assert all(c.buffer_bdp not in seen_beta and c.rtt_ms not in seen_tau for c in cells)


NEWCOND_B = [DATA / f"models-newcond-5gbit-b-{s}.toml" for s in ("1500mb", "5gb")]


def test_the_second_5gbit_store_is_new_against_every_store_seen_and_the_twin():
    """The second 5 Gbit/s store (pre-registered after the first was read): CUBIC, H-TCP, STCP, autotuned,
    fixed-size, 2 repetitions in random order, 288 runs; every cell ≥ 2 apart from every cell of every store in the
    table, the twin's included; streams, buffers, RTTs and sizes none of the twin's, RTTs off the papers' grid; the
    twin's table rows are in the stores table (so the check sees it)."""
    from tcpprofile.reproduce.campaigns import PAPER_RTTS
    seen = _bench("models_newcond").seen_before("5 Gbit/s, the second store")   # the table now holds it, and later
    assert len(seen) < len(_seen())
    twin = [c for c in seen if c.context[0] == 5e9]
    assert len(twin) == 234 and {c.streams for c in twin} == {1, 3, 8}
    specs = [spec.load(p) for p in NEWCOND_B]
    assert [s.name for s in specs] == ["models-newcond-5gbit-b-1500mb", "models-newcond-5gbit-b-5gb"]
    assert sum(len(s.sweep()) for s in specs) == 288 and len({s.seed for s in specs}) == 2
    for s in specs:
        assert (s.order, s.repetitions, s.socket_buffers, s.variants) == ("random", 2, (None,),
                                                                           ("cubic", "htcp", "scalable"))
        assert {p.rate_bps for p in s.links} == {5e9} and set(s.streams) == {1, 2, 5}
        cells = cells_of_spec(s)
        assert too_close(cells, seen) == []
        assert not {c.rtt_ms for c in cells} & ({c.rtt_ms for c in twin} | set(PAPER_RTTS))
        assert not {c.buffer_bdp for c in cells} & {c.buffer_bdp for c in seen}
        assert not {c.amount for c in cells} & {c.amount for c in seen}
    assert _bench("models_newcond").main([]) == 0


def test_the_delivered_twin_is_the_5gbit_twin_renamed():
    """The twin measured again with fixed-size transfers timed by their delivery: the same design, seed and sizes
    as the 5 Gbit/s twin; only the name differs (so one store can hold both)."""
    for twin in NEWCOND_5GBIT:
        again = twin.with_name(twin.name.replace("5gbit-", "5gbit-delivered-"))
        a, b = spec.load(twin), spec.load(again)
        assert b.name == a.name.replace("5gbit-", "5gbit-delivered-")
        assert [(p.variant, p.streams, p.link, p.transfer_bytes, p.repetition) for p in a.sweep()] == [
            (p.variant, p.streams, p.link, p.transfer_bytes, p.repetition) for p in b.sweep()]
        assert a.seed == b.seed and a.order == b.order


def test_E_from_the_configuration_alone_is_the_relative_error_of_the_priors_prediction():
    """models_newcond.configuration_alone: |M − P|/M per cell with P = priors.predict_bps (nothing fitted), the
    backlog as the cell was measured: runs equal to the prediction give 0; runs 10 % above it, 1/11; an
    iperf3-rated cell (not delivered) is compared with the prediction that keeps the backlog."""
    from tcpprofile.campaign.priors import predict_bps
    nc = _bench("models_newcond")
    cfg = dict(rtt_s=0.07, rate_bps=5e9, buffer_bytes=0.7 * 5e9 * 0.07 / 8, mtu=9000, size_bytes=5e8)
    exact = predict_bps("cubic", 3, **cfg)
    late = predict_bps("cubic", 3, delivered=False, **cfg)
    cells = [{"variant": "cubic", "streams": 3, **cfg, "runs": [exact, exact], "delivered": True},
             {"variant": "cubic", "streams": 3, **cfg, "runs": [1.1 * exact, 1.1 * exact], "delivered": True},
             {"variant": "cubic", "streams": 3, **cfg, "runs": [late], "delivered": False}]
    got = nc.configuration_alone(cells, "ss-trains")[("cubic", 3)]
    assert got == pytest.approx([0.0, 0.1 / 1.1, 0.0], abs=1e-12)
    assert late < 0.9 * exact


def test_the_new_condition_table_from_the_committed_runs():
    """Regression pin of README's and docs/models.md's new-condition table (E from the configuration alone,
    calibrated links): recomputed from benchmarks/data/models-newcond-5gbit-delivered-runs.csv (468 runs, 234 cells,
    every one delivered, one link of 9 cells that missed its calibration); ss-trains at or below the paper's rule
    in every cell; 8 of 9 at or below the paper's in-sample E (4.5, 5.2, 9.3 %), H-TCP n = 1 not."""
    nc = _bench("models_newcond")
    cells = nc.measured_cells(str(DATA / "models-newcond-5gbit-delivered-runs.csv"), "models-newcond-5gbit-delivered-%")
    assert len(cells) == 234 and sum(len(c["runs"]) for c in cells) == 468 and all(c["delivered"] for c in cells)
    kept = [c for c in cells if c["calibrated"]]
    assert len(cells) - len(kept) == 9
    e = {name: {k: 100 * sum(v) / len(v) for k, v in nc.configuration_alone(kept, name).items()}
         for name in ("ss-trains", "paper")}
    pinned = {("cubic", 1): 3.36, ("cubic", 3): 2.18, ("cubic", 8): 1.53, ("htcp", 1): 6.49, ("htcp", 3): 3.38,
              ("htcp", 8): 2.45, ("scalable", 1): 2.10, ("scalable", 3): 1.72, ("scalable", 8): 1.48}
    assert {k: round(v, 2) for k, v in e["ss-trains"].items()} == pinned
    assert all(e["ss-trains"][k] <= e["paper"][k] + 1e-9 for k in pinned)
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert [k for k, v in e["ss-trains"].items() if v > paper_in_sample[k[0]]] == [("htcp", 1)]


def test_the_second_store_table_from_the_committed_runs():
    """Regression pin of the second 5 Gbit/s store's table (docs/models.md "H-TCP's bandwidth switch after slow
    start", README): recomputed from benchmarks/data/models-newcond-5gbit-b-runs.csv (288 runs, 144 cells, every
    one delivered, every link calibrated). bandwidth-switch (the default then) differs from ss-trains only for H-TCP's
    single flow, where it is lower; both at or below the paper's rule in every cell and below the paper's in-sample
    E; ≤ 4 % in every cell but H-TCP n = 1."""
    nc = _bench("models_newcond")
    cells = nc.measured_cells(str(DATA / "models-newcond-5gbit-b-runs.csv"), "models-newcond-5gbit-b-%")
    assert len(cells) == 144 and sum(len(c["runs"]) for c in cells) == 288
    assert all(c["delivered"] and c["calibrated"] for c in cells)
    e = {name: {k: 100 * sum(v) / len(v) for k, v in nc.configuration_alone(cells, name).items()}
         for name in ("bandwidth-switch", "ss-trains", "paper")}
    pinned = {("cubic", 1): 2.75, ("cubic", 2): 1.01, ("cubic", 5): 1.27, ("htcp", 1): 4.31, ("htcp", 2): 3.18,
              ("htcp", 5): 1.52, ("scalable", 1): 1.49, ("scalable", 2): 1.64, ("scalable", 5): 1.05}
    assert {k: round(v, 2) for k, v in e["bandwidth-switch"].items()} == pinned
    assert round(e["ss-trains"][("htcp", 1)], 2) == 4.60
    assert [k for k in pinned if e["ss-trains"][k] != e["bandwidth-switch"][k]] == [("htcp", 1)]
    assert all(e["bandwidth-switch"][k] <= e["paper"][k] + 1e-9 for k in pinned)
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= paper_in_sample[k[0]] for k, v in e["bandwidth-switch"].items())
    assert [k for k, v in e["bandwidth-switch"].items() if v > 4.0] == [("htcp", 1)]


def test_the_trains_law_at_5gbit_is_flatter_than_at_10gbit():
    """Development traces at 5 Gbit/s (benchmarks/data/slow-start-drop-5gbit.csv: dev-trains-5gbit and dev-ssend-5gbit,
    single flows, 36 loss-ended runs at 0.1–0.3 × BDP) give P/2 = 0.665 + 1.437·β/Cτ against the 10 Gbit/s traces'
    0.534 + 2.346 (the code's): a peak 12 % lower at 0.3 × BDP, 8 % higher at 0.1 (docs/models.md "Slow start's
    trains at 5 Gbit/s"). Recorded, not adopted: the law is the 10 Gbit/s fit in every configuration."""
    from tcpprofile.models.trajectory import SS_TRAIN_SLOPE, SS_TRAIN_WINDOW
    ssd = _bench("slow_start_drop")
    w0, s, rows = ssd.fit(str(DATA / "slow-start-drop-5gbit.csv"))
    assert (round(w0, 3), round(s, 3), rows) == (0.665, 1.437, 36)
    assert (round(ssd.fit(str(DATA / "slow-start-drop.csv"))[0], 3)) == SS_TRAIN_WINDOW
    assert 2 * (w0 + s * 0.3) < 0.9 * 2 * (SS_TRAIN_WINDOW + SS_TRAIN_SLOPE * 0.3)
    assert 2 * (w0 + s * 0.1) > 1.05 * 2 * (SS_TRAIN_WINDOW + SS_TRAIN_SLOPE * 0.1)


def _new_in_beta_tau_and_f(s, seen):
    """Every cell of spec s ≥ 2 apart from every seen cell; its RTTs off every seen one and the papers' grid, its
    buffers and amounts none that any seen store used."""
    from tcpprofile.reproduce.campaigns import PAPER_RTTS
    cells = cells_of_spec(s)
    assert too_close(cells, seen) == []
    assert not {c.rtt_ms for c in cells} & ({c.rtt_ms for c in seen} | set(PAPER_RTTS))
    assert not {c.buffer_bdp for c in cells} & {c.buffer_bdp for c in seen}
    assert not {c.amount for c in cells} & {c.amount for c in seen}


def test_the_third_5gbit_store_is_new_against_every_store_seen():
    """The third 5 Gbit/s store (pre-registered after the second was read and the 5 Gbit/s development traces were
    taken): CUBIC, H-TCP, STCP, n ∈ {1, 3, 6}, autotuned, fixed-size, 4 repetitions in random order, 216 runs; every
    cell ≥ 2 apart from every cell of every store in the table (the second store and the traces included); its
    buffers, RTTs and size none that any store used, RTTs off the papers' grid."""
    seen = _bench("models_newcond").seen_before("5 Gbit/s, the third store")
    # everything in the table but its own, the fourth's, the traces taken after the fourth (dev-shallow-5gbit: 4
    # cells, dev-events-5gbit: 36), the fifth's and the sixth's
    assert len(seen) == len(_seen()) - 6 * 54 - 4 - 36
    assert {c.context[0] for c in seen if c.amount == "F=1500000000"} == {5e9}   # the second store is in it
    s = spec.load(DATA / "models-newcond-5gbit-c.toml")
    assert s.name == "models-newcond-5gbit-c" and len(s.sweep()) == 216
    assert (s.order, s.repetitions, s.socket_buffers, s.variants) == ("random", 4, (None,), ("cubic", "htcp", "scalable"))
    assert {p.rate_bps for p in s.links} == {5e9} and set(s.streams) == {1, 3, 6}
    _new_in_beta_tau_and_f(s, seen)


def test_the_fourth_5gbit_store_is_new_against_every_store_seen():
    """The fourth 5 Gbit/s store (pre-registered after the third was read, for the next change): n ∈ {1, 2, 4}, β 0.12 and
    0.4 × BDP, τ 35/120/210 ms, 4 GB, 3 repetitions, 162 runs; every cell ≥ 2 apart from every cell of every store in
    the table (the third included); buffers, RTTs and size none that any store used."""
    seen = _bench("models_newcond").seen_before("5 Gbit/s, the fourth store")
    assert len(seen) == len(_seen()) - 5 * 54 - 4 - 36
    assert {c.context[0] for c in seen if c.amount == "F=3000000000"} == {5e9}
    s = spec.load(DATA / "models-newcond-5gbit-d.toml")
    assert s.name == "models-newcond-5gbit-d" and len(s.sweep()) == 162
    assert (s.order, s.repetitions, s.socket_buffers, s.variants) == ("random", 3, (None,), ("cubic", "htcp", "scalable"))
    _new_in_beta_tau_and_f(s, seen)


def test_the_fifth_5gbit_store_is_new_against_every_store_seen():
    """The fifth 5 Gbit/s store (pre-registered after the fourth was read and the 0.12 × BDP windows traced): n ∈ {1, 3,
    7}, β 0.18 and 0.55 × BDP, τ 28/95/175 ms, 3.5 GB, 4 repetitions, 216 runs; every cell ≥ 2 apart from every cell
    of every store in the table (the fourth and the traces after it included); buffers, RTTs and size none that any
    store used, and seven flows none did."""
    _new_store_with_new_n("5 Gbit/s, the fifth store", "models-newcond-5gbit-e", 4 * 54, "F=4000000000", 216, 4,
                          {1, 3, 7}, 7)


def test_the_sixth_5gbit_store_is_new_against_every_store_seen():
    """The sixth 5 Gbit/s store (pre-registered after the fifth was read): n ∈ {1, 4, 9}, β 0.27 and 0.65 × BDP, τ
    22/65/140 ms, 2 GB, 6 repetitions, 324 runs; every cell ≥ 2 apart from every cell of every store in the table (the
    fifth included); buffers, RTTs and size none that any store used, and nine flows none did."""
    _new_store_with_new_n("5 Gbit/s, the sixth store", "models-newcond-5gbit-f", 3 * 54, "F=3500000000", 324, 6,
                          {1, 4, 9}, 9)


def test_the_seventh_5gbit_store_is_new_against_every_store_seen():
    """The seventh 5 Gbit/s store (pre-registered after the sixth made burst-by-rate the default): n ∈ {1, 2, 6}, β 0.33
    and 0.9 × BDP, τ 18/55/115 ms, 2.2 GB, 5 repetitions, 270 runs; every cell ≥ 2 apart from every cell of every store
    in the table (the sixth included); buffers, RTTs and size none that any store used."""
    seen = _bench("models_newcond").seen_before("5 Gbit/s, the seventh store")
    assert len(seen) == len(_seen()) - 2 * 54 and {c.amount for c in seen if c.context[0] == 5e9} >= {"F=2000000000"}
    s = spec.load(DATA / "models-newcond-5gbit-g.toml")
    assert s.name == "models-newcond-5gbit-g" and len(s.sweep()) == 270 and s.repetitions == 5
    assert {p.rate_bps for p in s.links} == {5e9} and set(s.streams) == {1, 2, 6}
    _new_in_beta_tau_and_f(s, seen)


def test_the_eighth_5gbit_store_is_new_against_every_store_seen():
    """The eighth 5 Gbit/s store (pre-registered after the seventh was read): n ∈ {1, 3, 8}, β 0.14 and 0.75 × BDP, τ
    12/42/150 ms, 1.8 GB, 5 repetitions, 270 runs; every cell ≥ 2 apart from every cell of every store in the table
    (the seventh included); buffers, RTTs and size none that any store used."""
    seen = _bench("models_newcond").seen_before("5 Gbit/s, the eighth store")
    assert len(seen) == len(_seen()) - 54 and {c.amount for c in seen if c.context[0] == 5e9} >= {"F=2200000000"}
    s = spec.load(DATA / "models-newcond-5gbit-h.toml")
    assert s.name == "models-newcond-5gbit-h" and len(s.sweep()) == 270 and s.repetitions == 5
    assert {p.rate_bps for p in s.links} == {5e9} and set(s.streams) == {1, 3, 8}
    _new_in_beta_tau_and_f(s, seen)


def _new_store_with_new_n(label, name, later_cells, last_amount, runs, reps, streams, new_n):
    """Design `label` (benchmarks/data/NAME.toml) is checked against every store in the table but its own and those
    after it (later_cells), the store before it included (it measured last_amount); the design's runs, repetitions in
    random order, variants, autotuned buffers, 5 Gbit/s and streams; new_n none seen; new in β, τ and F."""
    seen = _bench("models_newcond").seen_before(label)
    assert len(seen) == len(_seen()) - later_cells and {c.amount for c in seen if c.context[0] == 5e9} >= {last_amount}
    s = spec.load(DATA / f"{name}.toml")
    assert s.name == name and len(s.sweep()) == runs
    assert (s.order, s.repetitions, s.socket_buffers, s.variants) == ("random", reps, (None,), ("cubic", "htcp", "scalable"))
    assert {p.rate_bps for p in s.links} == {5e9} and set(s.streams) == streams
    assert new_n not in {c.streams for c in seen}
    _new_in_beta_tau_and_f(s, seen)


def _store_e(name, reps, configs):
    """E % per (variant, n) from the configuration alone, for each of `configs`, on benchmarks/data/NAME-runs.csv:
    54 cells of `reps` runs, every one timed by its delivery on a calibrated link (asserted)."""
    nc = _bench("models_newcond")
    cells = nc.measured_cells(str(DATA / f"{name}-runs.csv"), name)
    assert len(cells) == 54 and {len(c["runs"]) for c in cells} == {reps}
    assert all(c["delivered"] and c["calibrated"] for c in cells)
    return {config: {k: 100 * sum(v) / len(v) for k, v in nc.configuration_alone(cells, config).items()}
            for config in configs}


def test_the_third_store_table_from_the_committed_runs():
    """Regression pin of the third 5 Gbit/s store's table (docs/models.md "The third 5 Gbit/s store"): recomputed
    from benchmarks/data/models-newcond-5gbit-c-runs.csv (216 runs, 54 cells of 4, every one delivered and
    calibrated). At or below the paper's in-sample E everywhere; ≤ 4 % in every cell but H-TCP n = 1, where
    bandwidth-switch (5.00) is above ss-trains (4.57) and well above the sampling floor (1.21)."""
    nc = _bench("models_newcond")
    cells = nc.measured_cells(str(DATA / "models-newcond-5gbit-c-runs.csv"), "models-newcond-5gbit-c")
    assert len(cells) == 54 and {len(c["runs"]) for c in cells} == {4}
    assert all(c["delivered"] and c["calibrated"] for c in cells)
    e = {name: {k: 100 * sum(v) / len(v) for k, v in nc.configuration_alone(cells, name).items()}
         for name in ("bandwidth-switch", "ss-trains")}
    pinned = {("cubic", 1): 1.71, ("cubic", 3): 0.45, ("cubic", 6): 0.44, ("htcp", 1): 5.00, ("htcp", 3): 1.47,
              ("htcp", 6): 1.18, ("scalable", 1): 0.80, ("scalable", 3): 0.32, ("scalable", 6): 0.26}
    assert {k: round(v, 2) for k, v in e["bandwidth-switch"].items()} == pinned
    assert round(e["ss-trains"][("htcp", 1)], 2) == 4.57
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= paper_in_sample[k[0]] for k, v in e["bandwidth-switch"].items())
    floor = nc.floor_of([c for c in cells if (c["variant"], c["streams"]) == ("htcp", 1)])
    assert round(floor, 2) == 1.21


def test_the_fourth_store_table_from_the_committed_runs():
    """Regression pin of the fourth 5 Gbit/s store's table (docs/models.md "The fourth 5 Gbit/s store and
    trains-by-rate"): 162 runs, 54 cells of 3. trains-by-rate changes only single flows; it lowers H-TCP's (3.72 →
    2.81) and lifts CUBIC's above 4 % (3.26 → 4.29), so by the rule stated before the store was read it is not the
    default; the default at or below the paper's in-sample E everywhere, above 4 % only for H-TCP n = 2."""
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    e = {name: {k: round(v, 2) for k, v in table.items()}
         for name, table in _store_e("models-newcond-5gbit-d", 3, ("bandwidth-switch", "trains-by-rate")).items()}
    pinned = {("cubic", 1): 3.26, ("cubic", 2): 3.48, ("cubic", 4): 2.34, ("htcp", 1): 3.72, ("htcp", 2): 5.15,
              ("htcp", 4): 3.83, ("scalable", 1): 3.36, ("scalable", 2): 1.77, ("scalable", 4): 2.84}
    assert e["bandwidth-switch"] == pinned
    assert e["trains-by-rate"] == {**pinned, ("cubic", 1): 4.29, ("htcp", 1): 2.81}
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= paper_in_sample[k[0]] for name in e for k, v in e[name].items())
    adopt = (e["trains-by-rate"][("htcp", 1)] < e["bandwidth-switch"][("htcp", 1)]
             and not [k for k in pinned if e["trains-by-rate"][k] > 4.0 >= e["bandwidth-switch"][k]])
    assert not adopt    # (the default changed later, on the sixth store)
    assert [k for k, v in pinned.items() if v > 4.0] == [("htcp", 2)]


def test_the_fifth_store_table_from_the_committed_runs():
    """Regression pin of the fifth 5 Gbit/s store's table (docs/models.md "The fifth 5 Gbit/s store"): 216 runs, 54
    cells of 4. burst-by-rate changes only single flows (CUBIC 4.10 → 1.40, H-TCP 6.94 → 5.26); by the rule stated
    before the store was read it is not adopted, H-TCP's single flow being above the paper's in-sample 5.2 %; the
    default fails that bar there too (6.94 %)."""
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    e = _store_e("models-newcond-5gbit-e", 4, ("bandwidth-switch", "trains-by-rate", "burst-by-rate"))
    pinned = {("cubic", 1): 4.10, ("cubic", 3): 1.31, ("cubic", 7): 1.14, ("htcp", 1): 6.94, ("htcp", 3): 3.08,
              ("htcp", 7): 2.79, ("scalable", 1): 0.94, ("scalable", 3): 0.58, ("scalable", 7): 0.87}
    assert e["bandwidth-switch"] == pytest.approx(pinned, abs=0.006)
    assert e["trains-by-rate"] == pytest.approx({**pinned, ("cubic", 1): 3.53, ("htcp", 1): 5.26}, abs=0.006)
    assert e["burst-by-rate"] == pytest.approx({**pinned, ("cubic", 1): 1.40, ("htcp", 1): 5.26}, abs=0.006)
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    new, old = e["burst-by-rate"], e["bandwidth-switch"]
    single = [(v, 1) for v in paper_in_sample]
    adopt = (all(v <= paper_in_sample[k[0]] for k, v in new.items())
             and not [k for k in pinned if new[k] > 4.0 >= old[k]]
             and sum(new[k] for k in single) < sum(old[k] for k in single))
    assert not adopt    # (the default changed later, on the sixth store)
    assert [k for k, v in new.items() if v > paper_in_sample[k[0]]] == [("htcp", 1)]


def test_the_sixth_store_table_from_the_committed_runs():
    """Regression pin of the sixth 5 Gbit/s store's table (docs/models.md "The sixth 5 Gbit/s store"): 324 runs, 54
    cells of 6. By the rule committed with its design, burst-by-rate (at or below bandwidth-switch in every variant ×
    n, lower on single flows: CUBIC 1.84 → 0.97, H-TCP 4.95 → 4.67) is the default; it is at or below the paper's
    in-sample E in every cell and ≤ 4 % in all but H-TCP's single flow."""
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    e = _store_e("models-newcond-5gbit-f", 6, ("bandwidth-switch", "burst-by-rate"))
    pinned = {("cubic", 1): 1.84, ("cubic", 4): 0.30, ("cubic", 9): 0.56, ("htcp", 1): 4.95, ("htcp", 4): 1.22,
              ("htcp", 9): 0.83, ("scalable", 1): 1.07, ("scalable", 4): 0.32, ("scalable", 9): 0.55}
    assert e["bandwidth-switch"] == pytest.approx(pinned, abs=0.006)
    assert e["burst-by-rate"] == pytest.approx({**pinned, ("cubic", 1): 0.97, ("htcp", 1): 4.67}, abs=0.006)
    new, old = e["burst-by-rate"], e["bandwidth-switch"]
    single = [(v, 1) for v in ("cubic", "htcp", "scalable")]
    adopt = (all(new[k] <= old[k] for k in pinned) and sum(new[k] for k in single) < sum(old[k] for k in single))
    assert adopt and DEFAULT_CONFIGURATION == "burst-by-rate"
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= paper_in_sample[k[0]] for k, v in new.items())
    assert [k for k, v in new.items() if v > 4.0] == [("htcp", 1)]


def test_the_seventh_store_table_from_the_committed_runs():
    """Regression pin of the seventh 5 Gbit/s store's table (docs/models.md "The seventh 5 Gbit/s store"): 270 runs, 54
    cells of 5. The default, burst-by-rate, judged after its adoption: at or below the paper's in-sample E and ≤ 4 % in
    every cell, single flows included (H-TCP n = 1 2.91 %; bandwidth-switch 4.71 there)."""
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    e = _store_e("models-newcond-5gbit-g", 5, (DEFAULT_CONFIGURATION, "bandwidth-switch"))
    pinned = {("cubic", 1): 1.51, ("cubic", 2): 1.09, ("cubic", 6): 0.93, ("htcp", 1): 2.91, ("htcp", 2): 2.12,
              ("htcp", 6): 1.03, ("scalable", 1): 1.13, ("scalable", 2): 0.53, ("scalable", 6): 0.52}
    assert DEFAULT_CONFIGURATION == "burst-by-rate"
    assert e[DEFAULT_CONFIGURATION] == pytest.approx(pinned, abs=0.006)
    assert e["bandwidth-switch"] == pytest.approx({**pinned, ("cubic", 1): 0.92, ("htcp", 1): 4.71}, abs=0.006)
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= min(4.0, paper_in_sample[k[0]]) for k, v in e[DEFAULT_CONFIGURATION].items())


def test_the_eighth_store_table_from_the_committed_runs():
    """Regression pin of the eighth 5 Gbit/s store's table (docs/models.md "The eighth 5 Gbit/s store"): 270 runs, 54
    cells of 5. The default, burst-by-rate, judged a second time after its adoption: at or below the paper's in-sample
    E and ≤ 4 % in every cell, single flows included (CUBIC n = 1 3.64 %, bandwidth-switch 4.39 there)."""
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    e = _store_e("models-newcond-5gbit-h", 5, (DEFAULT_CONFIGURATION, "bandwidth-switch", "paper"))
    pinned = {("cubic", 1): 3.64, ("cubic", 3): 3.06, ("cubic", 8): 2.75, ("htcp", 1): 3.52, ("htcp", 3): 1.84,
              ("htcp", 8): 3.79, ("scalable", 1): 2.44, ("scalable", 3): 1.70, ("scalable", 8): 1.39}
    assert DEFAULT_CONFIGURATION == "burst-by-rate"
    assert e[DEFAULT_CONFIGURATION] == pytest.approx(pinned, abs=0.006)
    assert e["bandwidth-switch"] == pytest.approx({**pinned, ("cubic", 1): 4.39}, abs=0.006)
    assert e["paper"][("htcp", 1)] == pytest.approx(12.64, abs=0.006)
    paper_in_sample = {"cubic": 4.5, "htcp": 5.2, "scalable": 9.3}
    assert all(v <= min(4.0, paper_in_sample[k[0]]) for k, v in e[DEFAULT_CONFIGURATION].items())
