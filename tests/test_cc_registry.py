"""The catalogue: table, name validation, and load/unload read back from the kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcpprofile import cc
from tcpprofile.cc import bpf, registry
from tcpprofile.cli import main
from tcpprofile.errors import ValidationError


def test_table_lists_the_twelve_usual_names():
    assert cc.NAMES == ("reno", "cubic", "bbr", "htcp", "scalable", "highspeed", "bic", "illinois", "lp",
                        "westwood", "yeah", "vegas")
    ports = {n for n, v in cc.VARIANTS.items() if v.bpf}
    assert ports == set(cc.NAMES) - {"reno", "cubic", "bbr"}
    for v in cc.VARIANTS.values():
        if v.bpf:
            assert len(registry.bpf_kernel_name(v)) <= 15  # TCP_CA_NAME_MAX - 1
            src = Path(__file__).resolve().parents[1] / "bpf" / f"{v.bpf}.bpf.c"
            assert f'.name = "{registry.bpf_kernel_name(v)}"' in src.read_text()


def test_unknown_name_lists_the_allowed_ones():
    with pytest.raises(ValidationError) as err:
        cc.expand(["htcp", "tahoe"])
    assert err.value.field == "variant" and "tahoe" in str(err.value) and "westwood" in str(err.value)
    with pytest.raises(ValidationError):
        cc.expand([])
    assert cc.expand(["all"]) == list(cc.NAMES)
    assert cc.expand(["vegas", "htcp", "vegas"]) == ["vegas", "htcp"]


def test_provider_prefers_the_kernel():
    avail = ["reno", "cubic", "htcp"]
    assert registry.provider(cc.VARIANTS["htcp"], avail) in ("builtin", "module")
    assert registry.provider(cc.VARIANTS["reno"], avail) == "builtin"


def _ours_registered() -> set[str]:
    """Our struct_ops maps still registered. An unregistered map stays listed (TOBEFREE) until the
    last socket that used it closes: a killed campaign's connections can hold it for a while."""
    return {m["name"] for m in bpf.struct_ops()
            if m["name"].startswith("tp_") and bpf.map_state(m["id"]) == "INUSE"}


def _kernel_list() -> set[str]:
    return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())


@pytest.mark.privileged
def test_load_all_then_unload_all(capsys):
    assert main(["cc", "load", "all"]) == 0
    try:
        capsys.readouterr()
        assert main(["cc", "list", "--json"]) == 0
        infos = json.loads(capsys.readouterr().out)
        assert [i["name"] for i in infos] == list(cc.NAMES)
        assert all(i["loaded"] for i in infos), infos
        kernel = _kernel_list()
        for i in infos:
            assert i["kernel_name"] in kernel
            if i["implementation"] == "bpf":
                v = cc.VARIANTS[i["name"]]
                assert i["object_sha256"] == bpf.sha256_file(registry.bpf_object(v))
                assert cc.implementation_record(i["name"]) == {
                    "cc_kernel_name": f"tp_{v.bpf}", "cc_impl": "bpf", "cc_object_sha256": i["object_sha256"]}
        assert cc.ensure_loaded(["all"]) == []  # idempotent
    finally:
        assert main(["cc", "unload", "all"]) == 0
    assert not _ours_registered()
    assert not {n for n in _kernel_list() if n.startswith("tp_")}
    assert all(not i.loaded for i in cc.available() if i.implementation == "bpf")


@pytest.mark.privileged
def test_unload_touches_only_our_registrations():
    assert all(u.ok for u in cc.unload(["htcp"]))
    assert cc.ensure_loaded(["htcp"]) == ["htcp"]
    (reg,) = [r for r in bpf.registrations().values() if r.name == "tp_htcp"]
    assert any(m["id"] == reg.id for m in bpf.struct_ops())
    (u,) = cc.unload(["htcp"])
    assert u.unloaded and u.ok and f"id {reg.id}" in u.message
    (u,) = cc.unload(["htcp"])
    assert not u.unloaded and u.ok and u.message == "not loaded by tcpprofile"
    assert "tp_htcp" not in _kernel_list()


@pytest.mark.privileged
def test_every_object_passes_the_verifier():
    names = [n for n, v in cc.VARIANTS.items() if v.bpf]
    loaded = cc.ensure_loaded(names)
    try:
        assert {f"tp_{cc.VARIANTS[n].bpf}" for n in names} <= _kernel_list()
    finally:
        assert all(u.ok for u in cc.unload(loaded))
