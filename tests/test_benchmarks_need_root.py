"""Benchmarks that need root fail loudly without it: exit status 2 and FAILED on stderr, nothing
printed as a result, so that `make bench` cannot be green having measured nothing."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
NEED_ROOT = ["bench_cluster", "bench_cpu_plan", "bench_link", "contention_pair", "bench_trace", "check_long_fat", "check_rtt_targets", "stall_dose",
             "westwood_trace"]
ARGS = {"westwood_trace": ["record", "--rtt", "45.6ms", "--out", "trace.json.gz"]}   # its measuring subcommand


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # a dataclass in it looks its module up while the module runs
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NEED_ROOT)
def test_a_benchmark_that_needs_root_exits_2_without_it(name, monkeypatch, capsys):
    module = load(name)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)   # an ordinary user
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *ARGS.get(name, [])])
    assert module.main() == 2
    out, err = capsys.readouterr()
    assert f"{name}: FAILED" in err and ("without root" in err or "needs root" in err), err
    assert out == ""                                    # no table, no "skipped", no figures


def test_every_benchmark_that_checks_for_root_is_listed():
    checks = {p.stem for p in BENCHMARKS.glob("*.py") if "geteuid" in p.read_text()}
    assert checks == set(NEED_ROOT)
