"""hostcheck: fasterdata's targets, the raise-only comparison (a property over random current values), the
sysctl.d snippet, fq pacing, and the advice select/tune print through the same code."""

from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synthetic_store import add_link, add_run
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.hostcheck import rules, transport
from tcpprofile.store import Store

G = 1e9
MIB = 1 << 20
SMALL = {"net.core.rmem_max": "212992", "net.core.wmem_max": "212992", "net.ipv4.tcp_rmem": "4096 131072 6291456",
         "net.ipv4.tcp_wmem": "4096 16384 4194304", "net.ipv4.tcp_mem": "22000 29000 44000",
         "net.ipv4.tcp_no_metrics_save": "0", "net.ipv4.tcp_mtu_probing": "0", "net.core.default_qdisc": "pfifo_fast",
         "net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_allowed_congestion_control": "reno cubic"}
TUNED = {**SMALL, "net.core.rmem_max": str(1 << 30), "net.core.wmem_max": str(1 << 30),
         "net.ipv4.tcp_rmem": f"8192 262144 {1 << 30}", "net.ipv4.tcp_wmem": f"8192 65536 {1 << 30}",
         "net.ipv4.tcp_mem": "3000000 4000000 6000000", "net.ipv4.tcp_no_metrics_save": "1",
         "net.ipv4.tcp_mtu_probing": "2", "net.core.default_qdisc": "fq"}


def test_targets_follow_fasterdata():
    t = rules.targets(0.1, 10 * G, streams=4)
    # 2 x BDP = 2 * 10 Gbit/s * 0.1 s / 8 = 250 MB, rounded up to whole MiB: 239 MiB
    assert t["net.core.rmem_max"].minimum == (239 * MIB,) and t["net.core.rmem_max"].host_wide
    assert t["net.ipv4.tcp_rmem"].minimum == (4096, 131072, 239 * MIB)
    assert t["net.ipv4.tcp_wmem"].minimum == (4096, 16384, 239 * MIB)
    # tcp_mem in 4096-B pages: 4 streams x (send + receive) x 239 MiB
    assert t["net.ipv4.tcp_mem"].minimum == (0, 4 * 2 * 239 * 256, 4 * 2 * 239 * 256)
    assert "net.core.default_qdisc" not in t          # only where the kernel has fq
    assert rules.targets(0.1, 10 * G, fq=True)["net.core.default_qdisc"].minimum == "fq"
    # 100 Gbit/s x 200 ms: 5 GB, capped at INT_MAX (fasterdata's 2 GiB maxima for 100G paths)
    assert rules.buffer_target(0.2, 100 * G) == 2**31 - 1
    assert rules.buffer_target(0.1e-3, 10 * G) == 4 * MIB and rules.buffer_target(0.05, 10 * G, 1 << 28) == 1 << 28


fields = st.integers(min_value=0, max_value=2**31 - 1)


@settings(max_examples=300, deadline=None)
@given(rmem=st.tuples(fields, fields, fields), single=fields, probing=st.integers(0, 2),
       rtt=st.floats(0.01e-3, 1.0), gbit=st.floats(0.01, 400.0), streams=st.integers(1, 64))
def test_never_lowers_any_value(rmem, single, probing, rtt, gbit, streams):
    current = {"net.ipv4.tcp_rmem": " ".join(map(str, rmem)), "net.ipv4.tcp_wmem": " ".join(map(str, rmem)),
               "net.ipv4.tcp_mem": " ".join(map(str, rmem)), "net.core.rmem_max": str(single),
               "net.core.wmem_max": str(single), "net.ipv4.tcp_no_metrics_save": str(probing % 2),
               "net.ipv4.tcp_mtu_probing": str(probing)}
    wanted = rules.targets(rtt, gbit * G, streams=streams)
    rows = rules.check(current, wanted)
    for r in rows:
        now = [int(x) for x in current[r.key].split()]
        want = wanted[r.key].minimum
        if r.status == "ok":
            assert all(c >= m for c, m in zip(now, want))
            continue
        assert r.status == "raise"
        new = [int(x) for x in r.value.split()]
        assert all(n >= c for n, c in zip(new, now))                       # nothing lowered
        assert all(n == max(c, m) for n, c, m in zip(new, now, want))      # fields at or above: kept
    lines = [x for x in rules.snippet(rows) if not x.startswith("#")]
    for line in lines:                                                     # the snippet too
        key, _, value = line.partition(" = ")
        assert all(int(n) >= int(c) for n, c in zip(value.split(), current[key].split()))


