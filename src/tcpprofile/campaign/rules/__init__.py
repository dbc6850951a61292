"""The racing rules of `tcpprofile tune` (docs/tune.md), one module each: this package's modules are
the registry, and `tune`, its CLI and benchmarks/bench_adaptive.py read it.

Each module declares NAME, DESCRIPTION (the test it makes, for the result line), FIRST (rounds before
the first test, by default) and `replay(values, *, first, max_rounds, margin, confidence, simplicity,
affordable) -> RaceState`: the race's state given values[candidate] = [run 0, run 1, …].
"""

from __future__ import annotations

from types import ModuleType

from ...registry import modules_of

RULES: dict[str, ModuleType] = modules_of(__name__, __path__)
DEFAULT_RULE = "model"
