"""The HTML report: every figure present with a computed caption, rendered by headless Chromium.

Screenshots go to $TCPPROFILE_ARTIFACTS/report-screenshots/ (default: artifacts/ in the checkout).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from synthetic_store import add_link, add_run, build, build_flagged, trace
from tcpprofile.cli import main
from tcpprofile.report import Note, Table, build_report
from tcpprofile.store import Store

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

VARIANTS, STREAMS, BUFFERS = ("cubic", "htcp", "scalable"), (1, 4, 8), (None, 256 << 20)
RTTS, REPS = (0.4, 11.8, 45.6, 91.6, 183.0), 3


@pytest.fixture(scope="module")
def full_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "full.duckdb"
    with Store.open(path) as s:
        build(s, variants=VARIANTS, streams=STREAMS, buffers=BUFFERS, rtts=RTTS, reps=REPS,
              with_intervals=True, with_cwnd=True)
        # a lossy group, a remote link with a flagged calibration, a failed run
        rng = np.random.default_rng(5)
        for rate in (1e-5, 2e-3):
            for rtt in RTTS:
                lid = f"loss{rate:g}-{rtt:g}"
                add_link(s, lid, rtt, loss_mode="periodic", loss_rate=rate)
                for v in ("cubic", "htcp"):
                    for rep in range(2):
                        thr = 9e9 / (1 + rtt * rate * 200) * (1 + 0.02 * rng.standard_normal())
                        add_run(s, f"{lid}-{v}-{rep}", lid, v, 4, None, thr, rep=rep)
        add_link(s, "remote-1", None, kind="remote", rtt_measured_ms=45.9, rate_measured_bps=7.1e9,
                 calibration_ok=False, flags="rate_low", host="dtn.example.org")
        add_run(s, "remote-run", "remote-1", "cubic", 1, None, 6e9, intervals=trace(rng, 6e9, 1))
        add_run(s, "failed-run", "L45.6", "cubic", 1, None, None, status="failed")
    return path


@pytest.fixture(scope="module")
def report(full_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    with Store.open(full_store, read_only=True) as s:
        return build_report(s, out)


def _count(store_path, sql, params=()):
    with Store.open(store_path, read_only=True) as s:
        return s.con.execute(sql, list(params)).fetchone()[0]


def test_every_figure_family_present(report):
    ids = {f.id for f in report.figures()}
    for prefix in ("profile-", "box-", "sigmoid-", "transition-", "traces-", "poincare-", "lyapunov-",
                   "thr-lyap-", "models", "loss-", "cwnd"):
        assert any(i.startswith(prefix) for i in ids), prefix
    for f in report.figures():
        assert (report.index.parent / f.file).stat().st_size > 2000
        assert f.caption and re.search(rf"\b{f.runs} runs?\b", f.caption), f.id
    # only what has no data here is omitted: the one-RTT remote group's profiles, and transition RTTs of
    # the lossy groups (one stream count each); the papers section's notes: tests/test_report_papers.py
    titles = [n.title for s in report.sections if s.id not in ("papers", "operator") for n in s.items
              if isinstance(n, Note) and "remote links" not in n.title and n.title != "Verdicts"]
    assert [s.id for s in report.sections[:2]] == ["operator", "findings"]  # then the reproduce verdicts
    assert titles == ["Transition RTTs (duration=10s loss=periodic:0.002 C=10Gbit/s β=47.7MiB emulated links)",
                      "Transition RTTs (duration=10s loss=periodic:1e-05 C=10Gbit/s β=47.7MiB emulated links)"]


def test_exponents_are_tabled_with_their_surrogate_p_values(report):
    """Issue 10: each exponent with its surrogate p-value (on by default); Fig. 14 marks the points
    indistinguishable from noise. The synthetic traces are a ramp plus independent jitter: noise."""
    tables = [i for s in report.sections if s.id == "thr-lyap" for i in s.items if isinstance(i, Table)]
    assert tables
    for t in tables:
        assert t.header[5:] == ["status", "p", "verdict"] and len(t.rows) == t.runs
        for row, cls in zip(t.rows, t.row_classes):
            if row[6] != "–":
                assert round(float(row[6]) * 20) == pytest.approx(float(row[6]) * 20, abs=1e-9)  # k/20
                assert 1 / 20 <= float(row[6]) <= 1
            assert (cls == "flagged") == (row[7] != "beats surrogates")
        assert sum(r[7] == "indistinguishable from noise" for r in t.rows) >= 0.8 * len(t.rows)
    fig = next(f for f in report.figures() if f.id.startswith("thr-lyap-"))
    assert "hollow: indistinguishable from noise" in fig.caption and "Surrogate tests took" in fig.caption


def test_run_counts_are_computed(report, full_store):
    by_id = {f.id: f for f in report.figures()}
    # the no-loss duration group holds the main grid plus the remote run
    cubic = _count(full_store, "SELECT count(*) FROM runs JOIN links USING (link_id) WHERE status = 'ok' "
                   "AND variant = 'cubic' AND coalesce(loss_mode, 'none') = 'none' AND kind = 'emulated'")
    assert by_id["profile-g0-cubic"].runs == cubic == len(STREAMS) * len(BUFFERS) * len(RTTS) * REPS
    lossy = _count(full_store, "SELECT count(*) FROM runs JOIN links USING (link_id) WHERE loss_mode = 'periodic'")
    loss_fig = next(f for f in report.figures() if f.id.startswith("loss-"))
    no_loss_n4_auto = 2 * len(RTTS) * REPS               # cubic and htcp, n=4, B=auto
    assert loss_fig.runs == lossy + no_loss_n4_auto
    assert by_id["cwnd"].runs == 4
    # every loss-free (variant, buffer) dataset has a model: all of the main grid's runs, and the remote
    # run (its link's β and C are the grid's; τ its measured 45.9 ms), as `model fit` groups them
    assert by_id["models"].runs == len(VARIANTS) * len(STREAMS) * len(BUFFERS) * len(RTTS) * REPS + 1
    assert by_id["models"].caption.count("E=") == len(VARIANTS) * len(BUFFERS)
    calib = next(i for s in report.sections for i in s.items if isinstance(i, Table) and i.id == "calibration")
    assert calib.runs == _count(full_store, "SELECT count(*) FROM runs WHERE status = 'ok'")
    remote = next(r for r, c in zip(calib.rows, calib.row_classes) if r[0] == "remote-1")
    assert remote[1] == "remote" and remote[2] == "dtn.example.org" and "rate_low" in remote
    assert calib.row_classes[calib.rows.index(remote)] == "flagged"


def test_selection_table_matches_select(report, full_store):
    from tcpprofile.choose import select as sel
    table = next(i for s in report.sections for i in s.items if isinstance(i, Table) and i.id.startswith("selection"))
    with Store.open(full_store, read_only=True) as s:
        ps = sel.load_profiles(s, conditions=table_conditions(s))
    row = next(r for r in table.rows if r[0] == "45.6")
    choice = sel.select(ps, 45.6e-3, n_boot=1000)
    assert row[1] == choice.best.config.label() and row[2] == f"{choice.best.throughput_bps / 1e9:.3f}"
    assert row[7] == choice.recommended.config.label()


def table_conditions(store):
    from tcpprofile.choose import select as sel
    key = max(sel.condition_groups(store).items(), key=lambda kv: kv[1])[0]
    return dict(zip(sel.CONDITION_FIELDS, key))


class _Parse(HTMLParser):
    def __init__(self):
        super().__init__()
        self.srcs, self.external = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            v = a.get(key) or ""
            if re.match(r"^(https?:)?//", v):
                self.external.append(v)
        if tag == "img":
            self.srcs.append(a["src"])
        if tag in ("script", "link"):
            self.external.append(f"<{tag}>")


def test_html_is_self_contained(report):
    p = _Parse()
    p.feed(report.index.read_text())
    assert p.external == []
    assert sorted(p.srcs) == sorted(f.file for f in report.figures())
    assert all((report.index.parent / s).is_file() for s in p.srcs)


def test_small_store_omits_what_it_cannot_draw(tmp_path):
    db = tmp_path / "small.duckdb"
    with Store.open(db) as s:
        build(s, variants=("cubic",), streams=(1,), rtts=(20.0,), reps=2)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    with Store.open(db, read_only=True) as s:
        r = build_report(s, tmp_path / "r")
    assert {f.id for f in r.figures()} == {"operator-g0-configurations", "box-g0-cubic"}
    notes = " ".join(n.message for n in r.notes())
    assert "at least two" in notes and "no per-interval throughput traces" in notes and "no tcp_probe" in notes
    assert "at least 3 measured RTTs of a modelled variant" in notes and "no run on this path has a start time" in notes
    html = r.index.read_text()
    assert html.count("<img") == 2 and "omitted" in html


def test_empty_store_is_an_error(tmp_path, capsys):
    db = tmp_path / "e.duckdb"
    Store.open(db).close()
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r")]) == 2
    assert "nothing to report" in capsys.readouterr().err


# -- headless Chromium -------------------------------------------------------------------------
def _artifacts() -> Path:
    d = Path(os.environ.get("TCPPROFILE_ARTIFACTS", ROOT / "artifacts")) / "report-screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def chromium_page(index: Path):
    """Headless Chromium (Debian's, through playwright) on the report page: yields (page, errors, failed
    requests); the browser profile is removed afterwards."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    profile = tempfile.mkdtemp(prefix="tcpp-chromium-")
    errors, failed = [], []
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                        args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(index.as_uri(), wait_until="load")
            yield page, errors, failed
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (scripts/bootstrap installs it)")
def test_report_renders_in_chromium(report):
    shots = _artifacts()
    with chromium_page(report.index) as (page, errors, failed):
        sizes = page.evaluate("""() => Array.from(document.images).map(i =>
            ({src: i.getAttribute('src'), w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width}))""")
        page.screenshot(path=str(shots / "full.png"), full_page=True)
        for sid in page.evaluate("() => Array.from(document.querySelectorAll('section')).map(s => s.id)"):
            page.locator(f"section#{sid}").screenshot(path=str(shots / f"{sid}.png"))
    assert errors == [] and failed == []
    assert len(sizes) == len(report.figures())
    assert all(s["w"] > 0 and s["h"] > 0 and s["shown"] > 0 for s in sizes), [s for s in sizes if not s["w"]]
    assert (shots / "full.png").stat().st_size > 10_000 and (shots / "calibration.png").exists()


