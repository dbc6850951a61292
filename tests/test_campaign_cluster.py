"""Campaigns on a Ray cluster (campaign/cluster.py), on a local multi-node cluster of this machine.

One cluster for the module (Ray start-up costs seconds): a head without testbed and two nodes offering
`tcpprofile_testbed: 1`, all on the loopback address, with Ray's token authentication on (the token in a
file of mode 0600, named to the drivers by $TCPPROFILE_CLUSTER_TOKEN). The privileged tests run `tcpprofile run --cluster`
as a subprocess (the driver) on real emulated links at 200 Mbit/s, so two links fit on two cores, and
kill a worker node mid-run or the driver itself. Without --cluster nothing of Ray is imported.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import test_campaign_unit as unit
from test_campaign_privileged import link_namespaces, stored_link_namespaces, wait_for

from tcpprofile import campaign, spec
from tcpprofile.campaign import cluster_auth
from tcpprofile.store.db import Store

TESTS = Path(__file__).resolve().parent
FIXTURE = unit.DATA / "one_stream.json"
TCPPROFILE = [sys.executable, "-m", "tcpprofile.cli"]
RESOURCE = "tcpprofile_testbed"          # the documented name (docs/cluster.md)
DRIVER_TIMEOUT_S = 300


# -- without --cluster ----------------------------------------------------------------------------
def test_local_campaign_never_imports_ray(tmp_path):
    """The CLI parser and a whole local campaign (fake iperf3) in a fresh interpreter: no ray module."""
    code = f"""
import io, sys
sys.path.insert(0, {str(TESTS)!r})
from tcpprofile import cli, spec
from tcpprofile.store.db import Store
import test_campaign_unit as u
cli.build_parser()
with Store.open({str(tmp_path / 'l.duckdb')!r}) as store:
    summary, _ = u.run(spec.parse(u.SPEC), store, u.FakeHost())
