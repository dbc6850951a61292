"""The tcp_probe tracer: instance lifecycle, parsing, mapping to cwnd rows, overhead."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tcpprofile.errors import ValidationError
from tcpprofile.measure.trace import (
    _EVENT_RE,
    CwndTracer,
    Events,
    cwnd_rows,
    port_filter,
    sender_streams,
    ssthresh_changes,
)

LINE = (b"          iperf3-1234    [001] ..s2.  5000.250000: tcp_probe: family=AF_INET src=10.77.1.1:40001 "
        b"dest=10.77.2.1:5201 mark=0x0 data_len=0 snd_nxt=0x1a2b snd_una=0x1a00 snd_cwnd=42 "
        b"ssthresh=31 snd_wnd=65535 srtt=12345 rcv_wnd=64256 sock_cookie=2a skbaddr=00000000 "
        b"skaddr=00000000\n")


def _events(lines: list[bytes]) -> Events:
    ev = Events()
    for m in _EVENT_RE.finditer(b"".join(lines)):
        ev.append_match(m)
    return ev


def test_parse_and_rows():
    other = LINE.replace(b"src=10.77.1.1:40001 dest=10.77.2.1:5201", b"src=10.77.2.1:5201 dest=10.77.1.1:40001")
    later = LINE.replace(b"5000.250000", b"5000.750000").replace(b"snd_cwnd=42", b"snd_cwnd=43")
    ev = _events([LINE, other, later])
    assert len(ev) == 3 and ev.cols["snd_nxt"][0] == 0x1A2B and ev.cols["sock_cookie"][0] == 42
    rows = cwnd_rows(ev, [(40001, 5201)], t0=5000.0)
    assert rows == [
        {"stream": 0, "t_s": 0.25, "snd_cwnd": 42, "ssthresh": 31, "srtt_us": 12345, "snd_wnd": 65535,
         "rcv_wnd": 64256, "length": 0},
        {"stream": 0, "t_s": 0.75, "snd_cwnd": 43, "ssthresh": 31, "srtt_us": 12345, "snd_wnd": 65535,
         "rcv_wnd": 64256, "length": 0},
    ]


def test_sender_streams_from_iperf3_json():
    res = {"start": {"connected": [{"local_port": 40001, "remote_port": 5201},
                                   {"local_port": 40003, "remote_port": 5201}],
                     "test_start": {"reverse": 0}}}
    assert sender_streams(res) == [(40001, 5201), (40003, 5201)]
    res["start"]["test_start"]["reverse"] = 1
    assert sender_streams(res) == [(5201, 40001), (5201, 40003)]


def test_ssthresh_changes_reads_snd_ssthresh():
    # tcp_current_ssthresh: max(ssthresh, 3/4 cwnd) outside recovery; ssthresh itself in recovery
    series = {"t": [0, 1, 2, 3, 4, 5], "snd_cwnd": [40, 48, 30, 24, 24, 40],
              "ssthresh": [0x7FFFFFFF, 0x7FFFFFFF, 24, 24, 24, 30]}
    assert ssthresh_changes(series) == [(2, 48, 24)]


def test_bad_input_names_the_field():
    with pytest.raises(ValidationError, match="ports"):
        CwndTracer(ports=[])
    with pytest.raises(ValidationError, match="tag"):
        CwndTracer(ports=[5201], tag="a/b")
    assert port_filter([1, 2]) == "sport == 1 || dport == 1 || sport == 2 || dport == 2"


def _instances() -> list[str]:
    """Our tracing instances, read through an existing tracefs mount or a temporary one of the test's
    own (instances outlive mounts, so "no mount" must not read as "no instance")."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        p = line.split()
        if p[2] == "tracefs":
            return [d.name for d in (Path(p[1]) / "instances").iterdir() if d.name.startswith("tcpp-")]
    with tempfile.TemporaryDirectory() as root:
        subprocess.run(["mount", "-t", "tracefs", "nodev", root], check=True)
        try:
            return [d.name for d in (Path(root) / "instances").iterdir() if d.name.startswith("tcpp-")]
        finally:
            subprocess.run(["umount", root], check=True)


