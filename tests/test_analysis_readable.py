"""`tcpprofile analyze` an operator can read: throughput in Gbit/s with its unit, no
bootstrap interval from fewer than 3 runs, configurations in words, and one τ_T (analysis.tau_t) that
`analyze` prints and the report draws alike, censored values as bounds. How each fails on the old code is
said in its docstring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from synthetic_store import RATE, add_link, add_run
from tcpprofile import analysis
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.report import profiles as report_profiles
from tcpprofile.report.data import ReportData
from tcpprofile.store import Store

G = 1e9
GRID = [0.4, 11.8, 45.6, 91.6, 183.0, 366.0]
# scaled by C: above one half up to 91.6 ms, below it from 183 ms (the fit's τ_T lies between them)
CROSSING = [0.95, 0.93, 0.85, 0.70, 0.30, 0.10]
CONCAVE = [0.97, 0.96, 0.94, 0.90, 0.80, 0.60]     # above one half everywhere: τ_T > 366 ms (censored)


def _db(path, profiles: dict, reps: int = 3) -> str:
    """profiles: {(variant, streams): fractions of C at GRID}; `reps` runs per point, ±0.5 % apart."""
    s = Store.open(str(path))
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    for t in GRID:
        add_link(s, f"L{t:g}", t)
    for (v, n), fracs in profiles.items():
        for t, f in zip(GRID, fracs):
            for i in range(reps):
                add_run(s, f"{v}-{n}-{t:g}-{i}", f"L{t:g}", v, n, None, f * RATE * (1 + 0.005 * (i - 1)), rep=i,
                        duration_s=15.0)
    s.close()
    return str(path)


def _out(capsys, *argv) -> str:
    assert main(["analyze", *argv]) == 0
    return capsys.readouterr().out


def test_profiles_print_gbit_per_s_and_no_interval_from_two_runs(tmp_path, capsys):
    """`tcpprofile analyze --db DB`: exit 0; the header says 'mean (Gbit/s)' and the mean reads 9.222 (old:
    'mean' over 9.222e+09); 2 runs at a point give '-' and 'too few runs for an interval' (old: the
    bootstrap of 2 runs, their range)."""
    db = str(tmp_path / "p.duckdb")
    s = Store.open(db)
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    add_link(s, "L10", 10.0)
    for i, x in enumerate((9.122 * G, 9.322 * G)):
        add_run(s, f"r{i}", "L10", "cubic", 1, None, x, rep=i)
    s.close()
    out = _out(capsys, "--db", db)
    head, row = out.splitlines()[:2]
    assert "mean (Gbit/s)" in head and "ci_low (Gbit/s)" in head and "e+09" not in out
    cells = dict(zip(head.split(), row.split()))
    assert "9.222" in row.split() and "too few runs for an interval" in row
    assert "link rate" in head and "10 Gbit/s" in row and "buffer" in head and "auto" in row
    assert "bbr/" not in out and "cubic/" not in out
    line = json.loads(_out(capsys, "--db", db, "--format", "jsonl").splitlines()[0])
    assert line["mean"] == pytest.approx(9.222 * G) and line["ci_low"] is None and line["ci_high"] is None
    assert line["ci_reason"] == "too few runs for an interval"
    assert cells  # the table parses


def test_transition_columns_in_words_and_tau_T_of_the_fit_not_the_grid(tmp_path, capsys):
    """`tcpprofile analyze --db DB --what transition`: columns named in words (old: 'cubic/-/-/15/1e+10/...'),
    and τ_T is the dual-sigmoid fit's, the one the report draws (old: the last concave grid RTT, 91.6 ms)."""
    db = _db(tmp_path / "t.duckdb", {("cubic", 1): CROSSING, ("cubic", 2): CROSSING, ("htcp", 1): CONCAVE,
                                     ("htcp", 2): CONCAVE})
    out = _out(capsys, "--db", db, "--what", "transition")
    lines = out.splitlines()
    assert lines[0].startswith("τ_T: the dual-sigmoid fit's transition RTT")
    assert "all columns: buffer auto, size or duration 15 s, link rate 10 Gbit/s, link buffer 47.7MiB, loss none" in out
    assert "/" not in lines[2] and lines[2].split() == ["n", "cubic", "htcp"]
    with Store.open(db, read_only=True) as store:
        (tr,) = analysis.transitions_from_store(store, by=("variant", "streams"), n_boot=0)[:1]
        fits = report_profiles.SigmoidFits.for_store(store)
        prof = next(p for p in sel.load_profiles(store).profiles if p.config == sel.Config("cubic", "builtin", 1, None))
        drawn = fits.transition(prof).tau_T
    # the same function and capacity: the same τ_T (select's RTTs are cluster means: 0.4 + 1e-16)
    assert (tr.tau_T.side, tr.tau_T.text()) == (drawn.side, drawn.text()) and not drawn.censored
    assert tr.tau_T.value_s == pytest.approx(drawn.value_s, rel=1e-9) and 0.0916 < drawn.value_s < 0.183
    assert lines[3].split()[:3] == ["1", *drawn.text().split()]     # "137 ms", not the grid's 91.6
    assert lines[3].split()[3:] == [">", "366", "ms"]               # htcp: censored, printed as a bound
    row = json.loads(_out(capsys, "--db", db, "--what", "transition", "--format", "jsonl").splitlines()[-1])
    assert row["variant"] == "htcp" and row["tau_T_ms"] is None and row["tau_T_censored"] == "above"
    assert row["tau_T_bound_ms"] == 366.0 and row["tau_T"] == "> 366 ms" and row["tau_T_ci_low_ms"] is None
    assert "tau_T_grid_ms" not in row


