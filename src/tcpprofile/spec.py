"""Campaign specs: a TOML file -> validated, normalised, frozen dataclasses and the run schedule.

The format is documented field by field in docs/spec.md. `load(path)` / `parse(text)` validate once
(every error names its field path, e.g. ``transfer.streams[2]``); everything downstream trusts the result.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import secrets
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import units
from .cc.registry import canonical
from .errors import ValidationError
from .testbed import cpuplan
from .testbed.config import LOSS_MODES
from .testbed.inject import StallInject

MAX_RATE_BPS = 10e9              # what the emulated testbed allows
RTT_RANGE_S = (0.4e-3, 400e-3)
MAX_STREAMS = 128
MAX_REPETITIONS = 1000
MAX_SOCKET_BUFFER = 512 * 2**20  # iperf3 3.12 rejects a larger -w (the kernel grants twice this)
MAX_TRANSFER_BYTES = 10**13
MAX_DURATION_S = 86400
MTUS = (1500, 9000)
# the key each loss mode (testbed.config.LOSS_MODES, the one list) takes besides `mode`
LOSS_PARAMETER = {"periodic": "every", "uniform": "p"}
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
KBDP = re.compile(r"(?:([0-9]*\.?[0-9]+)\s*[xX]\s*)?BDP")

_KEYS = {
    "campaign": {"name", "seed", "order", "repetitions", "trace_cwnd", "retries", "rerun_flagged",
                 "precision", "min_repetitions", "max_repetitions", "confidence"},
    "link": {"rate", "rtt", "buffer", "loss", "mtu", "stall_inject", "cpu_plan"},
    "remote": {"host", "port", "rate"},
    "transfer": {"variant", "streams", "socket_buffer", "size", "duration", "reverse", "zerocopy"},
}


@dataclass(frozen=True)
class Loss:
    mode: str            # one of testbed.config.LOSS_MODES
    rate: float          # periodic: 1/every; uniform: p; none: 0
    every: int | None = None

    def label(self) -> str:
        return {"none": "none", "periodic": f"1/{self.every}", "uniform": f"p={self.rate:g}"}[self.mode]


@dataclass(frozen=True)
class LinkPoint:
    """One link configuration: an emulated link, or a remote iperf3 server (kind='remote')."""
    kind: str                         # 'emulated' | 'remote'
    rate_bps: float | None            # emulated: bottleneck rate C; remote: nominal rate if given
    rtt_s: float | None               # emulated: RTT τ; remote: None (measured by ping)
    buffer_bytes: int | None          # emulated: drop-tail bottleneck buffer β
    buffer_label: str | None          # as written: '50MB', 'BDP', '2xBDP'
    loss: Loss = Loss("none", 0.0)
    mtu: int | None = None
    host: str | None = None
    port: int | None = None
    stall_inject: StallInject | None = None   # fault injection (issue 33, testbed/inject.py); None: off
    cpu_plan: str = "auto"                    # testbed/cpuplan.py PLANS; "auto": by the host's CPUs

    def identity(self) -> dict:
        """The link's fields as the campaign's and its runs' ids hash them: stall_inject only when set and
        cpu_plan only when forced, so that every campaign without them keeps the ids it had before the
        fields existed."""
        d = asdict(self)
        if self.stall_inject is None:
            del d["stall_inject"]
        if self.cpu_plan == "auto":
            del d["cpu_plan"]
        return d

    def key(self) -> str:
        return json.dumps(self.identity(), sort_keys=True)

    def describe(self) -> str:
        if self.kind == "remote":
            return f"remote {self.host}:{self.port}"
        rate = f"{self.rate_bps / 1e9:g}Gbit" if self.rate_bps >= 1e9 else f"{self.rate_bps / 1e6:g}Mbit"
        stall = f" stalls={self.stall_inject.describe()}" if self.stall_inject else ""
        plan = f" cpu_plan={self.cpu_plan}" if self.cpu_plan != "auto" else ""
        return (f"{rate} rtt={self.rtt_s * 1e3:g}ms buf={self.buffer_label} "
                f"loss={self.loss.label()} mtu={self.mtu}{stall}{plan}")


@dataclass(frozen=True)
class RunPoint:
    """One configuration × one repetition."""
    link: LinkPoint
    variant: str
    streams: int
    socket_buffer_bytes: int | None   # iperf3 -w; None: kernel autotuning
    transfer_bytes: int | None        # iperf3 -n (size mode)
    duration_s: int | None            # iperf3 -t (duration mode)
    reverse: bool
    repetition: int                   # 0-based
    zerocopy: bool = False            # iperf3 -Z (sendfile: no copy of the data into the socket)

    def configuration(self) -> dict:
        d = asdict(self)
        del d["repetition"]
        if not self.zerocopy:     # runs without -Z keep the run ids they had before the option
            del d["zerocopy"]
        d["link"] = self.link.identity()
        return d

    def run_id(self, campaign_id: str) -> str:
        blob = json.dumps([campaign_id, self.configuration(), self.repetition], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def describe(self) -> str:
        buf = "default" if self.socket_buffer_bytes is None else f"{self.socket_buffer_bytes / 2**20:g}MiB"
        what = (f"{self.transfer_bytes / 1e9:g}GB" if self.transfer_bytes is not None
                else f"{self.duration_s}s")
        return (f"{self.variant} n={self.streams} w={buf} {what}{' -R' if self.reverse else ''}{' -Z' if self.zerocopy else ''} "
                f"rep={self.repetition}")


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    seed: int | None                  # None: not given (the runner draws one and records it)
    order: str                        # 'random' | 'given'
    repetitions: int
    trace_cwnd: bool
    retries: int
    mode: str                         # 'emulated' | 'remote'
    links: tuple[LinkPoint, ...]
    variants: tuple[str, ...]
    streams: tuple[int, ...]
    socket_buffers: tuple[int | None, ...]
    sizes: tuple[int, ...]
    durations: tuple[int, ...]
    reverse: bool
    source_toml: str = field(default="", compare=False, repr=False)
    zerocopy: bool = False            # iperf3 -Z on every run
    # adaptive repetitions (docs/spec.md): None unless `precision` is given; then `repetitions` is the
    # maximum and the schedule covers it
    precision: float | None = None    # relative half-width of the confidence interval to reach
    min_repetitions: int | None = None
    confidence: float | None = None
    # on resume, run again ok runs whose instrument was not faithful (fidelity.thresholds.RERUN_FLAGS): how the
    # campaign executes, not what it measures, so not part of the campaign's identity
    rerun_flagged: bool = False

    @property
    def adaptive(self) -> bool:
        return self.precision is not None

    def normalised(self) -> dict:
        d = asdict(self)
        del d["source_toml"], d["rerun_flagged"]
        if not self.zerocopy:     # campaigns without -Z keep the campaign ids they had before the option
            del d["zerocopy"]
        d["links"] = [link.identity() for link in self.links]
        if not self.adaptive:      # fixed campaigns keep the campaign ids they had before adaptive ones
            for k in ("precision", "min_repetitions", "confidence"):
                del d[k]
        return d

    @property
    def campaign_id(self) -> str:
        """Hash of the normalised spec: the same spec (comments and layout aside) resumes."""
        blob = json.dumps(self.normalised(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def sweep(self) -> list[RunPoint]:
        """The cartesian product in the spec's order: link × V × n × B × (F | D) × repetition."""
        amounts = [(f, None) for f in self.sizes] + [(None, d) for d in self.durations]
        return [RunPoint(link, v, n, b, f, d, self.reverse, r, self.zerocopy)
                for link in self.links for v in self.variants for n in self.streams
                for b in self.socket_buffers for f, d in amounts for r in range(self.repetitions)]

    def schedule(self, seed: int | None) -> list[RunPoint]:
        """Execution order, grouped by link configuration (each link is set up once).

        order='given': the spec's order. order='random': links in a random order, and all runs of a
        link (every configuration and repetition) shuffled within it; deterministic in `seed`.
        """
        runs = self.sweep()
        groups: dict[LinkPoint, list[RunPoint]] = {}
        for p in runs:
            groups.setdefault(p.link, []).append(p)
        blocks = list(groups.values())
        if self.order == "random":
            rng = random.Random(seed)
            rng.shuffle(blocks)
            for b in blocks:
                rng.shuffle(b)
        return [p for b in blocks for p in b]


