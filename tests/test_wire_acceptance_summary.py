"""benchmarks/wire_acceptance_summary.py on a store written through the Store API: the issue's two
criteria (last half >= 9.5 Gbit/s, 9.3 at 366 ms, else flagged host_limited; largest release lateness
within max(0.5 ms, 1 % tau), else flagged engine_stall), counted on runs of its campaign only."""

from __future__ import annotations

import sys
from pathlib import Path

from tcpprofile.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import wire_acceptance_summary as summary  # noqa: E402

from synthetic_store import add_link  # noqa: E402


def halves(first_gbps: float, last_gbps: float, seconds: int = 30) -> list[dict]:
    """1 s sum intervals: the first half at one rate, the second at another."""
    return [{"stream": None, "start_s": float(t), "end_s": float(t + 1),
             "bytes": int((first_gbps if t < seconds // 2 else last_gbps) * 1e9 / 8)} for t in range(seconds)]


def run(store: Store, run_id: str, campaign: str, link: str, streams: int, first: float, last: float,
        late_fwd_us: float, late_rev_us: float, flags: str | None) -> None:
    store.put_run({"run_id": run_id, "campaign_id": campaign, "link_id": link, "variant": "cubic",
                   "cc_impl": "builtin", "cc_kernel_name": "cubic", "streams": streams, "repetition": 0,
                   "duration_target_s": 30.0, "status": "ok", "throughput_bps": (first + last) / 2 * 1e9,
                   "duration_s": 30.0, "flags": flags, "engine_fwd_late_max_us": late_fwd_us,
                   "engine_rev_late_max_us": late_rev_us},
                  intervals=halves(first, last))


def test_criteria_counted_per_run_of_the_campaign(tmp_path, monkeypatch, capsys):
    db = tmp_path / "w.duckdb"
    store = Store.open(db)
    store.insert_campaign({"campaign_id": "w1", "name": "wire-acceptance", "mode": "emulated"})
    store.insert_campaign({"campaign_id": "c1", "name": "other", "mode": "emulated"})
    add_link(store, "L11", 11.8, campaign_id="w1")
    add_link(store, "L366", 366.0, campaign_id="w1")
    add_link(store, "Lx", 11.8, campaign_id="c1")
    # slow start in the first half: only the last half counts (9.6 >= 9.5); lateness within 0.5 ms
    run(store, "a", "w1", "L11", 1, 5.0, 9.6, 400, 450, None)
    # below 9.5 but flagged host_limited; 0.6 ms > 0.5 ms and marked engine_stall_minor (a stall whose bound on
    # Θ stays within the resolution: issue 33)
    run(store, "b", "w1", "L11", 8, 9.9, 9.4, 100, 600, "engine_stall_minor,host_limited")
    # 366 ms: 9.4 >= 9.3, and 3 ms <= 1 % of 366 ms
    run(store, "c", "w1", "L366", 1, 9.0, 9.4, 3000, 10, "engine_stall")
    # 366 ms: 9.2 < 9.3 unflagged, 4 ms > 3.66 ms unflagged
    run(store, "d", "w1", "L366", 4, 9.0, 9.2, 4000, 10, None)
    # another campaign: never counted
    run(store, "x", "c1", "Lx", 1, 1.0, 1.0, 99_999, 99_999, None)
    store.close()

    monkeypatch.setattr(sys, "argv", ["wire_acceptance_summary.py", str(db)])
    assert summary.main() == 0
    out = capsys.readouterr().out
    assert "4 runs done." in out
    assert "Last half below the floor (9.5, 366 ms: 9.3 Gbit/s): 2 (1 of them not flagged host_limited)" in out
    assert "beyond max(0.5 ms, 1 % tau): 2 of 4" in out and "1 of them without engine_stall or engine_stall_minor" in out
    rows = {tuple(line.split()[:3]) for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert ("11.8", "1", "1") in rows and ("366.0", "4", "1") in rows


def test_threshold_is_the_issues_bound():
    assert summary.threshold_us(11.8) == 500.0          # 1 % of 11.8 ms is below the 0.5 ms floor
    assert summary.threshold_us(183.0) == 1830.0
    assert summary.threshold_us(366.0) == 3660.0
