"""Figures, notes and tables the report's sections are made of; saving a matplotlib figure."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

G = 1e9
DPI = 90


@dataclass
class Figure:
    id: str
    title: str
    caption: str
    runs: int              # ok runs behind the figure
    file: str              # PNG, relative to the report directory


@dataclass
class Note:
    """A figure left out, and why (never rendered empty)."""
    title: str
    message: str


@dataclass
class Table:
    id: str
    title: str
    caption: str
    header: list[str]
    rows: list[list[str]]
    row_classes: list[str] = field(default_factory=list)   # CSS class per row ('' or 'flagged')
    runs: int = 0


@dataclass
class Code:
    """Lines to paste, shown verbatim in a <pre> that scrolls sideways rather than wrapping."""
    id: str
    title: str
    caption: str
    text: str


@dataclass
class Heading:
    """A sub-heading inside a section (the operator's page: one per path)."""
    id: str
    title: str
    text: str


@dataclass
class Section:
    id: str
    title: str
    paper: str            # which paper figure it reproduces
    items: list           # Figure | Table | Note | Code | Heading


def save(fig, out_dir: Path, name: str) -> str:
    fig.savefig(out_dir / f"{name}.png", dpi=DPI)
    plt.close(fig)
    return f"{name}.png"


# Fixed margins of the "grid" layout [inches]: y tick labels and label; x tick labels (rotated) and label;
# the panel title; between rows, what a panel's x labels and the next title need.
GRID_MARGINS_IN = {"left": 0.75, "right": 0.12, "bottom": 0.75, "top": 0.3, "row_gap": 0.95, "col_gap": 0.15}


def subplots(n: int, *, cols: int = 3, w: float = 4.2, h: float = 3.2, sharey: bool = True,
             layout: str = "constrained"):
    """A grid of n panels of w × h inches. layout "constrained" (matplotlib's constrained layout) fits every
    label; "grid" places the panels with fixed margins (GRID_MARGINS_IN), for panels that share y and carry
    short labels: constrained layout measures every tick label, about 40 % of a many-panel figure's time."""
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False, sharey=sharey,
                             layout="constrained" if layout == "constrained" else None)
    if layout == "grid":
        m, W, H = GRID_MARGINS_IN, w * cols, h * rows
        # matplotlib's wspace/hspace are gaps as fractions of the mean panel width/height
        pw = (W - m["left"] - m["right"] - (cols - 1) * m["col_gap"]) / cols
        ph = (H - m["top"] - m["bottom"] - (rows - 1) * m["row_gap"]) / rows
        fig.subplots_adjust(left=m["left"] / W, right=1 - m["right"] / W, bottom=m["bottom"] / H,
                            top=1 - m["top"] / H, wspace=m["col_gap"] / pw, hspace=m["row_gap"] / ph)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def label(ax, title: str, xlabel: str, ylabel: str, *, zero: bool = False) -> None:
    """Title and axis labels; the y label only in the first column (panels share y there)."""
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    if ax.get_subplotspec().is_first_col():
        ax.set_ylabel(ylabel)
    if zero:
        ax.axhline(0, color="black", lw=0.6)   # includes 0 in the y range; shared axes keep autoscaling
    ax.grid(alpha=0.3)


def pick(values, k: int) -> list:
    """Up to k values spread evenly over the sorted values (first and last always kept)."""
    values = sorted(values)
    if len(values) <= k:
        return values
    return [values[int(round(i))] for i in np.linspace(0, len(values) - 1, k)]


def spans_decades(values, factor: float = 10.0) -> bool:
    """Whether the positive values span more than `factor` (a decade): drawn on a log axis, the small ones
    would otherwise flatten against zero."""
    v = np.asarray([x for x in values if x > 0], float)
    return v.size > 1 and v.max() / v.min() > factor


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def runs_phrase(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


BACKGROUND_MIN_PROFILES = 24   # fewer profiles: a worker's start-up (~1 s of imports) is not worth it


def background_pool(profiles: int) -> ProcessPoolExecutor | None:
    """Worker processes for the report's slowest independent parts (the τ_T fits, the box plots), one per
    core but the caller's; spawned, not forked (the caller holds DuckDB's threads, which a fork copies
    mid-lock). None on one core or a small store. The caller shuts it down (cancelling what is queued)."""
    workers = (os.cpu_count() or 1) - 1
    if workers < 1 or profiles < BACKGROUND_MIN_PROFILES:
        return None
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
