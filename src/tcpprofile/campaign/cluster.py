"""Where runs execute, on a Ray cluster: every node that offers the custom resource
`tcpprofile_testbed: 1` holds one link configuration at a time and runs that link's runs; the driver
(this process) is the store's only writer and records each event as it arrives, so run ids, resume and
retries are those of one machine.

    tcpprofile cluster start --head --node-ip-address HEAD                   # the first testbed machine
    tcpprofile cluster start --address HEAD:6379 --node-ip-address ADDR      # each further one
    tcpprofile run SPEC --db DB --cluster HEAD:6379

Ray is imported by this module only, and this module only with --cluster. Every process of the cluster
runs with Ray's token authentication, the token read from the cluster's token file (cluster_auth.py):
the driver too (`authenticated`), so a driver without the right token file is refused before it runs
anything.

On a node, a TestbedNode actor wraps a LocalExecutor (congestion control loaded once, a link kept up
while consecutive blocks ask for it) and hands its events to the driver one per call. The driver deals
the policy's blocks to idle nodes, a node that already holds a block's link first; a round with fewer
blocks than nodes (tune: one link configuration) is split so that every node gets a share.

Faults. Ray's own retries are off (max_restarts=0, max_task_retries=0): a retry is a measurement, and
the executor already retries a failed run (the spec's `retries`). A node that dies takes its actor and
the run in flight with it: the unfinished runs of its block go back to the front of the queue for the
next free node, where the run in flight starts again under the same run_id (its 'running' marker is
overwritten), so nothing is duplicated. The link's processes (iperf3, delayd) run in their own sessions
and are recorded in the link's owner record (testbed/state.py): the next actor on that machine removes
them (remove_leftovers removes dead owners' things only). A driver that dies takes its actors with it
(Ray ends the actors of a dead owner); run again, it resumes like a campaign on one machine. Without any
node offering the resource for NODE_WAIT_S the driver stops (exit 2); run it again to resume.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray.exceptions import RayActorError, RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..errors import TcpProfileError
from . import cluster_auth
from .cluster_node import RESOURCE
from ..spec import CampaignSpec, LinkPoint
from .environments import EnvironmentFactory, emulated, link_config
from .executor import Block, Event, LocalExecutor, RunDone, Settings, default_environments

NODE_WAIT_S = 120.0          # no testbed node for this long: stop (the campaign resumes when run again)
POLL_S = 2.0                 # how often the driver looks for nodes that joined or left
CLOSE_TIMEOUT_S = 60.0       # graceful teardown of the links at the end, before the actors are killed
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@contextlib.contextmanager
def authenticated(path: Path) -> Iterator[Path]:
    """This process speaks to Ray with token authentication and the token in `path` (checked first:
    cluster_auth.TokenError names the file) until the block ends; Ray processes it starts meanwhile
    inherit the same. Ray's variables are put back as they were afterwards."""
    cluster_auth.check(path)
    wanted = cluster_auth.ray_environment(path, base={})
    previous = {k: os.environ.get(k) for k in AUTH_VARS}
    _set_auth(wanted)
    try:
        yield path
    finally:
        _set_auth({k: v for k, v in previous.items() if v is not None})


def _set_auth(values: dict[str, str]) -> None:
    for k in AUTH_VARS:
        os.environ.pop(k, None)
    os.environ.update(values)
    # Ray reads RAY_AUTH_MODE into its config when imported and caches the token once loaded: refresh the
    # config, then drop the cache, as Ray does when it turns token mode on (ray/_private/authentication/
    # authentication_token_setup.py: _enable_token_auth; ray/_private/authentication_test_utils.py:
    # reset_auth_token_state)
    from ray._raylet import AuthenticationTokenLoader, Config
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


class TestbedNode:
    """Runs on a node (as a Ray actor): one LocalExecutor, one link at a time."""

    def __init__(self, settings: Settings, environments: EnvironmentFactory):
        self.settings, self.environments = settings, environments
        self.local: LocalExecutor | None = None
        self.events: Iterator[Event] | None = None
        self.link: LinkPoint | None = None

    def prepare(self) -> tuple[str, str, int]:
        """Remove leftovers of dead links on this machine, load congestion control; returns the host
        name, the Ray node id and this process's pid (the owner of the links it sets up)."""
        self._clean()
        self.local = LocalExecutor(self.settings, self.environments).__enter__()
        return socket.gethostname(), ray.get_runtime_context().get_node_id(), os.getpid()

    def step(self, block: Block | None = None) -> Event | None:
        """Start `block` (if given) and return its next event; None once the block is done."""
        if block is not None:
            if block.link != self.link:
                self._clean()
                self.link = block.link
            self.events = self.local.run([block])
        try:
            return next(self.events)
        except StopIteration:
            self.events = None
            return None

    def close(self) -> None:
        if self.local is not None:
            self.local.__exit__(None, None, None)
            self.local = None

    def _clean(self) -> None:
        if self.environments is emulated:
            from .crash_cleanup import remove_leftovers
            remove_leftovers()


