"""τ is in seconds inside the code and in milliseconds only in the store's columns and in what is printed:
the store's readers return seconds (rtt_s), and a τ printed from seconds shows the digits the store holds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from synthetic_store import add_link, add_run
from tcpprofile.analysis import load_runs, profiles_from_store
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.models import fit_table_from_store
from tcpprofile.store import Store, reads
from tcpprofile.units import to_ms

# Stored RTTs [ms]; 31.766 and 250.296 do not survive a plain (x / 1e3) * 1e3 (31.766000000000002, …)
RTTS_MS = (11.8, 31.766, 45.6, 250.296)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "tau.duckdb"
    with Store.open(path) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "tau", "mode": "emulated"})
        for rtt in RTTS_MS:
            add_link(s, f"L{rtt:g}", rtt)
            for rep in range(3):
                add_run(s, f"r{rtt:g}-{rep}", f"L{rtt:g}", "cubic", 1, None, (9.0 - rtt / 100 + 0.01 * rep) * 1e9,
                        rep=rep)
        s.insert_campaign({"campaign_id": "c2", "name": "remote", "mode": "remote"})
        add_link(s, "R", None, kind="remote", rtt_measured_ms=20.0133, campaign_id="c2")
    return path


def test_every_reader_returns_tau_in_seconds(store):
    """Each reader of τ gives the stored milliseconds divided by 1e3 (TAU_S_SQL), under a name that says s.
    On the code before (readers returning rtt_ms) every assertion here fails: the keys are rtt_ms."""
    want = sorted(t / 1e3 for t in RTTS_MS)
    with Store.open(store, read_only=True) as s:
        assert sorted({r["rtt_s"] for r in reads.profile_runs(s)}) == want
        assert sorted(fit_table_from_store(s.con)["rtt_s"].tolist()) == want
        assert reads.run_summary(s, "r45.6-0")["rtt_s"] == 45.6 / 1e3
        assert reads.mean_measured_rtt_s(s, "c2") == 20.0133 / 1e3
        assert sel.load_profiles(s).profiles[0].rtts_s == pytest.approx(want, rel=1e-15)   # cluster means
        runs = load_runs(s)                        # the analyses too; their rows print the stored digits
        assert sorted(set(runs.tau_s.tolist())) == want and not hasattr(runs, "tau_ms")
        rows = [r for p in profiles_from_store(s, n_boot=50, seed=0) for r in p.rows()]
        assert sorted({r["tau_ms"] for r in rows}) == sorted(RTTS_MS)


def test_printed_tau_keeps_the_stored_digits():
    """to_ms(ms / 1e3) is the stored ms exactly, also where (ms / 1e3) * 1e3 is not (a mutation of to_ms to
    a plain s * 1e3 fails on 31.766 and 250.296); an array keeps its shape."""
    for ms in RTTS_MS + (0.4, 20.0133, 3.983, 125.409):
        assert to_ms(ms / 1e3) == ms
    assert any((ms / 1e3) * 1e3 != ms for ms in RTTS_MS)          # the case the rounding is there for
    assert to_ms(np.array(RTTS_MS) / 1e3).tolist() == list(RTTS_MS)
    assert to_ms(np.array([])).shape == (0,)


def test_select_prints_the_measured_rtts_as_stored(store, capsys):
    """select computes in seconds and prints milliseconds: the JSON's RTTs are the stored values, and an RTT
    given as 31.766ms finds the link stored at 31.766 ms (exact, not interpolated)."""
    assert main(["select", "--db", str(store), "--rtt", "31.766ms", "--json", "--boot", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    best = doc["ranking"][0]
    assert doc["rtt_ms"] == 31.766 and best["method"] == "exact" and best["rtts_ms"] == [31.766]
    assert main(["select", "--db", str(store), "--rtt", "150ms", "--json", "--boot", "200"]) == 0
    best = json.loads(capsys.readouterr().out)["ranking"][0]
    assert best["method"] == "interpolated" and best["rtts_ms"] == [45.6, 250.296]
