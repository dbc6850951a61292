"""`tcpprofile tune`: the best (V, n, B) for one connection by racing (campaign/policies/racing.py, docs/tune.md).

`spec_for(...)` turns the command line into a single-link campaign spec (validated by tcpprofile.spec,
errors named by their flag); `tune(spec, store, ...)` runs the race as a campaign (every run stored,
so select/analyze/report work on the store) and returns the decision with its evidence.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TextIO

from . import decide
from .. import spec as specs
from ..campaign import run_campaign
from ..campaign.environments import path_rtt_notes
from ..campaign.policies.racing import Racing
from ..campaign.rules import DEFAULT_RULE, RULES
from ..campaign.recorder import Recorder
from ..errors import ValidationError
from ..store import Store
from ..store.reads import flagged_ok_runs

FLAGS = {"link.rtt": "--rtt", "link.rate": "--rate", "link.buffer": "--link-buffer", "link.mtu": "--mtu",
         "remote.host": "--host", "remote.port": "--port", "transfer.variant": "--variants",
         "transfer.streams": "--streams", "transfer.socket_buffer": "--buffers", "transfer.duration": "--duration",
         "transfer.size": "--size", "campaign.repetitions": "--max-rounds", "campaign.name": "--name",
         "campaign.seed": "--seed"}


def spec_for(*, rtt: str | None, host: str | None, port: int = 5201, rate: str = "10Gbit", link_buffer: str = "BDP",
             mtu: int = 9000, variants: list[str], streams: list[int], buffers: list[str],
             duration: str | None = "10s", size: str | None = None, max_rounds: int = 10, seed: int | None = None,
             name: str = "tune") -> specs.CampaignSpec:
    """A campaign spec for the race: one link (emulated at `rtt`, or the iperf3 server at `host`), the
    candidate grid, repetitions = the most rounds."""
    q = json.dumps
    lines = ["[campaign]", f"name = {q(name)}", f"repetitions = {max_rounds}"]
    if seed is not None:
        lines.append(f"seed = {seed}")
    if (rtt is None) == (host is None):
        raise ValidationError("--rtt", "give exactly one of --rtt RTT (emulated link) or --host HOST (iperf3 server)")
    if rtt is not None:
        lines += ["[link]", f"rate = {q(rate)}", f"rtt = {q(rtt)}", f"buffer = {q(link_buffer)}", f"mtu = {mtu}"]
    else:
        lines += ["[remote]", f"host = {q(host)}", f"port = {port}"]
    lines += ["[transfer]", f"variant = {q(variants)}", f"streams = {q(streams)}", f"socket_buffer = {q(buffers)}"]
    lines.append(f"size = {q(size)}" if size is not None else f"duration = {q(duration)}")
    try:
        return specs.parse("\n".join(lines) + "\n")
    except ValidationError as err:
        path = err.field.split("[")[0]
        if path in FLAGS:
            raise ValidationError(FLAGS[path], str(err).split(": ", 1)[-1]) from err
        raise


@dataclass
class TuneResult:
    campaign_id: str
    chosen: dict | None             # the stops row of the decision
    stop: str | None                # 'one left' | 'shown' | 'tie' | 'budget' | 'rounds' | None (interrupted)
    rounds: int
    evidence: list[dict]            # stops rows: every candidate, best mean first
    spent_s: float
    budget_s: float | None
    fixed_s: float                  # what max_rounds repetitions of every candidate would take
    runs: int
    rule: str = DEFAULT_RULE        # the racing rule (campaign/rules/)
    flagged: dict | None = None     # instrument flags (docs/testbed.md): runs, chosen (the decision's), kinds
    path_rtt: list[str] | None = None   # remote: where the path's stored RTT came from (TCP's, ping beside it)
    modelled: int | None = None     # rule 'model': how many candidates had a prior (the rest raced on runs alone)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def tune(spec: specs.CampaignSpec, store: Store, *, margin: float = decide.DEFAULT_MARGIN,
         confidence: float = decide.DEFAULT_CONFIDENCE, first: int | None = None, budget_s: float | None = None,
         rule: str = DEFAULT_RULE, out: TextIO = sys.stderr, **run_kw) -> TuneResult:
    if len(spec.links) != 1:
        raise ValidationError("link", f"tune races on one link configuration; the spec has {len(spec.links)}")
    if spec.adaptive:
        raise ValidationError("campaign.precision", "tune decides repetitions itself (give repetitions = most rounds)")
    recorder = Recorder(store, spec.campaign_id)
    seed = recorder.open(spec)
    race = Racing(spec, seed, margin=margin, confidence=confidence, first=first, budget_s=budget_s, rule=rule)
    summary = run_campaign(spec, store, out=out, policy=race, **run_kw)
    d = race.decision(recorder)
    st = d["state"]
    evidence = sorted(race.stops(recorder), key=lambda r: -(r["mean_bps"] or 0))
    chosen = next((r for r in evidence if r["reason"] == "chosen"), None)
    per_run = d["spent_s"] / max(1, summary.ok)
    priors = race.rule_options.get("priors")
    return TuneResult(spec.campaign_id, chosen, st.stop, st.rounds, evidence, d["spent_s"], budget_s,
                      per_run * spec.repetitions * len(race.points), summary.ok + summary.failed, rule,
                      flagged_runs(store, spec.campaign_id, chosen), path_rtt_notes(store, spec.campaign_id),
                      None if priors is None else sum(1 for p in priors.values() if p))


def flagged_runs(store: Store, campaign_id: str, chosen: dict | None) -> dict:
    """The race's ok runs the instrument flagged (store.reads.flagged_ok_runs): how many, how many of them
    are the decision's, and each flag's count (notes left out)."""
    rows = flagged_ok_runs(store, [campaign_id])
    kinds: dict[str, int] = {}
    for r in rows:
        for f in r["flags"]:
            kinds[f] = kinds.get(f, 0) + 1
    key = lambda r: (r["variant"], r["streams"], r["socket_buffer_bytes"])   # noqa: E731
    mine = sum(1 for r in rows if chosen and key(r) == key(chosen))
    return {"runs": len(rows), "chosen": mine, "kinds": dict(sorted(kinds.items()))}


STOPS = {"one left": "one candidate left", "tie": "the survivors are a tie within the margin",
         "shown": "the decision is shown within the margin of every other survivor",
         "budget": "the budget of transfer time is spent", "rounds": "the most rounds are done",
         None: "interrupted (run the same command again to continue)"}


def format_result(res: TuneResult, *, margin: float, confidence: float) -> str:
    g = lambda x: "–" if x is None else f"{x / 1e9:.3f}"   # noqa: E731
    lines = [f"race ({res.rule}) stopped after round {res.rounds}: {STOPS[res.stop]} "
             f"(margin {margin * 100:g}%, {confidence * 100:g}% {RULES[res.rule].DESCRIPTION})"]
    if res.chosen:
        c = res.chosen
        lines.append(f"decision: {_label(c)} — {g(c['mean_bps'])} Gbit/s [{g(c['ci_low_bps'])}, {g(c['ci_high_bps'])}]"
                     + ("" if res.stop in ("one left", "tie", "shown") else "  (not separated from every survivor: see below)"))
    budget = "" if res.budget_s is None else f" of a {res.budget_s:.0f} s budget"
    ratio = f" ({res.fixed_s / res.spent_s:.1f}× less)" if res.spent_s else ""
    lines.append(f"transfer time: {res.spent_s:.0f} s{budget} over {res.runs} runs; measuring every candidate "
                 f"in every round would take about {res.fixed_s:.0f} s{ratio}")
    lines += res.path_rtt or []
    if res.modelled is not None:
        lines.append(f"model priors for {res.modelled} of {len(res.evidence)} candidates" + (
            "" if res.modelled == len(res.evidence) else "; the others (no validated model: BBR, a BPF variant, "
            "Reno, a remote link) raced on their runs alone"))
    fl = res.flagged or {}
    if fl.get("runs"):
        kinds = ", ".join(f"{k} ×{v}" for k, v in fl["kinds"].items())
        lines.append(f"instrument: {fl['runs']} of {res.runs} runs flagged ({kinds}), {fl['chosen']} of them the "
                     f"decision's; a flag says the link left a tolerance during the run (docs/testbed.md)")
    lines.append(f"\n{'candidate':<32} {'runs':>4} {'mean Gbit/s':>11} {f'{confidence * 100:g}% CI':>15}  status")
    for r in res.evidence:
        ci = "–" if r["ci_low_bps"] is None else f"{g(r['ci_low_bps'])}–{g(r['ci_high_bps'])}"
        lines.append(f"{_label(r):<32} {r['repetitions']:>4} {g(r['mean_bps']):>11} {ci:>15}  {r['detail']}")
    return "\n".join(lines)


def _label(r: dict) -> str:
    from ..units import fmt_buffer
    return f"{r['variant']} n={r['streams']} B={fmt_buffer(r['socket_buffer_bytes'])}"
