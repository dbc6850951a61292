"""Transport selection: exact points, interpolation, extrapolation, ties, confidence, CLI, --apply."""

from __future__ import annotations

import json
import re
import os

import numpy as np
import pytest

from synthetic_store import add_link, add_run, build, build_flagged
from tcpprofile.measure import ping
from tcpprofile.choose import select as sel
from tcpprofile.cli import main
from tcpprofile.hostcheck import apply, probe
from tcpprofile.errors import TcpProfileError, ValidationError
from tcpprofile.store import Store

G = 1e9


def _store_from(points: dict) -> Store:
    """points: {(variant, streams, buffer, cc_impl): {rtt_ms: [throughputs]}}."""
    s = Store.open(":memory:")
    s.insert_campaign({"campaign_id": "c1", "name": "t", "mode": "emulated"})
    rtts = sorted({r for prof in points.values() for r in prof})
    for r in rtts:
        add_link(s, f"L{r:g}", r)
    for (v, n, b, impl), prof in points.items():
        for r, values in prof.items():
            for i, x in enumerate(values):
                add_run(s, f"{v}-{n}-{b}-{r:g}-{i}", f"L{r:g}", v, n, b, x, rep=i, cc_impl=impl)
    return s


def _select(store, rtt, **kw):
    return sel.select(sel.load_profiles(store), rtt, n_boot=kw.pop("n_boot", 2000), **kw)


ONE = {("cubic", 1, None, "builtin"): {10.0: [8 * G, 9 * G, 10 * G], 30.0: [4 * G, 5 * G, 6 * G]}}


def test_exact_point_within_tolerance():
    est = _select(_store_from(ONE), 10.05e-3).best   # within max(1 %, 0.1 ms) of 10 ms
    assert est.method == "exact" and est.rtts_ms == [10.0] and est.repetitions == [3]
    assert est.throughput_bps == pytest.approx(9 * G)
    # Student t with 2 df: 9 ± t(0.975, 2)·s/√3, s = 1 Gbit/s (t = 4.3027; wider than the data's range,
    # which a bootstrap of three values never is); its top, 11.48 Gbit/s, is beyond the 10 Gbit/s link:
    # clipped there and said so
    half = 4.302653 / 3 ** 0.5 * G
    assert (est.ci_low_bps, est.ci_high_bps) == pytest.approx((9 * G - half, 10 * G), rel=1e-6)
    assert est.ci_clipped and est.ceiling_bps == 10 * G


def test_interpolation_between_bracketing_rtts_hand_computed():
    est = _select(_store_from(ONE), 15.0e-3).best
    # w_lo = (30 − 15)/(30 − 10) = 0.75;  0.75·9 + 0.25·5 = 8.0 Gbit/s
    assert est.method == "interpolated" and est.weights == pytest.approx([0.75, 0.25])
    assert est.throughput_bps == pytest.approx(8.0 * G)
    # variance 0.75²·1/3 + 0.25²·1/3 (Gbit/s)², Welch–Satterthwaite df = v²/Σ(v_k²/2) ≈ 2.439
    from scipy import stats
    v1, v2 = 0.75**2 / 3, 0.25**2 / 3
    df = (v1 + v2) ** 2 / (v1**2 / 2 + v2**2 / 2)
    half = stats.t.ppf(0.975, df) * (v1 + v2) ** 0.5 * G
    assert (est.ci_low_bps, est.ci_high_bps) == pytest.approx((8 * G - half, 8 * G + half), rel=1e-6)


