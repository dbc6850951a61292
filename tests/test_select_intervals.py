"""Intervals an operator can read: `select` never shows an interval outside [0, C], none from fewer than
3 runs (instead: "too few runs for an interval; about N more would decide"), and its JSON carries null and
the reason, never a fake number. Each case fails on a select that prints the t interval of 2 runs
(−32.1…44.1 Gbit/s here) or a top above the 10 Gbit/s link (10.05 here)."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from synthetic_store import RATE, add_link, add_run
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.store import Store

G = 1e9


def _db(path, points: dict) -> str:
    """points: {(variant, streams): {rtt_ms: [throughputs]}} -> a store file."""
    s = Store.open(str(path))
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    for r in sorted({r for prof in points.values() for r in prof}):
        add_link(s, f"L{r:g}", r)
    for (v, n), prof in points.items():
        for r, values in prof.items():
            for i, x in enumerate(values):
                add_run(s, f"{v}-{n}-{r:g}-{i}", f"L{r:g}", v, n, None, x, rep=i)
    s.close()
    return str(path)


def _ranking_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.lstrip().startswith("rank"))
    return lines[start + 1:]


def test_two_runs_give_no_interval_but_the_runs_that_would_give_one(tmp_path, capsys):
    """`tcpprofile select --db DB --rtt 0.4ms`, one configuration with 2 runs: exit 0, no interval (a t
    interval with 1 df would be 6 ± 12.71·3 = −32.1…44.1 Gbit/s), the reason in words and in JSON."""
    db = _db(tmp_path / "two.duckdb", {("cubic", 1): {0.4: [9.0 * G, 3.0 * G]}})
    assert main(["select", "--db", db, "--rtt", "0.4ms"]) == 0
    out = capsys.readouterr().out
    row = _ranking_lines(out)[0]
    assert "6.000" in row and "–" in row and "-32" not in out and "44.1" not in out
    assert "cubic n=1 B=auto: too few runs for an interval; about 1 more would give one (now 2 at 0.4 ms)" in out
    assert main(["select", "--db", db, "--rtt", "0.4ms", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best["ci_low_bps"] is None and best["ci_high_bps"] is None and best["more_runs"] == 1
    assert best["ci_reason"] == "too few runs for an interval; about 1 more would give one"


def test_interval_beyond_the_link_rate_is_clipped_and_says_so(tmp_path, capsys):
    """3 runs at 9.6, 9.9, 8.1 Gbit/s on a 10 Gbit/s link: t(0.975, 2)·s/√3 reaches 11.64; shown as
    …–10.000* with the clipping explained; JSON keeps the clipped ends and ci_clipped."""
    values = [9.6 * G, 9.9 * G, 8.1 * G]
    db = _db(tmp_path / "clip.duckdb", {("cubic", 1): {0.4: values}})
    mean, s = sum(values) / 3, stats.tstd(values)
    lo, hi = mean - stats.t.ppf(0.975, 2) * s / math.sqrt(3), mean + stats.t.ppf(0.975, 2) * s / math.sqrt(3)
    assert hi > RATE and lo > 0                      # the case: only the top is beyond physics
    assert main(["select", "--db", db, "--rtt", "0.4ms"]) == 0
    out = capsys.readouterr().out
    assert f"{lo / G:.3f}–10.000*" in _ranking_lines(out)[0]
    assert "* interval clipped to the physical range [0, 10.000] Gbit/s" in out
    assert main(["select", "--db", db, "--rtt", "0.4ms", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best["ci_high_bps"] == RATE and best["ci_low_bps"] == pytest.approx(lo) and best["ci_clipped"]
    assert best["ceiling_bps"] == RATE and best["ci_reason"] is None


def test_interval_below_zero_is_clipped_at_zero():
    """Throughput is never negative: a wide interval of a slow configuration stops at 0."""
    s = Store.open(":memory:")
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    add_link(s, "L", 300.0)
    for i, x in enumerate((0.05 * G, 0.9 * G, 0.1 * G)):
        add_run(s, f"r{i}", "L", "reno", 1, None, x, rep=i)
    est = sel.select(sel.load_profiles(s), 300.0e-3).best
    assert est.ci_low_bps == 0.0 and est.ci_clipped and est.ci_high_bps < RATE


def test_one_run_borrows_the_spread_of_comparable_configurations(tmp_path, capsys):
    """A configuration measured once has no spread of its own: how many runs would decide it against the
    best uses the relative spread pooled over the group's repeated configurations (select.pooled_spread),
    checked here against the t quantile by hand."""
    best = [9.0 * G, 9.2 * G, 9.4 * G]                    # s/x̄ = 0.2/9.2
    db = _db(tmp_path / "one.duckdb", {("cubic", 1): {10.0: best}, ("cubic", 2): {10.0: [8.9 * G]}})
    assert main(["select", "--db", db, "--rtt", "10ms"]) == 0
    out = capsys.readouterr().out
    cv2 = (0.2 / 9.2) ** 2
    u = cv2 * 9.2**2 + cv2 * 8.9**2                     # (Gbit/s)², one repetition each
    target = (9.2 - 8.9) - 0.01 * 9.2                    # d − m: separation
    k = next(k for k in range(3, 1000) if stats.t.ppf(0.975, k - 1) * math.sqrt(u / k) < target)
    assert (f"cubic n=2 B=auto: too few runs for an interval; about {k - 1} more would decide (against cubic "
            f"n=1 B=auto: separated, if the means and spread stay as observed) (now 1 at 10 ms)") in out
    line = next(x for x in out.splitlines() if x.startswith("Best vs runner-up"))
    assert f"too few runs for an interval (fewer than 3 at an RTT used); about {k - 1} more would decide" in line


def test_no_spread_anywhere_says_so():
    s = Store.open(":memory:")
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    add_link(s, "L", 10.0)
    add_run(s, "a", "L", "cubic", 1, None, 9.0 * G)
    add_run(s, "b", "L", "cubic", 2, None, 8.0 * G)
    choice = sel.select(sel.load_profiles(s), 10.0e-3)
    assert choice.comparison.decision == "insufficient" and choice.comparison.runs_to_decide is None
    assert choice.best.interval_note() == ("too few runs for an interval; at least 2 more give one (no "
                                           "configuration of this group has repeated runs to judge the spread)")
