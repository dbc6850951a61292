"""Who owns a BPF registration, and what is left after a crash: read back from the kernel.

"Loaded" means offered to sockets (net.ipv4.tcp_available_congestion_control); a struct_ops map that is
still listed after unregistering (a flow still uses it) does not count.  Registrations are global, so
these tests use one variant (lp) and skip if another process has it registered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_or_skip

from tcpprofile import cc, paths
from tcpprofile.cc import bpf
from tcpprofile.cli import main

pytestmark = pytest.mark.privileged

NAME, KNAME = "lp", "tp_lp"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def offered() -> set[str]:
    return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())


def state_file() -> dict:
    return {**json.loads((paths.run_dir() / "bpf-cc.json").read_text()),
            **json.loads((paths.run_dir() / "bpf-cc-owners.json").read_text())}


@pytest.fixture
def lp_free():
    if KNAME in offered():
        require_or_skip(f"{KNAME} is registered by another process")
    yield
    cc.cleanup_orphans()
    if KNAME in {r.name for r in bpf.registrations().values()}:
        cc.unload([NAME])


def child(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from tcpprofile import cc\n" + code], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": SRC, **env})


def test_a_dead_campaigns_hold_is_an_orphan(lp_free):
    r = child(f"cc.ensure_loaded([{NAME!r}], hold=True)\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert KNAME in offered()
    (holder,) = state_file()["owners"][KNAME]["holders"]
    assert holder["pid"] != os.getpid() and not state_file()["owners"][KNAME]["pinned"]
    reg = bpf.registrations()[KNAME]
    removed = cc.cleanup_orphans()
    assert removed == [f"BPF unregistered {KNAME} (id {reg.id}) (its campaign died)"]
    assert KNAME not in offered() and KNAME not in state_file()["owners"]
    assert cc.cleanup_orphans() == []


def test_killed_between_registering_and_saving_the_id(lp_free):
    """The pending record is written before bpftool registers: a kill right after registering leaves a
    registration the state file has no id for, and cleanup finds it from the record."""
    r = child(f"cc.ensure_loaded([{NAME!r}], hold=True)", **{bpf.KILL_AT_ENV: "registered"})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert KNAME in offered()
    saved = state_file()
    assert KNAME not in {x["name"] for x in saved["registrations"]} and KNAME in saved["pending"]
    (new,) = [m for m in bpf.struct_ops() if m["name"] == KNAME and bpf.map_state(m["id"]) == "INUSE"]
    removed = cc.cleanup_orphans()
    assert removed == [f"BPF unregistered {KNAME} (id {new['id']}; registered by a process killed before recording it)"]
    assert KNAME not in offered() and KNAME not in state_file()["pending"]


def test_a_live_holder_is_not_an_orphan_and_blocks_unload(lp_free):
    proc = subprocess.Popen([sys.executable, "-c", f"from tcpprofile import cc\ncc.ensure_loaded([{NAME!r}], "
                             "hold=True)\nprint('held', flush=True)\ninput()\nprint(cc.release([" + repr(NAME) + "]))"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC})
    try:
        assert proc.stdout.readline().strip() == "held"
        assert cc.cleanup_orphans() == [] and KNAME in offered()
        (u,) = cc.unload([NAME])
        assert not u.ok and not u.unloaded and f"pid {proc.pid}" in u.message and KNAME in offered()
        out, _ = proc.communicate("\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.strip() == f"[{NAME!r}]" and KNAME not in offered()   # the last holder unregisters


def test_pinned_by_cc_load_survives_a_campaigns_release(lp_free):
    assert main(["cc", "load", NAME]) == 0
    assert cc.ensure_loaded([NAME], hold=True) == []
    assert cc.release([NAME]) == [] and KNAME in offered()
    assert main(["cc", "unload", NAME]) == 0 and KNAME not in offered()


def test_a_stale_map_is_not_loaded_and_unload_goes_on(lp_free, netns, capsys):
    """A flow keeps the unregistered map listed (TOBEFREE): `cc load` must register again, and
    `cc unload` must report the unregistration as success and unload the variants after it."""
    assert cc.ensure_loaded([NAME, "scalable"]) in ([NAME, "scalable"], [NAME])
    flow = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", f"""
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
c = socket.socket(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"{KNAME}")
c.connect(srv.getsockname()); a, _ = srv.accept(); c.send(b"x" * 1000)
print(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\\0").decode(), flush=True)
input()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert flow.stdout.readline().strip() == KNAME
        old = bpf.registrations()[KNAME].id
        capsys.readouterr()
        assert main(["cc", "unload", NAME]) == 0
        assert capsys.readouterr().out.strip() == f"{NAME}: unregistered {KNAME} (id {old})"
        assert bpf.map_state(old) == "TOBEFREE" and KNAME not in offered()   # still listed, not offered
        assert not next(i for i in cc.available() if i.name == NAME).loaded
        assert cc.ensure_loaded([NAME]) == [NAME]             # registered again beside the stale map
        assert KNAME in offered() and bpf.registrations()[KNAME].id != old
        results = {u.name: u for u in cc.unload([NAME, "scalable"])}
        assert results[NAME].ok and results[NAME].unloaded and results["scalable"].ok
        assert KNAME not in offered() and "tp_scalable" not in offered()
    finally:
        flow.communicate("\n", timeout=30)


def test_one_variant_that_cannot_be_unloaded_does_not_stop_the_rest(lp_free, capsys):
    """lp held by a running campaign comes first: `cc unload lp scalable` reports it, still unregisters
    scalable, and exits 1."""
    if "tp_scalable" in offered():
        require_or_skip("tp_scalable is registered by another process")
    proc = subprocess.Popen([sys.executable, "-c", f"from tcpprofile import cc\ncc.ensure_loaded([{NAME!r}], "
                             "hold=True)\nprint('held', flush=True)\ninput()\ncc.release([" + repr(NAME) + "])"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC})
    try:
        assert proc.stdout.readline().strip() == "held"
        assert cc.ensure_loaded(["scalable"]) == ["scalable"]
        scalable_id = bpf.registrations()["tp_scalable"].id
        capsys.readouterr()
        assert main(["cc", "unload", NAME, "scalable"]) == 1
        assert capsys.readouterr().out.splitlines() == [
            f"{NAME}: FAILED: {KNAME} is in use by running campaign(s) (pid {proc.pid}): kept",
            f"scalable: unregistered tp_scalable (id {scalable_id})"]
        assert KNAME in offered() and "tp_scalable" not in offered()
        proc.communicate("\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if "tp_scalable" in {r.name for r in bpf.registrations().values()}:
            cc.unload(["scalable"])
    assert KNAME not in offered()      # the campaign's release unregistered it


def test_testbed_down_removes_what_a_dead_campaign_registered(lp_free, capsys):
    r = child(f"cc.ensure_loaded([{NAME!r}], hold=True)\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert r.returncode == -signal.SIGKILL, r.stderr
    reg = bpf.registrations()[KNAME]
    capsys.readouterr()
    assert main(["testbed", "down"]) == 0
    assert f"removed BPF unregistered {KNAME} (id {reg.id}) (its campaign died)" in capsys.readouterr().out.splitlines()
    assert KNAME not in offered() and KNAME not in state_file()["owners"]
