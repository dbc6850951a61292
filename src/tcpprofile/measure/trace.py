"""Kernel cwnd traces from the tcp:tcp_probe tracepoint, in tcpprofile's own tracefs instance.

    with CwndTracer(ports=[5201], tag="r42") as tracer:
        t0 = time.monotonic(); ...run iperf3...
    rows = cwnd_rows(tracer.events, sender_streams(iperf3_json), t0=t0)

The instance tcpp-<tag> uses the `mono` trace clock, so event times are CLOCK_MONOTONIC seconds, the
same clock as time.monotonic().  The tracepoint fires for every established socket receiving a
segment, in every namespace: the filter keeps the given ports (as source or destination), and rows
are keyed by the socket's (local port, remote port).  On the data sender the events are fired by
incoming ACKs.  Use a server port no other test uses at the same time.  Its ssthresh field is
tcp_current_ssthresh() (at least 3/4 cwnd outside recovery), not snd_ssthresh; srtt is in µs.
The instance (and a tracefs mount, if this tracer had to make one) is always removed on exit.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import select
import subprocess
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..testbed import state
from ..errors import EnvironmentNotReady, TcpProfileError, ValidationError
from ..paths import PREFIX

_EVENT_RE = re.compile(
    rb" (\d+\.\d+): tcp_probe: family=\S+ src=\S*:(\d+) dest=\S*:(\d+) mark=\S+ data_len=(\d+)"
    rb" snd_nxt=0x([0-9a-f]+) snd_una=0x([0-9a-f]+) snd_cwnd=(\d+) ssthresh=(\d+) snd_wnd=(\d+)"
    rb" srtt=(\d+) rcv_wnd=(\d+) sock_cookie=([0-9a-f]+)")
_LOST_RE = re.compile(rb"\[LOST (\d+) EVENTS\]")
_TAG_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")

# columns of CwndTracer.events (array typecodes): one array per field, index i = event i
COLUMNS = {"t": "d", "sport": "H", "dport": "H", "data_len": "I", "snd_nxt": "I", "snd_una": "I",
           "snd_cwnd": "I", "ssthresh": "I", "snd_wnd": "I", "srtt_us": "I", "rcv_wnd": "I",
           "sock_cookie": "Q"}


@dataclass
class TraceStats:
    events: int = 0
    lost_events: int = 0          # "[LOST n EVENTS]" markers seen by the reader
    overruns: int = 0             # per-CPU ring-buffer overruns reported by the kernel
    reader_cpu_s: float = 0.0     # CPU time of the reader thread (reading + parsing)
    wall_s: float = 0.0


@dataclass
class Events:
    """Parsed tcp_probe events as columns (see COLUMNS)."""
    cols: dict[str, array] = field(default_factory=lambda: {k: array(t) for k, t in COLUMNS.items()})

    def __len__(self) -> int:
        return len(self.cols["t"])

    def append_match(self, m: re.Match) -> None:
        c = self.cols
        c["t"].append(float(m[1]))
        c["sport"].append(int(m[2]))
        c["dport"].append(int(m[3]))
        c["data_len"].append(int(m[4]))
        c["snd_nxt"].append(int(m[5], 16))
        c["snd_una"].append(int(m[6], 16))
        c["snd_cwnd"].append(int(m[7]))
        c["ssthresh"].append(int(m[8]))
        c["snd_wnd"].append(int(m[9]))
        c["srtt_us"].append(int(m[10]))
        c["rcv_wnd"].append(int(m[11]))
        c["sock_cookie"].append(int(m[12], 16))


def _tracefs_mount() -> Path | None:
    """The host's tracefs mount; never a tracer's private one (its owner unmounts it when it likes)."""
    private = str(state.run_dir()) + "/"
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "tracefs" and not parts[1].startswith(private):
            return Path(parts[1])
    return None


def _record_path(name: str) -> Path:
    return state.run_dir() / "tracers" / f"{name}.json"


def _write_record(name: str, record: dict) -> None:
    """Create the tracer's record; refuse if one exists (the tag is in use)."""
    path = _record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise TcpProfileError(f"tracer tag {name!r} is in use ({path} exists)") from None
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(record))


def _unmount(path: Path) -> None:
    """Unmount a private tracefs mount (if mounted: it may be only made); lazily if a reader still holds it
    (EBUSY); then remove the dir."""
    if os.path.ismount(path) and subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
    try:
        path.rmdir()
    except OSError:
        pass