def test_extrapolation_refused_then_model_backed_and_flagged():
    prof = {t: [v * G * f for f in (0.98, 1.0, 1.02)] for t, v in ((10.0, 9.0), (20.0, 8.0), (40.0, 5.0), (80.0, 2.5))}
    store = _store_from({("cubic", 1, None, "builtin"): prof})
    with pytest.raises(TcpProfileError, match=r"outside the measured RTTs 10–80 ms.*--extrapolate"):
        _select(store, 120.0e-3)
    choice = _select(store, 120.0e-3, extrapolate=True)
    est = choice.best
    assert est.method == "extrapolated" and "CUBIC" in est.model and est.weights == []
    # the same fit through tcpprofile.models directly: the default (validated) configuration, 10 s runs in the
    # duration mode, β the links' configured 50 MB
    from tcpprofile.models.configurations import DEFAULT_CONFIGURATION
    from tcpprofile.models.extrapolate import extrapolate
    (p,) = sel.load_profiles(store).profiles     # τ as the store gives it (TAU_MS_SQL)
    ex = extrapolate("cubic", 10e9, np.asarray(p.rtts_ms) / 1e3, p.means, 120.0 / 1e3, streams=1, duration_s=10.0,
                     buffer_at=lambda t: 50e6, config=DEFAULT_CONFIGURATION, level=0.95)
    assert est.throughput_bps == pytest.approx(ex.value_bps, rel=1e-9)
    assert f"model configuration {DEFAULT_CONFIGURATION}" in est.model and ex.fit.multiple == 1.0
    assert 0 < est.ci_low_bps <= est.throughput_bps <= est.ci_high_bps <= 10e9
    assert est.throughput_bps < 2.5 * G                  # beyond the last RTT the profile keeps falling
    assert choice.comparison.decision == "single"


def test_extrapolation_needs_three_rtts():
    with pytest.raises(TcpProfileError, match="at least 3 measured RTTs"):
        _select(_store_from(ONE), 50.0e-3, extrapolate=True)


def test_uncovered_configuration_is_left_out_with_reason():
    pts = {**ONE, ("htcp", 1, None, "builtin"): {10.0: [9.5 * G] * 3, 20.0: [9 * G] * 3}}
    choice = _select(_store_from(pts), 25.0e-3)
    assert [e.config.variant for e in choice.ranking] == ["cubic"]
    assert choice.excluded[0]["variant"] == "htcp" and "outside" in choice.excluded[0]["reason"]


def test_significant_winner_has_positive_difference_interval():
    pts = {("cubic", 1, None, "builtin"): {10.0: [5.0 * G, 5.1 * G, 4.9 * G, 5.05 * G]},
           ("htcp", 1, None, "builtin"): {10.0: [9.0 * G, 9.1 * G, 8.9 * G, 9.05 * G]}}
    choice = _select(_store_from(pts), 10.0e-3)
    c = choice.comparison
    assert choice.best.config.variant == "htcp" and choice.recommended is choice.best
    assert c.decision == "significant" and c.ci_low_bps > 0 and c.p_value < 0.01
    assert c.difference_bps == pytest.approx(4 * G)


def test_tie_prefers_fewer_streams():
    rng = np.random.default_rng(3)
    a = list(9 * G + 0.5 * G * rng.standard_normal(5))
    b = [x + 0.05 * G for x in a[::-1]]           # slightly higher mean, same spread
    pts = {("cubic", 1, None, "builtin"): {10.0: a}, ("cubic", 8, None, "builtin"): {10.0: b}}
    choice = _select(_store_from(pts), 10.0e-3)
    assert choice.best.config.streams == 8
    # an interval from below 0 to beyond the margin is not a tie shown: not separated (docs/select.md)
    assert choice.comparison.decision == "unresolved" and choice.comparison.ci_low_bps < 0 < choice.comparison.ci_high_bps
    assert choice.recommended.config.streams == 1


def test_tie_break_order():
    cfgs = [sel.Config("htcp", "bpf", 1, None), sel.Config("cubic", "builtin", 1, 1 << 20),
            sel.Config("cubic", "builtin", 1, None), sel.Config("cubic", "builtin", 2, None)]
    ordered = sorted(cfgs, key=sel.Config.simplicity)
    assert ordered == [cfgs[2], cfgs[0], cfgs[1], cfgs[3]]


