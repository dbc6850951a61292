"""Every store the models used (issue 31; docs/models.md, "The stores the models used"): its role, its design and
how many of its cells it shares with a validation store, as benchmarks/data/model-stores.csv; and the development
constants recomputed from the development rows that share no cell with any validation store.

    python benchmarks/model_stores.py > benchmarks/data/model-stores.csv     # the table, from the specs
    python benchmarks/model_stores.py --constants                           # W0, s, κ without the shared rows

A cell is (variant, n, β × BDP, τ, F) on its link (rate, MTU, loss, socket buffer): models/novelty.py. Every store
here was measured from one campaign spec (a product of its lists), so the table's lists are its design.
"""

from __future__ import annotations

import csv
import io
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tcpprofile import spec  # noqa: E402
from tcpprofile.models.novelty import STORE_COLUMNS, DesignCell, cells_of_spec, cells_of_store_row  # noqa: E402
from tcpprofile.reproduce.campaigns import MODES  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
TABLE = DATA / "model-stores.csv"
TRACES = DATA / "slow-start-drop.csv"
PAYLOAD_SHARE = 8948 / 9038   # C_payload / C at MTU 9000 (docs/models.md "Fitting measured runs", item 3)
# (store, role, source, what the models took from it), in the order measured (models_newcond.seen_before reads the
# rows above a design's first store); source: a spec under benchmarks/data, or reproduce quick
STORES = (
    ("physics-dev-0.2bdp", "development", "physics-dev-0.2bdp.toml",
     "trajectory mechanisms (issue 20); cwnd traces in slow-start-drop.csv (W0, s)"),
    ("physics-dev2-buffers", "development", "physics-dev2-buffers.toml",
     "across buffers; κ = SS_BURST (0.05 × BDP traces); cwnd traces in slow-start-drop.csv (W0, s)"),
    ("physics-dev3-shallow", "development", "physics-dev3-shallow.toml",
     "single flows at 0.1 × BDP; cwnd traces in slow-start-drop.csv (W0, s)"),
    ("physics-dev4-shallow", "development", "physics-dev4-shallow.toml",
     "trains across buffers and n; cwnd traces in slow-start-drop.csv (W0, s)"),
    ("reproduce-quick-clean", "development", "reproduce quick",
     "the fit's choices: receiver interval, start-up lag, queue_fill, capacity, W_max known"),
    ("reproduce-quick-loss", "development", "reproduce quick", "the external-loss models (1-in-500)"),
    ("reproduce-quick-buffers", "development", "reproduce quick", "the fit with a 32 MiB socket buffer"),
    ("models-validation", "validation", "models-validation.toml", "judged paper and trajectory (spent)"),
    ("models-validation-2", "validation", "models-validation-2.toml",
     "judged ss-burst-buffer (spent); then read as a development store for ss-trains"),
    ("models-validation-3", "validation", "models-validation-3.toml", "judged ss-trains (spent)"),
    # the 5 Gbit/s new-condition twin, timed by delivery (its first, iperf3-rated measurement had the same cells)
    ("models-newcond-5gbit-delivered-500mb", "validation", "models-newcond-5gbit-delivered-500mb.toml",
     "judged ss-trains at new conditions (spent)"),
    ("models-newcond-5gbit-delivered-2500mb", "validation", "models-newcond-5gbit-delivered-2500mb.toml",
     "judged ss-trains at new conditions (spent)"),
    ("models-newcond-5gbit-delivered-10gb", "validation", "models-newcond-5gbit-delivered-10gb.toml",
     "judged ss-trains at new conditions (spent)"),
    # the second 5 Gbit/s new-condition store, then development traces measured after it was read
    ("models-newcond-5gbit-b-1500mb", "validation", "models-newcond-5gbit-b-1500mb.toml",
     "judged bandwidth-switch at new conditions (spent)"),
    ("models-newcond-5gbit-b-5gb", "validation", "models-newcond-5gbit-b-5gb.toml",
     "judged bandwidth-switch at new conditions (spent)"),
    ("dev-ssend-5gbit", "development", "dev-ssend-5gbit.toml",
     "slow start's end at 5 Gbit/s, 0.25 × BDP; cwnd traces in slow-start-drop-5gbit.csv (nothing taken)"),
    ("dev-trains-5gbit", "development", "dev-trains-5gbit.toml",
     "the trains' law at 5 Gbit/s; cwnd traces in slow-start-drop-5gbit.csv (nothing taken)"),
    ("models-newcond-5gbit-c", "validation", "models-newcond-5gbit-c.toml",
     "judged bandwidth-switch again, 4 repetitions (spent)"),
    ("models-newcond-5gbit-d", "validation", "models-newcond-5gbit-d.toml",
     "judged trains-by-rate, not adopted (spent)"),
    ("dev-shallow-5gbit", "development", "dev-shallow-5gbit.toml",
     "CUBIC's and H-TCP's windows after slow start at 0.12 × BDP, n = 1 and 2 (cwnd traces; slow-start-events-5gbit.csv)"),
    ("dev-events-5gbit", "development", "dev-events-5gbit.toml",
     "the window slow start's burst leaves, single flows at 0.1–0.3 × BDP (cwnd traces): CUBIC's BURST_BY_RATE"),
    ("models-newcond-5gbit-e", "validation", "models-newcond-5gbit-e.toml",
     "judged bandwidth-switch and burst-by-rate (neither passed; spent)"),
    ("models-newcond-5gbit-f", "validation", "models-newcond-5gbit-f.toml",
     "judged burst-by-rate against bandwidth-switch: burst-by-rate the default (spent)"),
    ("models-newcond-5gbit-g", "validation", "models-newcond-5gbit-g.toml",
     "judged the default burst-by-rate after its adoption: every cell ≤ 4 % (spent)"),
    ("models-newcond-5gbit-h", "validation", "models-newcond-5gbit-h.toml",
     "judged the default burst-by-rate a second time: every cell ≤ 4 % (spent)"),
)