def cleanup_stale_tracers() -> list[str]:
    """Remove what tracers of dead processes left: their tracing instance and private tracefs mount."""
    stale = []
    for path in sorted((state.run_dir() / "tracers").glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            record = {}
        if not state.owner_alive(record):
            stale.append((path, record))
    if not stale:
        return []
    removed: list[str] = []
    kept: set[Path] = set()
    root = _tracefs_mount()
    temporary = None
    if root is None:  # instances outlive mounts: look at them through a mount of our own
        temporary = state.run_dir() / f"tracefs-{PREFIX}-cleanup-{os.getpid()}"
        temporary.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(temporary)], check=True, capture_output=True)
        root = temporary
    try:
        for path, _ in stale:
            inst = root / "instances" / path.stem
            if inst.is_dir():
                try:
                    (inst / "events/tcp/tcp_probe/enable").write_text("0")
                    inst.rmdir()
                    removed.append(f"tracing instance {path.stem}")
                except OSError as err:
                    # the record stays: it is what lets a later clean-up find the instance again
                    kept.add(path)
                    removed.append(f"tracing instance {path.stem} (not removed: {err.strerror})")
    finally:
        if temporary is not None:
            _unmount(temporary)
    for path, record in stale:
        if path in kept:
            continue
        mount = record.get("mount")
        if mount and Path(mount).is_dir():
            if os.path.ismount(mount):
                removed.append(f"tracefs mount {mount}")
            _unmount(Path(mount))
        path.unlink(missing_ok=True)
    return removed


def port_filter(ports: Sequence[int]) -> str:
    """Tracepoint filter keeping segments of sockets with one of `ports` as local or remote port."""
    return " || ".join(f"sport == {p} || dport == {p}" for p in ports)