def draw_seed() -> int:
    return secrets.randbelow(2**31)


# ---------------------------------------------------------------------------------------------
def load(path: str | Path) -> CampaignSpec:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ValidationError("spec", f"cannot read {path}: {err.strerror}") from err
    return parse(text)


def parse(text: str) -> CampaignSpec:
    try:
        doc = tomllib.loads(text)
    except (ValueError, RecursionError) as err:   # TOMLDecodeError; an integer of > 4300 digits
        raise ValidationError("spec", f"not valid TOML: {str(err).splitlines()[0][:200]}") from err
    for table in doc:
        if table not in _KEYS:
            raise ValidationError(table, f"unknown table (allowed: {', '.join(sorted(_KEYS))})")
    for table, value in doc.items():
        if not isinstance(value, dict):
            raise ValidationError(table, "must be a table ([{}])".format(table))
        unknown = set(value) - _KEYS[table]
        if unknown:
            key = sorted(unknown)[0]
            raise ValidationError(f"{table}.{key}",
                                  f"unknown key (allowed: {', '.join(sorted(_KEYS[table]))})")
    if "campaign" not in doc:
        raise ValidationError("campaign", "required table [campaign] is missing")
    if "transfer" not in doc:
        raise ValidationError("transfer", "required table [transfer] is missing")
    if ("link" in doc) == ("remote" in doc):
        raise ValidationError("link", "exactly one of [link] (emulated) or [remote] is required")

    c = doc["campaign"]
    name = _req(c, "campaign.name", "name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationError("campaign.name", f"{name!r}: must match [A-Za-z0-9_.-]+")
    seed = c.get("seed")
    if seed is not None and (not _is_int(seed) or not 0 <= seed < 2**63):
        raise ValidationError("campaign.seed", f"{seed!r}: must be an integer in 0..2^63-1")
    order = c.get("order", "random")
    if order not in ("random", "given"):
        raise ValidationError("campaign.order", f"{order!r}: must be 'random' or 'given'")
    repetitions = _int(c.get("repetitions", 1), "campaign.repetitions", 1, MAX_REPETITIONS)
    precision, min_reps, confidence = _adaptive(c)
    if precision is not None:
        repetitions = _int(c.get("max_repetitions", 10), "campaign.max_repetitions", min_reps, MAX_REPETITIONS)
    trace_cwnd = _bool(c.get("trace_cwnd", False), "campaign.trace_cwnd")
    retries = _int(c.get("retries", 1), "campaign.retries", 0, 10)
    rerun_flagged = _bool(c.get("rerun_flagged", False), "campaign.rerun_flagged")

    if "link" in doc:
        mode, links = "emulated", _links(doc["link"])
    else:
        mode, links = "remote", (_remote(doc["remote"]),)

    t = doc["transfer"]
    variants = _list(_req(t, "transfer.variant", "variant"), "transfer.variant")
    variants = [canonical(v, f"transfer.variant[{i}]") for i, v in enumerate(variants)]   # cc/registry.py
    streams = [_int(v, f"transfer.streams[{i}]", 1, MAX_STREAMS)
               for i, v in enumerate(_list(t.get("streams", [1]), "transfer.streams"))]
    buffers = []
    for i, v in enumerate(_list(t.get("socket_buffer", ["default"]), "transfer.socket_buffer")):
        f = f"transfer.socket_buffer[{i}]"
        if v == "default":
            buffers.append(None)
            continue
        buffers.append(_quantity(units.size_bytes, f, v, units.Range(1, MAX_SOCKET_BUFFER),
                                 "or 'default' (512MiB is iperf3 -w's maximum; the kernel grants twice the request, "
                                 "so 512MiB gives 1GiB)"))
    if ("size" in t) == ("duration" in t):
        raise ValidationError("transfer.size", "exactly one of transfer.size (-n) or transfer.duration (-t)")
    sizes, durations = [], []
    for i, v in enumerate(_list(t["size"], "transfer.size") if "size" in t else []):
        sizes.append(units.size_bytes(f"transfer.size[{i}]", v, units.Range(1, MAX_TRANSFER_BYTES)))
    for i, v in enumerate(_list(t["duration"], "transfer.duration") if "duration" in t else []):
        s = units.seconds(f"transfer.duration[{i}]", v, units.Range(1, MAX_DURATION_S))
        if s != int(s):
            raise ValidationError(f"transfer.duration[{i}]",
                                  f"{v!r}: a whole number of seconds from 1s to 86400s (iperf3 -t)")
        durations.append(int(s))
    reverse = _bool(t.get("reverse", False), "transfer.reverse")
    zerocopy = _bool(t.get("zerocopy", False), "transfer.zerocopy")
    for fname, values in (("transfer.variant", variants), ("transfer.streams", streams),
                          ("transfer.socket_buffer", buffers), ("transfer.size", sizes),
                          ("transfer.duration", durations)):
        _no_duplicates(fname, values)

    return CampaignSpec(
        name=name, seed=seed, order=order, repetitions=repetitions, trace_cwnd=trace_cwnd,
        retries=retries, mode=mode, links=links, variants=tuple(variants), streams=tuple(streams),
        socket_buffers=tuple(buffers), sizes=tuple(sizes), durations=tuple(durations),
        reverse=reverse, zerocopy=zerocopy, source_toml=text, precision=precision, min_repetitions=min_reps,
        confidence=confidence, rerun_flagged=rerun_flagged)


def _adaptive(c: dict) -> tuple[float | None, int | None, float | None]:
    """[campaign] precision / min_repetitions / max_repetitions / confidence (adaptive repetitions)."""
    adaptive_keys = [k for k in ("min_repetitions", "max_repetitions", "confidence") if k in c]
    if "precision" not in c:
        if adaptive_keys:
            raise ValidationError(f"campaign.{adaptive_keys[0]}", "only with campaign.precision (adaptive repetitions)")
        return None, None, None
    from .choose.decide import check_confidence, parse_fraction
    precision = parse_fraction("campaign.precision", c["precision"])
    if "repetitions" in c:
        raise ValidationError("campaign.repetitions",
                              "give either repetitions (fixed) or precision (adaptive, with min/max_repetitions)")
    min_reps = _int(c.get("min_repetitions", 3), "campaign.min_repetitions", 2, MAX_REPETITIONS)
    confidence = check_confidence("campaign.confidence", c.get("confidence", 0.95))
    return precision, min_reps, confidence


def _links(t: dict) -> tuple[LinkPoint, ...]:
    rates = []
    for i, v in enumerate(_list(_req(t, "link.rate", "rate"), "link.rate")):
        rates.append(units.rate_bps(f"link.rate[{i}]", v, units.Range(0, MAX_RATE_BPS, lo_open=True)))
    rtts = []
    for i, v in enumerate(_list(_req(t, "link.rtt", "rtt"), "link.rtt")):
        rtts.append(units.seconds(f"link.rtt[{i}]", v, units.Range(*RTT_RANGE_S)))
    buffers = []  # (label, bytes or k×BDP factor)
    for i, v in enumerate(_list(t.get("buffer", ["BDP"]), "link.buffer")):
        f = f"link.buffer[{i}]"
        m = KBDP.fullmatch(v.strip()) if isinstance(v, str) else None
        if m:
            k = float(m.group(1) or 1)
            if not 0 < k <= 100:
                raise ValidationError(f, f"{v!r}: the BDP multiple must be above 0 and at most 100")
            buffers.append((v.strip(), ("bdp", k)))
        else:
            b = _quantity(units.size_bytes, f, v, units.Range(1), "or 'BDP', '<k>xBDP' ('2xBDP')")
            buffers.append((str(v), ("bytes", b)))
    losses = [_loss(v, f"link.loss[{i}]")
              for i, v in enumerate(_list(t.get("loss", [{"mode": "none"}]), "link.loss"))]
    mtus = []
    for i, v in enumerate(_list(t.get("mtu", 9000), "link.mtu")):
        if not _is_int(v) or v not in MTUS:
            raise ValidationError(f"link.mtu[{i}]" if isinstance(t.get("mtu"), list) else "link.mtu",
                                  f"{v!r}: must be 1500 or 9000")
        mtus.append(v)
    for fname, values in (("link.rate", rates), ("link.rtt", rtts), ("link.buffer", [b[0] for b in buffers]),
                          ("link.loss", losses), ("link.mtu", mtus)):
        _no_duplicates(fname, values)
    stall = StallInject.checked(t.get("stall_inject"), "link.stall_inject")   # one for every link point
    plan = cpuplan.checked(t.get("cpu_plan", "auto"), "link.cpu_plan")        # likewise
    points = []
    for rate in rates:
        for rtt in rtts:
            for label, (how, amount) in buffers:
                size = int(round(amount * rate * rtt / 8)) if how == "bdp" else amount  # BDP = C·τ / 8 [bytes]
                for loss in losses:
                    for mtu in mtus:
                        points.append(LinkPoint("emulated", rate, rtt, size, label, loss, mtu,
                                                stall_inject=stall, cpu_plan=plan))
    return tuple(points)


def _loss(v, f: str) -> Loss:
    if not isinstance(v, dict):
        raise ValidationError(f, f"{v!r}: a table such as {{ mode = \"periodic\", every = 1000 }}")
    mode = v.get("mode")
    if not isinstance(mode, str) or mode not in LOSS_MODES:
        raise ValidationError(f"{f}.mode", f"{mode!r}: must be one of {', '.join(LOSS_MODES)}")
    allowed = {"mode"} | ({LOSS_PARAMETER[mode]} if mode in LOSS_PARAMETER else set())
    extra = set(v) - allowed
    if extra:
        raise ValidationError(f"{f}.{sorted(extra)[0]}",
                              f"unknown key for mode {mode!r} (allowed: {', '.join(sorted(allowed))})")
    if mode == "none":
        return Loss("none", 0.0)
    if mode == "periodic":
        every = _int(_req(v, f"{f}.every", "every"), f"{f}.every", 2, 10**9)
        return Loss("periodic", 1.0 / every, every)
    p = v.get("p")
    if p is None:
        raise ValidationError(f"{f}.p", "required for mode 'uniform'")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise ValidationError(f"{f}.p", f"{p!r}: a probability strictly between 0 and 1")
    return Loss("uniform", float(p))


def _remote(t: dict) -> LinkPoint:
    host = _req(t, "remote.host", "host")
    if not isinstance(host, str) or not re.fullmatch(r"[A-Za-z0-9_.:-]+", host):
        raise ValidationError("remote.host", f"{host!r}: a host name or IP address")
    port = _int(t.get("port", 5201), "remote.port", 1, 65535)
    rate = None
    if "rate" in t:
        rate = units.rate_bps("remote.rate", t["rate"], units.POSITIVE)
    return LinkPoint("remote", rate, None, None, None, Loss("none", 0.0), None, host, port)


# -- small validators ---------------------------------------------------------------------------
def _quantity(parse, f: str, v, allowed: units.Range, other: str):
    """A quantity (units.py), or the spec's other words for the field (`other`, added to the error)."""
    try:
        return parse(f, v, allowed)
    except ValidationError as err:
        raise ValidationError(f, f"{str(err).split(': ', 1)[1]}; {other}") from err


def _req(t: dict, f: str, key: str):
    if key not in t:
        raise ValidationError(f, "required")
    return t[key]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v, f: str, lo: int, hi: int) -> int:
    if not _is_int(v) or not lo <= v <= hi:
        raise ValidationError(f, f"{v!r}: must be an integer from {lo} to {hi}")
    return v


def _bool(v, f: str) -> bool:
    if not isinstance(v, bool):
        raise ValidationError(f, f"{v!r}: must be true or false")
    return v


def _list(v, f: str) -> list:
    """A sweep axis: a list, or one value standing for a list of one."""
    if isinstance(v, list):
        if not v:
            raise ValidationError(f, "must not be empty")
        return v
    return [v]


def _no_duplicates(f: str, values: list) -> None:
    seen = []
    for i, v in enumerate(values):
        if v in seen:
            raise ValidationError(f"{f}[{i}]", f"duplicate value {v!r}")
        seen.append(v)
