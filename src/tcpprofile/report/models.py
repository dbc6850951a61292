"""Model vs measurement (tcp-models-high-bdp Figs. 6–8, with the average error E)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .common import Note, Section
from .data import ReportData


def model_vs_measurement(data: ReportData, out: Path) -> Section:
    """Integration point for tcpprofile.models (not on main yet: the figure is left out with a note)."""
    if importlib.util.find_spec("tcpprofile.models") is None:
        item = Note("Model vs measurement", "tcpprofile.models is not part of this build")
    else:
        item = Note("Model vs measurement", "tcpprofile.models is present but the report does not call it yet")
    return Section("models", "Model vs measurement", "tcp-models-high-bdp Figs. 6–8", [item])
