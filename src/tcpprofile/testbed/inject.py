"""Stall injection (issue 33): a fault-injection control of the delay engines, off by default.

`StallInject(hold_s, every_s, direction)`: every `every_s` the engine(s) of `direction` release no packet
for `hold_s`; what falls due in a hold goes out at its end, in order (native/delayd/delayd.c, "Stall
injection"). The holds start at the CLOCK_MONOTONIC instants that are whole multiples of every_s, so
with direction "both" the two engines hold together. Used to measure what a stall costs
(benchmarks/stall_dose.py), never by a campaign unless its link asks for it.

In a link's TOML or a dict: `stall_inject = {hold = "10ms", every = "2s", direction = "forward"}`
(units.py: a duration must carry its unit).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import units
from ..errors import ValidationError

DIRECTIONS = ("forward", "reverse", "both")
ENGINES = {"forward": ("forward",), "reverse": ("reverse",), "both": ("forward", "reverse")}
HOLD_S = units.Range(1e-4, 1.0)          # 0.1 ms (a few coalescing periods G = 40 µs) to 1 s
EVERY_S = units.Range(1e-2, 3600.0)      # 10 ms to 1 h
KEYS = ("hold", "every", "direction")


@dataclass(frozen=True)
class StallInject:
    """Hold every release of `direction` for hold_s [s], every every_s [s]; hold_s < every_s."""
    hold_s: float
    every_s: float
    direction: str = "forward"

    def __post_init__(self):
        for name, value, allowed in (("hold", self.hold_s, HOLD_S), ("every", self.every_s, EVERY_S)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not allowed.holds(value):
                raise ValidationError(f"stall_inject.{name}", f"must be a duration {allowed.describe(units.TIME)}, "
                                      f"got {value!r} s")
        if self.hold_s >= self.every_s:
            raise ValidationError("stall_inject.hold", f"must be shorter than every ({self.every_s:g} s): the "
                                  f"link would never release, got {self.hold_s:g} s")
        if self.direction not in DIRECTIONS:
            raise ValidationError("stall_inject.direction", f"must be one of {DIRECTIONS}, got {self.direction!r}")

    @classmethod
    def checked(cls, value, field: str = "stall_inject") -> "StallInject | None":
        """From a table {hold = "10ms", every = "2s", direction = "forward"} (direction optional), an
        existing StallInject, or None (off); errors name `field`.key and what is allowed (a hold not
        shorter than its period, or a bad direction: stall_inject.hold / .direction)."""
        if value is None or isinstance(value, StallInject):
            return value
        if not isinstance(value, dict):
            raise ValidationError(field, f"must be a table with keys {KEYS} (e.g. {{hold = \"10ms\", every = "
                                  f"\"2s\", direction = \"forward\"}}), got {value!r}")
        unknown = sorted(set(value) - set(KEYS))
        if unknown:
            raise ValidationError(f"{field}.{unknown[0]}", f"unknown key; allowed: {', '.join(KEYS)}")
        missing = [k for k in ("hold", "every") if k not in value]
        if missing:
            raise ValidationError(f"{field}.{missing[0]}", "is required (a duration with its unit, e.g. \"10ms\")")
        hold_s = units.seconds(f"{field}.hold", value["hold"], HOLD_S)
        every_s = units.seconds(f"{field}.every", value["every"], EVERY_S)
        try:
            return cls(hold_s=hold_s, every_s=every_s, direction=value.get("direction", "forward"))
        except ValidationError as err:      # the object's own checks name stall_inject.KEY: name `field`.KEY
            raise ValidationError(field + err.field.removeprefix("stall_inject"),
                                  str(err).split(": ", 1)[1]) from None

    def applies_to(self, engine: str) -> bool:
        """Whether the engine ('forward': data, 'reverse': ACKs) holds."""
        return engine in ENGINES[self.direction]

    def engine_ns(self, engine: str) -> tuple[int, int]:
        """(every, hold) [ns] for delayd's --stall-every-ns / --stall-hold-ns; (0, 0): off."""
        if not self.applies_to(engine):
            return 0, 0
        return round(self.every_s * 1e9), round(self.hold_s * 1e9)

    def describe(self) -> str:
        return f"hold {self.hold_s * 1e3:g}ms every {self.every_s:g}s {self.direction}"


def engine_ns(inject: StallInject | None, engine: str) -> tuple[int, int]:
    """(every, hold) [ns] of an engine under `inject` (None: off)."""
    return inject.engine_ns(engine) if inject is not None else (0, 0)
