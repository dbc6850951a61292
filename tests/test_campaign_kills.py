"""A campaign killed at 20 random moments, resumed after each: nothing lost, nothing doubled, nothing left.

`tcpprofile run` (12 runs: cubic and H-TCP as our BPF port, 6 repetitions, 1 s at 100 Mbit/s, 2 ms,
cwnd traced) is killed alternately with SIGKILL and SIGINT at random moments (seeded), then run again.
The first kill is placed exactly between registering tp_htcp and saving its id (the test-only hook
TCPPROFILE_TEST_KILL_AT=registered).  At the end: every configuration x repetition exactly once and
ok, no 'running' rows, no intervals of runs that are not ok, and nothing of ours left: namespaces,
interfaces, iptables rules, qdiscs, BPF struct_ops, tracing instances, processes.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tcpprofile import paths
from tcpprofile.cc import bpf, registry
from tcpprofile.store.db import Store
from tcpprofile.testbed import netns, state
from tcpprofile.testbed.link import NS_RE

pytestmark = pytest.mark.privileged

TCPPROFILE = [sys.executable, "-m", "tcpprofile.cli"]
KILLS = 20
SEED = 12
KILL_WINDOW_S = (0.2, 7.5)     # a campaign start (cleanup, BPF load, link set-up ~5 s) and a few runs
SPEC = """
[campaign]
name = "kills"
seed = 4
repetitions = 6
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


def run_until(cmd, env, kill_at_s: float | None, sig: int, watch: Watch) -> tuple[int, bool, int]:
    """Start the campaign, send sig at kill_at_s (None: let it end); returns (exit status, killed, pid)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + (kill_at_s if kill_at_s is not None else 600)
    killed = False
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            watch.poll(proc.pid)
            time.sleep(0.02)  # polling interval while waiting for the kill moment
        if proc.poll() is None and kill_at_s is not None:
            proc.send_signal(sig)
            killed = True
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watch.poll(proc.pid)
    return proc.returncode, killed, proc.pid


@pytest.fixture
def leftovers_removed():
    """Whatever the test's assertions found, the next test starts clean (after they have run)."""
    from tcpprofile.testbed import cleanup_leftovers
    cleanup_leftovers()
    yield
    cleanup_leftovers()


def test_twenty_kills_then_resume(tmp_path, leftovers_removed):
    if "tp_htcp" in offered():
        pytest.skip("tp_htcp is registered by another process (registrations are global)")
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
    rc, _, _ = run_until(cmd, {**os.environ, bpf.KILL_AT_ENV: "registered"}, None, signal.SIGKILL, watch)
    assert rc == -signal.SIGKILL and "tp_htcp" in offered()
    pending = json.loads((paths.run_dir() / "bpf-cc-owners.json").read_text())["pending"]
    assert "tp_htcp" in pending and "tp_htcp" not in {r.name for r in bpf.registrations().values()}
    log.append(("SIGKILL", "after bpftool register", rc))

    for k in range(1, KILLS):
        sig = signal.SIGINT if k % 2 else signal.SIGKILL
        at = rng.uniform(*KILL_WINDOW_S)
        rc, killed, pid = run_until(cmd, dict(os.environ), at, sig, watch)
        assert killed, f"kill {k + 1}: the campaign ended (exit {rc}) before {at:.2f} s: make it longer"
        if sig == signal.SIGINT:   # an interrupted campaign tears down its own links
            assert rc in (130, -signal.SIGINT), rc
            mine = watch.by_owner.get(pid, set())
            left = {ns for ns in netns.netns_list() if (m := NS_RE.fullmatch(ns)) and m.group(1) in mine}
            assert not left, f"SIGINT at {at:.2f} s left {left}"
        log.append((sig.name, f"{at:.2f} s", rc))

    with Store.open(db, read_only=True) as s:
        done_by_kills = s.query("SELECT count(*) AS n FROM runs WHERE status = 'ok'")[0]["n"]
    rc, _, _ = run_until(cmd, dict(os.environ), None, signal.SIGKILL, watch)
    wall = time.monotonic() - started
    assert rc == 0

    with Store.open(db, read_only=True) as s:
        runs = s.query("SELECT * FROM runs")
        per_key = s.query("SELECT variant, repetition, count(*) AS n FROM runs GROUP BY ALL")
        orphan_intervals = s.query("SELECT count(*) AS n FROM intervals i LEFT JOIN runs r USING (run_id) "
                                   "WHERE r.status IS DISTINCT FROM 'ok'")[0]["n"]
        orphan_cwnd = s.query("SELECT count(*) AS n FROM cwnd c LEFT JOIN runs r USING (run_id) "
                              "WHERE r.status IS DISTINCT FROM 'ok'")[0]["n"]
        traced = {r["run_id"] for r in s.query("SELECT DISTINCT run_id FROM cwnd")}
        stored_tags = {json.loads(r["calibration_json"])["testbed_tag"] for r in s.query("SELECT calibration_json FROM links")}
    assert len(runs) == 12 and sorted((r["variant"], r["repetition"]) for r in per_key) == \
        sorted((v, i) for v in ("cubic", "htcp") for i in range(6))
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
          f"{len(watch.pids)} processes watched; {done_by_kills}/12 runs done before the last resume; "
          f"wall {wall:.0f} s")
