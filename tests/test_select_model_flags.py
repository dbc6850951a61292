"""`select --extrapolate` carries the model fit's flags: a value from a fit that cannot
explain the profile is marked, in the ranking, the JSON and the recommendation; never a plain number."""

from __future__ import annotations

import json

import numpy as np

from synthetic_store import add_link, add_run
from tcpprofile import models
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.models.configurations import DEFAULT_CONFIGURATION, configuration, model_parameters
from tcpprofile.store import Store

G = 1e9


def _store(path, values: dict[float, float]) -> str:
    with Store.open(path) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
        for r, v in values.items():
            add_link(s, f"L{r:g}", r)
            for i, f in enumerate((0.995, 1.005)):
                add_run(s, f"cubic-{r:g}-{i}", f"L{r:g}", "cubic", 1, None, v * f, rep=i)
    return str(path)


RTTS = (10.0, 20.0, 40.0, 80.0, 160.0)


def _model_profile(rtts=RTTS) -> dict[float, float]:
    """Profile means of the model select fits (the default configuration, as `model fit` fits 10 s runs: loss
    at Cτ + β, iperf3's receiver interval; β the links' configured 50 MB)."""
    params, per_variant = configuration(DEFAULT_CONFIGURATION)
    m = models.make_model("cubic", capacity_bps=10e9, buffer_bytes=5e7, wmax_bytes=3e7, queue_fill=True,
                          receiver_report=True, **model_parameters(params), **per_variant.get("cubic", {}))
    return {r: float(m.predict(r / 1e3, n=1, duration=10.0)) for r in rtts}


def test_a_profile_the_model_explains_is_not_flagged(tmp_path):
    with Store.open(_store(tmp_path / "a.duckdb", _model_profile()), read_only=True) as s:
        est = sel.select(sel.load_profiles(s), 300.0e-3, extrapolate=True).best
    assert est.method == "extrapolated" and est.model_flags == []
    assert est.model_structure["verdict"] == "no structure found"
    with Store.open(_store(tmp_path / "b.duckdb", _model_profile(RTTS[:4])), read_only=True) as s:
        est = sel.select(sel.load_profiles(s), 300.0e-3, extrapolate=True).best
    assert est.model_flags == [] and est.model_structure["verdict"] == "not testable"   # 4 RTTs


def test_a_profile_the_model_cannot_explain_is_flagged_everywhere(tmp_path, capsys):
    """Throughput rising with τ (no loss-driven model does): the fit is flagged; the text marks the value
    with '!', names the flag and warns on the recommendation; the JSON carries model_flagged."""
    db = _store(tmp_path / "c.duckdb", {r: v * G for r, v in zip(RTTS, (2.0, 4.0, 6.0, 8.0, 9.5))})
    with Store.open(db, read_only=True) as s:
        est = sel.select(sel.load_profiles(s), 300.0e-3, extrapolate=True).best
    assert est.model_flags and all(f["text"] for f in est.model_flags)
    assert main(["select", "--db", db, "--rtt", "300ms", "--extrapolate"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("1 "))
    assert f"{est.throughput_bps / G:.3f}!" in row
    assert "model fit FLAGGED" in out and "its model fit is FLAGGED" in out
    assert main(["select", "--db", db, "--rtt", "300ms", "--extrapolate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recommended"]["model_flagged"] is True and doc["recommended"]["model_flags"]
    assert np.isfinite(doc["recommended"]["throughput_bps"])