def test_report_draws_a_censored_tau_T_as_an_open_triangle_never_a_point(tmp_path, monkeypatch):
    """The report's Transition RTTs figure: the censored 366 ms is an open '^' at the grid's end, and no
    measured line passes through it (old: drawn as a measured point with error bars)."""
    db = _db(tmp_path / "r.duckdb", {("htcp", 1): CONCAVE, ("htcp", 2): CROSSING, ("htcp", 4): CONCAVE})
    figs = []
    monkeypatch.setattr(report_profiles, "save", lambda fig, out, name: figs.append(fig) or f"{name}.png")
    with Store.open(db, read_only=True) as store:
        data = ReportData.load(store)
        fits = getattr(report_profiles.SigmoidFits, "for_store", lambda _: report_profiles.SigmoidFits())(store)
        section = report_profiles.transition_rtts(data, tmp_path, fits)
    (ax,) = [a for a in figs[0].axes if a.lines]
    points = [ln for ln in ax.lines if ln.get_marker() == "o"]
    opens = [ln for ln in ax.lines if ln.get_marker() == "^"]
    assert [list(ln.get_xdata()) for ln in points] == [[2]]
    assert 91.6 < float(points[0].get_ydata()[0]) < 183.0
    assert len(opens) == 1 and list(opens[0].get_xdata()) == [1, 4] and list(opens[0].get_ydata()) == [366.0, 366.0]
    assert opens[0].get_markerfacecolor() == "none"
    assert "(2 censored)" in section.items[0].caption


def test_tau_T_text_and_bounds():
    """τ in s inside (the fit, TauT's bounds), ms in the text: "> 366 ms" (old: the fit on ms, so a fit on
    seconds printed "> 0.366 ms")."""
    grid_s = np.array(GRID) / 1e3
    fit = analysis.fit_dual_sigmoid(grid_s, np.array(CONCAVE) * RATE, capacity=RATE)
    t = analysis.tau_t_of(fit, grid_s)
    assert (t.side, t.value_s, t.bound_s, t.text()) == ("above", None, grid_s[-1], "> 366 ms")
    low = analysis.fit_dual_sigmoid(grid_s, np.array([0.45, 0.4, 0.3, 0.2, 0.1, 0.05]) * RATE, capacity=RATE)
    assert analysis.tau_t_of(low, grid_s).text() == "< 0.4 ms"