def load(source: str, name: str) -> spec.CampaignSpec:
    if source == "reproduce quick":
        return next(s for s in map(spec.parse, MODES["quick"]) if s.name == name)
    return spec.load(DATA / source)


def _words(values) -> str:
    return " ".join(dict.fromkeys(f"{v:g}" if isinstance(v, float) else str(v) for v in values))


def row(name: str, role: str, source: str, used: str) -> dict:
    s = load(source, name)
    links = s.links
    bdps = [round(p.buffer_bytes / (p.rate_bps * p.rtt_s / 8), 6) for p in links]   # spec.py: BDP = C·τ/8 bytes
    assert len({p.rate_bps for p in links}) == len({p.mtu for p in links}) == len({p.loss for p in links}) == 1
    cells = cells_of_spec(s)
    return {"store": name, "role": role, "source": source if source == "reproduce quick" else f"benchmarks/data/{source}",
            "campaign": s.name, "variants": " ".join(s.variants), "streams": _words(s.streams),
            "buffers_bdp": _words(bdps), "rtts_ms": _words(round(p.rtt_s * 1e3, 6) for p in links),
            "amounts": " ".join([f"F={f}" for f in s.sizes] + [f"T={d:g}" for d in s.durations]),
            "socket_buffers": " ".join("auto" if b is None else str(b) for b in s.socket_buffers),
            "loss": links[0].loss.label(), "rate_bps": f"{links[0].rate_bps:g}", "mtu": links[0].mtu,
            "repetitions": s.repetitions, "runs": len(s.sweep()), "cells": len(cells),
            "shared_validation_cells": 0, "used_for": used}


def table() -> list[dict]:
    """The stores table; shared_validation_cells counts a store's cells that a validation store (another one, for a
    validation store) also has."""
    rows = [row(*s) for s in STORES]
    cells = {r["store"]: set(cells_of_store_row(r)) for r in rows}
    for r in rows:
        others = set().union(*(cells[o["store"]] for o in rows if o["role"] == "validation" and o is not r))
        r["shared_validation_cells"] = len(cells[r["store"]] & others)
    return rows


def write(rows, out) -> None:
    w = csv.DictWriter(out, STORE_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)


def validation_cells(rows) -> set[DesignCell]:
    return {c for r in rows if r["role"] == "validation" for c in cells_of_store_row(r)}


def trace_cell(r: dict) -> DesignCell:
    """The cell of a slow-start-drop.csv row: every traced development run was 10 GB, 10 Gbit/s, MTU 9000, clean,
    autotuned; its buffer_bdp is β over the payload BDP (C_payload·τ), so β × BDP = buffer_bdp × C_payload / C."""
    return DesignCell(r["variant"], int(r["streams"]), round(float(r["buffer_bdp"]) * PAYLOAD_SHARE, 3),
                      float(r["rtt_ms"]), "F=10000000000", (10e9, 9000, "none", "auto"))


def constants(rows=None, traces: Path = TRACES) -> dict:
    """W0, s (slow_start_drop.fit: P/2 = W0 + s·y over loss-ended rows at β ≤ 0.3 × BDP, n ≤ 4) and κ (median of
    2y/P over the loss-ended rows at 0.05 × BDP, n ≤ 4: regime (a) of the round's burst, P = 2β/κ), over all
    traced rows and over the rows whose cell no validation store has; the number of rows each."""
    import slow_start_drop as ssd

    shared = validation_cells(rows or table())
    with open(traces, newline="") as f:
        data = list(csv.DictReader(f))
    out = {}
    for which, keep in (("all", data), ("no validation cell", [r for r in data if trace_cell(r) not in shared])):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="") as tmp:
            w = csv.DictWriter(tmp, list(data[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(keep)
            tmp.flush()
            w0, s, count = ssd.fit(tmp.name)
            y, peak = ssd.train_rows(tmp.name)
        burst = [2 * b / p for b, p in zip(y, peak) if b < 0.06]   # P = 2β/κ (docs/models.md, regime (a))
        out[which] = {"W0": w0, "s": s, "rows": count, "kappa": statistics.median(burst), "kappa_rows": len(burst),
                      "dropped": len(data) - len(keep),
                      "dropped_fit_rows": len(ssd.train_rows(str(traces))[0]) - count}
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--constants"]:
        from tcpprofile.models.trajectory import SS_BURST, SS_TRAIN_SLOPE, SS_TRAIN_WINDOW
        got = constants()
        print(f"in the code: W0 = {SS_TRAIN_WINDOW}, s = {SS_TRAIN_SLOPE}, κ = {SS_BURST}")
        for which, c in got.items():
            print(f"{which:>18}: W0 = {c['W0']:.3f}, s = {c['s']:.3f} over {c['rows']} rows; κ = {c['kappa']:.4f} "
                  f"(median of 2y/P over {c['kappa_rows']} rows at 0.05 × BDP); left out {c['dropped']} traced rows, "
                  f"{c['dropped_fit_rows']} of the W0/s fit's")
        return 0
    buf = io.StringIO()
    write(table(), buf)
    sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
