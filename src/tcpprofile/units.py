"""The one parser per quantity (durations, sizes, rates) for every command and the campaign spec; all
internal values are SI: bits/s, seconds, bytes.

Rates use decimal prefixes (10Gbit = 10e9 bit/s, as link rates are quoted); sizes accept decimal (KB, MB,
GB) and binary (KiB, MiB, GiB) prefixes. A value a user gives must carry its unit: a bare number ("45", or
a TOML number `rtt = 45`) is refused naming the units to give: a bare number says nothing about its unit
(45 s? 45 ms?), and every command and the spec must read one value alike. Each parser takes the allowed
range (`Range`), so a zero, negative or too large value is refused naming the field and the range.

Values that are already SI numbers inside the program (LinkConfig(rtt_s=0.01), a spec's normalised
numbers) never pass through here: their field names carry the unit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .errors import ValidationError

_NUM = r"([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

_RATE = {"bit": 1, "bps": 1, "k": 1e3, "kbit": 1e3, "kbps": 1e3, "m": 1e6, "mbit": 1e6,
         "mbps": 1e6, "g": 1e9, "gbit": 1e9, "gbps": 1e9, "t": 1e12, "tbit": 1e12, "tbps": 1e12}
_SIZE = {"b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12,
         "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_TIME = {"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "m": 60.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class _Quantity:
    what: str                              # 'duration', 'size', 'rate'
    table: dict                            # unit (lower case) -> base units
    shown: tuple                           # (unit, base units) for printing a bound, largest first
    hint: tuple[str, str]                  # the units a bare number is told to take, e.g. ('ms', 's')


TIME = _Quantity("duration", _TIME, (("h", 3600.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)),
                 ("ms", "s"))
SIZE = _Quantity("size", _SIZE, (("TiB", 2**40), ("TB", 1e12), ("GiB", 2**30), ("GB", 1e9), ("MiB", 2**20),
                                 ("MB", 1e6), ("KiB", 2**10), ("kB", 1e3), ("B", 1)), ("MB", "MiB"))
RATE = _Quantity("rate", _RATE, (("Tbit", 1e12), ("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3), ("bit", 1)),
                 ("Mbit", "Gbit"))


@dataclass(frozen=True)
class Range:
    """Allowed values [base units]: lo ≤ x ≤ hi, or lo < x with lo_open."""
    lo: float = 0.0
    hi: float = math.inf
    lo_open: bool = False

    def holds(self, x: float) -> bool:
        """Closed bounds hold within 1e-9 relative: text is read as number × unit ("0.4ms" = 0.4 × 1e-3),
        which can land an ulp beside the bound written as one float (0.4e-3)."""
        slack = 1e-9
        low = x > self.lo if self.lo_open else x >= self.lo - slack * abs(self.lo)
        return low and x <= self.hi + slack * abs(self.hi)

    def describe(self, q: _Quantity) -> str:
        lo, hi = _fmt(self.lo, q), _fmt(self.hi, q)
        if self.lo_open:
            return f"above {lo}" + ("" if self.hi == math.inf else f" and at most {hi}")
        return f"{lo} or more" if self.hi == math.inf else f"from {lo} to {hi}"


NON_NEGATIVE = Range()
POSITIVE = Range(0.0, lo_open=True)
RTT_S = Range(0.0, 10.0, lo_open=True)    # a connection's RTT as select, model and import take it [s]


def _fmt(x: float, q: _Quantity) -> str:
    """A bound in the largest unit that shows it exactly (512MiB, 10TB, 0.4ms); 0 in the base unit."""
    if x == 0:
        return f"0{q.shown[-1][0] if q is not TIME else 's'}"
    for unit, scale in q.shown:
        if x >= scale and math.isclose(x / scale, round(x / scale, 3), rel_tol=1e-9):
            return f"{x / scale:g}{unit}"
    return f"{x:g}{q.shown[-1][0]}"


def _parse(field: str, value, q: _Quantity, allowed: Range) -> float:
    """A finite quantity in base units within `allowed`; anything else is a ValidationError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValidationError(field, f"expected a {q.what} with a unit, got {_show(value)}")
    if not isinstance(value, str):         # a TOML number: the spec's `rtt = 45` is the same trap as --rtt 45
        n = _show(value)
        if abs(value) >= 10**30 or not math.isfinite(value):
            raise ValidationError(field, f"expected a {q.what} with a unit such as \"45{q.hint[0]}\", got {n}")
        raise ValidationError(field, f"{n} has no unit; give it as \"{n}{q.hint[0]}\" or \"{n}{q.hint[1]}\"")
    m = re.fullmatch(_NUM + r"\s*([a-zA-Zµ]*)", value.strip())
    if m and not m.group(2):
        n = m.group(1)
        raise ValidationError(field, f"{n} has no unit; give it as {n}{q.hint[0]} or {n}{q.hint[1]}")
    if not m or m.group(2).lower() not in q.table:
        units = ", ".join(sorted(q.table))
        raise ValidationError(field, f"cannot read {_show(value)} as a {q.what} (units: {units})")
    number = float(m.group(1)) * q.table[m.group(2).lower()]
    if not math.isfinite(number):
        raise ValidationError(field, f"{_show(value)} is not a finite {q.what}")
    if not allowed.holds(number):
        raise ValidationError(field, f"{_show(value)} is out of range: must be {allowed.describe(q)}")
    return number


def _show(value) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def rate_bps(field: str, value, allowed: Range = NON_NEGATIVE) -> float:
    """'10Gbit' -> 1e10 bits per second."""
    return _parse(field, value, RATE, allowed)


def size_bytes(field: str, value, allowed: Range = NON_NEGATIVE) -> int:
    """'50MB' -> 50_000_000 bytes; '1GiB' -> 2**30."""
    return int(round(_parse(field, value, SIZE, allowed)))


def seconds(field: str, value, allowed: Range = NON_NEGATIVE) -> float:
    """'91.6ms' -> 0.0916 seconds."""
    return _parse(field, value, TIME, allowed)


# -- formatting for people (select, tune, analyze and the report print sizes this way) ---------------
def fmt_buffer(b: int | None) -> str:
    """A socket buffer: 'auto' (kernel autotuning) for None, else fmt_bytes."""
    return "auto" if b is None else fmt_bytes(b)


def fmt_bytes(n: float) -> str:
    """268435456 -> '256MiB'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}B"


def to_ms(seconds_value):
    """τ [s] (a number or a numpy array) -> milliseconds to print or to store, as the decimal a person or the
    store wrote: s·1e3 rounded to 15 significant digits (a double holds 15 exactly, IEEE 754 binary64), so
    a τ read from the store in ms, divided by 1e3 and printed shows the stored digits (45.6, not
    45.599999999999994)."""
    import numpy as np
    ms = np.asarray(seconds_value, dtype=float) * 1e3
    rounded = np.vectorize(lambda v: float(f"{v:.15g}"), otypes=[float])(ms) if ms.size else ms
    return float(rounded) if rounded.ndim == 0 else rounded