class CwndTracer:
    """Context manager: a private tracefs instance with tcp:tcp_probe filtered on ports."""

    def __init__(self, *, ports: Sequence[int], tag: str | None = None, buffer_kb_per_cpu: int = 32768):
        if not ports or any(not isinstance(p, int) or not 0 < p < 65536 for p in ports):
            raise ValidationError("ports", f"one or more TCP ports 1..65535, got {ports!r}")
        tag = tag or secrets.token_hex(3)
        if not _TAG_RE.match(tag):
            raise ValidationError("tag", f"1-40 characters of [A-Za-z0-9_-], got {tag!r}")
        if not 64 <= buffer_kb_per_cpu <= 1 << 20:
            raise ValidationError("buffer_kb_per_cpu", f"64..1048576 KB, got {buffer_kb_per_cpu}")
        self.ports = list(ports)
        self.name = f"{PREFIX}-{tag}"
        self.buffer_kb = buffer_kb_per_cpu
        self.events = Events()
        self.stats = TraceStats()
        self._mounted: Path | None = None
        self._inst: Path | None = None
        self._recorded = False
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- set-up / tear-down --------------------------------------------------------------------------
    def __enter__(self) -> "CwndTracer":
        if os.geteuid() != 0:
            raise EnvironmentNotReady("kernel tracing needs root")
        try:
            root = _tracefs_mount()
            mount = state.run_dir() / f"tracefs-{self.name}" if root is None else None
            # the record first (exclusive: fails if another tracer uses the same tag), then what it
            # names: a process killed in between leaves nothing that cleanup_stale_tracers cannot find
            _write_record(self.name, {"owner": state.me(), "mount": str(mount or "")})
            self._recorded = True
            if mount is not None:
                # named before it is made: an interrupt between making and naming leaves nothing unnamed
                self._mounted = mount
                mount.mkdir(parents=True, exist_ok=True)
                subprocess.run(["mount", "-t", "tracefs", "nodev", str(mount)], check=True, capture_output=True)
                root = mount
            if not (root / "events/tcp/tcp_probe").is_dir():
                raise EnvironmentNotReady("this kernel has no tcp:tcp_probe tracepoint")
            inst = root / "instances" / self.name
            self._inst = inst
            inst.mkdir()
            (inst / "buffer_size_kb").write_text(str(self.buffer_kb))
            (inst / "trace_clock").write_text("mono")
            ev = inst / "events/tcp/tcp_probe"
            (ev / "filter").write_text(port_filter(self.ports))
            self._fd = os.open(inst / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
            (ev / "enable").write_text("1")
            self._t_start = time.monotonic()
            self._thread = threading.Thread(target=self._reader, name=self.name, daemon=True)
            self._thread.start()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._teardown()
        if self._error is not None and exc[0] is None:
            raise TcpProfileError(f"trace reader failed: {self._error}") from self._error

    def _teardown(self) -> None:
        inst = self._inst if self._inst is not None and self._inst.is_dir() else None
        self._inst = None
        if inst is not None:
            try:
                (inst / "events/tcp/tcp_probe/enable").write_text("0")
            except OSError:
                pass
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.stats.wall_s = time.monotonic() - self._t_start
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if inst is not None:
            self.stats.overruns = self._overruns(inst)
            for _ in range(50):  # rmdir is refused (EBUSY) while the kernel still holds a reader
                try:
                    inst.rmdir()
                    break
                except OSError as err:
                    if err.errno != errno.EBUSY:
                        raise
                    time.sleep(0.02)
            else:
                inst.rmdir()
        if self._mounted is not None:
            _unmount(self._mounted)
            self._mounted = None
        if self._recorded:
            _record_path(self.name).unlink(missing_ok=True)
            self._recorded = False
        self.stats.events = len(self.events)

    @staticmethod
    def _overruns(inst: Path) -> int:
        total = 0
        for stats in (inst / "per_cpu").glob("cpu*/stats"):
            for line in stats.read_text().splitlines():
                if line.startswith("overrun:"):
                    total += int(line.split()[1])
        return total

    # -- reader thread -------------------------------------------------------------------------------
    def _reader(self) -> None:
        t_cpu = time.thread_time()
        tail = b""
        try:
            while True:
                stopping = self._stop.is_set()
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                got = False
                if ready:
                    try:
                        chunk = os.read(self._fd, 1 << 20)
                    except BlockingIOError:
                        chunk = b""
                    if chunk:
                        got = True
                        data = tail + chunk
                        cut = data.rfind(b"\n") + 1
                        tail = data[cut:]
                        self._parse(data[:cut])
                if stopping and not got:
                    break
            if tail:
                self._parse(tail)
        except BaseException as err:  # reported by __exit__
            self._error = err
        finally:
            self.stats.reader_cpu_s = time.thread_time() - t_cpu

    def _parse(self, data: bytes) -> None:
        for m in _EVENT_RE.finditer(data):
            self.events.append_match(m)
        for m in _LOST_RE.finditer(data):
            self.stats.lost_events += int(m[1])


def sender_streams(iperf3_result: dict) -> list[tuple[int, int]]:
    """(local port, remote port) of each stream's *sending* socket, in iperf3's stream order.

    iperf3 -J reports the client's sockets in start.connected; with -R the server sends, so its
    socket's (local, remote) is the client's (remote, local).
    """
    start = iperf3_result.get("start", {})
    reverse = bool(start.get("test_start", {}).get("reverse"))
    out = []
    for c in start.get("connected", []):
        local, remote = int(c["local_port"]), int(c["remote_port"])
        out.append((remote, local) if reverse else (local, remote))
    return out


def cwnd_rows(events: Events, streams: Sequence[tuple[int, int]], *, t0: float) -> list[dict]:
    """Rows for the store's cwnd table (stream, t_s, snd_cwnd, ssthresh, srtt_us, snd_wnd, rcv_wnd, length).

    streams[i] is the (local port, remote port) of stream i's sending socket (sender_streams());
    t0 is a time.monotonic() instant, usually the run's start.  Events of other sockets are dropped;
    if two sockets (e.g. in other namespaces) share a port pair, the one with most events is kept.
    """
    index = {tuple(s): i for i, s in enumerate(streams)}
    c = events.cols
    by_cookie: dict[int, list[int]] = {}
    key_of: dict[int, tuple[int, int]] = {}
    for j in range(len(events)):
        key = (c["sport"][j], c["dport"][j])
        if key in index:
            cookie = c["sock_cookie"][j]
            by_cookie.setdefault(cookie, []).append(j)
            key_of[cookie] = key
    best: dict[tuple[int, int], int] = {}
    for cookie, idx in by_cookie.items():
        key = key_of[cookie]
        if key not in best or len(idx) > len(by_cookie[best[key]]):
            best[key] = cookie
    rows = []
    for key, cookie in best.items():
        stream = index[key]
        for j in by_cookie[cookie]:
            rows.append({"stream": stream, "t_s": c["t"][j] - t0, "snd_cwnd": c["snd_cwnd"][j],
                         "ssthresh": c["ssthresh"][j], "srtt_us": c["srtt_us"][j],
                         "snd_wnd": c["snd_wnd"][j], "rcv_wnd": c["rcv_wnd"][j],
                         "length": c["data_len"][j]})
    rows.sort(key=lambda r: (r["stream"], r["t_s"]))
    return rows


def stream_series(events: Events, key: tuple[int, int]) -> dict[str, list]:
    """All events of one socket (local port, remote port) as lists by column, in time order."""
    c = events.cols
    idx = [j for j in range(len(events)) if (c["sport"][j], c["dport"][j]) == tuple(key)]
    idx.sort(key=lambda j: c["t"][j])
    return {name: [col[j] for j in idx] for name, col in c.items()}


def ssthresh_changes(series: dict[str, list]) -> list[tuple[float, int, int]]:
    """(t, cwnd before, new snd_ssthresh) for every change of the socket's snd_ssthresh.

    The probe reports tcp_current_ssthresh(): snd_ssthresh during CWR/Recovery, otherwise
    max(snd_ssthresh, cwnd/2 + cwnd/4).  A value different from cwnd/2 + cwnd/4 is therefore
    snd_ssthresh itself; a new such value is a change (a loss reduction sets it from the cwnd at that
    moment, so new/before is the variant's multiplicative-decrease factor).
    """
    out = []
    current = None
    cw, ss, ts = series["snd_cwnd"], series["ssthresh"], series["t"]
    for j in range(len(ts)):
        if ss[j] == (cw[j] >> 1) + (cw[j] >> 2):
            continue
        if current is not None and ss[j] != current and j > 0:
            out.append((ts[j], cw[j - 1], ss[j]))
        current = ss[j]
    return out