def test_flagged_runs_counted_in_the_tables_and_left_out_on_request(tmp_path, capsys):
    db = tmp_path / "flagged.duckdb"
    with Store.open(db) as s:
        build_flagged(s)        # 14 ok runs, 2 flagged: a slow cubic run (host_contended), htcp on a missed link
    with Store.open(db, read_only=True) as s:
        included = build_report(s, tmp_path / "in")
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out"), "--exclude-flagged"]) == 0
    with Store.open(db, read_only=True) as s:
        excluded = build_report(s, tmp_path / "out", exclude_flagged=True)

    def table(report, prefix):
        return next(i for sec in report.sections for i in sec.items if isinstance(i, Table) and i.id.startswith(prefix))

    sel_in, sel_out = table(included, "selection"), table(excluded, "selection")
    assert sel_in.header[-1] == "runs unflagged/flagged"
    at10_in, at10_out = (next(r for r in t.rows if r[0] == "10") for t in (sel_in, sel_out))
    assert at10_in[-1] == "6/2" and at10_out[-1] == "6/0"
    assert at10_in[1] == "htcp n=1 B=auto" and at10_in[2] == "8.500"    # the slow flagged run pulls cubic to 7.5
    assert at10_out[1] == "cubic n=1 B=auto" and at10_out[2] == "9.000"
    calib = table(included, "calibration")
    flagged_col = {r[0]: r[calib.header.index("flagged runs")] for r in calib.rows}
    assert flagged_col == {"L10": "1", "L10bad": "1", "L30": "0"}
    assert "Flagged runs included: 2 of 14 ok runs" in included.index.read_text()
    assert "Flagged runs left out (--exclude-flagged): 2 of 14 ok runs" in excluded.index.read_text()
    box = {f.id: f.runs for f in excluded.figures()}
    assert box["box-g0-cubic"] == 6 and {f.id: f.runs for f in included.figures()}["box-g0-cubic"] == 7


