"""Per-run fidelity for real: `tcpprofile run` of a short emulated campaign (subprocess, real iperf3 and
delay engines in throwaway namespaces) on a quiet host, on a host the test makes busy, and on a lossy link.

Run it alone on a quiet host, with no other CPU-bound process (it measures: another process's CPU is
what host_contended is about). The busy loops are child processes of this test (so foreign to the
`tcpprofile run` subprocess), one per core, killed in `finally`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import import_or_require

from vm_timing import MEASURED_AGAIN
from tcpprofile.measure.fidelity import thresholds
from tcpprofile.store.db import Store

pytestmark = pytest.mark.privileged

TCPPROFILE = [sys.executable, "-m", "tcpprofile.cli"]
TAU_MS = 10.0
EVERY = 500
ENGINE_COLUMNS = ("engine_fwd_late_mean_us", "engine_fwd_late_max_us", "engine_rev_late_mean_us",
                  "engine_rev_late_max_us", "engine_fwd_drops", "engine_rev_drops", "engine_fwd_cpu_share",
                  "engine_rev_cpu_share", "bottleneck_drops", "inflight_end_packets")
HOST_COLUMNS = ("host_cpu_busy", "host_cpu_foreign", "host_cpu_pressure", "host_runqueue_max")


def spec(tmp_path: Path, name: str, loss: str = '{ mode = "none" }') -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(f"""
[campaign]
name = "{name}"
seed = 3
repetitions = 2
[link]
rate = "1Gbit"
rtt = ["{TAU_MS:g}ms"]
buffer = "BDP"
mtu = 9000
loss = [{loss}]
[transfer]
variant = ["cubic"]
streams = [1]
duration = "3s"
""")
    return p


def run_campaign(spec_path: Path, db: Path) -> tuple[dict, list[dict]]:
    import_or_require("tcpprofile.testbed", "the testbed (tcpprofile.testbed) is not installed")
    r = subprocess.run(TCPPROFILE + ["run", str(spec_path), "--db", str(db)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    with Store.open(db, read_only=True) as s:
        (link,) = s.query("SELECT * FROM links")
        runs = s.query("SELECT * FROM runs ORDER BY seq")
    assert len(runs) == 2 and all(run["status"] == "ok" for run in runs), [run["failure_reason"] for run in runs]
    print(f"\n{spec_path.stem}: link rtt {link['rtt_measured_ms']:.3f} ms, rate {link['rate_measured_bps'] / 1e9:.3f} "
          f"Gbit/s, flags {link['flags']}")
    for run in runs:
        print(f"  run {run['repetition']}: {run['throughput_bps'] / 1e9:.3f} Gbit/s flags={run['flags']} "
              f"rtt_base={run['rtt_base_ms']} ms late fwd/rev mean {run['engine_fwd_late_mean_us']}/"
              f"{run['engine_rev_late_mean_us']} µs max {run['engine_fwd_late_max_us']}/"
              f"{run['engine_rev_late_max_us']} µs foreign {run['host_cpu_foreign']:.3f} cores "
              f"pressure {run['host_cpu_pressure']} busy {run['host_cpu_busy']:.2f} "
              f"loss {run['loss_dropped_packets']}/{run['loss_seen_packets']}")
    return link, runs


@MEASURED_AGAIN
def test_quiet_host_runs_are_unflagged_and_measured(tmp_path):
    link, runs = run_campaign(spec(tmp_path, "fidelity-quiet"), tmp_path / "q.duckdb")
    assert link["calibration_ok"] is True and link["flags"] is None
    frame_ms = (9000 + 38) * 8 / 1e9 * 1e3
    tol_ms = max(thresholds.THRESHOLDS.rtt_rel * TAU_MS, thresholds.THRESHOLDS.rtt_abs_s * 1e3)   # the store's ms
    for run in runs:
        # what tells a quiet host from a busy one: no host_* flag (and the link's calibration held). The
        # engines' own flags are not asserted: this VM stalls now and then on a quiet host (issue 33: releases
        # 5-50 ms late; seen here 10-18 ms at 1 Gbit/s, with the same result on the code before this test's
        # change), and those are graded by the stall work, not by contention
        assert [f for f in thresholds.rerun_flags(run["flags"]) if f.startswith(("host_", "link_"))] == [], run["flags"]
        assert run["rtt_base_source"] == "tcp_info min_rtt"
        # a 9000-byte frame's 72 µs on the 1 Gbit/s wire is part of the RTT (10.102 ms was measured), and an
        # engine that falls behind lengthens every RTT by its lateness (both directions' mean)
        late_ms = (run["engine_fwd_late_mean_us"] + run["engine_rev_late_mean_us"]) / 1e3
        assert TAU_MS - tol_ms <= run["rtt_base_ms"] <= TAU_MS + frame_ms + tol_ms + late_ms, run["rtt_base_ms"]
        for col in ENGINE_COLUMNS + HOST_COLUMNS:
            assert run[col] is not None, col
        assert run["engine_fwd_cpu_share"] > 0 and run["engine_rev_cpu_share"] > 0
        assert run["loss_seen_packets"] is None       # no loss stage on this link


def test_busy_host_flags_every_run_host_contended(tmp_path):
    loops = []
    try:
        for _ in range(os.cpu_count() or 1):
            loops.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        _, runs = run_campaign(spec(tmp_path, "fidelity-busy"), tmp_path / "b.duckdb")
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()
    for run in runs:
        assert "host_contended" in (run["flags"] or "").split(","), run["flags"]
        # the loops are foreign to the campaign's process tree: about a core each, whatever iperf3 leaves them
        assert run["host_cpu_foreign"] > thresholds.THRESHOLDS.foreign_cores


@MEASURED_AGAIN
def test_lossy_link_counts_its_drops_and_calibrates_without_them(tmp_path):
    link, runs = run_campaign(spec(tmp_path, "fidelity-loss", f'{{ mode = "periodic", every = {EVERY} }}'),
                              tmp_path / "l.duckdb")
    assert link["loss_calibrated_off"] is True
    assert "rate_low" not in (link["flags"] or "").split(",")
    assert link["loss_mode"] == "periodic" and link["loss_rate"] == pytest.approx(1 / EVERY)
    for run in runs:
        seen, dropped = run["loss_seen_packets"], run["loss_dropped_packets"]
        assert seen is not None and dropped is not None
        assert seen > 10 * EVERY          # 3 s at Mathis' ~0.2 Gbit/s (1 in 500, 10 ms, MSS 8948 B): ~8 k packets
        assert abs(dropped - seen / EVERY) <= 1, (seen, dropped)
        assert "loss_off" not in (run["flags"] or "").split(",")
        assert "link_rate_low" not in (run["flags"] or "").split(",")
