"""Privileged: remote mode over this project's own emulated link, as an operator tried it: a
link at 45.6 ms up, `iperf3 -s` started by hand in its receiver namespace, `tcpprofile run` of a remote
spec from its sender namespace.

The path's stored RTT is TCP's (tcp_info min_rtt, the smallest of the runs): within max(1 %, 0.1 ms) of
the configured 45.6 ms plus one frame's serialisation (plain ping read 22.98 ms here: its kernel receive
stamps come before the reverse engine's hold); `ping -U` beside it agrees. The link's delay engines
and the hand-started server are the run's own processes, found by the link's state record and by the
server's socket, not foreign load: a quiet run is not flagged host_contended. Run it on a quiet host
(other processes' CPU is what host_contended is about), like tests/test_fidelity_privileged.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from conftest import import_or_require, require_or_skip

from tcpprofile.measure.fidelity import thresholds
from tcpprofile.store import Store
from tcpprofile.testbed.netns import process_cpu_seconds
from tcpprofile.same_rtt import rtt_tolerance_ms

pytestmark = pytest.mark.privileged

TAU_MS = 45.6
RATE_BPS = 1e9
MTU = 9000
PORT = 5410
CLI = [sys.executable, "-m", "tcpprofile.cli"]


@pytest.fixture
def link():
    testbed = import_or_require("tcpprofile.testbed", "the testbed (tcpprofile.testbed) is not installed")
    cfg = testbed.LinkConfig.checked(rate_bps=RATE_BPS, rtt_s=TAU_MS / 1e3, buffer_bytes=int(RATE_BPS * TAU_MS / 1e3 / 8), mtu=MTU)
    with testbed.EmulatedLink(cfg) as up:
        yield up


@pytest.fixture
def server(link):
    """iperf3 -s in the receiver namespace, started by hand (not by the link: no state record names it)."""
    proc = subprocess.Popen(["ip", "netns", "exec", link.ns_receiver, "iperf3", "-s", "-p", str(PORT)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not subprocess.run(["ip", "netns", "exec", link.ns_receiver, "ss", "-Hltn", f"sport = :{PORT}"],
                                 capture_output=True, text=True).stdout.strip():
            assert proc.poll() is None and time.monotonic() < deadline, "the iperf3 server did not listen"
            time.sleep(0.05)  # polling interval of the readiness check
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_remote_path_rtt_is_tcps_and_the_links_own_processes_are_not_foreign(link, server, tmp_path):
    spec = tmp_path / "remote.toml"
    spec.write_text(f"""
[campaign]
name = "remote-rtt"
seed = 3
repetitions = 2
[remote]
host = "{link.receiver_addr}"
port = {PORT}
rate = "1Gbit"
[transfer]
variant = ["cubic"]
streams = [1]
duration = "3s"
""")
    db = tmp_path / "r.duckdb"
    own_cpu = lambda: sum(process_cpu_seconds(p) or 0.0 for p in {*link.engine_pids().values(), server.pid})  # noqa: E731
    cpu0 = own_cpu()
    r = subprocess.run(["ip", "netns", "exec", link.ns_sender, *CLI, "run", str(spec), "--db", str(db)],
                       capture_output=True, text=True, timeout=300)
    own_cores = (own_cpu() - cpu0) / (2 * 3.0)      # over the two runs' 3 s (set-up and ping add little)
    assert r.returncode == 0, r.stderr
    assert f"path RTT to {link.receiver_addr}:" in r.stdout and "from TCP" in r.stdout, r.stdout

    with Store.open(db, read_only=True) as s:
        (row,) = s.query("SELECT rtt_measured_ms, calibration_json FROM links")
        runs = s.query("SELECT status, flags, rtt_base_ms, host_cpu_foreign, fidelity_json FROM runs")
    frame_ms = (MTU + 38) * 8 / RATE_BPS * 1e3       # a data frame's serialisation is part of TCP's RTT
    tol = rtt_tolerance_ms(TAU_MS)
    assert TAU_MS - tol <= row["rtt_measured_ms"] <= TAU_MS + frame_ms + tol, row["rtt_measured_ms"]
    cal = json.loads(row["calibration_json"])
    assert row["rtt_measured_ms"] == min(run["rtt_base_ms"] for run in runs)
    assert cal["cross_check"]["agree"] is True, cal         # ping -U sees the reverse engine's hold

    engines = set(link.engine_pids().values())
    # were they counted as foreign, the link's engines and the server alone would flag the runs
    assert own_cores > thresholds.THRESHOLDS.foreign_cores, own_cores
    busy = []
    for run in runs:
        assert run["status"] == "ok"
        host = json.loads(run["fidelity_json"])["host"]
        own = host["own_pids"]
        assert engines <= set(own["path"]), own               # the link's engines: the run's path
        assert own["server"] == [server.pid], own             # the hand-started server: the far end
        assert not {pid for pid, _, _ in host["foreign_top"]} & (engines | {server.pid}), host["foreign_top"]
        contended = "host_contended" in (run["flags"] or "").split(",")
        assert contended == (run["host_cpu_foreign"] > thresholds.THRESHOLDS.foreign_cores), run
        print(f"\nown {own_cores:.3f} cores; foreign {run['host_cpu_foreign']:.3f} {host['foreign_top']}")
        if contended:
            busy.append(host["foreign_top"])
    if busy:    # other processes on a shared host: the quiet case could not be seen
        require_or_skip(f"the host was not quiet: foreign processes [pid, comm, cores] {busy}")
