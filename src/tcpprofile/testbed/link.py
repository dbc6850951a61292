"""EmulatedLink: a dedicated connection emulated in two network namespaces and two delay engines.

    sender   tcpp-<tag>-snd   10.77.1.1/24  dev tcpp<tag>sr ─┐  one veth pair, nothing in between
    receiver tcpp-<tag>-rcv   10.77.1.2/24  dev tcpp<tag>cr ─┘

Addresses exist only inside the namespaces (every link uses the same ones; traffic never leaves).
Forward path (data): the receiver's raw PREROUTING hands packets to NFQUEUE 0, held by the forward
delayd, which first applies the external loss (its loss stage: periodic 1-in-N or seeded uniform, per
wire packet, switched on after calibration), then models the bottleneck itself (line rate C, drop-tail
buffer beta: see delayd.c) and releases each packet tau/2 after its last bit left the modelled wire. Reverse path (ACKs): the
sender's raw PREROUTING hands them to its own delayd for tau/2. Holding packets in the receiving
namespace keeps them off the sending socket's account (TCP small queues, see delayd.c). There is no
router namespace, second veth hop or qdisc: per packet (offloads off, MTU 9000, 45.6 ms) the three-
namespace design with tbf held 6.9 Gbit/s because the extra hop and forwarding cost the CPU the engines
need (docs/testbed.md has the budget). CPUs (cpu_plan, testbed/cpuplan.py): on fewer than 4 CPUs both
engines share one CPU, the applications (iperf3, ping) and RPS-steered packet processing use the
others; on 4 or more the engines' timing has a core, each direction's verdicts run on the core of
the iperf3 end they feed, and RPS has the rest (LinkConfig.cpu_plan forces either). The reverse (ACK) engine runs
SCHED_FIFO, the forward engine at normal priority (ENGINE_POLICY; issue 21: the engines' core is
saturated at 10 Gbit/s per packet, and no policy of two engines on it keeps releases within 0.5 ms:
see docs/testbed.md, "Why releases stalled").
Per-namespace sysctls: tcp_rmem/tcp_wmem max 2 GiB (autotuning; see set_tcp_buffer_max),
tcp_no_metrics_save=1. The default congestion control is inherited from the host and cannot be changed
inside a namespace to a restricted algorithm: runs must choose theirs (iperf3 -C). The global
net.core.rmem_max/wmem_max and tcp_mem are raised while links are up and restored (see state.py).

Offloads on (no loss): GSO super-packets of up to config.gso_max_bytes (BIG TCP, up to 400 kB) cross
the link whole; the engine charges each as its segments' frames, but a tail drop discards a whole
super-packet (one loss event, many retransmitted segments). Offloads off (loss): every packet is a wire
packet. One run directory per machine (/run/tcpprofile): links of every checkout see each other there.
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
from .. import interrupts
from ..paths import PREFIX
from . import cpuplan, netns, state
from .calibrate import Calibration, calibrate, wait_until
from .config import LinkConfig
from .cpuplan import CpuPlan
from .engine import DelayEngine, EngineStats, delayd_path
from .inject import StallInject, engine_ns

ROLES = ("sender", "receiver")
_ROLE_SUFFIX = {"sender": "snd", "receiver": "rcv"}
TAG_RE = re.compile(r"[a-z0-9]{1,8}")
NS_RE = re.compile(rf"{PREFIX}-([a-z0-9]{{1,8}})-(snd|rtr|rcv)")   # rtr: leftovers of the 3-namespace design
SENDER_ADDR, RECEIVER_ADDR = "10.77.1.1", "10.77.1.2"
QUEUE = 0                      # NFQUEUE numbers are per namespace; each engine has its own namespace
STOP_TIMEOUT_S = 5.0
ENGINE_RT_PRIORITY = 10        # SCHED_FIFO for the reverse (ACK) engine: it must not wait behind the forward one
# Scheduling of each engine (policy, SCHED_FIFO priority). Measured alternative (issue 21): both
# ("SCHED_FIFO", 10), which makes delayd take turns (--turns): the forward engine's release p99 fell
# 14-90x in bench runs, but at full rate the pair exhausts the kernel's real-time budget and freezes
# ~50 ms; in the acceptance campaign at 183 ms its largest releases (median 51 ms) were no better than
# this design's (median 43 ms) and 3 of 10 runs were application-limited below 9.5 Gbit/s (this: none).
ENGINE_POLICY = {"forward": ("SCHED_OTHER", 0), "reverse": ("SCHED_FIFO", ENGINE_RT_PRIORITY)}
# The four-core plan's verdict threads (delayd --verdict-rt-priority): SCHED_FIFO in both directions, so
# that a release does not wait behind the iperf3 end on its core; each blocks when it has nothing to send,
# and the two never share a core on >= 4 CPUs (measured on 2 cores, folded: docs/testbed.md, "CPU plan").
VERDICT_RT_PRIORITY = ENGINE_RT_PRIORITY


def engines_take_turns(policy: dict | None = None) -> bool:
    """Both engines SCHED_FIFO at one priority (default: ENGINE_POLICY): neither preempts the other, so
    each must yield (delayd --turns)."""
    (pf, rf), (pr, rr) = (policy or ENGINE_POLICY)["forward"], (policy or ENGINE_POLICY)["reverse"]
    return pf == pr == "SCHED_FIFO" and rf == rr
TCP_BUFFER_MAX = 2147483647    # tcp_rmem/tcp_wmem max: autotuning as large as the kernel allows
def cpu_plan(choice: str = "auto", cpus=None) -> CpuPlan:
    """The CPU plan (testbed/cpuplan.py) for `choice` over `cpus` (default: the CPUs this process may
    use): "auto" takes the four-core plan on >= 4 CPUs (timing, a verdict core per direction beside its
    iperf3 end, RPS), else the two-core plan. Two-core, measured per packet at 10 Gbit/s, MTU 9000,
    45.6 ms on 2 cores: both engines on one core and the applications on the other held 9.8 Gbit/s;
    engines on different cores 5.1-8.9, unpinned 6.9-7.5. Packets an engine releases are processed by
    the receiving stack inside its verdict call and the stack's reply (ACK or new data) is queued to
    the other engine: in the two-core plan both engines and their verdicts share a CPU, so no packet
    crosses cores inside the link; in the four-core plan the verdicts (and that stack work) move to
    the cores of the applications they feed. The four-core plan's timing is not measured on a >= 4-core
    host yet (benchmarks/bench_cpu_plan.py)."""
    return cpuplan.choose(choice, os.sched_getaffinity(0) if cpus is None else cpus)


REQUIRED_TOOLS = ("ip", "iptables", "iptables-save", "ethtool", "ping", "iperf3", "sysctl", "ss", "chrt")

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
        self.ns_sender, self.ns_receiver = (f"{PREFIX}-{tag}-{_ROLE_SUFFIX[r]}" for r in ROLES)
        self.namespaces = (self.ns_sender, self.ns_receiver)
        self.sender_addr, self.receiver_addr = SENDER_ADDR, RECEIVER_ADDR
        self.sender_dev, self.receiver_dev = f"{PREFIX}{tag}sr", f"{PREFIX}{tag}cr"
        self.loss_active = False
        self.stall_inject: StallInject | None = None   # the holds the engines inject now (set after calibration)
        self.plan = cpu_plan(config.cpu_plan)
        self.engine_cpus, self.app_cpus = self.plan.engine_cpus, self.plan.app_cpus
        self.calibration: Calibration | None = None
        self.final_engine_stats: dict[str, EngineStats] = {}
        self._engines: dict[str, DelayEngine] = {}
        self._procs: dict[int, subprocess.Popen] = {}
        self._record: dict = {}
        self._up = False
        self.stopped_by_signal: int | None = None   # set when SIGINT/SIGTERM took the link down (_on_signal)
        self._lock = threading.RLock()

    # Life cycle -------------------------------------------------------------------------------------
    def __enter__(self) -> "EmulatedLink":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> "EmulatedLink":
        """Create namespaces, the veth pair and the delay engines; calibrate with the loss stage off,
        then switch the loss on (so the calibration measures the wire, not the loss), and the injected
        stalls if the configuration asks for them (config.stall_inject)."""
        _check_environment(self.config)
        self._record = {"owner": state.me(), "namespaces": list(self.namespaces),
                        "pids": [], "config": self.config.to_dict()}
        state.claim_owner(self.tag, self._record)        # reserves the tag (exclusive create)
        existing = set(netns.netns_list()) & set(self.namespaces)
        if existing:
            state.remove_owner(self.tag)
            raise TcpProfileError(f"namespaces {sorted(existing)} already exist: tag {self.tag!r} is in use")
        _register(self)
        self._up = True
        try:
            self._build()
            self.calibration = calibrate(self)
            self._enable_loss()
            if self.config.stall_inject is not None:    # like the loss: the calibration measures the wire
                self.set_stall_inject(self.config.stall_inject)
        except BaseException as err:
            self.down()
            if self.stopped_by_signal is not None and not isinstance(err, KeyboardInterrupt):
                # a signal during set-up kills the step then running (a subprocess in a namespace, a
                # qdisc command), whose own error would hide the interrupt: report the interrupt
                raise KeyboardInterrupt(f"link {self.tag} set-up was interrupted by "
                                        f"{signal.Signals(self.stopped_by_signal).name}") from err
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
            for ns in self.namespaces:
                netns.sh(["ip", "netns", "del", ns], check=False)
            state.release_host_sysctls(self.tag)
            for name in ("forward", "reverse"):
                (state.run_dir() / "links" / f"{self.tag}-{name}.log").unlink(missing_ok=True)
            state.remove_owner(self.tag)
            _unregister(self)

    # Construction -----------------------------------------------------------------------------------
    def _build(self) -> None:
        cfg = self.config
        snd, rcv = self.ns_sender, self.ns_receiver
        for ns in (snd, rcv):
            netns.sh(["ip", "netns", "add", ns])
            netns.sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        # The veth pair is created directly inside the namespaces: no interface ever exists outside.
        netns.sh(["ip", "link", "add", self.sender_dev, "netns", snd, "mtu", str(cfg.mtu), "type", "veth",
                  "peer", "name", self.receiver_dev, "netns", rcv, "mtu", str(cfg.mtu)])
        for ns, dev, addr in ((snd, self.sender_dev, SENDER_ADDR), (rcv, self.receiver_dev, RECEIVER_ADDR)):
            netns.sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            netns.sh(["ip", "-n", ns, "link", "set", dev, "up"])

        netns.sysctl(snd, {"net.ipv4.tcp_no_metrics_save": "1"})
        netns.sysctl(rcv, {"net.ipv4.tcp_no_metrics_save": "1"})
        self.set_tcp_buffer_max(TCP_BUFFER_MAX)
        state.acquire_host_sysctls(self.tag)

        if not cfg.segmentation_offload:
            # Wire-sized packets from the sender, and no GRO re-merging them at the receiver, so that
            # loss and rate act per wire packet (veth GRO is off by default; we make sure).
            netns.sh(netns.in_ns(snd, ["ethtool", "-K", self.sender_dev, "tso", "off", "gso", "off"]))
            netns.sh(netns.in_ns(rcv, ["ethtool", "-K", self.receiver_dev, "gro", "off"]))
        else:
            # BIG TCP: larger GSO packets, fewer packets through the engines and stacks (config.py).
            size = str(cfg.gso_max_bytes)
            for ns, dev in ((snd, self.sender_dev), (rcv, self.receiver_dev)):
                netns.sh(netns.in_ns(ns, [sys.executable, "-m", "tcpprofile.testbed.rtnl", size, dev]))

        # RPS: every packet arriving on either veth is processed (up to the NFQUEUE hand-off) on the
        # plan's RPS CPUs (two-core: the application CPUs; four-core: core D), never on the engines'
        # timing CPU (cpu_plan). Without it packets sent from two CPUs
        # (the application's send and the stack's reaction to a released ACK) enter the link through
        # two per-CPU backlogs and reach the engine out of order: TCP saw reordering (reord_seen ~400
        # per 16 s) and held 6.5-9.8 Gbit/s per packet; steered to the engines' CPU 7.6; to the
        # application CPU 9.3-9.9 with no reordering (45.6 ms, MTU 9000, offloads off).
        mask = format(sum(1 << c for c in self.plan.rps), "x")
        for role, dev in (("receiver", self.receiver_dev), ("sender", self.sender_dev)):
            netns.sh(netns.in_ns(self._ns(role), [sys.executable, "-m", "tcpprofile.testbed.rps", dev, mask]))
        # No --queue-bypass: if an engine is missing, packets are dropped rather than passed undelayed.
        for ns, dev in ((rcv, self.receiver_dev), (snd, self.sender_dev)):
            netns.iptables(ns, ["-t", "raw", "-A", "PREROUTING", "-i", dev, *self._comment("delay"),
                                "-j", "NFQUEUE", "--queue-num", str(QUEUE)])
        rcvbuf = min(1 << 30, max(64 << 20, cfg.queue_maxlen * 1024))
        log_dir = state.run_dir() / "links"
        # The forward wire's state, shared with the reverse engine (delayd.c, "Uncovered excess"): an
        # anonymous memfd, nothing on a file system to clean up; each engine maps it and closes its copy.
        wire = os.memfd_create(f"{PREFIX}-{self.tag}-wire")
        try:
            os.ftruncate(wire, 8)
            for name, ns, bottleneck in (("forward", rcv, True), ("reverse", snd, False)):
                loss = {"loss_every": cfg.loss_every if cfg.loss_mode == "periodic" else 0,
                        "loss_rate": cfg.loss_rate if cfg.loss_mode == "uniform" else 0.0} if bottleneck else {}
                self._engines[name] = DelayEngine(
                    ns, queue=QUEUE, delay_ns=int(cfg.rtt_s / 2 * 1e9), maxlen=cfg.queue_maxlen, rcvbuf=rcvbuf,
                    rt_priority=ENGINE_POLICY[name][1] if ENGINE_POLICY[name][0] == "SCHED_FIFO" else 0,
                    turns=engines_take_turns(), log_path=log_dir / f"{self.tag}-{name}.log",
                    rate_bps=cfg.rate_bps if bottleneck else 0.0, buffer_bytes=cfg.buffer_bytes,
                    mss=cfg.mss_bytes, wire_publish_fd=wire if bottleneck and cfg.rate_bps else None,
                    wire_cover_fd=wire if cfg.rate_bps and not bottleneck else None,
                    verdict_cpu=self.plan.verdict_cpu(name), verdict_rt_priority=VERDICT_RT_PRIORITY, **loss)
                self._record["pids"].append([self._engines[name].pid,
                                             netns.process_start_time(self._engines[name].pid)])
                os.sched_setaffinity(self._engines[name].pid, self.engine_cpus)
        finally:
            os.close(wire)
        state.write_owner(self.tag, self._record)

    def _comment(self, what: str) -> list[str]:
        return ["-m", "comment", "--comment", f"{PREFIX}-{self.tag}-{what}"]

    def _enable_loss(self) -> None:
        """Switch on the external loss stage: the forward engine's, ahead of its bottleneck."""
        if self.config.loss_mode == "none":
            return
        self._engines["forward"].set_loss(True)
        self.loss_active = True

    def set_loss(self, on: bool) -> None:
        """Switch the loss stage off (e.g. for a re-calibration) or on again; no-op without loss."""
        if self.config.loss_mode == "none":
            return
        self._engines["forward"].set_loss(on)
        self.loss_active = on

    def set_stall_inject(self, inject: StallInject | None) -> None:
        """Inject stalls as `inject` says from the next hold on (None: off), in each engine it names and
        none in the other (delayd's "stall P D"): a benchmark interleaves runs with and without holds
        on one link (benchmarks/stall_dose.py). Each run's monitor records what the engines did."""
        for name, engine in self._engines.items():
            engine.set_stall(*engine_ns(inject, name))
        self.stall_inject = inject

    def seed_loss(self, seed: int) -> None:
        """Restart the uniform loss stage's generator from seed (the same seed: the same drop pattern
        for the same packet sequence). Periodic loss has no generator; its phase runs on."""
        self._engines["forward"].seed(seed)

    # Processes --------------------------------------------------------------------------------------
    def _ns(self, role: str) -> str:
        if role not in ROLES:
            raise ValidationError("ns_role", f"must be one of {ROLES}, got {role!r}")
        return {"sender": self.ns_sender, "receiver": self.ns_receiver}[role]

    def popen(self, ns_role: str, argv: list[str], **kw) -> subprocess.Popen:
        """Start argv inside the role's namespace; the process is tracked and killed at teardown.
        Runs in its own session (a terminal's Ctrl-C reaches us, and we stop it) unless overridden."""
        if not self._up:
            if self.stopped_by_signal is not None:
                # The signal's own exception can be lost on its way up (DuckDB turns it into a query
                # error, or finishes the query and drops it): the link remembers why it went down.
                raise KeyboardInterrupt(f"link {self.tag} was taken down by {signal.Signals(self.stopped_by_signal).name}")
            raise TcpProfileError(f"link {self.tag} is not up")
        kw.setdefault("start_new_session", True)
        with interrupts.held():      # started and recorded as one step: the tear-down stops what exists
            proc = subprocess.Popen(netns.in_ns(self._ns(ns_role), list(argv)), **kw)
            with self._lock:
                self._procs[proc.pid] = proc
                self._record["pids"].append([proc.pid, netns.process_start_time(proc.pid)])
                self._record["pids"] = [p for p in self._record["pids"] if netns.process_alive(*p)]
                state.write_owner(self.tag, self._record)
        try:
            os.sched_setaffinity(proc.pid, self.plan.app_cpus_of(ns_role))   # off the timing CPU (cpu_plan)
        except ProcessLookupError:
            pass
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

    # Engines and loss ------------------------------------------------------------------------------
    def set_delay_ns(self, per_direction_ns: int) -> None:
        """Set both directions' delay (packets already held keep theirs)."""
        for engine in self._engines.values():
            engine.set_delay(per_direction_ns)

    def engine_stats(self, *, period: bool = False, answering: bool = False) -> dict[str, EngineStats]:
        """Counters of the forward (receiver namespace; also the bottleneck) and reverse (sender
        namespace) engines. period=True also starts a new lateness period (EngineStats.period_*).
        answering=True leaves out an engine that died instead of raising (a run's monitor: the
        campaign names the dead engine itself)."""
        if not self._engines:
            return dict(self.final_engine_stats)
        out = {}
        for name, engine in self._engines.items():
            try:
                out[name] = engine.stats(period=period)
            except (TcpProfileError, OSError):
                if not answering:
                    raise
        return out

    def engine_pids(self) -> dict[str, int]:
        return {name: engine.pid for name, engine in self._engines.items()}

    def loss_counters(self) -> tuple[int, int]:
        """(packets the loss stage saw while on, packets it dropped) so far, from the forward engine."""
        fwd = self.engine_stats()["forward"]
        return fwd.loss_seen, fwd.loss_dropped

    def wait_drained(self, timeout: float = 30.0) -> None:
        """Wait until both delay queues (the forward one includes the bottleneck) are empty."""
        wait_until(lambda: all(s.held == 0 for s in self.engine_stats().values()),
                   timeout=timeout + 2 * self.config.rtt_s, what=f"link {self.tag} to drain")

    def calibrate(self) -> Calibration:
        """Re-measure rate and idle RTT, with the loss stage off meanwhile; also stored as .calibration."""
        was_on, inject = self.loss_active, self.stall_inject
        self.set_loss(False)
        if inject is not None:
            self.set_stall_inject(None)
        try:
            self.calibration = calibrate(self)
        finally:
            self.set_loss(was_on)
            if inject is not None:
                self.set_stall_inject(inject)
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


def _teardown_all(signum: int | None = None) -> None:
    for link in list(_active.values()):
        if signum is not None:
            link.stopped_by_signal = signum
        link.down()


def _on_signal(signum, frame) -> None:
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    _teardown_all(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


atexit.register(_teardown_all)