def test_model_figure_fits_as_model_fit_does(tmp_path, capsys):
    """On β = BDP links (the reproduce campaigns') the report's model panel is `tcpprofile model fit`'s fit: the
    same configuration (the default, the validated one: β the configured buffer, m = 1), the same m and the same
    E (one fitting path); with --configuration paper, model fit recovers the truth's m = 0.2."""
    from tcpprofile.models import make_model

    db = tmp_path / "bdp.duckdb"
    rng = np.random.default_rng(3)
    with Store.open(db) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "bdp", "mode": "emulated"})
        for rtt in (0.4, 11.8, 45.6, 91.6, 183.0):
            bdp = 10e9 * rtt / 1e3 / 8
            s.insert_link({"link_id": f"B{rtt:g}", "campaign_id": "c1", "kind": "emulated", "rate_bps": 10e9,
                           "rtt_ms": rtt, "buffer_bytes": int(bdp), "buffer_spec": "BDP", "mtu": 9000,
                           "loss_mode": "none", "loss_rate": 0.0, "rtt_measured_ms": rtt, "calibration_ok": True})
            # generated as `model fit` fits -t runs (loss at Cτ + β, iperf3's receiver interval); β = 0.2×BDP,
            # where CUBIC's cut (0.7 × 1.2 Cτ) leaves the pipe, so β is identifiable
            truth = make_model("cubic", buffer_bytes=0.2 * bdp, wmax_bytes=3e8, mss_bytes=8948, queue_fill=True,
                               receiver_report=True)
            for n in (1, 4):
                for rep in range(2):
                    thr = float(truth.predict(rtt / 1e3, n=n, duration=8.0)) * (1 + 0.01 * rng.standard_normal())
                    add_run(s, f"b-{rtt:g}-{n}-{rep}", f"B{rtt:g}", "cubic", n, None, thr, rep=rep, duration_s=8.0)
    assert main(["model", "fit", "--db", str(db), "--json", "--configuration", "paper"]) == 0
    (paper,) = __import__("json").loads(capsys.readouterr().out)
    assert paper["buffer_multiple_fit"] == pytest.approx(0.2, rel=0.1) and paper["buffer_bytes_fit"] is None
    assert main(["model", "fit", "--db", str(db), "--json"]) == 0
    (cli,) = __import__("json").loads(capsys.readouterr().out)
    with Store.open(db, read_only=True) as s:
        fig = next(f for f in build_report(s, tmp_path / "r").figures() if f.id == "models")
    assert cli["buffer_multiple_fit"] == 1.0 and cli["buffer_bytes_fit"] is None
    assert f"E={cli['E_mean_percent']:.1f} %" in fig.caption
    assert f"β={cli['buffer_multiple_fit']:.3g}×BDP" in fig.caption
    assert fig.runs == 20