def test_single_configuration_and_single_repetition():
    choice = _select(_store_from({("cubic", 2, None, "builtin"): {20.0: [7 * G]}}), 20.0e-3)
    assert choice.comparison.decision == "single" and choice.recommended.throughput_bps == 7 * G
    assert choice.best.ci_low_bps is None       # one repetition: no interval claimed


def test_interval_shrinks_as_repetitions_grow():
    # the same spread of repetitions (pattern tiled k times): the t width falls like t(df)·s/√n
    widths = []
    for k in (1, 4, 16):
        pattern = {10.0: [8 * G, 9 * G, 10 * G, 11 * G] * k, 40.0: [4 * G, 5 * G, 6 * G, 7 * G] * k}
        e = _select(_store_from({("cubic", 1, None, "builtin"): pattern}), 25.0e-3).best
        widths.append(e.ci_high_bps - e.ci_low_bps)
    assert widths[0] > widths[1] > widths[2]
    from scipy import stats

    def width(k):   # w = ½ at 25 ms; s² = 5k/(4k − 1) at both ends; Satterthwaite df = 2(4k − 1)
        n, s2 = 4 * k, 5 * k / (4 * k - 1)
        return 2 * stats.t.ppf(0.975, 2 * (n - 1)) * (0.25 * 2 * s2 / n) ** 0.5 * G
    assert widths == pytest.approx([width(1), width(4), width(16)], rel=1e-6)
    assert widths[2] / widths[0] < 0.25    # faster than 1/√n: the t quantile falls too


def test_incomparable_groups_are_refused_then_conditioned():
    s = _store_from(ONE)
    add_run(s, "big", "L10", "cubic", 1, None, 9.9 * G, transfer_bytes=20_000_000_000, duration_s=None)
    with pytest.raises(TcpProfileError, match="incomparable groups.*F=18.6GiB"):
        sel.load_profiles(s)
    ps = sel.load_profiles(s, conditions={"transfer_bytes": None, "duration_s": 10.0})
    assert ps.profiles[0].runs == 6


def test_measured_rtts_are_clustered_for_remote_links():
    s = Store.open(":memory:")
    for i, r in enumerate((20.01, 20.05, 19.98)):
        s.insert_link({"link_id": f"R{i}", "campaign_id": "c1", "kind": "remote", "rtt_measured_ms": r})
        add_run(s, f"r{i}", f"R{i}", "cubic", 1, None, (8 + i) * G)
    prof = sel.load_profiles(s).profiles[0]
    assert len(prof.rtts_ms) == 1 and prof.rtts_ms[0] == pytest.approx(20.0133, abs=1e-3)


def test_settings_builtin_vs_bpf():
    e = _select(_store_from(ONE), 10.0e-3).best
    st = sel.host_settings(e, 100.0e-3, 10e9, host="dtn.example")
    # autotuning: 2 × BDP = 2 · 10 Gbit/s · 0.1 s / 8 = 250 MB, rounded up to MiB
    assert st.sysctls["net.ipv4.tcp_rmem"].endswith(str(239 << 20))
    assert st.sysctls["net.ipv4.tcp_congestion_control"] == "cubic" and st.congestion_control["how"] == "sysctl"
    assert "iperf3 -c dtn.example -P 1 -C cubic" in st.commands
    bpf = _select(_store_from({("htcp", 4, 1 << 28, "bpf"): {10.0: [9 * G] * 2}}), 10.0e-3).best
    st = sel.host_settings(bpf, 10.0e-3, 10e9)
    assert "net.ipv4.tcp_congestion_control" not in st.sysctls
    assert st.congestion_control["how"] == "per-socket"
    assert "BPF port: `tcpprofile cc load htcp`, per socket only (iperf3 -C tp_htcp)" in st.congestion_control["steps"]
    assert st.sysctls["net.core.rmem_max"] == str(1 << 28) and any("-P 4 -w 268435456" in c for c in st.commands)


