"""How far a measured configuration is from the models' development design (issue 31; docs/models.md,
"New-condition validation").

A cell is (variant, n, β × BDP, τ, F, C) with its link context (MTU, loss, socket buffer), F the transfer
size (iperf3 -n) or duration (-t), C the link's rate. The five novelty dimensions are n, β, τ, F and C (every
development store is at 10 Gbit/s; a store at another rate is new in C, not a wholly other link). Against a
development design (a list of cells: the development stores' specs, or the stores table
benchmarks/data/model-stores.csv):

* distance = the fewest of the five dimensions in which the cell differs from a development cell of the same
  variant and context (0: the same cell; 5: no development cell of that variant and context);
* new = the dimensions whose value no development cell of that variant and context had (new n: n never
  measured in development);
* the group: "same cell", "new " + the new dimensions ("new n+β"), or "new combination" (each value measured,
  never together).

The new-condition design (benchmarks/data/models-newcond-*.toml) keeps distance ≥ 2 from every store the models
have seen; `model validate --by-novelty` groups E by the group.
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import ValidationError
from .fit import is_missing
from ..units import to_ms

DIMENSIONS = ("n", "β", "τ", "F", "C")
REL = {"β": 0.02, "τ": 0.005, "C": 0.005}   # relative tolerance of "the same value" (β: bytes rounded to whole B)
STORE_COLUMNS = ("store", "role", "source", "campaign", "variants", "streams", "buffers_bdp", "rtts_ms", "amounts",
                 "socket_buffers", "loss", "rate_bps", "mtu", "repetitions", "runs", "cells",
                 "shared_validation_cells", "used_for")


@dataclass(frozen=True)
class DesignCell:
    """One configuration of a design: the novelty dimensions and the context a development cell must share."""

    variant: str
    streams: int
    buffer_bdp: float | None        # β / (C·τ/8), C the link rate (spec.py: BDP = C·τ/8 bytes); None: unknown
    rtt_ms: float
    amount: str                     # "F=<bytes>" (iperf3 -n) or "T=<s>" (-t)
    context: tuple = ()             # (rate_bps, mtu, loss, socket buffer bytes or "auto")

    def values(self) -> tuple:
        """The novelty dimensions' values (DIMENSIONS): n, β × BDP, τ [ms], F, C [bit/s] (the context's rate)."""
        return self.streams, self.buffer_bdp, self.rtt_ms, self.amount, self.context[0] if self.context else None

    def link(self) -> tuple:
        """What a development cell must share to be compared: the context without the rate (MTU, loss, socket
        buffer)."""
        return self.context[1:]


def _same(dim: str, a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if dim in REL:
        return math.isclose(a, b, rel_tol=REL[dim])
    return a == b


def _amount(size, duration) -> str:
    if not is_missing(size):
        return f"F={int(round(float(size)))}"
    return f"T={float(duration):g}" if not is_missing(duration) else "F=?"


def _context(rate, mtu, loss, socket_buffer) -> tuple:
    sb = "auto" if is_missing(socket_buffer) else int(socket_buffer)
    return (float(rate), None if is_missing(mtu) else int(mtu), loss, sb)


def cells_of_spec(spec) -> list[DesignCell]:
    """The distinct cells of a campaign spec (spec.CampaignSpec: its sweep without repetitions; emulated links
    only). The spec is passed in, not loaded here: spec and models are one layer (tests/test_architecture.py)."""
    out = {}
    for p in spec.sweep():
        link = p.link
        if link.kind != "emulated":
            continue
        bdp = link.rate_bps * link.rtt_s / 8      # spec.py: BDP = C·τ/8 [bytes]
        cell = DesignCell(p.variant, p.streams, round(link.buffer_bytes / bdp, 6), round(link.rtt_s * 1e3, 6),
                          _amount(p.transfer_bytes, p.duration_s),
                          _context(link.rate_bps, link.mtu, link.loss.label(), p.socket_buffer_bytes))
        out.setdefault(cell, None)
    return list(out)


def cells_of_table(cols) -> list[DesignCell]:
    """One cell per row of a profile table (models.fit.as_columns): β × BDP from the configured buffer and the
    link rate (None where the store has no configured buffer)."""
    rows = len(cols["variant"])
    out = []
    for i in range(rows):
        tau = float(cols["rtt_s"][i])
        rtt = to_ms(tau)   # a cell's τ in ms, the unit of the design's CSV (STORE_COLUMNS' rtts_ms)
        rate = float(cols["rate_bps"][i])
        cfg = cols.get("configured_buffer_bytes")
        beta = None if cfg is None or is_missing(cfg[i]) else round(float(cfg[i]) / (rate * tau / 8), 6)
        loss = _loss_label(cols.get("loss_mode", [None] * rows)[i], cols.get("loss_rate", [0.0] * rows)[i])
        out.append(DesignCell(str(cols["variant"][i]), int(cols["streams"][i]), beta, rtt,
                              _amount(cols.get("transfer_bytes", [None] * rows)[i],
                                      cols.get("duration_target_s", [None] * rows)[i]),
                              _context(rate, cols.get("mtu", [None] * rows)[i], loss,
                                       cols.get("socket_buffer_bytes", [None] * rows)[i])))
    return out


def _loss_label(mode, rate) -> str:
    """The loss as spec.Loss.label() writes it (periodic 1/N, uniform p=…, none)."""
    if is_missing(mode) or mode == "none":
        return "none"
    if mode == "periodic":
        return f"1/{round(1 / float(rate))}"
    return f"p={float(rate):g}"


def distance(cell: DesignCell, development) -> tuple[int, tuple[str, ...]]:
    """(distance, new dimensions) of a cell from a development design (module docstring)."""
    mine = [d for d in development if d.variant == cell.variant and d.link() == cell.link()]
    values = cell.values()
    if not mine:
        return len(DIMENSIONS), DIMENSIONS
    dist = min(sum(not _same(dim, a, b) for dim, a, b in zip(DIMENSIONS, values, d.values())) for d in mine)
    new = tuple(dim for k, dim in enumerate(DIMENSIONS)
                if not any(_same(dim, values[k], d.values()[k]) for d in mine))
    return dist, new


def group(dist: int, new: tuple[str, ...]) -> str:
    """The novelty group's label."""
    if dist == 0:
        return "same cell"
    return "new " + "+".join(new) if new else "new combination"


