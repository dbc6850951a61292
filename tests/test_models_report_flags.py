"""The report's model figure says when a fit cannot explain the runs (issue 20, part 3)."""

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
