"""Facts stated once: which variants the kernel alone provides, and the names a variant goes by, come from
cc/registry.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tcpprofile import select
from tcpprofile.cc import registry

SRC = Path(__file__).resolve().parents[1] / "src" / "tcpprofile"
# The modules that choose, report and reproduce: they ask cc/ rather than restate its table.
CONSUMERS = [SRC / "select.py", *sorted((SRC / "report").rglob("*.py")), *sorted((SRC / "reproduce").rglob("*.py"))]
KERNEL_ONLY = {"reno", "cubic", "bbr"}   # the variants with no port in bpf/ (tests/test_cc_registry.py)


def _restated(path: Path) -> list[str]:
    """Literals in `path` that restate cc/'s table: a tuple/list/set of exactly the kernel-only variants,
    or an alias of a usual name spelled as a name (lower case; "STCP" in a label is prose)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if names == KERNEL_ONLY:
                found.append(f"{path.name}:{node.lineno}: {sorted(names)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in registry.ALIASES:
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_select_report_and_reproduce_take_variant_facts_from_cc():
    """Fails on the old code: select.BUILTIN_VARIANTS = ("reno", "cubic", "bbr") and reproduce/findings.py's
    ("cubic", "htcp", "scalable", "stcp") and ("scalable", "stcp")."""
    assert not hasattr(select, "BUILTIN_VARIANTS")
    assert [r for p in CONSUMERS for r in _restated(p)] == []


def test_cc_says_which_runs_without_a_record_used_the_kernels_own_code():
    assert [n for n in registry.NAMES if registry.implementation_of(n, None) == "builtin"] == ["reno", "cubic", "bbr"]
    assert registry.implementation_of("htcp", "") == "" and registry.implementation_of("nosuch", None) == ""
    assert registry.implementation_of("cubic", "bpf") == "bpf"       # a record wins over the table
    assert registry.spellings("scalable") == ("scalable", "stcp") and registry.spellings("cubic") == ("cubic",)
    # select's tie-break and its settings read the same fact: a run without a record of cubic is the kernel's
    assert select.Config("cubic", "", 1, None).simplicity() < select.Config("htcp", "", 1, None).simplicity()
    assert select.Config("cubic", "", 1, None).simplicity() == select.Config("cubic", "builtin", 1, None).simplicity()
