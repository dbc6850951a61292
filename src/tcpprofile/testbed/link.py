"""EmulatedLink: a dedicated connection emulated in three network namespaces.

    sender  tcpp-<tag>-snd   10.77.1.1/24  dev tcpp<tag>sr ─┐
    router  tcpp-<tag>-rtr   10.77.1.2/24  dev tcpp<tag>rs ─┘  (forwarding)
                             10.77.2.1/24  dev tcpp<tag>rc ─┐  tbf: rate C, drop-tail buffer beta
    receiver tcpp-<tag>-rcv  10.77.2.2/24  dev tcpp<tag>cr ─┘

Addresses exist only inside the namespaces (every link uses the same ones; traffic never leaves).
Forward path: sender -> router (loss rule in FORWARD, tbf on egress) -> receiver, whose raw
PREROUTING hands packets to NFQUEUE 0 held by delayd for tau/2. Reverse path (ACKs): receiver ->
router -> sender, whose raw PREROUTING hands them to its own delayd for tau/2. Holding packets in the
receiving namespace keeps them off the sending socket's account (TCP small queues, see delayd.c).
Per-namespace sysctls: tcp_rmem/tcp_wmem max 2 GiB (autotuning; see set_tcp_buffer_max),
tcp_no_metrics_save=1. The default congestion control is inherited from the host and cannot be changed
inside a namespace to a restricted algorithm: runs must choose theirs (iperf3 -C). The global
net.core.rmem_max/wmem_max and tcp_mem are raised while links are up and restored (see state.py).

Offloads on (no loss): GSO super-packets of up to config.gso_max_bytes (BIG TCP, up to 400 kB) cross
the link whole; tbf charges each as its segments' frames, but a tail drop discards a whole super-packet
(one loss event, many retransmitted segments). Offloads off (loss): every packet is a wire packet.
One run directory per machine (/run/tcpprofile): links of every checkout see each other there.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ..errors import EnvironmentNotReady, TcpProfileError, ValidationError
from ..paths import PREFIX
from . import netns, state
from .calibrate import Calibration, calibrate, wait_until
from .config import LinkConfig
from .engine import DelayEngine, EngineStats, delayd_path

ROLES = ("sender", "router", "receiver")
_ROLE_SUFFIX = {"sender": "snd", "router": "rtr", "receiver": "rcv"}
TAG_RE = re.compile(r"[a-z0-9]{1,8}")
NS_RE = re.compile(rf"{PREFIX}-([a-z0-9]{{1,8}})-(snd|rtr|rcv)")
SENDER_ADDR, ROUTER_SND_ADDR = "10.77.1.1", "10.77.1.2"
ROUTER_RCV_ADDR, RECEIVER_ADDR = "10.77.2.1", "10.77.2.2"
QUEUE = 0                      # NFQUEUE numbers are per namespace; each engine has its own namespace
STOP_TIMEOUT_S = 5.0
ENGINE_RT_PRIORITY = 10        # SCHED_FIFO for delayd: the emulated wire should not wait for the CPU
TCP_BUFFER_MAX = 2147483647    # tcp_rmem/tcp_wmem max: autotuning as large as the kernel allows
REQUIRED_TOOLS = ("ip", "tc", "iptables", "iptables-save", "ethtool", "ping", "iperf3", "sysctl", "ss", "chrt")

_active: dict[str, "EmulatedLink"] = {}
_previous_handlers: dict[int, object] = {}
_registry_lock = threading.RLock()


class EmulatedLink:
    """Context manager: `with EmulatedLink(cfg) as link:` brings the link up and calibrates it;
    leaving the block (normally, by exception, SIGINT or SIGTERM) removes everything it created."""

    def __init__(self, config: LinkConfig, tag: str | None = None):
        if not isinstance(config, LinkConfig):
            raise ValidationError("config", f"must be a LinkConfig, got {type(config).__name__}")
        tag = secrets.token_hex(3) if tag is None else tag
        if not isinstance(tag, str) or not TAG_RE.fullmatch(tag):
            raise ValidationError("tag", f"must be 1-8 characters a-z, 0-9, got {tag!r}")
        self.config = config
        self.tag = tag
        self.ns_sender, self.ns_router, self.ns_receiver = (f"{PREFIX}-{tag}-{_ROLE_SUFFIX[r]}" for r in ROLES)
        self.sender_addr, self.receiver_addr = SENDER_ADDR, RECEIVER_ADDR
        self.sender_dev, self.router_in_dev = f"{PREFIX}{tag}sr", f"{PREFIX}{tag}rs"
        self.router_out_dev, self.receiver_dev = f"{PREFIX}{tag}rc", f"{PREFIX}{tag}cr"
        self.calibration: Calibration | None = None
        self.final_engine_stats: dict[str, EngineStats] = {}
        self._engines: dict[str, DelayEngine] = {}
        self._procs: dict[int, subprocess.Popen] = {}
        self._record: dict = {}
        self._up = False
        self._lock = threading.RLock()

    # Life cycle -------------------------------------------------------------------------------------
    def __enter__(self) -> "EmulatedLink":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> "EmulatedLink":
        """Create namespaces, links, shaping, loss, delay engines; calibrate."""
        _check_environment(self.config)
        self._record = {"owner": state.me(), "namespaces": [self.ns_sender, self.ns_router, self.ns_receiver],
                        "pids": [], "config": self.config.to_dict()}
        state.claim_owner(self.tag, self._record)        # reserves the tag (exclusive create)
        existing = set(netns.netns_list()) & {self.ns_sender, self.ns_router, self.ns_receiver}
        if existing:
            state.remove_owner(self.tag)
            raise TcpProfileError(f"namespaces {sorted(existing)} already exist: tag {self.tag!r} is in use")
        _register(self)
        self._up = True
        try:
            self._build()
            self.calibration = calibrate(self)
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Remove everything this link created; safe to call more than once."""
        with self._lock:
            if not self._up:
                return
            self._up = False
            for proc in list(self._procs.values()):
                self.stop_process(proc)
            for name, engine in self._engines.items():
                stats = engine.stop()
                if stats is not None:
                    self.final_engine_stats[name] = stats
            self._engines.clear()
            for ns in (self.ns_sender, self.ns_router, self.ns_receiver):
                netns.sh(["ip", "netns", "del", ns], check=False)
            state.release_host_sysctls(self.tag)
            for name in ("forward", "reverse"):
                (state.run_dir() / "links" / f"{self.tag}-{name}.log").unlink(missing_ok=True)
            state.remove_owner(self.tag)
            _unregister(self)

    # Construction -----------------------------------------------------------------------------------
    def _build(self) -> None:
        cfg = self.config
        snd, rtr, rcv = self.ns_sender, self.ns_router, self.ns_receiver
        for ns in (snd, rtr, rcv):
            netns.sh(["ip", "netns", "add", ns])
            netns.sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        # veth pairs created directly inside the namespaces: no interface ever exists outside.
        netns.sh(["ip", "link", "add", self.sender_dev, "netns", snd, "mtu", str(cfg.mtu), "type", "veth",
                  "peer", "name", self.router_in_dev, "netns", rtr, "mtu", str(cfg.mtu)])
        netns.sh(["ip", "link", "add", self.router_out_dev, "netns", rtr, "mtu", str(cfg.mtu), "type", "veth",
                  "peer", "name", self.receiver_dev, "netns", rcv, "mtu", str(cfg.mtu)])
        for ns, dev, addr in ((snd, self.sender_dev, SENDER_ADDR), (rtr, self.router_in_dev, ROUTER_SND_ADDR),
                              (rtr, self.router_out_dev, ROUTER_RCV_ADDR), (rcv, self.receiver_dev, RECEIVER_ADDR)):
            netns.sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            netns.sh(["ip", "-n", ns, "link", "set", dev, "up"])
        netns.sh(["ip", "-n", snd, "route", "add", "default", "via", ROUTER_SND_ADDR])
        netns.sh(["ip", "-n", rcv, "route", "add", "default", "via", ROUTER_RCV_ADDR])

        netns.sysctl(snd, {"net.ipv4.tcp_no_metrics_save": "1"})
        netns.sysctl(rcv, {"net.ipv4.tcp_no_metrics_save": "1"})
        self.set_tcp_buffer_max(TCP_BUFFER_MAX)
        netns.sysctl(rtr, {"net.ipv4.ip_forward": "1"})
        state.acquire_host_sysctls(self.tag)

        if not cfg.segmentation_offload:
            # Wire-sized packets from the sender, and no GRO re-merging them at the router, so that
            # loss and rate act per wire packet (veth GRO is off by default; we make sure).
            netns.sh(netns.in_ns(snd, ["ethtool", "-K", self.sender_dev, "tso", "off", "gso", "off"]))
            netns.sh(netns.in_ns(rtr, ["ethtool", "-K", self.router_in_dev, "gro", "off"]))

        else:
            # BIG TCP: larger GSO packets, fewer packets through the engines and stacks (config.py).
            size = str(cfg.gso_max_bytes)
            netns.sh(netns.in_ns(snd, [sys.executable, "-m", "tcpprofile.testbed.rtnl", size, self.sender_dev]))
            netns.sh(netns.in_ns(rtr, [sys.executable, "-m", "tcpprofile.testbed.rtnl", size, self.router_in_dev,
                                       self.router_out_dev]))
            netns.sh(netns.in_ns(rcv, [sys.executable, "-m", "tcpprofile.testbed.rtnl", size, self.receiver_dev]))

        netns.sh(["tc", "-n", rtr, "qdisc", "add", "dev", self.router_out_dev, "root", "tbf",
                  "rate", f"{int(round(cfg.tbf_rate_bps))}bit", "burst", str(cfg.tbf_burst_bytes),
                  "limit", str(cfg.buffer_bytes)])

        comment = ["-m", "comment", "--comment", f"{PREFIX}-{self.tag}"]
        if cfg.loss_mode == "periodic":
            netns.iptables(rtr, ["-A", "FORWARD", "-i", self.router_in_dev, *comment, "-m", "statistic",
                                 "--mode", "nth", "--every", str(cfg.loss_every), "--packet", "0", "-j", "DROP"])
        elif cfg.loss_mode == "uniform":
            netns.iptables(rtr, ["-A", "FORWARD", "-i", self.router_in_dev, *comment, "-m", "statistic",
                                 "--mode", "random", "--probability", repr(cfg.loss_rate), "-j", "DROP"])
        # No --queue-bypass: if an engine is missing, packets are dropped rather than passed undelayed.
        for ns, dev in ((rcv, self.receiver_dev), (snd, self.sender_dev)):
            netns.iptables(ns, ["-t", "raw", "-A", "PREROUTING", "-i", dev, *comment, "-j", "NFQUEUE",
                                "--queue-num", str(QUEUE)])
        rcvbuf = min(1 << 30, max(64 << 20, cfg.queue_maxlen * 1024))
        log_dir = state.run_dir() / "links"
        for name, ns in (("forward", rcv), ("reverse", snd)):
            self._engines[name] = DelayEngine(ns, queue=QUEUE, delay_ns=int(cfg.rtt_s / 2 * 1e9),
                                              maxlen=cfg.queue_maxlen, rcvbuf=rcvbuf, rt_priority=ENGINE_RT_PRIORITY,
                                              log_path=log_dir / f"{self.tag}-{name}.log")
            self._record["pids"].append([self._engines[name].pid, netns.process_start_time(self._engines[name].pid)])
        state.write_owner(self.tag, self._record)

    # Processes --------------------------------------------------------------------------------------
    def _ns(self, role: str) -> str:
        if role not in ROLES:
            raise ValidationError("ns_role", f"must be one of {ROLES}, got {role!r}")
        return {"sender": self.ns_sender, "router": self.ns_router, "receiver": self.ns_receiver}[role]

    def popen(self, ns_role: str, argv: list[str], **kw) -> subprocess.Popen:
        """Start argv inside the role's namespace; the process is tracked and killed at teardown.
        Runs in its own session (a terminal's Ctrl-C reaches us, and we stop it) unless overridden."""
        if not self._up:
            raise TcpProfileError(f"link {self.tag} is not up")
        kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(netns.in_ns(self._ns(ns_role), list(argv)), **kw)
        with self._lock:
            self._procs[proc.pid] = proc
            self._record["pids"].append([proc.pid, netns.process_start_time(proc.pid)])
            self._record["pids"] = [p for p in self._record["pids"] if netns.process_alive(*p)]
            state.write_owner(self.tag, self._record)
        return proc

    def run(self, ns_role: str, argv: list[str], *, check: bool = True, timeout: float | None = None,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run argv inside the role's namespace to completion (text output captured)."""
        proc = self.popen(ns_role, argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop_process(proc)
            raise TcpProfileError(f"{' '.join(argv)} in {self._ns(ns_role)} timed out after {timeout} s") from None
        finally:
            self._procs.pop(proc.pid, None)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if check and proc.returncode != 0:
            raise TcpProfileError(f"{' '.join(argv)} in {self._ns(ns_role)} exited {proc.returncode}: {err.strip()}")
        return result

    def stop_process(self, proc: subprocess.Popen) -> None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S, a process started by popen."""
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.pop(proc.pid, None)

    def wait_listening(self, ns_role: str, port: int, timeout: float = 10.0) -> None:
        """Wait until a TCP socket listens on port inside the role's namespace."""
        ns = self._ns(ns_role)

        def listening() -> bool:
            out = netns.sh(netns.in_ns(ns, ["ss", "-Hltn", f"sport = :{port}"]), check=False).stdout
            return bool(out.strip())
        wait_until(listening, timeout=timeout, what=f"port {port} listening in {ns}")

    def set_tcp_buffer_max(self, nbytes: int) -> None:
        """Set tcp_rmem/tcp_wmem max (the autotuning ceiling) in the sender and receiver namespaces.
        iperf3 3.12 refuses -w above 512 MiB, so larger socket buffers come from autotuning."""
        if not isinstance(nbytes, int) or not 4096 <= nbytes <= TCP_BUFFER_MAX:
            raise ValidationError("nbytes", f"must be an integer in [4096, {TCP_BUFFER_MAX}], got {nbytes!r}")
        value = f"4096 131072 {nbytes}"
        for ns in (self.ns_sender, self.ns_receiver):
            netns.sysctl(ns, {"net.ipv4.tcp_rmem": value, "net.ipv4.tcp_wmem": value})

    # Engine, shaping and loss -----------------------------------------------------------------------
    def set_delay_ns(self, per_direction_ns: int) -> None:
        """Set both directions' delay (packets already held keep theirs)."""
        for engine in self._engines.values():
            engine.set_delay(per_direction_ns)

    def engine_stats(self) -> dict[str, EngineStats]:
        """Counters of the forward (receiver namespace) and reverse (sender namespace) engines."""
        if not self._engines:
            return dict(self.final_engine_stats)
        return {name: engine.stats() for name, engine in self._engines.items()}

    def engine_pids(self) -> dict[str, int]:
        return {name: engine.pid for name, engine in self._engines.items()}

    def tbf_stats(self) -> dict:
        """The router's tbf qdisc as reported by `tc -s -j qdisc show` (bytes, drops, backlog)."""
        for q in netns.qdiscs(self.ns_router, self.router_out_dev):
            if q.get("kind") == "tbf":
                return q
        raise TcpProfileError(f"link {self.tag}: no tbf on {self.router_out_dev}")

    def loss_rule_drops(self) -> int:
        """Packets dropped by the external-loss rule so far (0 without loss)."""
        return sum(r["packets"] for r in netns.iptables_rules(self.ns_router, "filter")
                   if r["chain"] == "FORWARD" and f"{PREFIX}-{self.tag}" in r["rule"] and "DROP" in r["rule"])

    def wait_drained(self, timeout: float = 30.0) -> None:
        """Wait until the tbf buffer and both delay queues are empty."""
        wait_until(lambda: self.tbf_stats().get("backlog", 0) == 0
                   and all(s.held == 0 for s in self.engine_stats().values()),
                   timeout=timeout + 2 * self.config.rtt_s, what=f"link {self.tag} to drain")

    def calibrate(self) -> Calibration:
        """Re-measure rate and idle RTT (compensating the delay); also stored as .calibration."""
        self.calibration = calibrate(self)
        return self.calibration


def _check_environment(config: LinkConfig) -> None:
    if os.geteuid() != 0:
        raise EnvironmentNotReady("the testbed needs root (network namespaces, iptables, tc)")
    from shutil import which
    missing = [tool for tool in REQUIRED_TOOLS if which(tool) is None]
    if missing:
        raise EnvironmentNotReady(f"missing tools: {', '.join(missing)} (run scripts/bootstrap)")
    delayd_path()
    available = _mem_available()
    if available is not None and config.memory_bytes > available // 2:
        raise EnvironmentNotReady(f"the link may hold {config.memory_bytes / 2**30:.1f} GiB of packets but only "
                                  f"{available / 2**30:.1f} GiB of memory is available")


def _mem_available() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


# Signal handling: while any link is up, SIGINT/SIGTERM first tear down every link of this process,
# then behave as before (KeyboardInterrupt for SIGINT, termination for SIGTERM).
def _register(link: EmulatedLink) -> None:
    with _registry_lock:
        if not _active and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                _previous_handlers[sig] = signal.signal(sig, _on_signal)
        _active[link.tag] = link


def _unregister(link: EmulatedLink) -> None:
    with _registry_lock:
        _active.pop(link.tag, None)
        if not _active and _previous_handlers and threading.current_thread() is threading.main_thread():
            for sig, handler in _previous_handlers.items():
                signal.signal(sig, handler)
            _previous_handlers.clear()


def _teardown_all() -> None:
    for link in list(_active.values()):
        link.down()


def _on_signal(signum, frame) -> None:
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    _teardown_all()
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


atexit.register(_teardown_all)
