"""A campaign killed at 20 random moments, resumed after each: nothing lost, nothing doubled, nothing left.

`tcpprofile run` (16 runs: cubic and H-TCP as our BPF port, 8 repetitions, 1 s at 100 Mbit/s, 2 ms,
cwnd traced) is killed alternately with SIGKILL and SIGINT at random moments (seeded), then run again.
The first kill is placed exactly between registering tp_htcp and saving its id (the test-only hook
TCPPROFILE_TEST_KILL_AT=registered).  Of the others, every third falls in the set-up (clean-up, BPF
registration, link set-up and calibration: a moment before the previous start's calibration ended),
the rest at a random moment within RUN_WINDOW_S after the link was calibrated (during a run, between
runs, while one is stored), so that runs finish between kills and resumes must skip them.  At the end:
every configuration x repetition exactly once and ok, runs stored before a kill unchanged, no
'running' rows, no intervals of runs that are not ok, and nothing of ours left: namespaces,
interfaces, iptables rules, qdiscs, BPF struct_ops, tracing instances, processes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import require_or_skip

from tcpprofile import paths
from tcpprofile.cc import bpf, registry
from tcpprofile.store.db import Store
from tcpprofile.testbed import netns, state
from tcpprofile.testbed.link import NS_RE

pytestmark = pytest.mark.privileged

TCPPROFILE = [sys.executable, "-m", "tcpprofile.cli"]
KILLS = 20
SEED = 12
RUN_WINDOW_S = 4.0            # after calibration: a 1 s run with its server, trace and store takes ~2 s
SETUP_GUESS_S = 5.0           # clean-up, BPF load, link set-up and calibration, until one is seen
RUNS = 16
SPEC = """
[campaign]
name = "kills"
seed = 4
repetitions = 8
retries = 1
trace_cwnd = true
[link]
rate = "100Mbit"
rtt = ["2ms"]
buffer = "BDP"
[transfer]
variant = ["cubic", "htcp"]
streams = [1]
duration = "1s"
"""


def offered() -> set[str]:
    return set(registry.AVAILABLE.read_text().split())


def tracefs_instances() -> set[str]:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "tracefs":
            return {p.name for p in (Path(parts[1]) / "instances").iterdir() if p.name.startswith(paths.PREFIX)}
    return set()


class Watch:
    """What the campaign processes created: their links' tags and the processes in those namespaces."""

    def __init__(self):
        self.tags: set[str] = set()
        self.by_owner: dict[int, set[str]] = {}
        self.pids: set[tuple[int, int]] = set()

    def poll(self, owner_pid: int) -> None:
        for tag, record in state.read_owners().items():
            if (record.get("owner") or {}).get("pid") == owner_pid:
                self.tags.add(tag)
                self.by_owner.setdefault(owner_pid, set()).add(tag)
        live = set(netns.netns_list())
        for tag in self.tags:
            for role in ("snd", "rtr", "rcv"):
                ns = f"{paths.PREFIX}-{tag}-{role}"
                if ns in live:
                    for pid in netns.netns_pids(ns):
                        start = netns.process_start_time(pid)
                        if start is not None:
                            self.pids.add((pid, start))


def client_running(watch: Watch) -> bool:
    """An iperf3 client is running in one of the campaign's sender namespaces now (after the link was
    calibrated: a run's, not the calibration's probes)."""
    live = set(netns.netns_list())
    for tag in watch.tags:
        ns = f"{paths.PREFIX}-{tag}-snd"
        if ns in live and any("-c" in netns.process_cmdline(pid) for pid in netns.netns_pids(ns)):
            return True
    return False


