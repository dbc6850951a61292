"""The operator's page: the report's first section, per path the configurations against a log
RTT axis with their intervals, the recommendation with the lines to paste, calendar time, the host settings; the
page's tables fit 1280 px (Chromium); no warnings; no box from fewer than 3 runs.

Screenshots go to $TCPPROFILE_ARTIFACTS/report-screenshots/ (default: artifacts/ in the checkout).
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from synthetic_store import add_link, add_run, build
from test_report import CHROMIUM, _artifacts, chromium_page
from tcpprofile.choose import select as sel
from tcpprofile.report import Code, Figure, Note, Table, build_report, operator
from tcpprofile.report.data import ReportData
from tcpprofile.store import Store

RTTS = (0.4, 11.8, 45.6, 183.0)
SENDER = {"net.ipv4.tcp_wmem": "4096 16384 4194304", "net.core.wmem_max": "212992"}
TUNED = {"net.ipv4.tcp_wmem": "4096 16384 2147483647", "net.core.wmem_max": "2147483647"}
DAY0 = dt.datetime(2026, 3, 2, 9, 0)


def _imported(s: Store, run_id: str, link_id: str, local: str, peer: str, thr: float, day: int) -> None:
    """An imported iperf3 run (link kind 'unknown') whose JSON names the host pair."""
    raw = json.dumps({"start": {"system_info": f"Linux {local} 6.1.0 #1 SMP x86_64",
                                "connecting_to": {"host": peer, "port": 5201}}})
    add_run(s, run_id, link_id, "cubic", 4, None, thr)
    s.con.execute("UPDATE runs SET raw_json = ?, started_at = ? WHERE run_id = ?",
                  [raw, DAY0 + dt.timedelta(days=day), run_id])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("op") / "op.duckdb"
    rng = np.random.default_rng(7)
    with Store.open(path) as s:
        build(s, variants=("cubic", "htcp"), streams=(1, 4), buffers=(None, 256 << 20), rtts=RTTS, reps=3)
        # htcp n=1 B=auto at 183 ms with 2 runs only: a point without an interval
        s.con.execute("DELETE FROM runs WHERE run_id = 'htcp-1-None-183-2'")
        # three days, two host-settings sets (the tuned one on the last day)
        s.con.execute("UPDATE runs SET started_at = ?::TIMESTAMP + to_days(CAST(repetition AS INTEGER)), "
                      "sysctls_json = CASE WHEN repetition = 2 THEN ? ELSE ? END",
                      [DAY0, json.dumps({"sender": TUNED}), json.dumps({"sender": SENDER})])
        # a lossy group: 0.02–0.15 Gbit/s and up to 9 Gbit/s, more than a decade apart
        for rtt in RTTS:
            lid = f"loss-{rtt:g}"
            add_link(s, lid, rtt, loss_mode="periodic", loss_rate=2e-3)
            for rep in range(3):
                thr = 9e9 / (1 + rtt * 2e-3 * 4000) * (1 + 0.02 * rng.standard_normal())
                add_run(s, f"{lid}-{rep}", lid, "cubic", 4, None, thr, rep=rep)
        # imported history of two host pairs at 52 ms, over two days
        add_link(s, "imp", None, kind="unknown", rtt_measured_ms=52.0)
        s.con.execute("UPDATE links SET rtt_ms = 52.0 WHERE link_id = 'imp'")
        for k in range(4):
            _imported(s, f"imp-a-{k}", "imp", "dtn1", "dtn2.example.org", 7e9 + 1e8 * k, day=k % 2)
        _imported(s, "imp-b-0", "imp", "dtn1", "dtn3.example.org", 3e9, day=0)
    return path


@pytest.fixture(scope="module")
def report(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("oprep")
    with Store.open(store, read_only=True) as s, warnings.catch_warnings():
        warnings.simplefilter("error")        # no warning reaches the terminal
        return build_report(s, out)


@pytest.fixture(scope="module")
def data(store):
    with Store.open(store, read_only=True) as s:
        d = ReportData.load(s)
        yield d, operator.paths(d)


def _items(report, prefix, kind=object):
    sec = report.sections[0]
    return [i for i in sec.items if isinstance(i, kind) and getattr(i, "id", getattr(i, "title", "")).startswith(prefix)]


def test_operator_page_comes_first(report):
    assert report.sections[0].id == "operator" and report.sections[1].id == "findings"
    html = report.index.read_text()
    assert html.index('<section id="operator">') < html.index('<section id="findings">')


def test_paths_split_imported_runs_by_host_pair(data):
    _, paths = data
    labels = {p.label.split(",")[0]: p.runs for p in paths}
    assert labels["dtn1 → dtn2.example.org"] == 4 and labels["dtn1 → dtn3.example.org"] == 1
    emulated = [p for p in paths if p.label.startswith("emulated link")]
    assert sorted(p.runs for p in emulated) == [12, 2 * 2 * 2 * 4 * 3 - 1]


def test_interval_is_the_t_interval_and_none_below_three_runs():
    x = np.array([5e9, 6e9, 7e9])
    lo, hi = operator.interval(x, 10e9)
    half = stats.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3)
    assert (lo, hi) == pytest.approx((6e9 - half, 6e9 + half), rel=1e-12)
    assert operator.interval(x[:2], 10e9) is None
    # clipped to the physical range [0, C]
    assert operator.interval(np.array([0.1e9, 0.2e9, 5e9]), 10e9)[0] == 0.0
    assert operator.interval(np.array([9.9e9, 9.5e9, 6e9]), 10e9)[1] == 10e9


def test_configurations_figure_draws_every_configuration_on_log_axes(report):
    figs = {f.id: f for f in _items(report, "operator-", Figure)}
    main = next(f for f in figs.values() if f.id.endswith("configurations") and "loss=none" in f.title
                and "emulated" in f.title)
    assert main.runs == 2 * 2 * 2 * 4 * 3 - 1 and "8 configurations" in main.caption
    assert "1 point(s) rest on fewer than 3 runs" in main.caption and "31 intervals" in main.caption
    log = "throughput on a log axis (the means span more than a decade)"
    lossy = next(f for f in figs.values() if f.id.endswith("configurations") and "periodic" in f.title)
    assert log in lossy.caption                                  # 0.1 to 8 Gbit/s
    imported = next(f for f in figs.values() if f.id.endswith("configurations") and "dtn2" in f.title)
    assert log not in imported.caption and imported.runs == 4   # 7.0 to 7.3 Gbit/s


def test_recommendation_is_selects_with_its_lines(report, store, data):
    _, paths = data
    path = next(p for p in paths if p.label.startswith("emulated") and "loss=none" in p.label)
    table = next(t for t in _items(report, f"operator-{path.id}-recommended", Table))
    row = next(r for r in table.rows if r[0] == "45.6")
    with Store.open(store, read_only=True) as s:
        choice = sel.select(path.profile_set(), 45.6e-3)
    assert row[1] == choice.recommended.config.label()
    settings = sel.host_settings(choice.recommended, 45.6e-3, 10e9)
    code = next(c for c in _items(report, f"operator-{path.id}-paste", Code) if "45.6" in c.title)
    assert code.title.startswith(f"Lines to paste for {row[1]}")
    lines = code.text.splitlines()
    # no sysctl value written blind (it could lower a host tuned higher, and tcp_mem's "0 …" fields are
    # minimums, not values): the hostcheck line to run on the sending host, the minimums as comments
    numeric = [k for k, t in settings.targets.items() if not isinstance(t.minimum, str)]
    assert not any(line.startswith(("sysctl -w", *(f"{k} =" for k in numeric))) for line in lines), code.text
    assert f"tcpprofile hostcheck --rtt 45.6ms --rate 10Gbit --streams {choice.recommended.config.streams}" in code.text
    for k in numeric:
        assert any(line.startswith(f"#   {k} at least {settings.targets[k].text()}") for line in lines), k
    assert all(c in lines for c in settings.commands)


def test_calendar_time_where_runs_span_days(report):
    figs = [f for f in _items(report, "operator-", Figure) if f.id.endswith("calendar")]
    main = next(f for f in figs if "emulated" in f.title and "loss=none" in f.title)
    assert "over 3 days (2026-03-02 to 2026-03-04)" in main.caption and main.runs == 95
    assert any("dtn2.example.org" in f.title and "over 2 days" in f.caption for f in figs)
    notes = [n for n in report.sections[0].items if isinstance(n, Note)]
    assert any("dtn3.example.org" in n.title and "started on one day (2026-03-02)" in n.message for n in notes)


def test_host_settings_deduplicated_with_counts(report):
    tables = [t for t in _items(report, "operator-", Table) if t.id.endswith("settings")]
    main = next(t for t in tables if "emulated" in t.title and "loss=none" in t.title)
    assert main.header == ["sysctl (role: key)", "set 1 (64 runs)", "set 2 (31 runs)"]
    assert main.rows == [["sender: net.core.wmem_max", "212992", "2147483647"],
                         ["sender: net.ipv4.tcp_wmem", "4096 16384 4194304", "4096 16384 2147483647"]]
    assert main.row_classes == ["differs", "differs"]
    notes = [n for n in report.sections[0].items if isinstance(n, Note)]
    assert any("dtn2.example.org" in n.title and "recorded host settings" in n.message for n in notes)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (scripts/bootstrap installs it)")
def test_no_table_is_cut_at_1280_px(report):
    """At 1280 px every table's and <pre>'s right edge lies inside its section, or it sits in a scroll container
    (overflow-x auto/scroll) that the user can scroll; the operator's section is the first."""
    with chromium_page(report.index) as (page, errors, failed):
        page.set_viewport_size({"width": 1280, "height": 900})
        first = page.evaluate("() => document.querySelector('main section').id")
        cut = page.evaluate("""() => Array.from(document.querySelectorAll('table, pre')).filter(t => {
            let box = t.closest('section').getBoundingClientRect();
            let r = t.getBoundingClientRect();
            if (r.right <= box.right + 0.5 && r.right <= document.documentElement.clientWidth + 0.5) return false;
            for (let a = t.parentElement; a && a.tagName !== 'SECTION'; a = a.parentElement) {
                let ox = getComputedStyle(a).overflowX;
                if ((ox === 'auto' || ox === 'scroll') && a.getBoundingClientRect().right <= box.right + 0.5)
                    return false;
            }
            return true;
        }).map(t => (t.closest('[id]') || t).id)""")
        page.locator("section#operator").screenshot(path=str(_artifacts() / "operator-1280.png"))
    assert errors == [] and failed == []
    assert first == "operator" and cut == []