def test_parse_ping_summary():
    out = "--- x ping statistics ---\n3 packets transmitted\nrtt min/avg/max/mdev = 0.045/0.093/0.182/0.063 ms\n"
    assert ping.parse(out) == {"min_ms": 0.045, "avg_ms": 0.093, "max_ms": 0.182, "mdev_ms": 0.063}
    with pytest.raises(TcpProfileError, match="no RTT summary"):
        ping.parse("100% packet loss")


# -- CLI -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("select") / "s.duckdb"
    with Store.open(path) as s:
        build(s, variants=("cubic", "reno"), streams=(1, 4), rtts=(0.1, 11.8, 45.6, 91.6), reps=4)
    return str(path)


@pytest.mark.parametrize("argv, field", [
    ([], "--rtt"), (["--rtt", "10ms", "--host", "localhost"], "--rtt"), (["--rtt", "45"], "--rtt"),
    (["--rtt=-3ms"], "--rtt"), (["--rtt", "fast"], "--rtt"), (["--host=-oProxy"], "--host"),
    (["--rtt", "10ms", "--apply"], "--apply"), (["--rtt", "10ms", "--netns", "x"], "--netns"),
    (["--rtt", "10ms", "--loss", "sometimes"], "--loss"),
])
def test_cli_validation_names_the_field(db, capsys, argv, field):
    assert main(["select", "--db", db, *argv]) == 2
    assert f"{field}:" in capsys.readouterr().err


