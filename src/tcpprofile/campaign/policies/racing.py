"""Racing (`tcpprofile tune`): the race over one link's candidates, rounds being repetitions, decided
by a racing rule (campaign/rules/: 'confirm', the default, and 'paired'; docs/tune.md).

Each rule is a `replay(values, ...)` of the race on plain numbers (values[candidate][round], None for
a failed run); the policy applies it to the stored runs. Decisions depend only on the runs at hand,
so a killed race resumes to the same decisions.
"""

from __future__ import annotations

import numpy as np

from ...choose import decide
from ...spec import CampaignSpec, RunPoint
from ..executor import Block, RunDone
from ..policy import BasePolicy, blocks_of, config_key
from ..race_state import RaceState, mean_or_minus_inf, choose
from ..recorder import Recorder
from ..rules import DEFAULT_RULE, RULES

NAME = "racing"


def simplicity(p: RunPoint) -> tuple:
    """select's tie-break (fewest streams, smallest buffer, builtin variant, name) for a run point."""
    from ...choose.select import Config
    return Config(p.variant, "", p.streams, p.socket_buffer_bytes).simplicity()


def label(p: RunPoint) -> str:
    from ...units import fmt_buffer
    return f"{p.variant} n={p.streams} B={fmt_buffer(p.socket_buffer_bytes)}"


class Racing(BasePolicy):
    """The race over a single-link spec's configurations; rounds are repetitions."""

    def __init__(self, spec: CampaignSpec, seed: int | None, *, margin: float = decide.DEFAULT_MARGIN,
                 confidence: float = decide.DEFAULT_CONFIDENCE, first: int | None = None,
                 budget_s: float | None = None, rule: str = DEFAULT_RULE):
        if len(spec.links) != 1:
            raise ValueError("a race runs on one link configuration")
        self.spec, self.campaign_id = spec, spec.campaign_id
        self.rule, self._rule = rule, RULES[rule]
        self.margin, self.confidence, self.budget_s = margin, confidence, budget_s
        self.first = self._rule.FIRST if first is None else first
        self.schedule = spec.schedule(seed)            # max_rounds = spec.repetitions
        self.points: dict[str, dict[int, tuple[int, RunPoint]]] = {}
        for seq, p in enumerate(self.schedule):
            self.points.setdefault(config_key(p), {})[p.repetition] = (seq, p)
        self.state: RaceState | None = None
        self.spent_s = 0.0
        # what a rule needs beyond the runs (rules/model.py: the model's priors), computed once per race
        options = getattr(self._rule, "race_options", None)
        self.rule_options = options({k: self.candidate(k) for k in self.points}) if options else {}

    def candidate(self, key: str) -> RunPoint:
        return self.points[key][0][1]

    def values(self, finished: dict) -> dict[str, list]:
        out = {}
        for key, reps in self.points.items():
            vals = []
            for r in range(len(reps)):
                row = finished.get(reps[r][1].run_id(self.campaign_id))
                if row is None:
                    break
                vals.append(row["throughput_bps"] if row["status"] == "ok" else None)
            out[key] = vals
        return out

    def _replay(self, recorder: Recorder) -> tuple[RaceState, dict]:
        finished = recorder.finished()
        durations = [r["duration_s"] or r["duration_target_s"] or 0.0 for r in finished.values()]
        self.spent_s = float(sum(durations))
        per_run = float(np.mean(durations)) if durations else 0.0

        def affordable(r: int, alive: list) -> bool:
            return self.budget_s is None or self.spent_s + len(alive) * per_run <= self.budget_s

        values = self.values(finished)
        self.state = self._rule.replay(values, first=self.first, max_rounds=self.spec.repetitions, margin=self.margin,
                            confidence=self.confidence, simplicity=lambda c: simplicity(self.candidate(c)),
                            affordable=affordable, **self.rule_options)
        return self.state, values

    def plan(self, recorder: Recorder) -> list[Block]:
        st, values = self._replay(recorder)
        if st.need is None:
            return []
        wanted = {self.points[c][i][0] for c, i in st.next.items()}
        return blocks_of([(seq, p) for seq, p in enumerate(self.schedule) if seq in wanted])

    def total(self, recorder: Recorder) -> int:
        return len(recorder.finished_run_ids()) + sum(len(b.runs) for b in self.plan(recorder))

    def observe(self, event) -> None:
        """The runner shows each finished run to the policy: the budget left moves with it."""
        if isinstance(event, RunDone):
            self.spent_s += event.row.get("duration_s") or event.row.get("duration_target_s") or 0.0

    def progress_note(self) -> str:
        st = self.state
        left = "" if self.budget_s is None else f"; budget left {max(0.0, self.budget_s - self.spent_s) / 60:.1f} min"
        return f"round {st.rounds + 1 if st.need is not None else st.rounds}: {len(st.alive)} of {len(self.points)} left{left}"

    # -- the decision and its evidence -------------------------------------------------------------
    def decision(self, recorder: Recorder) -> dict:
        st, values = self._replay(recorder)
        chosen = choose(st, values, self.margin, lambda c: simplicity(self.candidate(c))) if st.alive else None
        return {"state": st, "values": values, "chosen": chosen, "spent_s": self.spent_s}

    def stops(self, recorder: Recorder) -> list[dict]:
        d = self.decision(recorder)
        st, values, chosen = d["state"], d["values"], d["chosen"]
        survivors = {c: mean_or_minus_inf(values[c]) for c in st.alive}
        if st.chosen is not None:        # 'confirm' decided: the others are shown not better by more than the margin
            tied, tie_detail = st.ties, f"not better than the decision by more than {self.margin * 100:g}% (shown)"
        else:
            tied = decide.ties(survivors, self.margin) if survivors else []
            tie_detail = f"within {self.margin * 100:g}% of the best; a simpler one was chosen"
        rows = []
        for key in self.points:
            p = self.candidate(key)
            ok = [v for v in values[key] if v is not None]
            ci = decide.mean_of(ok).interval(self.confidence) if ok else None
            if key in st.dropped:
                rnd, leader = st.dropped[key]
                reason, detail = "dropped", (f"dropped after round {rnd}: below {label(self.candidate(leader))} "
                                             f"by more than {self.margin * 100:g}%")
                if key in st.prior_dropped:     # rules/model.py: its run and the model's prior said so
                    detail += " (its run and the model's prediction, within the model's error)"
            elif key == chosen:
                reason, detail = "chosen", f"chosen ({st.stop or 'race unfinished'})"
            elif key in tied and st.chosen is not None and simplicity(p) < simplicity(self.candidate(chosen)):
                reason, detail = "tie", (f"simpler, not shown within the margin of every survivor; {tie_detail}")
            elif key in tied:
                reason, detail = "tie", tie_detail
            else:
                reason, detail = "survivor", "not separated when the race stopped"
            rows.append({"config_key": key, "link": p.link.describe(), "variant": p.variant, "streams": p.streams,
                         "socket_buffer_bytes": p.socket_buffer_bytes, "transfer_bytes": p.transfer_bytes,
                         "duration_target_s": float(p.duration_s) if p.duration_s is not None else None,
                         "reverse": p.reverse, "repetitions": len(values[key]), "ok_runs": len(ok),
                         "mean_bps": float(np.mean(ok)) if ok else None,
                         "ci_low_bps": ci[0] if ci else None, "ci_high_bps": ci[1] if ci else None,
                         "reason": reason, "detail": detail})
        return rows


POLICY = Racing