def test_snippet_raises_only_the_fields_below():
    rows = rules.check({"net.ipv4.tcp_rmem": "8192 87380 6291456", "net.core.rmem_max": str(1 << 30)},
                       {k: v for k, v in rules.targets(0.1, 10 * G).items()
                        if k in ("net.ipv4.tcp_rmem", "net.core.rmem_max")})
    assert [(r.key, r.status, r.value) for r in rows] == [
        ("net.core.rmem_max", "ok", None), ("net.ipv4.tcp_rmem", "raise", f"8192 131072 {239 * MIB}")]
    text = rules.snippet(rows)
    assert text[0].startswith("# /etc/sysctl.d/90-tcpprofile.conf") and text[-1] == "# then load it: sysctl --system"
    assert f"net.ipv4.tcp_rmem = 8192 131072 {239 * MIB}" in text and not any("rmem_max =" in x for x in text)
    # unreadable: a triple whose target leaves fields open cannot be written, and says so
    (mem,) = rules.check({}, {"net.ipv4.tcp_mem": rules.targets(1e-3, G)["net.ipv4.tcp_mem"]})
    assert mem.status == "unknown" and "could not be read" in rules.snippet([mem])[1]


def test_pacing_only_where_the_kernel_has_fq():
    # fasterdata DTN tuning: 10G NIC, 4 streams -> 2 Gbit/s per flow (0.8 x C / n)
    lines = rules.pacing(10 * G, 4, True, ["eth0"])
    assert lines[0] == "tc qdisc replace dev eth0 root fq maxrate 2gbit" and "--fq-rate 2G" in lines[1]
    assert rules.pacing(10 * G, 3, True, ["eth0"])[0].endswith("maxrate 2666mbit")
    (no,) = rules.pacing(10 * G, 4, False, ["eth0"])
    assert "no fq" in no and "tc qdisc replace" not in no


def test_interface_advice_only_raises():
    ifaces = [{"name": "eth0", "mtu": 1500, "txqueuelen": 1000, "offloads": {"tso": True, "gro": False}},
              {"name": "eth1", "mtu": 9000, "txqueuelen": 20000, "offloads": {"tso": True}}]
    assert rules.interface_advice(ifaces) == [
        "eth0: MTU 1500: ip link set dev eth0 mtu 9000, only if every hop of the path carries 9000-byte frames "
        "(then tcp_mtu_probing = 1 covers a black hole)",
        "eth0: txqueuelen 1000: ip link set dev eth0 txqueuelen 10000", "eth0: gro off: ethtool -K eth0 gro on"]


def test_transport_plan_names_the_way_to_get_the_variant():
    bpf = transport.plan("htcp", "bpf", "tp_htcp", streams=4, buffer_bytes=None)
    assert bpf["how"] == "per-socket" and bpf["default"] is None
    assert bpf["steps"][0] == "BPF port: `tcpprofile cc load htcp`, per socket only (iperf3 -C tp_htcp)"
    assert any(s.startswith("or the kernel's own module: modprobe tcp_htcp") for s in bpf["steps"])
    assert bpf["commands"] == ["iperf3 -c HOST -P 4 -C tp_htcp", "iperf -c HOST -P 4 -Z tp_htcp"]
    mod = transport.plan("htcp", "module", "htcp", streams=4, buffer_bytes=1 << 28, host="dtn")
    assert mod["steps"][0] == "modprobe tcp_htcp" and mod["default"] == "htcp"
    assert mod["steps"][1].startswith("echo tcp_htcp > /etc/modules-load.d/")     # and at every boot
    assert mod["commands"][2].startswith("globus-url-copy -p 4 -tcp-bs 268435456 -cc 1 SRC_URL DST_URL")
    assert mod["commands"][3].startswith("globus transfer --perf-p 4 --perf-cc 1 ")