def test_loss_profiles_on_a_log_axis_where_they_span_decades(report):
    loss = next(f for f in report.figures() if f.id.startswith("loss-"))
    assert "throughput on a log axis (the means span more than a decade)" in loss.caption


def test_no_box_from_fewer_than_three_runs(report):
    box = {f.id: f for f in report.figures() if f.id.startswith("box-")}
    # htcp n=1 B=auto has 2 runs at 183 ms; every other (configuration, RTT) has 3
    assert "1 RTT(s) with fewer than 3 runs: no box" in box["box-g0-htcp"].caption
    assert "fewer than 3 runs" not in box["box-g0-cubic"].caption


def test_a_small_store_reports_without_warnings(tmp_path):
    """`make demo`'s store is small: every τ_T censored at the grid's end makes Spearman's ρ of the papers'
    abstract (iii) a constant-input correlation (SciPy's ConstantInputWarning): the table says why ρ is
    undefined instead, and no box is drawn from its 2 repetitions."""
    db = tmp_path / "small.duckdb"
    with Store.open(db) as s:
        build(s, variants=("cubic", "htcp"), streams=(1, 4), rtts=(0.4, 11.8, 45.6), reps=2, with_intervals=True)
    with Store.open(db, read_only=True) as s, warnings.catch_warnings():
        warnings.simplefilter("error")
        r = build_report(s, tmp_path / "r")
    (vs,) = [i for sec in r.sections for i in sec.items if getattr(i, "id", "") == "papers-abstract-iii-vs"]
    assert vs.rows[0][3].startswith("Spearman ρ undefined: τ_T is the same for every configuration")
    assert all("6 RTT(s) with fewer than 3 runs: no box" in f.caption for f in r.figures() if f.id.startswith("box-"))
