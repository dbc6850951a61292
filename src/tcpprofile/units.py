"""Parsing of quantities with units; all internal values are SI: bits/s, seconds, bytes.

Rates use decimal prefixes (10Gbit = 10e9 bit/s, as link rates are quoted); sizes accept
decimal (KB, MB, GB) and binary (KiB, MiB, GiB) prefixes; a bare number is in the base unit.
"""

from __future__ import annotations

import math
import re

from .errors import ValidationError

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

_RATE = {"": 1, "bit": 1, "bps": 1, "k": 1e3, "kbit": 1e3, "kbps": 1e3, "m": 1e6, "mbit": 1e6,
         "mbps": 1e6, "g": 1e9, "gbit": 1e9, "gbps": 1e9, "t": 1e12, "tbit": 1e12, "tbps": 1e12}
_SIZE = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12,
         "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_TIME = {"": 1, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "m": 60.0, "min": 60.0, "h": 3600.0}


def _parse(field: str, value, table: dict, what: str) -> float:
    """A finite, non-negative quantity in base units; anything else is a ValidationError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValidationError(field, f"expected a {what}, got {_show(value)}")
    if isinstance(value, str):
        m = re.fullmatch(_NUM + r"\s*([a-zA-Zµ]*)", value.strip())
        if not m or m.group(2).lower() not in table:
            units = ", ".join(sorted(k for k in table if k))
            raise ValidationError(field, f"cannot read {_show(value)} as a {what} (units: {units})")
        number = float(m.group(1)) * table[m.group(2).lower()]
    elif isinstance(value, int) and value.bit_length() > 1000:
        number = math.inf                       # float(value) would raise OverflowError
    else:
        number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValidationError(field, f"{_show(value)} is not a {what} (finite, 0 or more)")
    return number


def _show(value) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def rate_bps(field: str, value) -> float:
    """'10Gbit' -> 1e10 bits per second."""
    return _parse(field, value, _RATE, "rate")


def size_bytes(field: str, value) -> int:
    """'50MB' -> 50_000_000 bytes; '1GiB' -> 2**30."""
    return int(round(_parse(field, value, _SIZE, "size")))


def seconds(field: str, value) -> float:
    """'91.6ms' -> 0.0916 seconds."""
    return _parse(field, value, _TIME, "duration")
