"""The cluster's token file (campaign/cluster_auth.py) and the `cluster` command's handling of it: created
with mode 0600, refused when group or others may read it (or it is a symlink, someone else's, too short),
never printed. No Ray here (tests/test_campaign_cluster.py runs the authenticated cluster)."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tcpprofile.campaign import cluster_auth
from tcpprofile.campaign.cluster_auth import TokenError

TCPPROFILE = [sys.executable, "-m", "tcpprofile.cli"]
SRC = str(Path(__file__).resolve().parents[1] / "src")     # the child imports the tcpprofile under test


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(TCPPROFILE + list(args), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": SRC, **(env or {})})


def test_created_token_file_is_0600_in_a_0700_directory_with_a_256_bit_token(tmp_path):
    path = cluster_auth.create(tmp_path / "conf" / "cluster-token")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    token = path.read_text()
    assert token.endswith("\n") and len(token.strip()) == 2 * cluster_auth.TOKEN_BYTES
    int(token, 16)                                              # hex
    assert cluster_auth.check(path) == path


def test_mode_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        path = cluster_auth.create(tmp_path / "t")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_create_refuses_an_existing_file_and_rotate_replaces_it(tmp_path):
    path = cluster_auth.create(tmp_path / "t")
    old = path.read_text()
    with pytest.raises(TokenError, match="exists already.*--rotate"):
        cluster_auth.create(path)
    assert path.read_text() == old
    cluster_auth.create(path, replace=True)
    assert path.read_text() != old and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]      # no temporary left


# each group and others bit alone (read, write, execute), and two common modes
@pytest.mark.parametrize("mode", [0o640, 0o620, 0o610, 0o604, 0o602, 0o601, 0o660, 0o644], ids="{:04o}".format)
def test_a_token_file_group_or_others_may_touch_is_refused(tmp_path, mode):
    path = cluster_auth.create(tmp_path / "t")
    path.chmod(mode)
    with pytest.raises(TokenError, match=f"mode {mode:04o}.*allowed: 0600"):
        cluster_auth.check(path)
    with pytest.raises(TokenError):
        cluster_auth.ensure(path)                       # an existing open file is not taken either


def test_0400_is_accepted(tmp_path):
    path = cluster_auth.create(tmp_path / "t")
    path.chmod(0o400)
    assert cluster_auth.check(path) == path


def test_symlink_missing_short_and_foreign_files_are_refused_naming_the_file(tmp_path):
    real = cluster_auth.create(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(TokenError, match=f"{link}.*symlink"):
        cluster_auth.check(link)
    with pytest.raises(TokenError, match=f"{tmp_path / 'absent'} does not exist.*tcpprofile cluster token"):
        cluster_auth.check(tmp_path / "absent")
    short = tmp_path / "short"
    short.write_text("abc123\n")
    short.chmod(0o600)
    with pytest.raises(TokenError, match=f"{short}.*at least {cluster_auth.MIN_TOKEN_CHARS}"):
        cluster_auth.check(short)
    spaced = tmp_path / "spaced"
    spaced.write_text("a" * 20 + " " + "b" * 20)
    spaced.chmod(0o600)
    with pytest.raises(TokenError, match="without spaces"):
        cluster_auth.check(spaced)


def test_someone_elses_token_file_is_refused(tmp_path, monkeypatch):
    # only root can give a file away: instead this process takes another uid than the file's owner
    path = cluster_auth.create(tmp_path / "t")
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(TokenError, match=f"{path} belongs to uid {owner}, not to this user \\(uid {owner + 1}\\)"):
        cluster_auth.check(path)


def test_token_path_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv(cluster_auth.ENV_VAR, raising=False)
    expected = (cluster_auth.SYSTEM_PATH if os.geteuid() == 0
                else tmp_path / "xdg" / "tcpprofile" / "cluster-token")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert cluster_auth.token_path() == expected
    monkeypatch.setenv(cluster_auth.ENV_VAR, str(tmp_path / "env"))
    assert cluster_auth.token_path() == tmp_path / "env"
    assert cluster_auth.token_path(tmp_path / "given") == tmp_path / "given"


def test_ray_environment_turns_token_mode_on_and_passes_only_the_path(tmp_path):
    path = cluster_auth.create(tmp_path / "t")
    env = cluster_auth.ray_environment(path, base={"RAY_AUTH_TOKEN": "leaked", "RAY_AUTH_MODE": "disabled",
                                                   "PATH": "/bin"})
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path), "PATH": "/bin"}
    assert path.read_text().strip() not in repr(env)


# -- the command --------------------------------------------------------------------------------------
def test_cluster_token_creates_checks_and_rotates_without_printing_it(tmp_path):
    path = tmp_path / "d" / "tok"
    outputs = []
    r = cli("cluster", "token", "--token-file", str(path))
    assert r.returncode == 0, r.stderr
    first = path.read_text().strip()
    outputs.append(r.stdout + r.stderr)
    assert f"created {path}" in r.stdout and stat.S_IMODE(path.stat().st_mode) == 0o600
    r = cli("cluster", "token", "--token-file", str(path))
    assert r.returncode == 0 and f"checked {path}" in r.stdout and path.read_text().strip() == first
    outputs.append(r.stdout + r.stderr)
    r = cli("cluster", "token", "--token-file", str(path), "--rotate")
    assert r.returncode == 0, r.stderr
    second = path.read_text().strip()
    assert second != first and stat.S_IMODE(path.stat().st_mode) == 0o600
    outputs.append(r.stdout + r.stderr)
    r = cli("cluster", "start", "--head", "--node-ip-address", "192.0.2.9", "--token-file", str(path), "--print")
    outputs.append(r.stdout + r.stderr)
    assert r.returncode == 0 and str(path) in r.stdout
    for out in outputs:
        assert first not in out and second not in out


def test_cluster_token_refuses_a_readable_file_and_says_which(tmp_path):
    path = cluster_auth.create(tmp_path / "tok")
    path.chmod(0o644)
    r = cli("cluster", "token", "--token-file", str(path))
    assert r.returncode != 0 and f"cluster token file {path} has mode 0644" in r.stderr
    assert path.read_text().strip() not in r.stdout + r.stderr


def test_start_line_has_token_auth_a_named_address_and_no_dashboard(tmp_path):
    path = tmp_path / "tok"
    r = cli("cluster", "start", "--head", "--node-ip-address", "192.0.2.9", "--token-file", str(path), "--print")
    assert r.returncode == 0, r.stderr
    words = shlex.split(r.stdout)
    env = dict(w.split("=", 1) for w in words[:words.index("ray")])
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}
    argv = words[words.index("ray"):]
    assert {"--head", "--node-ip-address=192.0.2.9", "--include-dashboard=false"} <= set(argv)
    r = cli("cluster", "start", "--head", "--node-ip-address", "127.0.0.1", "--token-file", str(path), "--print")
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in r.stdout        # a loopback node stays on loopback


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "head.example"])
def test_start_refuses_a_wildcard_or_a_name_for_the_node_address(address):
    r = cli("cluster", "start", "--head", "--node-ip-address", address, "--print")
    assert r.returncode == 2 and "--node-ip-address" in r.stderr and address in r.stderr


def test_start_needs_the_node_address():
    r = cli("cluster", "start", "--address", "192.0.2.1:6379", "--print")
    assert r.returncode == 2 and "--node-ip-address" in r.stderr


@pytest.mark.privileged
def test_a_node_refuses_to_start_without_a_usable_token(tmp_path):
    """A testbed node never starts Ray without token authentication: a joining node without the head's
    token file, or any node whose token file others may read, stops before `ray start`."""
    r = cli("cluster", "start", "--address", "127.0.0.1:1", "--node-ip-address", "127.0.0.1",
            "--token-file", str(tmp_path / "absent"))
    assert r.returncode != 0 and f"cluster token file {tmp_path / 'absent'} does not exist" in r.stderr
    assert "ray start" not in r.stdout
    readable = cluster_auth.create(tmp_path / "readable")
    readable.chmod(0o644)
    r = cli("cluster", "start", "--head", "--port", "1", "--node-ip-address", "127.0.0.1",
            "--token-file", str(readable))
    assert r.returncode != 0 and f"cluster token file {readable} has mode 0644" in r.stderr
    assert "ray start" not in r.stdout
