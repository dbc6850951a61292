"""The level of every verdict interval, from what the store holds (the standard and confirm modes' looks):
below both the findings and the sequential modes, which ask it."""

from __future__ import annotations

from collections.abc import Iterable

from ..store import reads
from . import stats
from .campaigns import CONFIRM_DESIGNS, DESIGNS, PREFIX

LOOKS_PLANNED = max(len(d.looks) for d in DESIGNS)
LEVEL = 1 - (1 - stats.LEVEL) / LOOKS_PLANNED   # Bonferroni over the 3 planned looks
SEQUENTIAL = {"standard": DESIGNS, "confirm": CONFIRM_DESIGNS}   # modes run at looks (their campaign names' mode)


def level_of(con, campaign_ids: Iterable[str] | None = None) -> float:
    """The level every verdict on these campaigns (or on every reproduce-* campaign) is computed at, from
    what the store holds: a standard campaign among them was looked at up to LOOKS_PLANNED times, so its
    verdicts take the looks' Bonferroni share (LEVEL); quick and full campaigns have one look (stats.LEVEL).
    The CLI, --check-only, the standard mode's looks and the report all ask this, never a default."""
    named = reads.campaigns_named(getattr(con, "con", con), PREFIX + "%")
    ids = None if campaign_ids is None else set(campaign_ids)
    looked = tuple(f"{PREFIX}{mode}-" for mode in SEQUENTIAL)
    standard = any(name.startswith(looked) for name, cid in named if ids is None or cid in ids)
    return LEVEL if standard else stats.LEVEL