def run_until(cmd, env, kill: tuple[str, float] | None, sig: int, watch: Watch) -> dict:
    """Start the campaign and send sig `kill` = (after what, seconds) later: ("start", t) after it
    started, ("calibrated", t) after it printed that its link was calibrated; None: let it end.
    Returns exit status, whether it was killed, pid, when it was calibrated, whether a run's iperf3
    client was running at the kill."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    seen: dict[str, float] = {"start": started}
    tail: list[str] = []

    def read_progress():
        for line in proc.stderr:
            tail[:] = (tail + [line.rstrip()])[-15:]
            if line.startswith("link calibrated"):
                seen.setdefault("calibrated", time.monotonic())
    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    killed = running = False
    try:
        while proc.poll() is None:
            watch.poll(proc.pid)
            if kill is not None and kill[0] in seen and time.monotonic() >= seen[kill[0]] + kill[1]:
                running = "calibrated" in seen and client_running(watch)
                proc.send_signal(sig)
                killed = True
                break
            assert time.monotonic() < started + 600, "the campaign did not end"
            time.sleep(0.02)  # polling interval while waiting for the kill moment
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        watch.poll(proc.pid)
    calibrated = seen["calibrated"] - started if "calibrated" in seen else None
    return {"rc": proc.returncode, "killed": killed, "pid": proc.pid, "calibrated_s": calibrated,
            "in_run": running, "stderr": "\n".join(tail)}


def ok_runs(db: Path) -> dict[str, dict]:
    with Store.open(db, read_only=True) as s:
        return {r["run_id"]: r for r in s.query("SELECT * EXCLUDE (raw_json) FROM runs WHERE status = 'ok'")}


@pytest.fixture
def leftovers_removed():
    """Whatever the test's assertions found, the next test starts clean (after they have run)."""
    from tcpprofile.testbed import cleanup_leftovers
    cleanup_leftovers()
    yield
    cleanup_leftovers()


