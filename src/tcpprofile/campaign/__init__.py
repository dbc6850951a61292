"""The campaign runner: a validated spec -> iperf3 runs on emulated links (or a remote server) -> store.

Three concerns, one module each, meeting in runner.run_campaign:
- what to run next: policy.py (a Policy plans rounds of link blocks from what is recorded), one
  module per policy in policies/ (fixed: spec.CampaignSpec.schedule, grouped by link configuration so
  each link is set up and calibrated once, shuffled within, seeded, the seed recorded and reused on
  resume; adaptive repetitions; racing for `tune`, its rules in rules/);
- where a run executes: executor.py (an Executor runs link blocks and yields events; LocalExecutor is
  this machine) with environments.py (link set-up, congestion control, cwnd tracing);
- how a result is recorded: recorder.py (the store, written only by the driver).
"""

from .environments import (CongestionControl, CwndCapture, Environment, EnvironmentFactory, cwnd_trace,
                           emulated, link_config, ping_rtt, remote)
from .executor import Block, Executor, LinkSetup, LinkUp, LocalExecutor, RunDone, RunStarted, Settings, run_block
from .policies import POLICIES
from .policy import BasePolicy, Policy
from .progress import (ASSUMED_RATE_BPS, LINK_SETUP_ESTIMATE_S, Progress, autotuned_request_bytes, expected_seconds,
                       timeout_seconds)
from .recorder import Recorder
from .runner import Summary, exit_code, format_summary, run_campaign, summarise

__all__ = [
    "ASSUMED_RATE_BPS", "Block", "CongestionControl", "CwndCapture", "Environment", "EnvironmentFactory",
    "BasePolicy", "Executor", "LINK_SETUP_ESTIMATE_S", "LinkSetup", "LinkUp", "LocalExecutor", "POLICIES",
    "Policy", "Progress", "Recorder", "RunDone", "RunStarted", "Settings", "Summary", "autotuned_request_bytes",
    "cwnd_trace", "emulated",
    "exit_code", "expected_seconds", "format_summary", "link_config", "ping_rtt", "remote", "run_block",
    "run_campaign", "summarise", "timeout_seconds",
]