def too_close(design, development, minimum: int = 2) -> list[tuple[DesignCell, int]]:
    """The cells of `design` that differ from a development cell in fewer than `minimum` of the five dimensions
    (the new-condition design's rule), with their distance; empty when the design keeps the rule."""
    return [(c, d) for c in design for d in [distance(c, development)[0]] if d < minimum]


# -- the stores table (benchmarks/data/model-stores.csv) ----------------------------------------------------------
def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split()]


def cells_of_store_row(row: dict) -> list[DesignCell]:
    """The cells of one row of the stores table: the product of its lists, as the campaign spec sweeps them."""
    sbs = ["auto" if x == "auto" else int(x) for x in row["socket_buffers"].split()]
    rate, mtu = float(row["rate_bps"]), int(row["mtu"])
    return [DesignCell(v, int(n), b, t, a, (rate, mtu, row["loss"], sb))
            for v, n, b, t, a, sb in itertools.product(row["variants"].split(), row["streams"].split(),
                                                        _floats(row["buffers_bdp"]), _floats(row["rtts_ms"]),
                                                        row["amounts"].split(), sbs)]


def read_stores(path: str | Path) -> list[dict]:
    """The stores table's rows (dicts over STORE_COLUMNS); a ValidationError naming the file if it is not one."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise ValidationError("--by-novelty", f"cannot read {path}: {err.strerror}") from None
    if not rows or set(STORE_COLUMNS) - set(rows[0]):
        raise ValidationError("--by-novelty", f"{path}: not a stores table (columns {', '.join(STORE_COLUMNS)})")
    return rows


def development_cells(paths, load_spec, roles=("development",), before: str | None = None) -> list[DesignCell]:
    """The development design from files: campaign specs (.toml, read by load_spec: spec.load), or stores tables
    (.csv: the rows whose role is one of `roles`; with `before`, a store's name, only the rows listed before it — a
    stores table lists its stores in the order they were measured, so these are the ones seen before it)."""
    out = []
    for path in paths:
        if str(path).endswith(".csv"):
            rows = read_stores(path)
            if before is not None:
                names = [row["store"] for row in rows]
                if before not in names:
                    raise ValueError(f"{path}: no store named {before!r}")
                rows = rows[:names.index(before)]
            for i, row in enumerate(rows):
                keep = row["role"] in roles
                try:
                    out += cells_of_store_row(row) if keep else []
                except (ValueError, AttributeError) as err:   # a list with a word that is no number, a missing cell
                    raise ValidationError("--by-novelty", f"{path}, row {i + 1} ({row.get('store')}): {err}") from None
        else:
            try:
                out += cells_of_spec(load_spec(path))
            except ValidationError as err:   # the spec's own field, under the option that named the file
                raise ValidationError("--by-novelty", f"{path}: {err}") from None
    if not out:
        raise ValidationError("--by-novelty", "no development cell in " + ", ".join(map(str, paths)))
    return out