def test_twenty_kills_then_resume(tmp_path, leftovers_removed):
    if "tp_htcp" in offered():
        require_or_skip("tp_htcp is registered by another process (registrations are global)")
    spec_path = tmp_path / "kills.toml"
    spec_path.write_text(SPEC)
    db = tmp_path / "k.duckdb"
    cmd = TCPPROFILE + ["run", str(spec_path), "--db", str(db)]
    rng = random.Random(SEED)
    watch = Watch()
    instances_before = tracefs_instances()
    started = time.monotonic()
    log = []

    # kill 1: SIGKILL between registering tp_htcp and saving its id (the pending record names it)
    res = run_until(cmd, {**os.environ, bpf.KILL_AT_ENV: "registered"}, None, signal.SIGKILL, watch)
    assert res["rc"] == -signal.SIGKILL and "tp_htcp" in offered()
    pending = json.loads((paths.run_dir() / "bpf-cc-owners.json").read_text())["pending"]
    assert "tp_htcp" in pending and "tp_htcp" not in {r.name for r in bpf.registrations().values()}
    log.append(("SIGKILL", "after bpftool register", res["rc"]))

    setup_s, stored, in_run = SETUP_GUESS_S, {}, 0
    for k in range(1, KILLS):
        sig = signal.SIGINT if k % 2 else signal.SIGKILL
        left = RUNS - len(stored)
        # every third kill in the set-up; also when only a few runs are left to kill in
        kill = ("start", rng.uniform(0.2, setup_s)) if k % 3 == 0 or left <= 3 else \
            ("calibrated", rng.uniform(0, RUN_WINDOW_S))
        res = run_until(cmd, dict(os.environ), kill, sig, watch)
        where = f"{kill[1]:.2f} s after {kill[0]}"
        assert res["killed"], f"kill {k + 1}: the campaign ended (exit {res['rc']}) before {where}: make it longer"
        if res["calibrated_s"] is not None:
            setup_s = res["calibrated_s"]
        in_run += res["in_run"]
        if sig == signal.SIGINT:   # an interrupted campaign tears down its own links
            assert res["rc"] in (130, -signal.SIGINT), f"SIGINT {where}: exit {res['rc']}\n{res['stderr']}"
            mine = watch.by_owner.get(res["pid"], set())
            gone = {ns for ns in netns.netns_list() if (m := NS_RE.fullmatch(ns)) and m.group(1) in mine}
            assert not gone, f"SIGINT {where} left {gone}"
        now = ok_runs(db) if db.exists() else {}
        assert all(now[i] == row for i, row in stored.items()), "a stored run changed after a kill"
        stored = now
        log.append((sig.name, where + (" (in a run)" if res["in_run"] else ""), res["rc"]))

    done_by_kills = len(stored)
    res = run_until(cmd, dict(os.environ), None, signal.SIGKILL, watch)
    wall = time.monotonic() - started
    assert res["rc"] == 0
    assert done_by_kills >= 4 and in_run >= 4, (done_by_kills, in_run)   # the kills did meet runs
    final = ok_runs(db)
    assert all(final[i] == row for i, row in stored.items()), "a run stored before the last kill was redone"

    with Store.open(db, read_only=True) as s:
        runs = s.query("SELECT * FROM runs")
        per_key = s.query("SELECT variant, repetition, count(*) AS n FROM runs GROUP BY ALL")
        orphan_intervals = s.query("SELECT count(*) AS n FROM intervals i LEFT JOIN runs r USING (run_id) "
                                   "WHERE r.status IS DISTINCT FROM 'ok'")[0]["n"]
        orphan_cwnd = s.query("SELECT count(*) AS n FROM cwnd c LEFT JOIN runs r USING (run_id) "
                              "WHERE r.status IS DISTINCT FROM 'ok'")[0]["n"]
        traced = {r["run_id"] for r in s.query("SELECT DISTINCT run_id FROM cwnd")}
        stored_tags = {json.loads(r["calibration_json"])["testbed_tag"] for r in s.query("SELECT calibration_json FROM links")}
    assert len(runs) == RUNS and sorted((r["variant"], r["repetition"]) for r in per_key) == \
        sorted((v, i) for v in ("cubic", "htcp") for i in range(RUNS // 2))
    assert all(r["n"] == 1 for r in per_key)
    assert {r["status"] for r in runs} == {"ok"}, [(r["status"], r["failure_reason"]) for r in runs]
    assert orphan_intervals == 0 and orphan_cwnd == 0
    assert traced == {r["run_id"] for r in runs}
    sha = bpf.sha256_file(registry.bpf_object(registry.VARIANTS["htcp"]))
    for r in runs:
        expected = ("tp_htcp", "bpf", sha) if r["variant"] == "htcp" else ("cubic", "builtin", None)
        assert (r["cc_kernel_name"], r["cc_impl"], r["cc_object_sha256"]) == expected
        assert r["cc_reported"] == r["cc_kernel_name"]

    # nothing of ours left
    tags = watch.tags | stored_tags
    assert stored_tags <= watch.tags, "a link the watch did not see"
    spaces = set(netns.netns_list())
    assert not {ns for ns in spaces if (m := NS_RE.fullmatch(ns)) and m.group(1) in tags}
    assert not [ns for ns in spaces if (m := NS_RE.fullmatch(ns)) and not state.owner_alive(
        state.read_owners().get(m.group(1), {}))], "a link namespace without a live owner"
    devices = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    for tag in tags:
        assert f"{paths.PREFIX}{tag}" not in devices and f"{paths.PREFIX}-{tag}" not in rules
        assert f"{paths.PREFIX}{tag}" not in qdiscs
    assert "tp_htcp" not in offered()
    assert not [m for m in bpf.struct_ops() if m["name"] == "tp_htcp" and bpf.map_state(m["id"]) == "INUSE"]
    owners = json.loads((paths.run_dir() / "bpf-cc-owners.json").read_text())
    assert "tp_htcp" not in owners["owners"] and "tp_htcp" not in owners["pending"]
    for name in tracefs_instances() - instances_before:   # others' live tracers may come and go
        record = paths.run_dir() / "tracers" / f"{name}.json"
        assert record.exists() and state.owner_alive(json.loads(record.read_text())), f"tracing instance {name}"
    alive = [(pid, start) for pid, start in watch.pids if netns.process_alive(pid, start)]
    assert not alive, [netns.process_cmdline(pid) for pid, _ in alive]
    print(f"\n{KILLS} kills ({', '.join(f'{s} {t} -> {rc}' for s, t, rc in log)}); {len(watch.tags)} links, "
          f"{len(watch.pids)} processes watched; {in_run} kills during a run; {done_by_kills}/{RUNS} runs done "
          f"before the last resume; "
          f"wall {wall:.0f} s")
