"""The report's model figure and `model fit` say when a fit cannot explain the runs (issue 20, part 3)."""

from __future__ import annotations

import synthetic_validation as sv
from tcpprofile.report.data import ReportData
from tcpprofile.report.models import model_vs_measurement
from tcpprofile.store import Store


def _figure(tmp_path, name, **kw):
    with Store.open(str(tmp_path / f"{name}.duckdb")) as s:
        sv.build(s, variants=("cubic",), multiples=(0.3,), noise=0.01, **kw)
        (fig,) = model_vs_measurement(ReportData.load(s), tmp_path).items
    return fig.caption


def test_model_figure_flags_a_fit_with_structure_and_not_the_models_own_runs(tmp_path):
    """A bend over τ the model does not have (±6 % at n = 1 and 4): the panel and the caption say
    FLAGGED with the test's words; the model's own runs: the caption gives the structure test's verdict."""
    bent = _figure(tmp_path, "bent", distort=lambda i: 1 + 0.03 * ((i - 2) ** 2 - 2))
    assert "FLAGGED: residuals with structure over τ: curvature p = " in bent
    clean = _figure(tmp_path, "clean")
    assert "FLAGGED:" not in clean and "no structure over τ found" in clean


def test_model_fit_table_and_json_carry_the_flags(tmp_path, capsys):
    """`model fit` on runs bent over τ: the table's flags column says τ-structure, a FLAGGED line says it
    in words, the JSON has flagged/flags/residual_structure; on the model's own runs: '-' and no line."""
    import json

    from tcpprofile.cli import main

    for name, distort, code in (("bent", lambda i: 1 + 0.03 * ((i - 2) ** 2 - 2), "τ-structure"), ("clean", None, "-")):
        db = str(tmp_path / f"{name}.duckdb")
        with Store.open(db) as s:
            sv.build(s, variants=("cubic",), multiples=(0.3,), noise=0.01, distort=distort)
        assert main(["model", "fit", "--db", db]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [ln.split()[-1] for ln in lines[1:3]] == [code, code]          # n = 1 and 4
        assert any(ln.startswith("FLAGGED cubic") for ln in lines) is (code != "-")
        assert main(["model", "fit", "--db", db, "--json"]) == 0
        (fit,) = json.loads(capsys.readouterr().out)
        assert fit["flagged"] is (code != "-")
        assert fit["residual_structure"]["verdict"] == ("structure" if code != "-" else "no structure found")
        assert [f["flag"] for f in fit["flags"]] == (["structure"] if code != "-" else [])
