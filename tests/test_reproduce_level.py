"""One verdict function, one level: the CLI (--standard, --check-only, any mode) and the report print the same
verdict table for a store, at the level its campaigns' looks give."""

from __future__ import annotations

import json
import math

import pytest

from synthetic_store import add_profile
from tcpprofile.cli import main
from tcpprofile.report.findings import verdicts
from tcpprofile.reproduce import standard, stats
from tcpprofile.store import Store

C = 10e9


def _store(path, name: str) -> None:
    with Store.open(path) as s:
        for n, reach in ((1, 60.0), (10, 150.0)):
            add_profile(s, lambda rtt, r=reach: C * 0.94 / (1 + (rtt / r) ** 2.2), streams=n, buffer=128 * 2**20,
                        transfer_bytes=10**9, reps=3, noise=0.03, seed=n)
        s.con.execute("UPDATE campaigns SET name = ? WHERE campaign_id = 'c1'", [name])


def _fmt(x):
    return "–" if x is None else f"{x:.3g}"


@pytest.mark.parametrize("name, level", [("reproduce-standard-profiles-cubic-n1-look1", standard.LEVEL),
                                         ("reproduce-quick-clean", stats.LEVEL)])
def test_cli_check_only_and_report_give_the_same_rows_at_the_looks_level(tmp_path, capsys, name, level):
    """Fails on the old code: the report computed at its default 0.95 while `--standard` used 0.983 (the
    intervals' bounds differ), and `--check-only` without --standard used 0.95 on a standard store."""
    db = tmp_path / "s.duckdb"
    _store(db, name)
    rows = {}
    for mode in ("--standard", "--quick"):
        assert main(["reproduce", mode, "--check-only", "--json", "--db", str(db)]) == 0
        rows[mode] = json.loads(capsys.readouterr().out)
    assert rows["--standard"] == rows["--quick"]          # the mode flag does not choose the level: the store does
    cli = rows["--standard"]
    assert all(r["level"] == pytest.approx(level) for r in cli if r["low"] is not None)
    with Store.open(db) as s:
        (table,) = verdicts(s).items
    assert table.header[5] == f"{level:.4g} interval"
    report = [(r[0], r[2], r[5]) for r in table.rows]
    cli_rows = [(f"({r['id']})", r["verdict"], f"[{_fmt(r['low'])}, {_fmt(r['high'])}]") for r in cli]
    # the JSON writes ±inf as null: compare the finite bounds, and every verdict
    assert [(i, v) for i, v, _ in report] == [(i, v) for i, v, _ in cli_rows]
    for (_, _, a), (_, _, b) in zip(report, cli_rows):
        if "∞" not in a and "–" not in a:
            assert a == b
    assert any(r["low"] is not None and math.isfinite(r["low"]) for r in cli)   # some interval was compared