def sweep(owner_pid: int) -> list[str]:
    """On a node whose actor was killed mid-run: once that process is gone, remove what its link left
    (iperf3 and delayd run in their own sessions; remove_leftovers removes dead owners' things only)."""
    from ..testbed.calibrate import wait_until
    from .crash_cleanup import remove_leftovers
    from ..testbed.netns import process_start_time
    wait_until(lambda: process_start_time(owner_pid) is None, timeout=CLOSE_TIMEOUT_S,   # gone, or a zombie
               what=f"the killed actor {owner_pid} to exit")
    return remove_leftovers()


@dataclass(eq=False)
class _Node:
    """The driver's view of one actor: its readiness, the link it holds and the block it runs."""
    actor: object
    pending: object                           # the ObjectRef the driver waits on for this node
    host: str | None = None                   # set once prepared
    node_id: str | None = None
    pid: int | None = None
    link: LinkPoint | None = None
    block: Block | None = None
    done: set[int] = field(default_factory=set)   # seqs of the block already recorded

    def unfinished(self) -> Block | None:
        if self.block is None:
            return None
        runs = tuple((seq, p) for seq, p in self.block.runs if seq not in self.done)
        return Block(self.block.link, runs) if runs else None


class RayExecutor:
    """The Executor for `--cluster ADDRESS`: blocks run on the cluster's testbed nodes, in parallel."""

    def __init__(self, address: str, settings: Settings, environments: EnvironmentFactory, *,
                 own_links: bool | None = None, node_wait_s: float = NODE_WAIT_S,
                 token_file: str | os.PathLike | None = None):
        """own_links: every node sets up its own copy of a link configuration (emulated links, the
        default for `emulated`), so several nodes may run one configuration's runs at once; otherwise
        (a remote iperf3 server, shared by every node) a configuration runs on one node at a time.
        token_file: the cluster's token file (default: cluster_auth.token_path())."""
        self.address, self.settings, self.environments = address, settings, environments
        self.token_file = cluster_auth.token_path(token_file)
        self._auth = contextlib.ExitStack()
        self.own_links = environments is emulated if own_links is None else own_links
        self.node_wait_s = node_wait_s
        self.nodes: list[_Node] = []
        self.lost = 0                           # nodes lost during this campaign (for the caller)

    @classmethod
    def for_spec(cls, spec: CampaignSpec, address: str, **kw) -> "RayExecutor":
        """Validates the spec's links here, on the driver, before anything is sent to a node."""
        environments = default_environments(spec)
        if environments is emulated:
            for link in spec.links:
                link_config(link)
        return cls(address, Settings.of(spec), environments, **kw)

    def __enter__(self) -> "RayExecutor":
        self._auth.enter_context(authenticated(self.token_file))
        try:
            ray.init(address=self.address, namespace="tcpprofile", log_to_driver=False, logging_level="warning")
        except (ConnectionError, ValueError, RuntimeError, RayError) as err:
            self._auth.close()
            raise TcpProfileError(f"--cluster {self.address}: cannot connect to Ray ({(str(err).splitlines() or [type(err).__name__])[0]}); "
                                  f"a cluster refuses a driver whose token is not its nodes' (token file "
                                  f"{self.token_file})") from None
        if self._offered() < 1:
            ray.shutdown()
            self._auth.close()
            raise TcpProfileError(f"--cluster {self.address}: no node offers {RESOURCE}; start each testbed node "
                                  f"with: tcpprofile cluster start --address {self.address} --node-ip-address ADDR")
        self._actor_class = ray.remote(TestbedNode).options(
            resources={RESOURCE: 1}, num_cpus=0, max_restarts=0, max_task_retries=0)
        self._top_up()
        return self

    def __exit__(self, *exc) -> None:
        """Idle nodes take their links down; nodes still running (an interrupt, an error) are killed at
        once and their links' processes swept on their machines."""
        try:
            busy = [n for n in self.nodes if n.block is not None and n.pid is not None]
            closing = [n.actor.close.remote() for n in self.nodes if n.host is not None and n.block is None]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_S)
            for n in self.nodes:
                ray.kill(n.actor, no_restart=True)
            if busy and self.environments is emulated:
                sweeps = [ray.remote(sweep).options(
                    num_cpus=0, max_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False)).remote(n.pid)
                    for n in busy]
                ray.wait(sweeps, num_returns=len(sweeps), timeout=2 * CLOSE_TIMEOUT_S)
        except RayError:
            pass        # the cluster is going: leftovers wait for the next actor there (or `testbed down`)
        finally:
            self.nodes = []
            ray.shutdown()
            self._auth.close()

    # -- scheduling ---------------------------------------------------------------------------------
    def run(self, blocks: Sequence[Block]) -> Iterator[Event]:
        queue = collections.deque(spread(blocks, len(self.nodes)) if self.own_links else blocks)
        idle_since = looked = time.monotonic()
        while queue or any(n.block is not None for n in self.nodes):
            if time.monotonic() - looked > POLL_S:
                self._top_up()
                looked = time.monotonic()
            self._deal(queue)
            by_ref = {n.pending: n for n in self.nodes if n.pending is not None}
            if by_ref:
                ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=POLL_S)
            else:                                # every actor is gone: poll for a node that joins
                ready = []
                time.sleep(POLL_S)
            if any(n.host is not None for n in self.nodes):
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.node_wait_s:
                raise TcpProfileError(f"no node offers {RESOURCE} (waited {self.node_wait_s:.0f} s); "
                                      "run the campaign again to resume")
            for ref in ready:
                node = by_ref[ref]
                try:
                    value = ray.get(ref)
                except RayActorError:
                    self._lost(node, queue)
                    continue
                except RayTaskError as err:
                    raise _cause(err) from None
                if node.host is None:            # prepared: idle, ready for a block
                    (node.host, node.node_id, node.pid), node.pending = value, None
                elif value is None:              # block done; the link stays up for a later block
                    node.block, node.pending = None, None
                else:
                    if isinstance(value, RunDone):
                        node.done.add(value.seq)
                    node.pending = node.actor.step.remote()
                    yield value

    def _deal(self, queue: collections.deque) -> None:
        """Give each idle node a block: one on the link it holds if queued, else the first it may run."""
        for node in self.nodes:
            if not queue or node.host is None or node.block is not None:
                continue
            busy = set() if self.own_links else {n.block.link for n in self.nodes if n.block is not None}
            allowed = [b for b in queue if b.link not in busy]
            if not allowed:
                return
            block = next((b for b in allowed if b.link == node.link), allowed[0])
            queue.remove(block)
            node.block, node.link, node.done = block, block.link, set()
            node.pending = node.actor.step.remote(block)

    def _lost(self, node: _Node, queue: collections.deque) -> None:
        """A node (or its actor) died: its unfinished runs go back to the front of the queue."""
        self.lost += 1
        self.nodes.remove(node)
        ray.kill(node.actor, no_restart=True)
        rest = node.unfinished()
        if rest is not None:
            queue.appendleft(rest)

    def _top_up(self) -> None:
        """One actor per testbed the cluster offers (nodes may join during a campaign)."""
        while len(self.nodes) < self._offered():
            actor = self._actor_class.remote(self.settings, self.environments)
            self.nodes.append(_Node(actor, actor.prepare.remote()))

    def _offered(self) -> int:
        return int(ray.cluster_resources().get(RESOURCE, 0))


def spread(blocks: Sequence[Block], nodes: int) -> list[Block]:
    """Split the longest blocks into contiguous halves (schedule order kept) until every node can have
    one: a round on one link configuration (tune, a policy's next round) then runs on every node, each
    with its own copy of the link."""
    blocks = list(blocks)
    while 0 < len(blocks) < nodes:
        i = max(range(len(blocks)), key=lambda k: len(blocks[k].runs))
        runs = blocks[i].runs
        if len(runs) < 2:
            break
        half = (len(runs) + 1) // 2
        blocks[i:i + 1] = [Block(blocks[i].link, runs[:half]), Block(blocks[i].link, runs[half:])]
    return blocks


def _cause(err: RayTaskError) -> BaseException:
    """The exception a node raised (a TcpProfileError stays one, so the CLI prints its one line)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else TcpProfileError(str(err).strip().splitlines()[-1])
