"""Property tests (Hypothesis) of the two input boundaries, iperf3 -J documents and campaign specs.

Invariant: an input is accepted, or refused with a TcpProfileError that names the field or JSON path
(a path that exists in the input, or whose parent does when the value is missing); a refused file
leaves every table of the store as it was, and the store stays usable for the next file. Inputs are
the real iperf3 3.12 files of tests/data/iperf3 and the example specs, damaged (iperf_mutations,
spec_mutations) or with generated values put anywhere, and coherent iperf3 documents generated whole.
Fixed seeds (derandomize) keep the runs reproducible and the file well under a minute.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import iperf_mutations as im
import spec_mutations as sm
from tcpprofile.store import importer
from tcpprofile import spec
from tcpprofile.measure import iperf
from tcpprofile.errors import IperfDocumentError, TcpProfileError, ValidationError
from tcpprofile.store.checks import check_row
from tcpprofile.store.db import TABLES, Store

PROPS = settings(max_examples=200, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


# -- helpers -------------------------------------------------------------------------------------
def _tokens(field: str) -> list:
    return [int(t[1:-1]) if t.startswith("[") else t for t in re.findall(r"\[\d+\]|[^.\[\]]+", field)]


def _holds(node, k) -> bool:
    return (isinstance(node, dict) and k in node) or (isinstance(node, list) and isinstance(k, int) and k < len(node))


def names_a_path(err: TcpProfileError, doc) -> bool:
    """The error names a JSON path of `doc`: one that exists, or whose parent exists (a missing key)."""
    if not isinstance(err, IperfDocumentError):
        return str(err).startswith("iperf3 error: ") and isinstance(doc, dict) and bool(doc.get("error"))
    if not str(err).startswith(err.field + ": "):
        return False
    if err.field == "document":
        return not isinstance(doc, dict)
    node, keys = doc, _tokens(err.field)
    for i, k in enumerate(keys):
        if not _holds(node, k):
            return i == len(keys) - 1 and isinstance(node, dict)   # the missing key itself
        node = node[k]
    return True


def check_parse(doc) -> iperf.Parsed | None:
    """Parse `doc`; accepted rows must be storable, a refusal must name a path of `doc`."""
    try:
        p = iperf.parse(doc)
    except TcpProfileError as err:
        assert names_a_path(err, doc), str(err)
        return None
    r = p.run
    assert math.isfinite(r["throughput_bps"]) and r["throughput_bps"] >= 0 and r["duration_s"] > 0
    check_row("runs", {**r, "run_id": "x", "status": "ok"})
    for row in p.intervals:
        check_row("intervals", row)
    return p


def counts(store: Store) -> dict[str, int]:
    return {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


# -- iperf3 documents ------------------------------------------------------------------------------
@PROPS
@given(st.randoms(use_true_random=False))
def test_damaged_iperf3_documents_are_accepted_or_name_the_path(rng):
    doc, _ = im.mutate(im.source(rng.choice(im.SOURCES)), rng)
    if doc is not None:
        check_parse(doc)


@PROPS
@given(st.sampled_from(im.SOURCES), st.data())
def test_any_value_anywhere_is_accepted_or_names_the_path(name, data):
    doc = im.source(name)
    places = im.paths(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        path = places[data.draw(st.integers(0, len(places) - 1))]
        parent = doc
        for k in path[:-1]:              # an earlier replacement may have cut this path
            parent = parent[k] if _holds(parent, k) else None
        if _holds(parent, path[-1]):
            parent[path[-1]] = data.draw(json_values)
    check_parse(doc)


def synthesize(matrix: list[list[int]], dt: float, lost: list[int], cc: str) -> dict:
    """A coherent client-side iperf3 -J document: `matrix[k][i]` bytes sent by stream i in interval k
    (each dt seconds), `lost[i]` of stream i's bytes not received by the end."""
    n, k = len(matrix[0]), len(matrix)

    def sample(t0, t1, count, **extra):
        return {"start": t0, "end": t1, "seconds": t1 - t0, "bytes": count,
                "bits_per_second": count * 8 / (t1 - t0), **extra}

    intervals = []
    for j, row in enumerate(matrix):
        t0, t1 = round(j * dt, 6), round((j + 1) * dt, 6)
        streams = [sample(t0, t1, b, socket=5 + i, retransmits=j % 2, snd_cwnd=10**6 + b % 997, rtt=900 + i,
                          omitted=False, sender=True) for i, b in enumerate(row)]
        intervals.append({"streams": streams, "sum": sample(t0, t1, sum(row), retransmits=n * (j % 2),
                                                              omitted=False, sender=True)})
    total_t = round(k * dt, 6)
    sent = [sum(r[i] for r in matrix) for i in range(n)]
    got = [s - min(s, lo) for s, lo in zip(sent, lost)]
    retrans = sum(j % 2 for j in range(k))
    return {
        "start": {"connected": [{"socket": 5 + i, "local_host": "10.0.0.1", "local_port": 40000 + i,
                                 "remote_host": "10.0.0.2", "remote_port": 5201} for i in range(n)],
                  "version": "iperf 3.12", "system_info": "Linux h 6.1.0 #1 SMP x86_64",
                  "timestamp": {"timesecs": 1795348527}, "sock_bufsize": 0,
                  "test_start": {"protocol": "TCP", "num_streams": n, "omit": 0, "duration": k * dt, "bytes": 0,
                                 "reverse": 0}},
        "intervals": intervals,
        "end": {"streams": [{"sender": sample(0, total_t, sent[i], socket=5 + i, retransmits=retrans,
                                              min_rtt=800, mean_rtt=900 + i),
                             "receiver": sample(0, total_t, got[i], socket=5 + i)} for i in range(n)],
                "sum_sent": sample(0, total_t, sum(sent), retransmits=n * retrans),
                "sum_received": sample(0, total_t, sum(got)),
                "sender_tcp_congestion": cc}}


