"""Adaptive repetitions: repeat a configuration only while its mean is less precise than asked.

Rule (docs/spec.md, after Kalibera & Jones: repetitions per level from a target interval width):
every configuration gets `min_repetitions`; after r ≥ min repetitions it gets one more only while
the Student-t interval of its mean at `confidence` has a half-width above `precision` × |mean|, and
never more than `max_repetitions`:

    stop after r  ⇔  r ≥ max   or   t_{1−α/2, r−1} · s_r / √r ≤ precision · |x̄_r|

The decision to run repetition r looks only at repetitions 0 … r−1 of that configuration, so plans
are a deterministic function of the stored results: a killed campaign resumes to the same decisions.
Rounds: the first plans repetitions 0 … min−1 of everything, each later one the next repetition of
every configuration still open, all in the order of the seeded schedule of the maximum design
(seq = position in that schedule; run ids as in a fixed campaign).
"""

from __future__ import annotations

from collections import defaultdict

from ...choose import decide
from ...spec import CampaignSpec, RunPoint
from ..executor import Block
from ..policy import BasePolicy, blocks_of, config_key
from ..recorder import Recorder

NAME = "adaptive"


def stop_reason(values: list[float], runs: int, *, min_reps: int, max_reps: int, precision: float,
                confidence: float) -> str | None:
    """After `runs` repetitions (with these ok values): 'precision' or 'maximum' to stop, None to go on."""
    if runs < min_reps:
        return None
    if len(values) >= 2:
        m = decide.mean_of(values)
        if m.half_width(confidence) <= precision * abs(m.value):
            return "precision"
    return "maximum" if runs >= max_reps else None


class AdaptiveRepetitions(BasePolicy):
    def __init__(self, spec: CampaignSpec, seed: int | None):
        self.spec = spec
        self.campaign_id = spec.campaign_id
        self.schedule = spec.schedule(seed)          # the maximum design, seeded order
        self.by_config: dict[str, dict[int, tuple[int, RunPoint]]] = defaultdict(dict)
        for seq, p in enumerate(self.schedule):
            self.by_config[config_key(p)][p.repetition] = (seq, p)
        self._open = len(self.by_config)

    def _state(self, finished: dict) -> dict[str, tuple[list[int], str | None]]:
        """Per configuration: the repetitions it needs now, and its stop reason (None: open)."""
        spec = self.spec
        rule = dict(min_reps=spec.min_repetitions, max_reps=spec.repetitions, precision=spec.precision,
                    confidence=spec.confidence)
        out = {}
        for key, reps in self.by_config.items():
            values, need, reason = [], [], None
            for r in range(len(reps)):
                if r >= spec.min_repetitions:
                    if need:                       # the minimum is not complete yet
                        break
                    reason = stop_reason(values, r, **rule)    # looks at repetitions 0 … r−1 only
                    if reason:
                        break
                row = finished.get(reps[r][1].run_id(self.campaign_id))
                if row is None:
                    need.append(r)
                    if r >= spec.min_repetitions:  # one at a time past the minimum
                        break
                    continue
                if row["status"] == "ok" and row["throughput_bps"] is not None:
                    values.append(row["throughput_bps"])
            else:
                if not need:
                    reason = stop_reason(values, len(reps), **rule) or "maximum"
            out[key] = (need, reason)
        return out

    def plan(self, recorder: Recorder) -> list[Block]:
        state = self._state(recorder.finished())
        self._open = sum(1 for need, reason in state.values() if reason is None)
        wanted = {self.by_config[k][r][0] for k, (need, _) in state.items() for r in need}
        return blocks_of([(seq, p) for seq, p in enumerate(self.schedule) if seq in wanted])

    def total(self, recorder: Recorder) -> int:
        return len(recorder.finished_run_ids()) + sum(len(b.runs) for b in self.plan(recorder))

    def progress_note(self) -> str:
        return f"{self._open} configuration{'s' if self._open != 1 else ''} open"

    # -- what the driver records and prints at the end ----------------------------------------------
    def stops(self, recorder: Recorder) -> list[dict]:
        finished = recorder.finished()
        state = self._state(finished)
        rows = []
        for key, reps in self.by_config.items():
            p = reps[0][1]
            done = [finished[q.run_id(self.campaign_id)] for _, q in reps.values()
                    if q.run_id(self.campaign_id) in finished]
            values = [r["throughput_bps"] for r in done if r["status"] == "ok" and r["throughput_bps"] is not None]
            ci = decide.mean_of(values).interval(self.spec.confidence) if values else None
            reason = state[key][1] or "open"
            rows.append({"config_key": key, "link": p.link.describe(), "variant": p.variant, "streams": p.streams,
                         "socket_buffer_bytes": p.socket_buffer_bytes, "transfer_bytes": p.transfer_bytes,
                         "duration_target_s": float(p.duration_s) if p.duration_s is not None else None,
                         "reverse": p.reverse, "repetitions": len(done), "ok_runs": len(values),
                         "mean_bps": sum(values) / len(values) if values else None,
                         "ci_low_bps": ci[0] if ci else None, "ci_high_bps": ci[1] if ci else None,
                         "reason": reason, "detail": _detail(reason, len(done), self.spec)})
        return rows

    def summary_notes(self, recorder: Recorder) -> list[str]:
        rows = self.stops(recorder)
        spent, fixed = transfer_seconds(recorder, self.by_config, self.campaign_id, self.spec.repetitions)
        counts = defaultdict(int)
        for r in rows:
            counts[r["reason"]] += 1
        ratio = f" ({fixed / spent:.1f}× less)" if spent > 0 else ""
        return [f"adaptive: precision ±{self.spec.precision * 100:g}% at {self.spec.confidence * 100:g}% confidence, "
                f"{self.spec.min_repetitions}–{self.spec.repetitions} repetitions; stopped at precision "
                f"{counts['precision']}, at the maximum {counts['maximum']}, still open {counts['open']}",
                f"transfer time: {spent:.0f} s spent; the fixed {self.spec.repetitions}-repetition design "
                f"would spend about {fixed:.0f} s{ratio}"]


def _detail(reason: str, runs: int, spec: CampaignSpec) -> str:
    return {"precision": f"interval within ±{spec.precision * 100:g}% after {runs} repetitions",
            "maximum": f"maximum of {spec.repetitions} repetitions reached",
            "open": f"{runs} repetitions so far"}[reason]


def transfer_seconds(recorder: Recorder, by_config: dict, campaign_id: str, design_reps: int) -> tuple[float, float]:
    """(seconds of transfer the ok runs took, what `design_reps` repetitions of every configuration
    would take at each configuration's mean run duration)."""
    finished = recorder.finished()
    spent = fixed = 0.0
    for reps in by_config.values():
        durations = [finished[p.run_id(campaign_id)]["duration_s"] for _, p in reps.values()
                     if finished.get(p.run_id(campaign_id), {}).get("duration_s")]
        spent += sum(durations)
        if durations:
            fixed += design_reps * sum(durations) / len(durations)
    return spent, fixed


POLICY = AdaptiveRepetitions
