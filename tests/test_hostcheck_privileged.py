"""hostcheck and apply_settings in a throwaway network namespace (the conftest fixture deletes it): the
namespace's own TCP limits are set small or high inside it, read back by hostcheck, and never lowered."""

from __future__ import annotations

import json
import subprocess

import pytest

from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.hostcheck import apply, probe

MIB = 1 << 20
pytestmark = pytest.mark.privileged


def _set(ns: str, **values: str) -> None:
    """Per-namespace sysctls (ip-sysctl.rst: tcp_rmem/wmem, tcp_mtu_probing... are per netns since 4.15)."""
    for key, value in values.items():
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"net.ipv4.{key}={value}"], check=True)


def _hostcheck(ns: str, capsys, *extra: str) -> tuple[int, dict]:
    rc = main(["hostcheck", "--netns", ns, "--rtt", "100ms", "--rate", "10Gbit", "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_small_namespace_limits_get_raising_advice(netns, capsys):
    _set(netns, tcp_rmem="4096 131072 1048576", tcp_wmem="4096 16384 1048576", tcp_mtu_probing="0",
         tcp_no_metrics_save="0")
    rc, doc = _hostcheck(netns, capsys)
    rows = {r["key"]: r for r in doc["sysctls"]}
    assert rc == 1 and doc["scope"] == f"netns:{netns}"
    # 10 Gbit/s x 100 ms: 2 x BDP = 250 MB -> 239 MiB
    r = rows["net.ipv4.tcp_rmem"]
    assert (r["current"], r["value"], r["status"]) == ("4096 131072 1048576", f"4096 131072 {239 * MIB}", "raise")
    assert rows["net.ipv4.tcp_wmem"]["value"] == f"4096 16384 {239 * MIB}"
    assert rows["net.ipv4.tcp_mtu_probing"]["value"] == "1" and rows["net.ipv4.tcp_no_metrics_save"]["value"] == "1"
    # tcp_mem is not visible inside the namespace on this kernel: the host's value is the one that applies
    assert rows["net.ipv4.tcp_mem"]["current"] == probe.read_sysctl("net.ipv4.tcp_mem")
    assert rows["net.ipv4.tcp_mem"]["host_wide"] and rows["net.core.rmem_max"]["host_wide"]
    if rows["net.core.rmem_max"]["status"] == "raise":
        i = doc["snippet"].index(f"net.core.rmem_max = {239 * MIB}")
        assert doc["snippet"][i - 1].endswith("[host-wide: set it on the host, not inside the namespace]")
    # hostcheck only reads
    assert probe.read_sysctl("net.ipv4.tcp_rmem", netns=netns) == "4096 131072 1048576"


def test_namespace_tuned_above_gets_no_lowering_line(netns, capsys):
    high = f"4096 131072 {1 << 30}"
    _set(netns, tcp_rmem=high, tcp_wmem=high, tcp_mtu_probing="2", tcp_no_metrics_save="1")
    _, doc = _hostcheck(netns, capsys)
    rows = {r["key"]: r for r in doc["sysctls"]}
    for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_no_metrics_save"):
        assert rows[key]["status"] == "ok" and rows[key]["value"] is None
        assert not any(line.startswith(f"{key} =") for line in doc["snippet"])
    for line in doc["snippet"]:
        if not line.startswith("#"):
            key, _, value = line.partition(" = ")
            assert all(int(n) >= int(c) for n, c in zip(value.split(), rows[key]["current"].split()))


def test_apply_in_namespace_never_lowers(netns):
    _set(netns, tcp_rmem=f"4096 131072 {1 << 30}", tcp_wmem="4096 16384 1048576")
    cfg = sel.Config("reno", "builtin", 2, None)
    est = sel.Estimate(cfg, 9e9, 8.9e9, 9.1e9, "exact", [11.8e-3], [1.0], [3], 3, None, kernel_name="reno")
    applied = apply.apply_settings(sel.host_settings(est, 11.8e-3, 10e9), netns=netns)
    assert probe.read_sysctl("net.ipv4.tcp_rmem", netns=netns) == f"4096 131072 {1 << 30}"     # kept
    assert "never lowered" in applied["skipped"]["net.ipv4.tcp_rmem"]
    # 2 x BDP(11.8 ms) = 29.5 MB -> 29 MiB: the small one is raised, field by field
    assert probe.read_sysctl("net.ipv4.tcp_wmem", netns=netns) == f"4096 16384 {29 * MIB}"
    assert applied["sysctls"]["net.ipv4.tcp_wmem"] == {"before": "4096 16384 1048576",
                                                       "after": f"4096 16384 {29 * MIB}"}
    assert {"net.core.rmem_max", "net.ipv4.tcp_mem"} <= set(applied["skipped"])