# -- the commands, against a stand-in `sysctl` (a unit test must not read or change the host's values) --------
@pytest.fixture
def fake_sysctl(tmp_path, monkeypatch):
    """`sysctl -n KEY` / `sysctl -w KEY=VALUE` on files under a state folder; returns a function to fill it."""
    state = tmp_path / "sysctl-state"
    state.mkdir()
    script = tmp_path / "bin" / "sysctl"
    script.parent.mkdir()
    script.write_text(f"""#!{sys.executable}
import pathlib, sys
state = pathlib.Path({str(state)!r})
flag, arg = sys.argv[1], sys.argv[2]
if flag == "-n":
    path = state / arg
    if not path.exists():
        sys.exit(f"sysctl: cannot stat {{arg}}")
    print(path.read_text())
elif flag == "-w":
    key, _, value = arg.partition("=")
    (state / key).write_text(value)
else:
    sys.exit(1)
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}:{os.environ['PATH']}")

    def fill(values: dict[str, str]) -> object:
        for k, v in values.items():
            (state / k).write_text(v)
        return state
    return fill


@pytest.fixture
def bpf_htcp_db(tmp_path):
    """A store whose best configuration at 11.8 ms is the BPF port of H-TCP, 4 streams, autotuning."""
    path = tmp_path / "htcp.duckdb"
    with Store.open(path) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
        for r in (11.8, 45.6):
            add_link(s, f"L{r:g}", r)
            for i, x in enumerate((9.0, 9.1, 8.9)):
                add_run(s, f"h-{r:g}-{i}", f"L{r:g}", "htcp", 4, None, x * G / (1 + r / 100), rep=i, cc_impl="bpf")
    return str(path)


def _tools(out: str) -> list[str]:
    return out.split("Transfer tools:\n", 1)[1].splitlines()


def test_select_bpf_variant_names_how_to_get_it_and_no_globus_line(bpf_htcp_db, fake_sysctl, capsys):
    """Stumble: at 11.8 ms select recommended tp_htcp and printed a globus-url-copy line, which cannot select a
    per-socket BPF algorithm; the kernel's own H-TCP module was not mentioned."""
    fake_sysctl(SMALL)
    assert main(["select", "--db", bpf_htcp_db, "--rtt", "11.8ms"]) == 0
    out = capsys.readouterr().out
    assert "  BPF port: `tcpprofile cc load htcp`, per socket only (iperf3 -C tp_htcp)\n" in out
    assert "  or the kernel's own module: modprobe tcp_htcp, then net.ipv4.tcp_congestion_control = htcp" in out
    assert _tools(out) == ["  iperf3 -c HOST -P 4 -C tp_htcp", "  iperf -c HOST -P 4 -Z tp_htcp"]
    assert "globus-url-copy -p" not in out and "globus transfer" not in out


def test_select_never_prints_a_lowering_line(bpf_htcp_db, fake_sysctl, capsys):
    """Stumble: select's `sysctl -w` lines were sized to one RTT (11.8 ms: 29 MiB) and would lower a host tuned
    higher (1 GiB); there was no /etc/sysctl.d form, no tcp_mtu_probing, no tcp_no_metrics_save."""
    fake_sysctl(TUNED)
    assert main(["select", "--db", bpf_htcp_db, "--rtt", "11.8ms", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["snippet"][1] == "# nothing to raise: every key is at or above its target"
    assert {r["status"] for r in doc["settings"]["host"]} == {"ok"}
    fake_sysctl(SMALL)
    assert main(["select", "--db", bpf_htcp_db, "--rtt", "11.8ms"]) == 0
    out = capsys.readouterr().out
    assert "sysctl -w" not in out and "# then load it: sysctl --system" in out
    assert "  net.ipv4.tcp_rmem = 4096 131072 30408704\n" in out      # 2 x BDP(11.8 ms) = 29 MiB > 6 MiB
    assert "  net.ipv4.tcp_mtu_probing = 1\n" in out and "  net.ipv4.tcp_no_metrics_save = 1\n" in out


def test_apply_never_lowers(bpf_htcp_db, fake_sysctl, capsys):
    """Stumble (apply_settings): --apply wrote the one-RTT values over a host tuned higher."""
    state = fake_sysctl({**TUNED, "net.ipv4.tcp_wmem": "4096 16384 4194304"})
    assert main(["select", "--db", bpf_htcp_db, "--rtt", "11.8ms", "--apply", "--host-settings", "--json"]) == 0
    applied = json.loads(capsys.readouterr().out)["applied"]
    assert (state / "net.ipv4.tcp_rmem").read_text() == f"8192 262144 {1 << 30}"
    assert (state / "net.core.rmem_max").read_text() == str(1 << 30)
    assert applied["skipped"]["net.ipv4.tcp_rmem"] == (f"already 8192 262144 {1 << 30} (at or above 4096 131072 "
                                                       f"30408704): never lowered")
    assert applied["sysctls"] == {"net.ipv4.tcp_wmem": {"before": "4096 16384 4194304",
                                                        "after": "4096 16384 30408704"}}
    assert (state / "net.ipv4.tcp_congestion_control").read_text() == "cubic"    # a BPF port is never the default


def test_select_kernel_variant_prints_the_globus_lines(tmp_path, fake_sysctl, capsys):
    fake_sysctl(SMALL)
    db = tmp_path / "c.duckdb"
    with Store.open(db) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
        add_link(s, "L10", 10.0)
        for i in range(3):
            add_run(s, f"c{i}", "L10", "cubic", 2, 1 << 26, (9 + 0.1 * i) * G, rep=i)
    assert main(["select", "--db", str(db), "--rtt", "10ms"]) == 0
    tools = _tools(capsys.readouterr().out)
    assert tools[2] == ("  globus-url-copy -p 2 -tcp-bs 67108864 -cc 1 SRC_URL DST_URL   "
                        "(the sending host's default: cubic)")
    assert tools[3].startswith("  globus transfer --perf-p 2 --perf-cc 1 SRC_ENDPOINT:PATH DST_ENDPOINT:PATH")


@pytest.mark.parametrize("argv, field", [
    (["--rtt", "100"], "--rtt"), (["--rtt", "150ms..10ms"], "--rtt"), (["--rtt", "100ms", "--rate", "0"], "--rate"),
    (["--rtt", "100ms", "--rate", "fast"], "--rate"), (["--rtt", "100ms", "--streams", "0"], "--streams"),
    (["--rtt", "100ms", "--buffer", "lots"], "--buffer"), (["--rtt", "100ms", "--netns", "tcpp-none-such"], "--netns"),
    (["--rtt", "100ms", "--dev", "tcpp-no-dev"], "--dev"),
])
def test_hostcheck_validation_names_the_field(capsys, argv, field):
    assert main(["hostcheck", *argv]) == 2
    assert f"tcpprofile hostcheck: {field}:" in capsys.readouterr().err


def test_hostcheck_raises_small_limits_and_leaves_a_tuned_host(fake_sysctl, capsys):
    fake_sysctl(SMALL)
    assert main(["hostcheck", "--rtt", "1ms..100ms", "--rate", "10Gbit", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rows = {r["key"]: r for r in doc["sysctls"]}
    assert doc["path"]["buffer_target_bytes"] == 239 * MIB and doc["path"]["rtt_ms"] == [1.0, 100.0]
    assert rows["net.ipv4.tcp_rmem"]["value"] == f"4096 131072 {239 * MIB}"
    assert rows["net.core.wmem_max"]["value"] == str(239 * MIB) and rows["net.core.wmem_max"]["host_wide"]
    assert rows["net.ipv4.tcp_mem"]["value"] == f"22000 {2 * 239 * 256} {2 * 239 * 256}"
    assert f"net.ipv4.tcp_rmem = 4096 131072 {239 * MIB}" in doc["snippet"]
    fake_sysctl(TUNED)
    assert main(["hostcheck", "--rtt", "1ms..100ms"]) == 0
    out = capsys.readouterr().out
    assert "# nothing to raise: every key is at or above its target" in out
    assert not [x for x in out.splitlines() if " = " in x and not x.startswith(("#", " "))]


def test_tune_prints_its_winner_through_the_same_code(tmp_path, fake_sysctl, monkeypatch, capsys):
    """tune's settings block is select's: a BPF winner gets the BPF-port step and no Globus line; a host tuned
    above keeps its values (the race itself is stood in for: its result is the only input)."""
    from tcpprofile.choose import tune
    from tcpprofile.store import reads

    chosen = {"variant": "htcp", "streams": 4, "socket_buffer_bytes": None, "mean_bps": 9e9, "ci_low_bps": 8.9e9,
              "ci_high_bps": 9.1e9, "ok_runs": 10}
    result = tune.TuneResult("c1", chosen, "shown", 10, [chosen], 400.0, None, 1200.0, 40)
    monkeypatch.setattr(tune, "tune", lambda *a, **k: result)
    monkeypatch.setattr(tune, "format_result", lambda *a, **k: "race done")
    monkeypatch.setattr(reads, "variant_kernel", lambda *a: {"k": "tp_htcp", "i": "bpf"})
    fake_sysctl(TUNED)
    assert main(["tune", "--db", str(tmp_path / "t.duckdb"), "--rtt", "87ms", "--variants", "htcp"]) == 0
    out = capsys.readouterr().out
    assert "  BPF port: `tcpprofile cc load htcp`, per socket only (iperf3 -C tp_htcp)\n" in out
    assert _tools(out)[:2] == ["  iperf3 -c HOST -P 4 -C tp_htcp", "  iperf -c HOST -P 4 -Z tp_htcp"]
    assert "globus-url-copy -p" not in out and "# nothing to raise: every key is at or above its target" in out