coherent = st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(0, 10**10), min_size=n, max_size=n), min_size=1, max_size=6),
    st.sampled_from([0.1, 0.5, 1.0]),
    st.lists(st.integers(0, 10**6), min_size=n, max_size=n),
    st.sampled_from(["cubic", "bbr", "tp_htcp", "reno"])))


@PROPS
@given(coherent)
def test_generated_coherent_documents_are_accepted_with_their_numbers(params):
    matrix, dt, lost, cc = params
    doc = json.loads(json.dumps(synthesize(matrix, dt, lost, cc)))   # through JSON, as a file would be
    p = check_parse(doc)
    assert p is not None
    # the receiver's total; the sender's, flagged, when the receiver counted nothing
    received = doc["end"]["sum_received"] if doc["end"]["sum_received"]["bytes"] else doc["end"]["sum_sent"]
    assert ("throughput_sender_side" in p.flags) == (received is doc["end"]["sum_sent"])
    assert p.run["bytes_transferred"] == received["bytes"]
    assert p.run["throughput_bps"] == received["bits_per_second"]
    assert p.run["streams"] == len(matrix[0]) and p.run["cc_reported"] == cc
    sums = [r["bytes"] for r in p.intervals if r["stream"] is None]
    assert sums == [sum(row) for row in matrix]
    assert len(p.intervals) == len(matrix) * (len(matrix[0]) + 1)


@pytest.fixture(scope="module")
def one_store(tmp_path_factory):
    s = Store.open(tmp_path_factory.mktemp("props") / "s.duckdb")
    yield s
    s.close()


@settings(PROPS, max_examples=120)
@given(st.randoms(use_true_random=False))
def test_a_refused_file_leaves_the_store_unchanged(one_store, tmp_path_factory, rng):
    text, _ = im.mutated_text(rng)
    path = tmp_path_factory.mktemp("f") / "run.json"
    path.write_text(text)
    before = counts(one_store)
    _, (result,) = importer.import_files(one_store, [path])
    after = counts(one_store)
    if result.run_id is None:
        assert result.reason and after == before
    else:
        assert after["runs"] - before["runs"] in (0, 1)   # 0: the same file again replaces its run
        assert one_store.query("SELECT status FROM runs WHERE run_id = ?", [result.run_id]) == [{"status": "ok"}]
    one_store.con.execute("BEGIN TRANSACTION")             # no transaction left open or aborted
    one_store.con.execute("ROLLBACK")


# -- specs -----------------------------------------------------------------------------------------
def check_spec(text: str) -> spec.CampaignSpec | None:
    try:
        s = spec.parse(text)
    except ValidationError as err:
        roots = set(spec._KEYS) | {"spec"}
        try:
            roots |= set(tomllib.loads(text))
        except (ValueError, RecursionError):
            pass
        assert err.field.split(".")[0].split("[")[0] in roots and str(err).startswith(err.field + ": "), str(err)
        return None
    json.dumps(s.normalised(), allow_nan=False)      # nothing infinite or NaN in an accepted spec
    assert all(0 < link.rate_bps <= spec.MAX_RATE_BPS for link in s.links if link.kind == "emulated")
    return s


@PROPS
@given(st.randoms(use_true_random=False))
def test_damaged_specs_are_accepted_or_name_the_field(rng):
    check_spec(sm.mutated_text(rng))


