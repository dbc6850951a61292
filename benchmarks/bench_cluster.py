"""Wall time of one campaign on this machine against the same campaign on a local 2-node Ray cluster.

The campaign: two emulated links at 200 Mbit/s (τ = 10 and 20 ms, so two links fit on two cores) ×
{cubic, reno} × 3 repetitions of 3 s runs = 12 runs. First on one machine (the single-machine path,
no Ray), then with `--cluster` on a ray.cluster_utils.Cluster of this machine (a head without testbed
and two nodes offering tcpprofile_testbed: 1, on 127.0.0.1). Prints both wall times, their ratio (the
baseline is the single-machine run of the same process; the cluster's start-up is printed apart, it is
paid once per cluster, not per campaign) and whether both stores hold exactly the same runs.
Runs as root; without root it measures nothing, says so on stderr and exits 2.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from pathlib import Path

SPEC = """
[campaign]
name = "bench-cluster"
seed = 17
repetitions = 3
[link]
rate = "200Mbit"
rtt = ["10ms", "20ms"]
buffer = "BDP"
[transfer]
variant = ["cubic", "reno"]
streams = [1]
duration = "3s"
"""
NODES = 2


def campaign_runs(spec, db: Path, executor=None) -> tuple[float, list[tuple]]:
    from tcpprofile import campaign
    from tcpprofile.store.db import Store
    with Store.open(db) as store:
        t0 = time.monotonic()
        summary = campaign.run_campaign(spec, store, out=io.StringIO(), executor=executor)
        wall = time.monotonic() - t0
        assert summary.ok == summary.total, f"{summary.failed} runs failed"
        runs = store.query("SELECT run_id, seq, variant, streams, repetition, status FROM runs ORDER BY run_id")
    return wall, [tuple(r.values()) for r in runs]


def main() -> int:
    if os.geteuid() != 0:
        print("bench_cluster: FAILED: cannot measure without root (network namespaces); nothing was measured",
              file=sys.stderr)
        return 2
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"   # every Ray process on 127.0.0.1 (before import)
    from tcpprofile import spec as specs
    from tcpprofile.testbed import cleanup_leftovers
    s = specs.parse(SPEC)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        local_s, local_runs = campaign_runs(s, Path(tmp) / "local.duckdb")
        print(f"one machine:        {local_s:6.1f} s  ({len(local_runs)} runs, no Ray)")

        import ray
        from ray.cluster_utils import Cluster

        from tcpprofile.campaign import cluster_auth
        from tcpprofile.campaign.cluster import RESOURCE, RayExecutor, authenticated
        token = cluster_auth.create(Path(tmp) / "cluster-token")      # token authentication, as documented
        t0 = time.monotonic()
        with authenticated(token):
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
            try:
                for _ in range(NODES):
                    cluster.add_node(num_cpus=1, resources={RESOURCE: 1})
                cluster.wait_for_nodes()
                start_s = time.monotonic() - t0
                cluster_s, cluster_runs = campaign_runs(s, Path(tmp) / "cluster.duckdb",
                                                        RayExecutor.for_spec(s, cluster.address, token_file=token))
            finally:
                ray.shutdown()
                cluster.shutdown()
                cleanup_leftovers()
    print(f"{NODES}-node cluster:     {cluster_s:6.1f} s  (cluster start-up {start_s:.1f} s, not included)")
    print(f"ratio cluster / one machine: {cluster_s / local_s:.2f}  (ideal {1 / NODES:.2f})")
    same = cluster_runs == local_runs
    print(f"same runs (run_id, seq, variant, n, repetition, status): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