def test_cli_json_keys(db, capsys):
    assert main(["select", "--db", db, "--rtt", "30ms", "--json", "--top", "3", "--boot", "500"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"rtt_ms", "rtt_source", "ping", "conditions", "confidence", "n_boot", "seed", "ranking",
                        "excluded", "best", "runner_up", "comparison", "recommended", "tie_break", "settings",
                        "applied"}
    assert doc["rtt_ms"] == 30.0 and doc["rtt_source"] == "given" and len(doc["ranking"]) == 3
    top = doc["ranking"][0]
    assert top["method"] == "interpolated" and top["rtts_ms"] == [11.8, 45.6] and top["repetitions"] == [4, 4]
    assert top["ci_low_bps"] < top["throughput_bps"] < top["ci_high_bps"]
    # cubic n=4 leads reno n=4 by 0.24 Gbit/s, more than the 1 % margin (0.087), but its 95 % interval
    # [−0.04, 0.52] Gbit/s straddles the margin: neither shown better by more than it nor within it
    c = doc["comparison"]
    assert c["difference_bps"] > c["margin_bps"] and c["ci_low_bps"] < c["margin_bps"] < c["ci_high_bps"]
    assert c["decision"] == "unresolved" and doc["margin"] == 0.01
    assert doc["settings"]["sysctls"]["net.core.rmem_max"]


def test_cli_text_and_extrapolation_refusal(db, capsys):
    assert main(["select", "--db", db, "--rtt", "200ms"]) == 2
    err = capsys.readouterr().err
    assert "outside the measured RTTs" in err and err.count("outside") == 1 and "configuration" in err
    assert main(["select", "--db", db, "--rtt", "200ms", "--extrapolate", "--boot", "200", "--variants", "cubic",
                 "--streams", "1", "4"]) == 0
    out = capsys.readouterr().out
    assert "extrapolated" in out and "Recommended:" in out and "not applied unless --apply" in out


def on_path(tmp_path, monkeypatch, name: str, script: str) -> None:
    """A stand-in executable `name` (a shell script) first on PATH."""
    fake = tmp_path / "bin" / name
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")


def test_cli_host_pings_loopback(db, capsys):
    # the real ping: its RTT, whatever the host's load makes it, is the one select uses
    assert main(["select", "--db", db, "--host", "127.0.0.1", "--ping-count", "2", "--json", "--boot", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rtt_source"] == "ping" and doc["ping"]["host"] == "127.0.0.1" and doc["ping"]["count"] == 2
    assert 0 < doc["rtt_ms"] == doc["ping"]["min_ms"] < 20


@pytest.mark.parametrize("min_ms, method, rtts", [(0.19, "exact", [0.1]), (0.9, "interpolated", [0.1, 11.8])])
def test_cli_host_selects_at_pings_minimum(db, capsys, tmp_path, monkeypatch, min_ms, method, rtts):
    """A stand-in ping (iputils' summary line): its minimum within max(1 %, 0.1 ms) of the 0.1 ms
    profile is that profile (exact); 0.9 ms lies between 0.1 and 11.8 ms (interpolated)."""
    on_path(tmp_path, monkeypatch, "ping", f"""#!/bin/sh
echo "2 packets transmitted, 2 received, 0% packet loss, time 201ms"
echo "rtt min/avg/max/mdev = {min_ms:.3f}/{min_ms + 1:.3f}/{min_ms + 2:.3f}/1.000 ms"
""")
    assert main(["select", "--db", db, "--host", "127.0.0.1", "--ping-count", "2", "--json", "--boot", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ping"] == {"host": "127.0.0.1", "count": 2, "min_ms": min_ms, "avg_ms": min_ms + 1,
                           "max_ms": min_ms + 2, "mdev_ms": 1.0}
    assert doc["rtt_ms"] == min_ms
    top = doc["ranking"][0]
    assert (top["method"], top["rtts_ms"]) == (method, rtts)


@pytest.mark.privileged
def test_apply_in_namespace_reads_back(db, netns, capsys):
    before_cc = probe.read_sysctl("net.ipv4.tcp_congestion_control", netns=netns)
    host_rmem = probe.read_sysctl("net.ipv4.tcp_rmem")
    assert main(["select", "--db", db, "--rtt", "45.6ms", "--variants", "reno", "--json", "--boot", "200",
                 "--apply", "--netns", netns]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = doc["settings"]["sysctls"]
    applied = doc["applied"]
    assert applied["target"] == f"netns:{netns}"
    assert probe.read_sysctl("net.ipv4.tcp_rmem", netns=netns) == want["net.ipv4.tcp_rmem"]
    assert applied["sysctls"]["net.ipv4.tcp_wmem"]["after"] == want["net.ipv4.tcp_wmem"]
    assert set(applied["skipped"]) >= {"net.core.rmem_max", "net.core.wmem_max"}
    # reno is always allowed (tcp_reno.flags = TCP_CONG_NON_RESTRICTED, net/ipv4/tcp_cong.c): it is set
    assert "reno" in probe.read_sysctl("net.ipv4.tcp_allowed_congestion_control", netns=netns).split()
    assert probe.read_sysctl("net.ipv4.tcp_congestion_control", netns=netns) == "reno"
    assert applied["sysctls"]["net.ipv4.tcp_congestion_control"] == {"before": before_cc, "after": "reno"}
    assert probe.read_sysctl("net.ipv4.tcp_rmem") == host_rmem     # the host is untouched


@pytest.mark.privileged
def test_apply_never_sets_bpf_default(netns):
    bpf = _select(_store_from({("htcp", 2, None, "bpf"): {10.0: [9 * G] * 2}}), 10.0e-3).best
    before = probe.read_sysctl("net.ipv4.tcp_congestion_control", netns=netns)
    applied = apply.apply_settings(sel.host_settings(bpf, 10.0e-3, 10e9), netns=netns)
    assert "net.ipv4.tcp_congestion_control" not in applied["sysctls"]
    assert probe.read_sysctl("net.ipv4.tcp_congestion_control", netns=netns) == before


def test_apply_validates_target():
    st = sel.Settings({}, {}, [])
    with pytest.raises(ValidationError, match="--apply"):
        apply.apply_settings(st)
    with pytest.raises(ValidationError, match="--netns"):
        apply.apply_settings(st, netns="tcpp-none-such")


def test_extrapolation_without_a_model_is_refused():
    store = _store_from({("bbr", 1, None, "builtin"): {t: [5 * G] * 2 for t in (10.0, 20.0, 40.0)}})
    with pytest.raises(TcpProfileError, match="no model for bbr"):
        _select(store, 80.0e-3, extrapolate=True)


def test_apply_host_settings_reports_before_and_after(tmp_path, monkeypatch, capsys):
    """--apply --host-settings with a stand-in `sysctl` on PATH (a unit test must not change the host)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "net.ipv4.tcp_rmem").write_text("4096 131072 6291456")
    on_path(tmp_path, monkeypatch, "sysctl", f"""#!/bin/sh
if [ "$1" = "-n" ]; then cat "{state}/$2" 2>/dev/null || echo 0; exit 0; fi
if [ "$1" = "-w" ]; then k="${{2%%=*}}"; printf '%s' "${{2#*=}}" > "{state}/$k"; exit 0; fi
exit 1
""")
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        build(s, variants=("cubic",), streams=(2,), buffers=(64 << 20,), rtts=(10.0, 20.0), reps=2)
    assert main(["select", "--db", str(db), "--rtt", "15ms", "--apply", "--host-settings", "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "Applied in host:" in out
    assert f"net.ipv4.tcp_rmem: 4096 131072 6291456 -> 4096 131072 {64 << 20}" in out
    assert (state / "net.core.rmem_max").read_text() == str(64 << 20)
    assert (state / "net.ipv4.tcp_congestion_control").read_text() == "cubic"


def test_bdp_sized_link_buffers_form_one_profile():
    """A spec's buffer = "BDP" gives every RTT its own β; the profile still spans the RTTs."""
    s = Store.open(":memory:")
    for rtt in (10.0, 40.0):
        s.insert_link({"link_id": f"L{rtt:g}", "campaign_id": "c1", "kind": "emulated", "rate_bps": 1e9,
                       "rtt_ms": rtt, "buffer_bytes": int(1e9 * rtt / 1e3 / 8), "buffer_spec": "BDP",
                       "loss_mode": "none"})
        for i in range(2):
            add_run(s, f"r{rtt:g}-{i}", f"L{rtt:g}", "cubic", 1, None, (0.9 - rtt / 100 + 0.01 * i) * G)
    (prof,) = sel.load_profiles(s).profiles
    assert prof.rtts_ms == [10.0, 40.0]
    assert _select(s, 25.0e-3).best.method == "interpolated"


def test_different_link_buffers_are_different_groups():
    s = Store.open(":memory:")
    for spec_buf in ("50MB", "200MB"):
        s.insert_link({"link_id": spec_buf, "campaign_id": "c1", "kind": "emulated", "rate_bps": 1e9, "rtt_ms": 10.0,
                       "buffer_bytes": int(spec_buf[:-2]) * 10**6, "buffer_spec": spec_buf, "loss_mode": "none"})
        add_run(s, f"r{spec_buf}", spec_buf, "cubic", 1, None, 0.9 * G)
    with pytest.raises(TcpProfileError, match="incomparable groups.*β=200MB.*β=50MB|incomparable groups.*β=50MB.*β=200MB"):
        sel.load_profiles(s)
    (prof,) = sel.load_profiles(s, conditions={"link_buffer": "50MB"}).profiles
    assert prof.rtts_ms == [10.0]


def test_two_repetitions_a_tenth_of_a_percent_apart_are_not_assessed_but_go_to_the_simplest():
    """The issue's case: htcp n=4 at 9.113 vs cubic n=4 at 9.103 Gbit/s, two repetitions each. A 0.1 %
    lead is inside the 1 % margin: by the estimates it goes to the simpler (builtin) cubic; with two runs
    no interval is claimed (a t interval of 2 has 1 df), only the runs that would decide (a tie)."""
    pts = {("htcp", 4, None, "bpf"): {120.0: [9.110 * G, 9.116 * G]},
           ("cubic", 4, None, "builtin"): {120.0: [9.100 * G, 9.106 * G]}}
    choice = _select(_store_from(pts), 120.0e-3)
    c = choice.comparison
    assert choice.best.config.variant == "htcp" and c.decision == "insufficient"
    assert (c.ci_low_bps, c.ci_high_bps, c.p_value) == (None, None, None)
    assert choice.recommended.config.variant == "cubic"
    # s = 0.003·√2 Gbit/s each: the smallest k ≥ 3 with t(0.975, k−1)·√(2s²/k) < 0.0911 − 0.01 is 3
    assert c.decides_as == "tie" and c.runs_to_decide == 3
    strict = _select(_store_from(pts), 120.0e-3, margin=0.0)
    assert strict.recommended.config.variant == "htcp" and strict.comparison.decision == "insufficient"


def test_a_lead_beyond_the_margin_with_too_few_repetitions_is_not_assessed():
    pts = {("cubic", 1, None, "builtin"): {10.0: [9.0 * G, 9.6 * G]},
           ("cubic", 2, None, "builtin"): {10.0: [8.5 * G, 9.3 * G]}}
    choice = _select(_store_from(pts), 10.0e-3)
    c = choice.comparison
    assert c.decision == "insufficient" and c.difference_bps == pytest.approx(0.4 * G)
    assert all(e.ci_low_bps is None and e.too_few_runs for e in choice.ranking)


def test_cli_margin_is_validated(db, capsys):
    assert main(["select", "--db", db, "--rtt", "30ms", "--margin", "lots"]) == 2
    assert "--margin" in capsys.readouterr().err


# -- flagged runs (grouping.FLAGGED_SQL: one definition for analyze, select and report) ------------
def _flagged_store(path=":memory:") -> Store:
    s = Store.open(path)
    build_flagged(s)
    return s


def test_flagged_runs_are_counted_and_change_the_choice_only_when_included():
    s = _flagged_store()
    included = sel.select(sel.load_profiles(s), 10.0e-3)
    by = {e.config.variant: e for e in included.ranking}
    assert by["cubic"].repetitions == [4] and by["cubic"].flagged == [1]
    assert by["htcp"].repetitions == [4] and by["htcp"].flagged == [1]       # its run on the missed link
    assert by["cubic"].runs_flagged == 1 and by["htcp"].runs_flagged == 1
    assert by["cubic"].throughput_bps == pytest.approx((9.0 + 9.1 + 8.9 + 3.0) / 4 * G)   # 7.5
    assert included.best.config.variant == "htcp" and not included.exclude_flagged
    assert included.flagged_left_out == 0

    ps = sel.load_profiles(s, exclude_flagged=True)
    assert ps.flagged_left_out == 2
    excluded = sel.select(ps, 10.0e-3)
    by = {e.config.variant: e for e in excluded.ranking}
    assert by["cubic"].repetitions == [3] and by["cubic"].flagged == [0]
    assert by["cubic"].throughput_bps == pytest.approx(9.0 * G)
    assert by["htcp"].throughput_bps == pytest.approx(8.5 * G)
    assert excluded.best.config.variant == "cubic" and excluded.comparison.decision == "significant"
    assert excluded.to_json()["flagged_left_out"] == 2 and excluded.to_json()["exclude_flagged"] is True
    # at 30 ms nothing is flagged: the same estimate either way
    assert (sel.select(ps, 30.0e-3).best.throughput_bps
            == sel.select(sel.load_profiles(s), 30.0e-3).best.throughput_bps == pytest.approx(5.1 * G))


def test_select_and_analyze_flag_the_same_runs():
    from tcpprofile import analysis
    s = _flagged_store()
    runs = analysis.load_runs(s)
    flagged_by_analysis = {r for r, f in zip(runs.run_id, runs.flagged) if f}
    flagged_by_select = {rid for p in sel.load_profiles(s).profiles
                         for ids, fl in zip(p.run_ids, p.flagged) for rid, f in zip(ids, fl) if f}
    assert flagged_by_analysis == flagged_by_select == {"cubic-10-slow", "htcp-10-badlink"}
    assert len(analysis.load_runs(s, exclude_flagged=True)) == len(runs) - 2


def test_cli_shows_flagged_counts_and_leaves_them_out(tmp_path, capsys):
    path = tmp_path / "f.duckdb"
    _flagged_store(path).close()
    assert main(["select", "--db", str(path), "--rtt", "10ms"]) == 0
    out = capsys.readouterr().out
    assert "Flagged runs included: 2" in out and "unflagged/flagged" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line.strip()[:1].isdigit() and "n=1" in line}
    assert "3/1" in rows["htcp"].split() and "3/1" in rows["cubic"].split()   # unflagged/flagged at 10 ms
    assert "Recommended: htcp" in out
    assert main(["select", "--db", str(path), "--rtt", "10ms", "--exclude-flagged", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exclude_flagged"] is True and doc["flagged_left_out"] == 2
    assert doc["recommended"]["variant"] == "cubic" and doc["best"]["flagged"] == [0]
    assert main(["select", "--db", str(path), "--rtt", "10ms", "--exclude-flagged"]) == 0
    assert "Flagged runs left out (--exclude-flagged): 2." in capsys.readouterr().out


def _bidir_import(tmp_path) -> str:
    """The issue's store: an imported bidirectional test at 45.6 ms (links of kind 'unknown'), its
    forward runs at 9 Gbit/s, its reverse ones (stored as -R) at 4 Gbit/s, and 20 GB transfers forward."""
    path = str(tmp_path / "bidir.duckdb")
    with Store.open(path) as s:
        s.insert_campaign({"campaign_id": "c1", "name": "imported", "mode": "emulated"})
        s.insert_link({"link_id": "U", "campaign_id": "c1", "kind": "unknown", "rtt_ms": 45.6, "rate_bps": 10e9})
        for i in range(3):
            for reverse, thr in ((False, 9 * G), (True, 4 * G)):
                s.put_run({"run_id": f"{reverse}-{i}", "campaign_id": "c1", "link_id": "U", "variant": "cubic",
                           "cc_kernel_name": "cubic", "streams": 1, "duration_target_s": 10.0, "duration_s": 10.0,
                           "repetition": i, "status": "ok", "throughput_bps": thr + i * 0.01 * G,
                           "reverse": reverse})
        add_run(s, "big", "U", "cubic", 1, None, 9.9 * G, transfer_bytes=20_000_000_000, duration_s=None)
    return path


def test_incomparable_groups_name_the_flags_that_pick_each_and_forward_runs_are_selectable(tmp_path, capsys):
    db = _bidir_import(tmp_path)
    assert main(["select", "--db", db, "--rtt", "45.6ms", "--json"]) == 2
    err = capsys.readouterr().err
    assert "3 incomparable groups" in err
    groups = re.findall(r"\[\d\] ([^(]+) \((\d+) runs\): ([^;\n]+)", err)
    # the flags given for a group are exactly what `select` needs to pick it: each runs on its own
    picked = {}
    for words, n, flags in groups:
        assert main(["select", "--db", db, "--rtt", "45.6ms", "--json", *flags.split()]) == 0, (words, flags)
        doc = json.loads(capsys.readouterr().out)
        picked[flags] = (int(n), doc["ranking"][0]["throughput_bps"])
    assert picked == {"--duration 10s --forward": (3, pytest.approx(9.01 * G)),
                      "--duration 10s --reverse": (3, pytest.approx(4.01 * G)),
                      "--size 20000000000B --forward": (1, pytest.approx(9.9 * G))}
    assert "duration=10s loss=none C=10Gbit/s forward unknown links" in err
    # forward alone still spans the 20 GB transfers and the 10 s runs; --forward and --reverse exclude each other
    assert main(["select", "--db", db, "--rtt", "45.6ms", "--forward"]) == 2
    assert "2 incomparable groups" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["select", "--db", db, "--rtt", "45.6ms", "--forward", "--reverse"])
