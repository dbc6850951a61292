"""Facts stated once: which variants the kernel alone provides, and the names a variant goes by, come from
cc/registry.py; every Student-t interval is decide.t_interval."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tcpprofile.choose import decide, select
from tcpprofile.cc import registry
from tcpprofile.reproduce import stats

SRC = Path(__file__).resolve().parents[1] / "src" / "tcpprofile"
# The modules that choose, model, report and reproduce: they ask cc/ rather than restate its table.
CONSUMERS = [SRC / "choose" / "select.py", *sorted((SRC / "models").rglob("*.py")),
             *sorted((SRC / "report").rglob("*.py")), *sorted((SRC / "reproduce").rglob("*.py"))]
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
    """Fails on the old code: select.BUILTIN_VARIANTS = ("reno", "cubic", "bbr"), reproduce/findings.py's
    ("cubic", "htcp", "scalable", "stcp") and ("scalable", "stcp"), models/registry.py's "stcp": STCP."""
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


@pytest.mark.parametrize("value, se, df, confidence", [
    (9.4e9, 0.05e9, 2.0, 0.95),          # three runs
    (-0.3, 0.12, 7.63, 0.90),            # a Welch–Satterthwaite df
    (183.0, 4.0, 40.0, 0.983),           # a standard campaign's level (reproduce/levels.py)
])
def test_t_interval_is_scipys(value, se, df, confidence):
    lo, hi = decide.t_interval(value, se, df, confidence)
    want = sps.t.interval(confidence, df, loc=value, scale=se)
    assert lo == pytest.approx(want[0], rel=1e-12, abs=1e-12 * se)
    assert hi == pytest.approx(want[1], rel=1e-12, abs=1e-12 * se)
    assert hi - lo > 2 * sps.norm.ppf(0.5 + confidence / 2) * se   # wider than the normal interval


def test_select_and_reproduce_give_the_same_welch_interval():
    """One Welch cell in reproduce/stats.py and decide.difference of two means: the same numbers (both call
    decide.t_interval), and the same as the textbook Welch interval."""
    a, b = np.array([9.41, 9.38, 9.45, 9.40]), np.array([9.12, 9.30, 9.21])
    iv = stats.mean_difference([a], [b], level=0.95)
    d = decide.difference(decide.mean_of(a), decide.mean_of(b))
    assert (iv.low, iv.high) == pytest.approx(d.interval(0.95), rel=1e-14)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert (iv.low, iv.high) == pytest.approx((a.mean() - b.mean() - half, a.mean() - b.mean() + half), rel=1e-12)
    lc = stats.linear_combination([1.0, -1.0], [a, b], level=0.95)
    assert (lc.low, lc.high) == pytest.approx((iv.low, iv.high), rel=1e-14)


def test_the_payload_ceiling_is_stated_once():
    """C·MSS/(MTU + 38): 10 Gbit/s at MTU 1500 carries 10e9·1448/1538 bit/s of TCP payload, MTU 9000
    10e9·8948/9038; the link, the calibration and the racing priors use packet_overhead's functions, and
    the calibration's inverse gives the line rate back. Fails if a module restates the 38 or the 52."""
    from tcpprofile import packet_overhead as po
    from tcpprofile.testbed.config import LinkConfig
    assert po.goodput_ceiling_bps(10e9, 1500) == pytest.approx(10e9 * 1448 / 1538, rel=1e-15)
    assert po.goodput_ceiling_bps(10e9, 9000) == pytest.approx(10e9 * 8948 / 9038, rel=1e-15)
    for mtu in (576, 1500, 9000):
        assert po.line_rate_bps(po.goodput_ceiling_bps(1e9, mtu), mtu) == pytest.approx(1e9, rel=1e-12)
    cfg = LinkConfig(rate_bps=10e9, rtt_s=0.01, buffer_bytes=12_500_000, mtu=9000)
    assert cfg.goodput_ceiling_bps == po.goodput_ceiling_bps(10e9, 9000) and cfg.mss_bytes == 8948
    restated = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "packet_overhead.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                for side in (node.left, node.right):
                    if isinstance(side, ast.Name) and side.id in ("ETH_WIRE_OVERHEAD", "TCP_IP_HEADERS") \
                            or isinstance(side, ast.Constant) and side.value in (38, 52):
                        restated.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not restated, restated
