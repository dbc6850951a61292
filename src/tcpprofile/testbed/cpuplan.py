"""CPU plans of an emulated link (issue 33 item 6; docs/testbed.md, "CPU plan"): which CPU runs the delay
engines' timing, who issues their verdicts (and so runs the stack work each verdict triggers), where each
application and RPS-steered receive processing runs. Plans are data; `choose` picks one for a host.

- "two-core" (the design measured on 2 cores): both engines, timing and verdicts, on the last CPU; the
  applications (both iperf3 ends, ping, the calibration probe) and RPS on the others.
- "four-core" (the design on paper in docs/testbed.md): core A runs both engines' timing; core B issues
  the forward engine's verdicts (delayd --verdict-cpu: the receiver's TCP input runs there) beside
  `iperf3 -s` (receiver); core C the reverse engine's verdicts (the sender's ACK processing and
  transmission) beside `iperf3 -c` (sender); core D, and every CPU beyond four, RPS.

"auto" takes the four-core plan where the process may use at least FOUR_CORE_MIN CPUs, else two-core.
Either plan can be forced on any host (a test of its correctness on 2 cores): on fewer CPUs than it has
roles, the timing keeps the last CPU and the other roles fold onto the remaining ones in turn (on one
CPU everything shares it), so the timing core never runs verdicts where a second CPU exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError

PLANS = ("auto", "two-core", "four-core")     # the one list: LinkConfig and the spec check against it
FOUR_CORE_MIN = 4                             # A timing, B/C a verdict thread + one iperf3 end each, D RPS
DIRECTIONS = ("forward", "reverse")           # forward: data into the receiver; reverse: ACKs into the sender
_ROLE_OF_DIRECTION = {"forward": "receiver", "reverse": "sender"}   # whose stack a direction's verdict feeds


@dataclass(frozen=True)
class CpuPlan:
    """CPUs of one link: `timing` runs both engines (their main thread: drain, wire model, release
    decisions); `verdict[d]` is the CPU of direction d's verdict thread (None: the engine issues its
    verdicts itself, on `timing`); `apps[role]` runs that namespace's applications; `rps` takes both
    veths' receive processing up to the NFQUEUE hook."""
    name: str
    timing: frozenset[int]
    verdict: tuple[tuple[str, int | None], ...]     # ((direction, CPU or None), ...) in DIRECTIONS order
    apps: tuple[tuple[str, frozenset[int]], ...]    # ((role, CPUs), ...): 'sender', 'receiver'
    rps: frozenset[int]

    def verdict_cpu(self, direction: str) -> int | None:
        return dict(self.verdict)[direction]

    def app_cpus_of(self, role: str) -> frozenset[int]:
        return dict(self.apps)[role]

    @property
    def engine_cpus(self) -> set[int]:
        """Where the engines' processes are pinned (their timing threads)."""
        return set(self.timing)

    @property
    def app_cpus(self) -> set[int]:
        """Every application CPU (both iperf3 ends): what the monitor's app_cpu_busy samples."""
        return set().union(*(cpus for _, cpus in self.apps))

    def describe(self) -> str:
        parts = [f"timing {_cpus(self.timing)}"]
        parts += [f"{d} verdicts {cpu}" for d, cpu in self.verdict if cpu is not None]
        parts += [f"{role} {_cpus(cpus)}" for role, cpus in self.apps] + [f"rps {_cpus(self.rps)}"]
        return f"{self.name}: " + ", ".join(parts)


def _cpus(cpus) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def checked(value, field: str = "cpu_plan") -> str:
    """The plan's name, validated (once, at the boundary: LinkConfig, the spec)."""
    if not isinstance(value, str) or value not in PLANS:
        raise ValidationError(field, f"must be one of {', '.join(PLANS)}, got {value!r}")
    return value


def resolve(choice: str, n_cpus: int) -> str:
    """The plan "auto" stands for on a host with n_cpus usable CPUs; a forced plan is itself."""
    if choice != "auto":
        return choice
    return "four-core" if n_cpus >= FOUR_CORE_MIN else "two-core"


def two_core(cpus: list[int]) -> CpuPlan:
    """Measured per packet at 10 Gbit/s, MTU 9000, 45.6 ms on 2 cores: both engines on one core and the
    applications on the other held 9.8 Gbit/s; engines on different cores 5.1-8.9, unpinned 6.9-7.5
    (docs/testbed.md). One CPU: everything on it."""
    timing = frozenset(cpus[-1:])
    rest = frozenset(cpus[:-1]) or timing
    return CpuPlan("two-core", timing, tuple((d, None) for d in DIRECTIONS),
                   (("sender", rest), ("receiver", rest)), rest)


def four_core(cpus: list[int]) -> CpuPlan:
    """A = cpus[-1] timing; B = cpus[-2] forward verdicts + receiver; C = cpus[-3] reverse verdicts +
    sender; D = cpus[:-3] RPS. On fewer than four CPUs B, C, D fold onto cpus[:-1] in turn (cpus[-2],
    cpus[-3], ... wrapping round; one CPU: all on it)."""
    a, others = cpus[-1], list(reversed(cpus[:-1])) or [cpus[-1]]
    b, c = others[0], others[1 % len(others)]
    d = frozenset(cpus[:-3]) if len(cpus) >= FOUR_CORE_MIN else frozenset([others[2 % len(others)]])
    return CpuPlan("four-core", frozenset([a]), (("forward", b), ("reverse", c)),
                   (("sender", frozenset([c])), ("receiver", frozenset([b]))), d)


def choose(choice: str, cpus) -> CpuPlan:
    """The plan for `choice` ("auto" | "two-core" | "four-core") over the CPUs this process may use."""
    cpus = sorted(cpus)
    if not cpus:
        raise ValidationError("cpus", "needs at least one CPU")
    name = resolve(checked(choice), len(cpus))
    return four_core(cpus) if name == "four-core" else two_core(cpus)


def verdict_role(direction: str) -> str:
    """The namespace whose stack a direction's verdicts run (forward: receiver; reverse: sender)."""
    return _ROLE_OF_DIRECTION[direction]