toml_values = st.recursive(
    st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8) | st.sampled_from(sm.REPLACEMENTS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["mode", "every", "p", "x"]),
                                                                inner, max_size=3),
    max_leaves=5)


@PROPS
@given(st.randoms(use_true_random=False), toml_values)
def test_any_toml_value_in_any_field_is_accepted_or_names_the_field(rng, value):
    check_spec(sm.mutated_text(rng, replacement=value))


QUANTITIES = {("link", "rate"): ("Mbit", "Gbit"), ("link", "rtt"): ("ms", "s"), ("link", "buffer"): ("MB", "MiB"),
              ("transfer", "socket_buffer"): ("MB", "MiB"), ("transfer", "duration"): ("ms", "s"),
              ("transfer", "size"): ("MB", "MiB"), ("remote", "rate"): ("Mbit", "Gbit")}


@PROPS
@given(st.randoms(use_true_random=False), st.sampled_from(sorted(QUANTITIES)),
       st.integers(0, 10**15) | st.floats(0, 1e15, allow_nan=False), st.booleans())
def test_a_bare_number_in_any_quantity_field_is_refused_naming_the_units(rng, where, number, as_text):
    """A number without a unit (TOML `rtt = 45`, or the string "45") in any field that holds a quantity is
    refused, naming the field and the units to give, never read in the base unit (45 s)."""
    table, key = where
    doc = copy.deepcopy(rng.choice([d for d in sm._BASES if table in d]))
    if key in ("size", "duration"):                    # the spec takes one of them
        doc[table].pop({"size": "duration", "duration": "size"}[key], None)
    given = str(number) if as_text else number
    axis = (table, key) != ("remote", "rate")          # a sweep axis (a list), or remote's one rate
    doc[table][key] = [given] if axis else given
    with pytest.raises(ValidationError) as err:
        spec.parse(sm.dump(doc))
    q = '"' if not as_text else ""
    hint = QUANTITIES[where]
    field = f"{table}.{key}[0]" if axis else f"{table}.{key}"
    assert str(err.value).startswith(f"{field}: {number} has no unit; give it as {q}{number}{hint[0]}{q} "
                                     f"or {q}{number}{hint[1]}{q}")     # buffers add their words: 'BDP', 'default'


# -- must show: 1,000 files into one store, 1,000 specs -------------------------------------------
def test_thousand_damaged_files_one_by_one_into_one_store(tmp_path, capsys):
    rng = random.Random(2026)
    store = Store.open(tmp_path / "s.duckdb")
    accepted = rejected = exceptions = leaked = 0
    refused = []
    for i in range(1000):
        text, _ = im.mutated_text(rng)
        path = tmp_path / f"{i}.json"
        path.write_text(text)
        before = counts(store)
        try:
            _, (result,) = importer.import_files(store, [path])
        except Exception:   # noqa: BLE001 - counted: the must-show number is 0
            exceptions += 1
            continue
        if result.run_id:
            accepted += 1
        else:
            rejected += 1
            refused.append(result.path)
            leaked += counts(store) != before or not result.reason
    rows_of_rejected = store.con.execute("SELECT count(*) FROM runs WHERE list_contains(?, source_file)",
                                         [refused]).fetchone()[0]
    bad = store.con.execute("SELECT count(*) FROM runs WHERE NOT isfinite(throughput_bps) OR throughput_bps < 0 "
                            "OR status <> 'ok'").fetchone()[0]
    store.close()
    with capsys.disabled():
        print(f"\n1000 damaged iperf3 files: {accepted} accepted, {rejected} rejected (each with a reason, "
              f"{leaked} changed the store), {exceptions} exceptions")
    assert exceptions == 0 and leaked == 0 and rows_of_rejected == 0 and bad == 0
    assert accepted + rejected == 1000 and rejected > 500


def test_thousand_damaged_specs_give_only_validation_errors(capsys):
    rng = random.Random(2026)
    outcomes = {"accepted": 0, "ValidationError": 0}
    for _ in range(1000):
        try:
            outcomes["accepted" if check_spec(sm.mutated_text(rng)) else "ValidationError"] += 1
        except AssertionError:
            raise
        except Exception as err:   # noqa: BLE001 - counted by kind: the must-show number is 0
            outcomes[type(err).__name__] = outcomes.get(type(err).__name__, 0) + 1
    with capsys.disabled():
        print(f"\n1000 damaged specs: {outcomes}")
    assert set(outcomes) == {"accepted", "ValidationError"} and outcomes["ValidationError"] > 500