assert summary.ok == summary.total == 8, summary
print(sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_cluster_start_line_offers_the_resource_the_executor_asks_for():
    r = subprocess.run(TCPPROFILE + ["cluster", "start", "--address", "192.0.2.9:6379", "--node-ip-address",
                                     "192.0.2.10", "--print"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    words = shlex.split(r.stdout)
    argv = words[words.index("ray"):]
    assert "RAY_AUTH_MODE=token" in words[:words.index("ray")]
    assert argv[:2] == ["ray", "start"] and "--address=192.0.2.9:6379" in argv
    resources = next(a for a in argv if a.startswith("--resources="))
    assert json.loads(resources.split("=", 1)[1]) == {RESOURCE: 1}


# -- the cluster ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def token(tmp_path_factory) -> Path:
    """The cluster's token file; drivers started by the tests find it through $TCPPROFILE_CLUSTER_TOKEN."""
    path = cluster_auth.create(tmp_path_factory.mktemp("auth") / "cluster-token")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(cluster_auth.ENV_VAR, str(path))
        yield path


@pytest.fixture(scope="module")
def cluster(token):
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"   # every Ray process on 127.0.0.1 (before import)
    from conftest import import_or_require
    ray_mod = import_or_require("ray", "Ray is not installed")
    from ray.cluster_utils import Cluster

    from tcpprofile.campaign import cluster as executor_module
    assert executor_module.RESOURCE == RESOURCE
    for module in (sys.modules[__name__], unit):            # the fakes travel to the nodes by value
        ray_mod.cloudpickle.register_pickle_by_value(module)
    with executor_module.authenticated(token):                # the nodes start with token authentication
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        try:
            for _ in range(2):
                c.add_node(num_cpus=1, resources={RESOURCE: 1})
            c.wait_for_nodes()
            yield c
        finally:
            ray_mod.shutdown()
            c.shutdown()


def nodes_of(c) -> list:
    """The testbed nodes (the head offers none)."""
    return list(c.worker_nodes)


def ensure_two_nodes(c) -> None:
    """Replaces killed nodes; they start with the cluster's token, as the first ones did."""
    from tcpprofile.campaign.cluster import authenticated
    with authenticated(Path(os.environ[cluster_auth.ENV_VAR])):
        while len(nodes_of(c)) < 2:
            c.add_node(num_cpus=1, resources={RESOURCE: 1})
    c.wait_for_nodes()


class SlowHost(unit.FakeHost):
    """The unit tests' stand-in for iperf3, taking a moment (so that both nodes get work)."""

    def popen(self, ns_role, argv, **kw):
        return subprocess.Popen(["sh", "-c", f"sleep 0.3; cat {FIXTURE}"], **kw)


@contextlib.contextmanager
def fake_link(point, host=SlowHost):
    """Each 'link' records the process (node actor) that held it, in its flags column."""
    yield campaign.Environment(host(), "192.0.2.1", 5201, False,
                               {"kind": "emulated", "rtt_ms": point.rtt_s * 1e3, "calibration_ok": True,
                                "flags": f"pid{os.getpid()}"}, [], {})


def local_link(point):
    """fake_link without SlowHost's moment: on one machine there is no second node to share the work with."""
    return fake_link(point, unit.FakeHost)


FAKE_SPEC = """
[campaign]
name = "cluster-unit"
seed = 7
repetitions = 2
[link]
rate = "200Mbit"
rtt = ["10ms", "20ms", "30ms"]
buffer = "1MB"
[transfer]
variant = ["cubic", "reno"]
streams = [1]
duration = "1s"
"""


def test_cluster_campaign_has_exactly_the_local_runs(cluster, tmp_path):
    """Same spec, this machine vs the 2-node cluster: the same run ids with the same seq, each once,
    and the cluster's links were held by two different node processes."""
    import ray
    from tcpprofile.campaign.cluster import RayExecutor
    from tcpprofile.campaign.executor import Settings
    ensure_two_nodes(cluster)
    s = spec.parse(FAKE_SPEC)
    rows = {}
    for label in ("local", "cluster"):
        ex = RayExecutor(cluster.address, Settings.of(s), fake_link, own_links=True) if label == "cluster" else None
        with Store.open(tmp_path / f"{label}.duckdb") as store:
            summary = campaign.run_campaign(s, store, out=io.StringIO(),
                                            environments=local_link if ex is None else fake_link, executor=ex)
            assert summary.ok == summary.total == 12
            rows[label] = store.query("SELECT r.run_id, r.seq, r.status, l.flags AS holder FROM runs r "
                                      "JOIN links l USING (link_id) ORDER BY r.run_id")
            links = store.query("SELECT count(*) AS n FROM links")[0]["n"]
            assert links == 3            # one set-up per link configuration, here and there
    key = lambda rs: [(r["run_id"], r["seq"], r["status"]) for r in rs]
    assert key(rows["cluster"]) == key(rows["local"])
    assert len({r["holder"] for r in rows["local"]}) == 1
    assert len({r["holder"] for r in rows["cluster"]}) == 2
    assert ray.is_initialized() is False     # the executor disconnects at the end


@pytest.mark.parametrize("own_links, holders", [(True, 2), (False, 1)])
def test_tune_spreads_each_round_over_both_nodes_unless_the_link_is_shared(cluster, tmp_path, own_links, holders):
    """tune races on one link configuration: with a copy of the link per node (emulated) each round is
    split so that both nodes measure; a shared one (a remote server) is measured by one node at a time.
    Every candidate gets exactly one run per round either way."""
    from tcpprofile.choose import tune
    from tcpprofile.campaign.cluster import RayExecutor
    from tcpprofile.campaign.executor import Settings
    ensure_two_nodes(cluster)
    s = tune.spec_for(rtt="10ms", host=None, rate="200Mbit", variants=["cubic", "reno"], streams=[1, 2],
                      buffers=["default"], duration="1s", max_rounds=3, seed=5)
    with Store.open(tmp_path / "tune.duckdb") as store:
        res = tune.tune(s, store, first=2, rule="paired", out=io.StringIO(),
                        executor=RayExecutor(cluster.address, Settings.of(s), fake_link, own_links=own_links))
        rounds = store.query("SELECT repetition, count(*) AS n, count(DISTINCT l.flags) AS holders FROM runs "
                             "JOIN links l USING (link_id) GROUP BY repetition ORDER BY repetition")
    assert res.stop == "tie" and res.rounds == 2          # identical stand-in results: a tie after the first test
    assert [(r["n"], r["holders"]) for r in rounds] == [(4, holders), (4, holders)]


# -- authentication -------------------------------------------------------------------------------
CLIENT = """
import os, sys
import ray
address, marker = sys.argv[1], sys.argv[2]
try:
    ray.init(address=address, logging_level="error", log_to_driver=False)
except Exception as err:
    print("refused:", type(err).__name__)
    sys.exit(3)

@ray.remote(num_cpus=0)
def touch(path):
    with open(path, "w") as f:
        f.write(str(os.getuid()))

ray.get(touch.remote(marker), timeout=120)
print("ran")
"""


# Ray tries to reach the GCS NUM_REDIS_GET_RETRIES times (20), 1 s apart, before ray.init gives up
# (ray/_private/node.py); a refused token is refused on every attempt, so two show the same refusal.
FEW_CONNECT_ATTEMPTS = {"RAY_NUM_REDIS_GET_RETRIES": "2"}


def outsider_env(tmp_path: Path, **extra) -> dict:
    """This environment without any token source (no Ray auth variables, a HOME without ~/.ray), and Ray
    giving up after FEW_CONNECT_ATTEMPTS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != cluster_auth.ENV_VAR}
    (tmp_path / "home").mkdir(exist_ok=True)
    return {**env, "HOME": str(tmp_path / "home"), **FEW_CONNECT_ATTEMPTS, **extra}


@pytest.mark.parametrize("holds", ["no token", "a wrong token", "the token"])
def test_a_client_without_the_token_is_refused_and_runs_nothing(cluster, token, tmp_path, holds):
    """A Ray client that reaches the head: without the cluster's token (none, or another one) its
    ray.init is refused and the task that would create a file never runs; with it, the task runs."""
    auth = {"no token": {},
            "a wrong token": cluster_auth.ray_environment(cluster_auth.create(tmp_path / "wrong"), base={}),
            "the token": cluster_auth.ray_environment(token, base={})}[holds]
    marker = tmp_path / "ran"
    r = subprocess.run([sys.executable, "-c", CLIENT, cluster.address, str(marker)], capture_output=True,
                       text=True, timeout=300, env=outsider_env(tmp_path, **auth))
    if holds == "the token":
        assert r.returncode == 0 and r.stdout.strip().endswith("ran"), r.stderr[-2000:]
        assert marker.read_text() == str(os.getuid())
    else:
        assert r.returncode == 3 and "refused: ConnectionError" in r.stdout, (r.stdout, r.stderr[-2000:])
        assert not marker.exists()


def test_a_driver_without_the_right_token_stops_naming_the_token_file(cluster, tmp_path):
    """`tcpprofile run --cluster` with the token file missing, too open, or holding another token: a
    one-line error naming the file, and no run."""
    spec_path, db = tmp_path / "s.toml", tmp_path / "s.duckdb"
    spec_path.write_text(REAL_SPEC.format(duration="2s"))
    wrong = cluster_auth.create(tmp_path / "wrong")
    open_file = cluster_auth.create(tmp_path / "open")
    open_file.chmod(0o644)
    for path, says in [(tmp_path / "absent", "does not exist"), (open_file, "has mode 0644"),
                       (wrong, "cannot connect to Ray")]:
        r = subprocess.run(TCPPROFILE + ["run", str(spec_path), "--db", str(db), "--cluster", cluster.address],
                           capture_output=True, text=True, timeout=300,
                           env=outsider_env(tmp_path, **{cluster_auth.ENV_VAR: str(path)}))
        last = r.stderr.strip().splitlines()[-1]
        assert r.returncode == 2 and str(path) in last and says in last, r.stderr[-2000:]
        for secret in (wrong, open_file):
            assert secret.read_text().strip() not in r.stdout + r.stderr
    with Store.open(db, read_only=True) as s:
        assert s.query("SELECT count(*) AS n FROM runs")[0]["n"] == 0


def cluster_pids(c) -> set[int]:
    """Every process of the cluster: each node's Ray processes and all their descendants (workers)."""
    roots = {info.process.pid for node in [c.head_node, *c.worker_nodes]
             for infos in node.all_processes.values() for info in infos}
    children: dict[int, set[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (pp := parent(int(entry.name))) is not None:
            children.setdefault(pp, set()).add(int(entry.name))
    pids, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in pids:
            pids.add(pid)
            todo.extend(children.get(pid, ()))
    return pids


def listening(pids: set[int]) -> list[tuple[str, int]]:
    """(local address, pid) of every listening TCP socket of these processes."""
    r = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True, timeout=30)
    return [(line.split()[3], int(pid)) for line in r.stdout.splitlines()
            for pid in re.findall(r"pid=(\d+)", line) if int(pid) in pids]


def test_the_token_is_in_no_command_line_environment_log_or_store(cluster, token, tmp_path):
    """After an authenticated campaign: the token is on no command line (`ps`, /proc/*/cmdline of every
    process of the cluster, the driver's), in no environment (only its file's path is), in none of Ray's
    logs, in neither the store nor its exports; and every Ray port is on the loopback address."""
    from tcpprofile.campaign.cluster import RayExecutor
    from tcpprofile.campaign.executor import Settings
    ensure_two_nodes(cluster)
    secret = token.read_text().strip().encode()
    s = spec.parse(FAKE_SPEC)
    db = tmp_path / "c.duckdb"
    with Store.open(db) as store:
        summary = campaign.run_campaign(s, store, out=io.StringIO(), environments=fake_link,
                                        executor=RayExecutor(cluster.address, Settings.of(s), fake_link))
    assert summary.ok == summary.total == 12
    pids = cluster_pids(cluster) | {os.getpid()}
    assert len(pids) >= 1 + 3 * 3                      # the driver; gcs, raylet, agents, workers of 3 nodes
    native = {}                                        # gcs_server and raylets: pid -> carries the path
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            assert secret not in cmdline, pid
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert secret not in environ, pid
            # Ray's Python processes retitle themselves (setproctitle) over the memory /proc/PID/environ
            # shows, so what it lists there is not their environment; the native daemons do not
            if Path(cmdline.split(b"\0")[0].decode()).name in ("gcs_server", "raylet"):
                native[pid] = f"RAY_AUTH_TOKEN_PATH={token}".encode() in environ.split(b"\0")
    assert len(native) == 1 + 3 and all(native.values()), native   # they got the path, not the token
    ps = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, check=True, timeout=30)
    assert secret not in ps.stdout
    sessions = {Path(n.get_session_dir_path()) for n in [cluster.head_node, *cluster.worker_nodes]}
    logs = [f for d in sessions for f in d.rglob("*") if f.is_file() and not f.is_socket()]
    assert len(logs) > 10 and not [f for f in logs if secret in f.read_bytes()]
    exports = []
    for what in ("runs", "links", "campaigns"):
        out = tmp_path / f"{what}.jsonl"
        r = subprocess.run(TCPPROFILE + ["export", "--db", str(db), "--what", what, "--out", str(out)],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        exports.append(out.read_bytes())
    assert secret not in db.read_bytes() and all(secret not in e for e in exports)
    assert b"run_id" in exports[0]
    ports = listening(cluster_pids(cluster))
    assert len(ports) >= 3 and all(re.match(r"(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):\d+$", a)
                                   for a, _ in ports), ports


# -- real links (privileged) ----------------------------------------------------------------------
REAL_SPEC = """
[campaign]
name = "cluster-fault"
seed = 13
repetitions = 3
[link]
rate = "200Mbit"
rtt = ["10ms", "20ms"]
buffer = "BDP"
[transfer]
variant = ["cubic", "reno"]
streams = [1]
duration = "{duration}"
"""


def _testbed():
    from conftest import import_or_require
    return import_or_require("tcpprofile.testbed", "the testbed (tcpprofile.testbed) is not installed")


def driver(cluster, spec_path: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen(TCPPROFILE + ["run", str(spec_path), "--db", str(db), "--cluster", cluster.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextlib.contextmanager
def campaign_on(cluster, tmp_path: Path, name: str, duration: str = "2s"):
    """A spec and store for REAL_SPEC (runs of `duration`) on two nodes; whatever is left running is killed and
    cleaned after."""
    testbed = _testbed()
    ensure_two_nodes(cluster)
    spec_path, db = tmp_path / f"{name}.toml", tmp_path / f"{name}.duckdb"
    spec_path.write_text(REAL_SPEC.format(duration=duration))
    procs: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        procs.append(driver(cluster, spec_path, db))
        return procs[-1]
    try:
        yield spec_path, db, start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        testbed.cleanup_leftovers()


def parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def raylet_pid(node) -> int:
    return node.all_processes["raylet"][0].process.pid


def cluster_links(cluster) -> list[tuple]:
    """(node, link status row) of every link held by an actor of this cluster's testbed nodes."""
    from tcpprofile.testbed import cleanup
    by_raylet = {raylet_pid(n): n for n in nodes_of(cluster)}
    return [(by_raylet[parent(link["owner_pid"] or 0)], link) for link in cleanup.status()
            if parent(link["owner_pid"] or 0) in by_raylet]


def measuring_node(cluster):
    """The testbed node whose link is running a measurement's iperf3 client now (not calibration's)."""
    from tcpprofile.testbed import calibrate
    probe = f" -p {calibrate.IPERF_PORT} "                      # the calibration's rate probe
    for node, link in cluster_links(cluster):
        if any(p["cmdline"].startswith("iperf3 -c") and probe not in p["cmdline"]
                                    for p in link["processes"]):
            return node, link["tag"]
    return None


def expected_ids(spec_path: Path, seed: int) -> set[str]:
    s = spec.load(spec_path)
    return {p.run_id(s.campaign_id) for p in s.schedule(seed)}


def check_every_run_once(db: Path, spec_path: Path) -> list[dict]:
    with Store.open(db, read_only=True) as s:
        runs = s.query("SELECT * EXCLUDE (raw_json) FROM runs ORDER BY run_id")
        seed = s.query("SELECT seed FROM campaigns")[0]["seed"]
    assert [r["run_id"] for r in runs] == sorted(expected_ids(spec_path, seed))     # each exactly once
    assert {r["status"] for r in runs} == {"ok"}, [r["failure_reason"] for r in runs]
    # every link this campaign set up is gone, the dead node's too (removed by the next actor there)
    assert not stored_link_namespaces(db) & link_namespaces()
    return runs


@pytest.mark.privileged
def test_worker_node_killed_mid_run_loses_only_that_run(cluster, tmp_path):
    with campaign_on(cluster, tmp_path, "fault") as (spec_path, db, start):
        proc = start()
        node, tag = wait_for(lambda: measuring_node(cluster), 180, "a measurement running on a testbed node")
        cluster.remove_node(node, allow_graceful=False)            # the node crashes: raylet and actor SIGKILLed
        out, err = proc.communicate(timeout=DRIVER_TIMEOUT_S)
        left = stored_link_namespaces(db) & link_namespaces()     # before the fixture's cleanup
    assert proc.returncode == 0, err
    # the dead node's link was removed by the surviving node's actor (cleanup_leftovers before its next link)
    assert not left
    runs = check_every_run_once(db, spec_path)
    with Store.open(db, read_only=True) as s:
        links = s.query("SELECT link_id, rtt_ms, calibration_json FROM links")
    # the dead node's link configuration was set up again on the surviving node for the rest of its runs
    assert len(links) == 3, err
    dead = next(link for link in links if json.loads(link["calibration_json"])["testbed_tag"] == tag)
    again = next(link for link in links if link["rtt_ms"] == dead["rtt_ms"] and link is not dead)
    on_dead = [r for r in runs if r["link_id"] == dead["link_id"]]
    assert len(on_dead) < 6 and len(on_dead) + sum(r["link_id"] == again["link_id"] for r in runs) == 6


@pytest.mark.privileged
def test_driver_killed_and_restarted_resumes(cluster, tmp_path):
    # killed after its first stored run: resume does not depend on a run's length
    with campaign_on(cluster, tmp_path, "driver", duration="1s") as (spec_path, db, start):
        proc = start()
        for line in proc.stderr:
            if "] ok " in line:
                break
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with Store.open(db, read_only=True) as s:
            before = s.query("SELECT * EXCLUDE (raw_json) FROM runs WHERE status = 'ok' ORDER BY run_id")
        assert 1 <= len(before) < 12
        proc = start()
        out, err = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    assert proc.returncode == 0, err
    runs = {r["run_id"]: r for r in check_every_run_once(db, spec_path)}
    for r in before:
        assert runs[r["run_id"]] == r          # finished before the kill: unchanged


@pytest.mark.privileged
def test_driver_interrupted_mid_run_leaves_no_link_behind(cluster, tmp_path):
    """SIGINT: the busy nodes' actors are killed at once and their links swept on their machines."""
    with campaign_on(cluster, tmp_path, "interrupt") as (spec_path, db, start):
        proc = start()
        wait_for(lambda: measuring_node(cluster), 180, "a measurement running on a testbed node")
        tags = {link["tag"] for _, link in cluster_links(cluster)}
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DRIVER_TIMEOUT_S)
        left = {ns for ns in link_namespaces() if any(f"-{t}-" in ns for t in tags)}   # before the fixture's cleanup
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "tcpprofile run: interrupted"
    assert tags and not left
