"""Estimator contract shared by every model: keyword-only constructor that only stores, parameter
constraints declared once per class (``_constraints``) and checked in one place (``_validate_params``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError


@dataclass(frozen=True)
class Constraint:
    """Allowed values of one constructor parameter: a type, an interval and the unit it is in."""

    kind: type  # float, int or bool
    low: float = -math.inf
    high: float = math.inf
    closed: str = "both"  # which ends of [low, high] are allowed: both, left, right, neither
    units: str = ""
    optional: bool = False  # None allowed (value then comes from fit() or predict())

    def describe(self) -> str:
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        what = "a boolean" if self.kind is bool else f"{self.kind.__name__} in {left}{self.low:g}, {self.high:g}{right}"
        unit = f" {self.units}" if self.units else ""
        return what + unit + (" or None" if self.optional else "")

    def check(self, name: str, value) -> None:
        if value is None:
            if self.optional:
                return
            raise ValidationError(name, f"required; expected {self.describe()}")
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValidationError(name, f"expected {self.describe()}, got {value!r}")
            return
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValidationError(name, f"expected {self.describe()}, got {value!r}")
        v = float(value)
        if math.isnan(v) or (self.kind is int and math.isfinite(v) and v != int(v)):
            raise ValidationError(name, f"expected {self.describe()}, got {value!r}")
        lo_ok = v >= self.low if self.closed in ("both", "left") else v > self.low
        hi_ok = v <= self.high if self.closed in ("both", "right") else v < self.high
        if not (lo_ok and hi_ok):
            raise ValidationError(name, f"expected {self.describe()}, got {value!r}")


class Model:
    """Base of every model. Subclasses declare ``_constraints`` and an ``__init__`` with keyword-only
    arguments whose names are exactly the keys of ``_constraints``."""

    _constraints: dict[str, Constraint] = {}

    def get_params(self) -> dict:
        return {name: getattr(self, name) for name in self._constraints}

    def set_params(self, **params) -> "Model":
        for name, value in params.items():
            if name not in self._constraints:
                raise ValidationError(name, f"unknown parameter; allowed: {', '.join(self._constraints)}")
            setattr(self, name, value)
        return self

    def _validate_params(self) -> None:
        """The one place constructor parameters are checked (called by fit/predict/components)."""
        for name, constraint in self._constraints.items():
            constraint.check(name, getattr(self, name))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def positive_array(name: str, value, *, units: str, allow_zero: bool = False, allow_inf: bool = False) -> np.ndarray:
    """Validate a call argument (scalar or array) at the boundary; returns a float array."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValidationError(name, f"expected numbers in {units}, got {value!r}") from None
    bad = np.isnan(arr) | (arr < 0 if allow_zero else arr <= 0)
    if not allow_inf:
        bad |= np.isinf(arr)
    if np.any(bad):
        first = arr[bad].flat[0]
        rel = ">= 0" if allow_zero else "> 0"
        fin = "" if allow_inf else " and finite"
        raise ValidationError(name, f"must be {rel}{fin} ({units}); got {first!r}")
    return arr
