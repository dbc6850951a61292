"""An Executor for driver tests: no links, no iperf3; each run's throughput is a deterministic draw
from its configuration's normal distribution (so a resumed campaign sees the values an uninterrupted
one would have)."""

from __future__ import annotations

import hashlib
import json
import secrets

import numpy as np

from tcpprofile.campaign import LinkSetup, LinkUp, RunDone, RunStarted


class FakeExecutor:
    def __init__(self, campaign_id: str, truth, duration_s: float = 10.0, flags=None, rtt_base=None, ping=None):
        """truth(point) -> (mean_bps, sd_bps); flags(point) -> the run's flags (str or None), default none;
        rtt_base(point) -> the run's tcp_info min_rtt [ms] (default none); ping: the link's set-up ping
        (ping.rtt's dict; its min is the link's RTT, default 10 ms)."""
        self.campaign_id, self.truth, self.duration_s = campaign_id, truth, duration_s
        self.flags = flags or (lambda p: None)
        self.rtt_base, self.ping = rtt_base or (lambda p: None), ping
        self.ran: list = []
        self.links = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def value(self, p) -> float:
        mean, sd = self.truth(p)
        seed = int(hashlib.sha256(p.run_id(self.campaign_id).encode()).hexdigest()[:12], 16)
        return float(mean + sd * np.random.default_rng(seed).standard_normal())

    def run(self, blocks):
        for block in blocks:
            self.links += 1
            yield LinkSetup(block.link)
            link_id = f"{self.campaign_id}-{secrets.token_hex(4)}"
            yield LinkUp(block.link, {"link_id": link_id, "campaign_id": self.campaign_id, "kind": "remote",
                                      "host": block.link.host, "calibration_ok": True,
                                      "rtt_measured_ms": self.ping["min_ms"] if self.ping else 10.0,
                                      "calibration_json": json.dumps({"ping": self.ping}) if self.ping else None})
            for seq, p in block.runs:
                base = {"run_id": p.run_id(self.campaign_id), "campaign_id": self.campaign_id, "link_id": link_id,
                        "seq": seq, "variant": p.variant, "streams": p.streams,
                        "socket_buffer_bytes": p.socket_buffer_bytes, "transfer_bytes": p.transfer_bytes,
                        "duration_target_s": float(p.duration_s) if p.duration_s else None,
                        "reverse": p.reverse, "repetition": p.repetition}
                yield RunStarted(seq, p, 1, {**base, "status": "running", "attempts": 1})
                self.ran.append(p)
                yield RunDone(seq, p, {**base, "status": "ok", "attempts": 1, "throughput_bps": self.value(p),
                                       "duration_s": self.duration_s, "flags": self.flags(p),
                                       "rtt_base_ms": self.rtt_base(p)})
