"""The report's "papers side by side" section: each paper figure regenerated from a store that has its
runs, with the numbers read back from the table beside it; a note naming the runs (and spec) for a store
that lacks them; a censored τ_T never printed as a value; the section rendered in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from synthetic_store import (BBR_AT_500, BBR_SHARE, LOSS_RTTS, PAPERS_RTTS, STCP_DEFICIT, TEN_GB, add_link, add_run,
                             build_papers, papers_value)
from test_report import CHROMIUM, _artifacts, chromium_page
from tcpprofile import analysis
from tcpprofile.cli import main
from tcpprofile.report import Figure, Note, Table
from tcpprofile.report import html, papers
from tcpprofile.report.data import ReportData
from tcpprofile.report.profiles import SigmoidFits
from tcpprofile.store import Store

G = 1e9


@pytest.fixture(scope="module")
def papers_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("papers") / "papers.duckdb"
    with Store.open(path) as s:
        build_papers(s)
    return path


@pytest.fixture(scope="module")
def papers_page(papers_db, tmp_path_factory):
    """The papers section drawn once from the papers' store, and the report's page (report.html.page) holding
    it, beside its figures: (section, index.html)."""
    out = tmp_path_factory.mktemp("papers-out")
    with Store.open(papers_db, read_only=True) as s:
        sec = papers.side_by_side(ReportData.load(s), out, SigmoidFits())
    index = out / "index.html"
    index.write_text(html.page("tcpprofile report", [], [sec]))
    return sec, index


@pytest.fixture(scope="module")
def section(papers_page):
    return papers_page[0]


def _item(section, id_, kind=Table):
    return next(i for i in section.items if isinstance(i, kind) and i.id == id_)


def _sql_mean(db, where: str, params=()) -> float:
    with Store.open(db, read_only=True) as s:
        return s.con.execute("SELECT avg(throughput_bps) FROM runs JOIN links USING (link_id) WHERE status = 'ok' "
                             f"AND {where}", list(params)).fetchone()[0]


def test_every_figure_is_drawn_from_a_store_that_has_its_runs(section):
    assert section.id == "papers" and section.title == "The papers side by side"
    figures = {i.id: i for i in section.items if isinstance(i, Figure)}
    assert set(figures) == {"papers-fig6", "papers-fig10", "papers-fig13", "papers-abstract-iii",
                            "papers-models-fig3", "papers-models-fig68", "papers-slides-groups",
                            "papers-slides-losses"}
    assert not [i for i in section.items if isinstance(i, Note)]
    for f in figures.values():   # each states its runs' conditions and has the paper's numbers beside it
        assert "Runs with" in f.caption and f.runs > 0
        assert re.search(rf"\b{f.runs} runs\b", f.caption)
        vs = _item(section, f"{f.id}-vs")
        assert vs.header == ["claim", "paper (where)", "paper says", "here"] and vs.rows
    not_here = _item(section, "papers-not-here")
    text = " ".join(" ".join(r) for r in not_here.rows)
    assert "SONET" in text and "Linux 2.6" in text and "Figs. 4, 5, 7" in text


def test_fig6_throughput_per_transfer_size(section, papers_db):
    rows = _item(section, "papers-fig6-data").rows
    assert {r[0] for r in rows} == {"10 GB", "100 GB"}
    row = next(r for r in rows if r[:3] == ["10 GB", "4", "45.6"])
    sql = _sql_mean(papers_db, "variant = 'cubic' AND streams = 4 AND transfer_bytes = ? AND rtt_ms = 45.6", [TEN_GB])
    assert row[3] == "3" and row[4] == f"{sql / G:.2f}" == f"{papers_value('cubic', 4, 45.6) / G:.2f}"
    vs = _item(section, "papers-fig6-vs").rows
    at45 = next(r for r in vs if "45.6" in r[0])
    assert at45[2] == "≈ 9 Gbit/s" and f"n=10: {papers_value('cubic', 10, 45.6) * 1.02 / G:.2f}" in at45[3]
    assert "F=100 GB" in at45[3]


def test_fig10_tau_T_with_censored_values_as_bounds(section, papers_db):
    table = _item(section, "papers-fig10-data")
    top = max(PAPERS_RTTS)
    with Store.open(papers_db, read_only=True) as s:
        group = next(g for g in ReportData.load(s).groups if g.conditions["transfer_bytes"] == TEN_GB)
        profs = {(p.config.variant, p.config.streams): p for p in group.profiles}
    censored = 0
    for row, cls in zip(table.rows, table.row_classes):
        p = profs[(row[0], int(row[2]))]
        fit = analysis.fit_dual_sigmoid(np.asarray(p.rtts_ms), p.means, capacity=p.rate_bps)
        assert row[7] == fit.kind
        if fit.kind == "concave":    # no convex part: τ_T at the grid's end is a bound
            censored += 1
            assert row[5] == f"> {top:g} ms" and row[6] == "–" and cls == "flagged"
        else:
            assert row[5] == f"{fit.tau_T:.3g} ms" and cls == ""
    assert censored == 3 and {r[2] for r in table.rows if r[5].startswith(">")} == {"10"}
    fig = _item(section, "papers-fig10", Figure)
    assert f"{censored} of {len(table.rows)} τ_T censored" in fig.caption
    # a censored τ_T is nowhere written as a value: every "183 ms" in a τ_T cell is a bound
    cells = ([c for r in table.rows for c in r[5:7]] + [r[3] for r in _item(section, "papers-fig10-vs").rows]
             + [r[2] for r in _item(section, "papers-abstract-iii-data").rows])
    for c in cells:
        assert all(prefix == "> " for prefix in re.findall(rf"(> |\b)?{top:g} ms", c)), c
    trend = next(r for r in _item(section, "papers-fig10-vs").rows if r[0].startswith("similar trends"))
    assert f"n=10 > {top:g} ms" in trend[3]


def test_fig13_local_exponents_read_back(section, papers_db):
    rows = _item(section, "papers-fig13-data").rows
    assert {(r[0], r[1]) for r in rows} == {("11.8", "1"), ("11.8", "10"), ("183", "1"), ("183", "10")}
    with Store.open(papers_db, read_only=True) as s:
        ids = [r[0] for r in s.con.execute("SELECT run_id FROM runs WHERE variant = 'cubic' AND streams = 1 AND "
                                           "run_id LIKE 'T-%-11.8-%' ORDER BY run_id").fetchall()]
        traces = analysis.load_traces(s.con, ids)
    L = np.concatenate([analysis.local_lyapunov(traces[(r, None)].bps) for r in ids])
    row = next(r for r in rows if r[:2] == ["11.8", "1"])
    assert row[2] == "2" and row[3] == "40" and row[4] == str(L.size)
    assert row[5] == f"{np.median(np.abs(L)):.3f}"
    vs = _item(section, "papers-fig13-vs").rows
    assert vs[0][2] == "183 ms closer to the zero line than 11.6 ms"
    # the synthetic traces are smoother at 183 ms: the pooled median |L_i| is smaller there
    got = re.search(r"median \|L_i\| ([\d.]+) at 11.8 ms, ([\d.]+) at 183 ms", vs[0][3])
    assert float(got.group(2)) < float(got.group(1))
    assert vs[2][3] == "40 intervals" and "shorter" in _item(section, "papers-fig13", Figure).caption


def test_abstract_iii_ranks_censored_tau_T_above_measured(section):
    table = _item(section, "papers-abstract-iii-data")
    assert len(table.rows) == 4
    cens = [r for r in table.rows if r[2].startswith(">")]
    assert [r[2] for r in cens] == ["> 183 ms", "> 183 ms"] and all(r[3] == "concave" for r in cens)
    from scipy import stats
    x = [float(r[5]) for r in table.rows]
    y = [np.inf if r[2].startswith(">") else float(r[2].split()[0]) for r in table.rows]
    rho = stats.spearmanr(x, stats.rankdata(y))[0]
    (row,) = _item(section, "papers-abstract-iii-vs").rows
    assert row[3].startswith(f"Spearman ρ = {rho:.2f}") and "over 4 configurations, 2 τ_T censored" in row[3]


def test_models_fig3_ratios_to_stcp(section, papers_db):
    rows = {r[0]: r for r in _item(section, "papers-models-fig3-data").rows}
    assert set(rows) == {"1", "4", "10"}
    for n in (1, 4, 10):
        ratio = 1 / (1 - STCP_DEFICIT * (n - 1))
        assert rows[str(n)][5] == rows[str(n)][6] == f"{ratio:.3f}"
    stcp = _sql_mean(papers_db, "variant = 'scalable' AND streams = 10 AND transfer_bytes = ?", [TEN_GB])
    assert rows["10"][4] == f"{stcp / G:.2f}"
    vs = _item(section, "papers-models-fig3-vs").rows
    assert vs[1][3] == "n=10: Θ_V/Θ_STCP cubic 1.220, htcp 1.220" and vs[2][3] == "10 GB"


def test_models_figs_6_8_are_model_fits(section, papers_db, capsys):
    assert main(["model", "fit", "--db", str(papers_db), "--json"]) == 0
    fits = json.loads(capsys.readouterr().out)
    rows = _item(section, "papers-models-fig68-data").rows
    for v in ("htcp", "scalable", "cubic"):
        (cli,) = [f for f in fits if f["variant"] == v and f["transfer_bytes"] == TEN_GB]
        mine = {int(r[1]): r[4] for r in rows if r[0] == v}
        assert mine == {int(n): f"{e:.1f}" for n, e in cli["E_percent"].items()}
    vs = {r[0]: r for r in _item(section, "papers-models-fig68-vs").rows}
    assert vs["htcp: E over RTTs and n"][2] == "5.2 % (n = 1–10)"
    assert vs["scalable: E over RTTs and n"][1] == "§V, Fig. 7" and "not measured: n = 2, 3" in vs["cubic: E over RTTs and n"][3]


def test_slides_groups_against_bbr(section, papers_db):
    table = _item(section, "papers-slides-groups-data")
    assert {(r[0], r[1]) for r in table.rows} == {("htcp", "Group 1"), ("scalable", "Group 1"), ("cubic", "Group 2")}
    row = next(r for r in table.rows if r[0] == "htcp" and r[2] == "45.6")
    htcp = _sql_mean(papers_db, "variant = 'htcp' AND streams = 1 AND transfer_bytes = ? AND rtt_ms = 45.6", [TEN_GB])
    bbr = _sql_mean(papers_db, "variant = 'bbr' AND transfer_bytes = ? AND rtt_ms = 45.6", [TEN_GB])
    assert bbr == pytest.approx(BBR_SHARE * htcp)
    assert row[3:6] == [f"{htcp / G:.2f}", f"{bbr / G:.2f}", f"{(htcp - bbr) / G:+.3f}"] and row[7] == "above"
    vs = _item(section, "papers-slides-groups-vs").rows
    assert vs[0][3] == "htcp: above at 5 of 5 RTTs; scalable: above at 5 of 5 RTTs"
    assert vs[1][2] == "mixed" and vs[1][3] == "cubic: above at 5 of 5 RTTs"


def test_slides_loss_series(section):
    rows = _item(section, "papers-slides-losses-data").rows
    assert {r[0] for r in rows} == {"no loss", "periodic 1/100K", "periodic 1/500", "uniform 1/500"}
    bbr = next(r for r in rows if r[:2] == ["periodic 1/500", "bbr"])
    assert bbr[4:6] == [f"{BBR_AT_500[0] / G:.2f}", f"{BBR_AT_500[1] / G:.2f}"] and bbr[3] == str(2 * len(LOSS_RTTS))
    vs = {r[0]: r for r in _item(section, "papers-slides-losses-vs").rows}
    assert vs["1 in 500: BBR"][2].endswith("9.3 Gbit/s for the shortest, 2 Gbit/s for the longest connection")
    assert vs["1 in 500: BBR"][3].startswith(f"bbr 9.30 at {LOSS_RTTS[0]:g} ms → 2.00 at {LOSS_RTTS[-1]:g} ms")
    assert vs["1 in 50,000 (periodic)"][3] == "no periodic 1/50K runs"
    assert "1/500 uniform: cubic" in vs["periodic vs uniform"][3]


# -- a store that lacks every figure's runs ---------------------------------------------------------
LACKS = {"HPDC'17 Fig. 6": "examples/hpdc17-table1.toml", "HPDC'17 Figs. 9–10": "examples/hpdc17-table1.toml",
         "HPDC'17 Figs. 12–13": "examples/eleven-variants.toml", "HPDC'17 abstract (iii)": "examples/eleven-variants.toml",
         "Models paper Fig. 3": "examples/profiles-10g.toml", "Models paper Figs. 6–8": "examples/profiles-10g.toml",
         "Slides: Group 1": "examples/eleven-variants.toml", "Slides: throughput profiles under external loss":
         "examples/losses.toml"}


def test_a_store_without_the_runs_says_what_to_run(tmp_path):
    """One transfer size, one stream count, two RTTs, no traces, no BBR, no loss: every figure is a note that
    names the runs it needs and a spec that has them."""
    db = tmp_path / "thin.duckdb"
    with Store.open(db) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "thin", "mode": "emulated"})
        for rtt in (11.8, 45.6):
            add_link(s, f"L{rtt:g}", rtt)
            for v in ("cubic", "scalable"):
                for rep in range(2):
                    add_run(s, f"{v}-{rtt:g}-{rep}", f"L{rtt:g}", v, 1, None, 8e9 + rep * 1e8, rep=rep,
                            transfer_bytes=TEN_GB, duration_s=None)
    with Store.open(db, read_only=True) as s:
        sec = papers.side_by_side(ReportData.load(s), tmp_path, SigmoidFits())
    assert not [i for i in sec.items if isinstance(i, Figure)]
    notes = [i for i in sec.items if isinstance(i, Note)]
    assert len(notes) == len(LACKS)
    for start, spec in LACKS.items():
        (note,) = [n for n in notes if n.title.startswith(start)]
        assert note.message.startswith("the store lacks the runs for it: it needs ") and f"run {spec}" in note.message
    assert "the store has no traces" in next(n for n in notes if n.title.startswith("HPDC'17 Figs. 12–13")).message
    assert _item(sec, "papers-not-here").rows


# -- headless Chromium -------------------------------------------------------------------------------
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (scripts/bootstrap installs it)")
def test_papers_section_renders_in_chromium(papers_page):
    sec, index = papers_page
    shots = _artifacts()
    with chromium_page(index) as (page, errors, failed):
        got = page.evaluate("""() => { const s = document.querySelector('section#papers');
            return {imgs: Array.from(s.querySelectorAll('img')).map(i => ({w: i.naturalWidth,
                      shown: i.getBoundingClientRect().width})),
                    tables: Array.from(s.querySelectorAll('div.table')).map(t => t.id),
                    nav: Array.from(document.querySelectorAll('nav a')).map(a => a.getAttribute('href')),
                    censored: Array.from(s.querySelectorAll('#papers-fig10-data td')).map(td => td.textContent)}; }""")
        page.locator("section#papers").screenshot(path=str(shots / "papers.png"))
    assert errors == [] and failed == []
    assert len(got["imgs"]) == sum(isinstance(i, Figure) for i in sec.items) == 8
    assert all(i["w"] > 0 and i["shown"] > 0 for i in got["imgs"])
    assert "#papers" in got["nav"] and "papers-fig10-data" in got["tables"] and "papers-not-here" in got["tables"]
    assert "> 183 ms" in got["censored"]
    assert (shots / "papers.png").stat().st_size > 10_000
