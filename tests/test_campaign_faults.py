"""Faults during a campaign on a real emulated link: iperf3 killed, the server port taken, the delay
engine killed.  The faulted attempt fails with a reason naming the part, the run is retried (on a new
link when a part of the link failed), every other run is untouched, and the links are gone afterwards.

Each test runs the campaign in this process with the real `campaign.emulated` environment, wrapped so
that an injector can reach the link; low rate (200 Mbit/s, 2 ms), 1 s runs (2 s where the engine is killed
half a second into a run: the failure must be found while the client still runs).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tcpprofile import campaign, spec
from tcpprofile.store.db import Store
from tcpprofile.testbed import netns

pytestmark = pytest.mark.privileged

SPEC = """
[campaign]
name = "faults"
seed = 7
repetitions = 3
retries = 1
[link]
rate = "200Mbit"
rtt = ["2ms"]
buffer = "BDP"
[transfer]
variant = ["cubic"]
streams = [1]
duration = "{duration}"
"""
INJECT_TIMEOUT_S = 120


class Clock(io.StringIO):
    """Progress output with the time each line was written."""

    def __init__(self):
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.lines.extend((time.monotonic(), line) for line in text.splitlines() if line)
        return super().write(text)


def procs(ns: str) -> list[tuple[int, list[str]]]:
    return [(pid, netns.process_cmdline(pid)) for pid in netns.netns_pids(ns)]


def wait_for(predicate, what: str, timeout_s: float = INJECT_TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)  # polling interval of a readiness check
    return value


def campaign_client(link) -> int | None:
    """The campaign's iperf3 client (not the calibration's probe) running in the sender namespace."""
    return next((pid for pid, argv in procs(link.ns_sender) if "--get-server-output" in argv), None)


def run_with(tmp_path, inject, on_setup=None, duration="1s"):
    """Run SPEC with links handed to on_setup(link) as they come up, and inject(links, t) in a thread
    (it appends the kill time to t).  Returns (summary, store rows, links, kill times, output)."""
    links, kills, errors = [], [], []

    @contextlib.contextmanager
    def factory(point):
        with campaign.emulated(point) as env:
            links.append(env.host)
            if on_setup is not None:
                on_setup(env.host, env.port, len(links))
            yield env

    def injector():
        try:
            inject(links, kills)
        except BaseException as e:   # reported by the test, not lost in the thread
            errors.append(e)
    thread = threading.Thread(target=injector, daemon=True)
    thread.start()
    out = Clock()
    with Store.open(tmp_path / "f.duckdb") as store:
        summary = campaign.run_campaign(spec.parse(SPEC.format(duration=duration)), store, out=out,
                                        environments=factory)
        thread.join(timeout=5)
        assert not errors, errors
        runs = store.query("SELECT * FROM runs ORDER BY seq")
        link_rows = store.query("SELECT link_id, json_extract_string(calibration_json, '$.testbed_tag') AS tag "
                                "FROM links")
        intervals = store.query("SELECT run_id, count(*) AS n FROM intervals GROUP BY run_id")
    for link in links:   # every link of the campaign is gone, with its processes
        assert not set(link.namespaces) & set(netns.netns_list())
        assert all(netns.process_start_time(pid) is None for pid in link.engine_pids().values())
    return summary, runs, link_rows, {r["run_id"]: r["n"] for r in intervals}, links, kills, out


def check_one_retried(summary, runs, intervals, reason: str) -> dict:
    """Three runs, all ok, exactly one needed a second attempt whose first failed for `reason`;
    every run has its intervals."""
    assert (summary.total, summary.ok, summary.failed) == (3, 3, 0)
    assert [r["status"] for r in runs] == ["ok"] * 3 and all(intervals.get(r["run_id"]) for r in runs)
    (retried,) = [r for r in runs if r["attempts"] == 2]
    assert all(r["attempts"] == 1 and r["failure_reason"] is None for r in runs if r is not retried)
    assert retried["failure_reason"].startswith(f"attempt 1: {reason}"), retried["failure_reason"]
    print(f"\n{retried['failure_reason']}; retry {retried['throughput_bps'] / 1e6:.1f} Mbit/s, others "
          + ", ".join(f"{r['throughput_bps'] / 1e6:.1f}" for r in runs if r is not retried))
    return retried


def test_iperf3_client_killed(tmp_path):
    def inject(links, kills):
        link = wait_for(lambda: links and links[0], "the link")
        pid = wait_for(lambda: campaign_client(link), "the campaign's iperf3 client")
        os.kill(pid, signal.SIGKILL)
        kills.append(time.monotonic())
    summary, runs, link_rows, intervals, links, kills, out = run_with(tmp_path, inject)
    check_one_retried(summary, runs, intervals, "iperf3 client killed by SIGKILL")
    assert len(link_rows) == 1 and len(links) == 1    # a healthy link is kept


def test_iperf3_server_killed(tmp_path):
    def inject(links, kills):
        link = wait_for(lambda: links and links[0], "the link")
        wait_for(lambda: campaign_client(link), "the campaign's iperf3 client")
        pid = wait_for(lambda: next((p for p, argv in procs(link.ns_receiver) if argv[:2] == ["iperf3", "-s"]), None),
                       "the iperf3 server")
        os.kill(pid, signal.SIGKILL)
        kills.append(time.monotonic())
    summary, runs, link_rows, intervals, links, kills, out = run_with(tmp_path, inject)
    check_one_retried(summary, runs, intervals, "iperf3 server killed by SIGKILL")
    assert len(link_rows) == 1


def test_server_port_taken(tmp_path):
    squatters = []

    def squat(link, port, n):
        if n == 1:   # something else listens on the first link's server port before any run
            proc = link.popen("receiver", [sys.executable, "-c", "import socket, time\n"
                                           f"s = socket.socket(); s.bind(('0.0.0.0', {port})); s.listen()\n"
                                           "print('listening', flush=True); time.sleep(3600)"],
                              stdout=subprocess.PIPE, text=True)
            assert proc.stdout.readline().strip() == "listening"
            squatters.append((proc.pid, netns.process_start_time(proc.pid), port))
    summary, runs, link_rows, intervals, links, kills, out = run_with(tmp_path, lambda links, kills: None, squat)
    (pid, start, port) = squatters[0]
    retried = check_one_retried(summary, runs, intervals, f"server port {port} is taken")
    assert {r["link_id"] for r in runs} == {next(r["link_id"] for r in link_rows if r["tag"] == links[1].tag)}
    assert f'"python",pid={pid},' in retried["failure_reason"]           # who holds it
    assert f"iperf3 server on port {port} exited 1" in retried["failure_reason"]
    # the link was rebuilt: every run ran on the second link; the squatter went with the first
    assert len(link_rows) == 2 and len(links) == 2
    assert not netns.process_alive(pid, start)


def test_delay_engine_killed(tmp_path):
    engine = []

    def inject(links, kills):
        link = wait_for(lambda: links and links[0], "the link")
        wait_for(lambda: campaign_client(link), "the campaign's iperf3 client")
        time.sleep(0.5)   # let the transfer run half a second: the engine dies mid-run
        engine.append(link.engine_pids()["forward"])
        os.kill(engine[0], signal.SIGKILL)
        kills.append(time.monotonic())
    summary, runs, link_rows, intervals, links, kills, out = run_with(tmp_path, inject, duration="2s")
    retried = check_one_retried(summary, runs, intervals, f"delay engine (forward, pid {engine[0]}) is not running")
    assert len(link_rows) == 2 and len(links) == 2
    new_link = next(r["link_id"] for r in link_rows if r["tag"] == links[1].tag)
    assert retried["link_id"] == new_link                    # the retry ran on the new link
    (t_rebuild,) = [t for t, line in out.lines if "tearing it down" in line]
    detected = t_rebuild - kills[0]
    print(f"delay engine killed: failure detected and rebuild started after {detected:.2f} s")
    assert 0 < detected < 2.0   # polled while the client runs, not found by the run's timeout