@pytest.mark.privileged
def test_traces_a_flow_and_always_removes_its_instance(netns):
    """A loopback flow inside a throwaway namespace; only its port is kept; the instance goes away."""
    port = 20000 + secrets.randbelow(40000)
    tag = f"t{secrets.token_hex(3)}"
    server = subprocess.Popen(["ip", "netns", "exec", netns, "iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if subprocess.run(["ip", "netns", "exec", netns, "ss", "-Htln", f"sport = :{port}"],
                              capture_output=True, text=True).stdout.strip():
                break
            subprocess.run(["sleep", "0.01"])
        with CwndTracer(ports=[port], tag=tag) as tracer:
            assert f"tcpp-{tag}" in _instances()
            out = subprocess.run(["ip", "netns", "exec", netns, "iperf3", "-c", "127.0.0.1", "-p", str(port),
                                  "-t", "1", "-J"], capture_output=True, text=True, check=True).stdout
    finally:
        server.kill()
        server.wait()
    assert f"tcpp-{tag}" not in _instances()
    result = json.loads(out)
    (key,) = sender_streams(result)
    c = tracer.events.cols
    assert len(tracer.events) > 100
    assert all(port in (s, d) for s, d in zip(c["sport"], c["dport"]))
    rows = cwnd_rows(tracer.events, [key], t0=min(c["t"]))
    assert rows and all(r["stream"] == 0 and r["snd_cwnd"] >= 1 and r["srtt_us"] > 0 for r in rows)
    assert tracer.stats.overruns == 0 and tracer.stats.lost_events == 0
    assert 0 <= tracer.stats.reader_cpu_s < tracer.stats.wall_s


@pytest.mark.privileged
def test_instance_removed_when_the_body_raises():
    tag = f"t{secrets.token_hex(3)}"
    with pytest.raises(RuntimeError):
        with CwndTracer(ports=[9], tag=tag):
            raise RuntimeError("boom")
    assert f"tcpp-{tag}" not in _instances()
    assert f"tracefs-tcpp-{tag} " not in Path("/proc/self/mounts").read_text()


CRASHING_TRACER = """
import sys
from tcpprofile.measure.trace import CwndTracer
with CwndTracer(ports=[9], tag=sys.argv[1]):
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.mark.privileged
def test_remove_leftovers_removes_a_killed_tracers_instance_and_mount():
    from tcpprofile.campaign.crash_cleanup import remove_leftovers
    tag = f"t{secrets.token_hex(3)}"
    child = subprocess.Popen([sys.executable, "-c", CRASHING_TRACER, tag], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert f"tcpp-{tag}" in _instances()
    finally:
        child.kill()
        child.wait()
    assert f"tcpp-{tag}" in _instances()  # SIGKILL: nothing ran to remove it
    removed = remove_leftovers()
    assert f"tracing instance tcpp-{tag}" in removed
    assert f"tcpp-{tag}" not in _instances()
    assert f"tracefs-tcpp-{tag} " not in Path("/proc/self/mounts").read_text()
    assert not list(Path("/run/tcpprofile/tracers").glob(f"tcpp-{tag}.json"))


@pytest.mark.privileged
@pytest.mark.parametrize("step", ["mount", "instance"])
def test_an_interrupt_just_after_each_step_of_setup_leaves_nothing(monkeypatch, step):
    """Ctrl-C lands just after the private mount or the instance is made, before anything else runs: the
    set-up's own tear-down removes both (the kill test's orphan: an instance with no record, its filter unset)."""
    from tcpprofile.measure import trace
    tag = f"t{secrets.token_hex(3)}"
    monkeypatch.setattr(trace, "_tracefs_mount", lambda: None)       # the private-mount path, as on CI
    real_run, real_mkdir = subprocess.run, Path.mkdir

    def run(args, *a, **kw):
        out = real_run(args, *a, **kw)
        if step == "mount" and args[:1] == ["mount"]:
            raise KeyboardInterrupt
        return out

    def mkdir(self, *a, **kw):
        real_mkdir(self, *a, **kw)
        if step == "instance" and self.name == f"tcpp-{tag}" and self.parent.name == "instances":
            raise KeyboardInterrupt

    monkeypatch.setattr(trace.subprocess, "run", run)
    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(KeyboardInterrupt):
        with CwndTracer(ports=[9], tag=tag):
            pass
    monkeypatch.undo()
    assert f"tcpp-{tag}" not in _instances()
    assert f"tracefs-tcpp-{tag} " not in Path("/proc/self/mounts").read_text()
    assert not Path(f"/run/tcpprofile/tracefs-tcpp-{tag}").exists()
    assert not Path(f"/run/tcpprofile/tracers/tcpp-{tag}.json").exists()
