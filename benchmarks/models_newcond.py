"""The new-condition validation design (issue 31, item 1; docs/models.md "New-condition validation"): checks that every
configuration of benchmarks/data/models-newcond-*.toml differs from every store the models have seen
(benchmarks/data/model-stores.csv, development and validation rows) in at least two of n, β, τ, F, and prints the
design and its estimated time; the same for its 5 Gbit/s twin (models-newcond-5gbit-*: half the rate, half the sizes).

    python benchmarks/models_newcond.py            # the check, the design, the estimate; exit 1 if a cell is too close
    python benchmarks/models_newcond.py --db STORE|RUNS.csv [CAMPAIGN-LIKE]   # E from the configuration alone

The second 5 Gbit/s store (models-newcond-5gbit-b-*, pre-registered 2026-11-29 after the first was read; its runs:
benchmarks/data/models-newcond-5gbit-b-runs.csv) judges `bandwidth-switch`, frozen before it was read.
The 5 Gbit/s twin, timed by delivery, was measured on 2026-11-29 (docs/models.md "Measured at 5 Gbit/s"; its runs:
benchmarks/data/models-newcond-5gbit-delivered-runs.csv). The 10 Gbit/s design: measure it on a day whose link carries
10 Gbit/s (under the exclusive lock), then read the store by novelty:

    for s in 1gb 5gb 20gb; do tcpprofile run benchmarks/data/models-newcond-$s.toml --db out/models-newcond.duckdb; done
    tcpprofile model validate --db out/models-newcond.duckdb --campaign 'models-newcond-%' \\
        --by-novelty benchmarks/data/model-stores.csv

The estimate: each run takes 8F/Θ, Θ the frozen default configuration's prediction from the run's configuration
(campaign/priors.predict_bps: C the payload ceiling, β the configured buffer, W_max half the autotuning limit,
start-up lag 1.2 RTTs), what the request asks beyond F at the payload rate, plus RUN_OVERHEAD_S, and each link LINK_SETUP_S. On models-validation-3's design this gives 53.7 min; that store
took 52 min (2026-11-25 05:49–06:41 UTC, docs/models.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tcpprofile import spec  # noqa: E402
from tcpprofile.campaign import autotuned_request_bytes  # noqa: E402
from tcpprofile.campaign.priors import predict_bps  # noqa: E402
from tcpprofile.packet_overhead import goodput_ceiling_bps  # noqa: E402
from tcpprofile.models.configurations import DEFAULT_CONFIGURATION  # noqa: E402
from tcpprofile.models.novelty import cells_of_spec, development_cells, too_close  # noqa: E402
from tcpprofile.models.validation import sampling_floor  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SPECS = tuple(DATA / f"models-newcond-{s}.toml" for s in ("1gb", "5gb", "20gb"))
# The same design at 5 Gbit/s with half the sizes (same F/(C·τ), same time), pre-registered 2026-11-29 for a host
# that cannot carry 10 Gbit/s per packet (docs/models.md "New-condition validation").
SPECS_5GBIT = tuple(DATA / f"models-newcond-5gbit-{s}.toml" for s in ("500mb", "2500mb", "10gb"))
# The 5 Gbit/s twin again, its fixed-size transfers timed by their delivery (autotuned: F plus what the send
# buffers hold, docs/spec.md), pre-registered 2026-11-29 after the twin's first measurement read no run's delivery.
SPECS_DELIVERED = tuple(DATA / f"models-newcond-5gbit-delivered-{s}.toml" for s in ("500mb", "2500mb", "10gb"))
# The second 5 Gbit/s store (pre-registered 2026-11-29 after the first was read): new against every store above.
SPECS_B = tuple(DATA / f"models-newcond-5gbit-b-{s}.toml" for s in ("1500mb", "5gb"))
# The third (pre-registered 2026-11-29 after the second was read and the 5 Gbit/s traces taken): the default judged
# again with four repetitions a cell (a sampling floor half the second store's variance).
SPECS_C = (DATA / "models-newcond-5gbit-c.toml",)
# The fourth (pre-registered 2026-11-29 after the third was read): for the next change (slow start's peak at 5 Gbit/s).
SPECS_D = (DATA / "models-newcond-5gbit-d.toml",)
# The fifth (pre-registered 2026-11-29 after the fourth was read and CUBIC's and H-TCP's windows traced at 0.12 × BDP):
# for the default and the change built from those traces, four repetitions a cell.
SPECS_E = (DATA / "models-newcond-5gbit-e.toml",)
# The sixth (pre-registered 2026-11-29 after the fifth was read): burst-by-rate against bandwidth-switch, six repetitions.
SPECS_F = (DATA / "models-newcond-5gbit-f.toml",)
# The seventh (pre-registered 2026-11-29 after the sixth made burst-by-rate the default): that default judged.
SPECS_G = (DATA / "models-newcond-5gbit-g.toml",)
# The eighth (pre-registered 2026-11-29 after the seventh was read): the default judged a second time.
SPECS_H = (DATA / "models-newcond-5gbit-h.toml",)
DESIGNS = {"10 Gbit/s": SPECS, "5 Gbit/s": SPECS_5GBIT, "5 Gbit/s, timed by delivery": SPECS_DELIVERED,
           "5 Gbit/s, the second store": SPECS_B, "5 Gbit/s, the third store": SPECS_C,
           "5 Gbit/s, the fourth store": SPECS_D, "5 Gbit/s, the fifth store": SPECS_E,
           "5 Gbit/s, the sixth store": SPECS_F, "5 Gbit/s, the seventh store": SPECS_G,
           "5 Gbit/s, the eighth store": SPECS_H}
STORES = DATA / "model-stores.csv"
ROLES = ("development", "validation")     # new against every store the models have seen
# ... before the design was registered: each design's first store in the stores table (which lists them in the order
# they were measured); a design is new against the rows above it, not against itself or what was measured after it
FIRST_OWN = {"5 Gbit/s": "models-newcond-5gbit-delivered-500mb",   # the twin's store: its measurement timed by delivery
             "5 Gbit/s, timed by delivery": "models-newcond-5gbit-delivered-500mb",
             "5 Gbit/s, the second store": "models-newcond-5gbit-b-1500mb",
             "5 Gbit/s, the third store": "models-newcond-5gbit-c",
             "5 Gbit/s, the fourth store": "models-newcond-5gbit-d",
             "5 Gbit/s, the fifth store": "models-newcond-5gbit-e",
             "5 Gbit/s, the sixth store": "models-newcond-5gbit-f",
             "5 Gbit/s, the seventh store": "models-newcond-5gbit-g",
             "5 Gbit/s, the eighth store": "models-newcond-5gbit-h"}


def seen_before(label: str) -> list:
    """The cells of the stores table's development and validation rows that were measured before design `label`
    was registered (models/novelty.py DesignCell)."""
    return development_cells([STORES], spec.load, roles=ROLES, before=FIRST_OWN.get(label))


RUN_OVERHEAD_S = 0.5      # per run: reproduce quick's "8 s runs, ~8.5 s each" (reproduce/campaigns.py)
LINK_SETUP_S = 20.0       # per link configuration (reproduce/campaigns.py: "~20 s per link set-up here")


def run_seconds(point, config: str = DEFAULT_CONFIGURATION) -> float:
    """Estimated seconds of one run (spec.RunPoint, size mode): 8F/Θ with Θ the priors' prediction from the run's
    configuration (campaign/priors.predict_bps: timed by delivery), what the request asks beyond F at the link's
    payload rate, RUN_OVERHEAD_S."""
    link = point.link
    theta = predict_bps(point.variant, point.streams, rtt_s=link.rtt_s, rate_bps=link.rate_bps,
                        buffer_bytes=link.buffer_bytes, mtu=link.mtu, size_bytes=point.transfer_bytes, config=config)
    # beyond F the run goes on for what the autotuned send buffers can hold, at the link's rate (the request that
    # lets the receiver read F: campaign.autotuned_request_bytes)
    extra = autotuned_request_bytes(point) or 0
    return 8 * point.transfer_bytes / theta + 8 * extra / goodput_ceiling_bps(link.rate_bps, link.mtu) + RUN_OVERHEAD_S


def campaign_seconds(s: spec.CampaignSpec) -> float:
    """Estimated seconds of a whole campaign at its link rate: its runs, and LINK_SETUP_S per link."""
    return sum(run_seconds(p) for p in s.sweep()) + LINK_SETUP_S * len(s.links)


def measured_cells(db: str, campaign: str) -> list[dict]:
    """The store's ok fixed-size runs of the campaigns named like `campaign` (SQL LIKE), one dict per cell:
    its configuration, the mean measured throughput, the runs, whether every run was timed by its delivery and
    whether its link met its calibration."""
    if db.endswith(".csv"):        # the runs as committed (benchmarks/data/models-newcond-5gbit-delivered-runs.csv)
        rows = _csv_rows(db, campaign)
    else:
        rows = _store_rows(db, campaign)
    cells: dict[tuple, dict] = {}
    for v, n, rtt, beta, rate, mtu, size, bps, delivered, calibrated in rows:
        c = cells.setdefault((v, n, rtt, beta, rate, mtu, size), {
            "variant": v, "streams": n, "rtt_s": rtt / 1e3, "buffer_bytes": beta, "rate_bps": rate, "mtu": mtu,
            "size_bytes": size, "runs": [], "delivered": True, "calibrated": True})
        c["runs"].append(bps)
        c["delivered"] &= bool(delivered)
        c["calibrated"] &= bool(calibrated)
    return list(cells.values())


def _csv_rows(path: str, campaign: str) -> list[tuple]:
    """The CSV's rows of the campaigns named like `campaign` (SQL LIKE with % only), as _store_rows gives them."""
    import csv
    import fnmatch
    with open(path, newline="") as f:
        return [(r["variant"], int(r["streams"]), float(r["rtt_ms"]), int(r["buffer_bytes"]), float(r["rate_bps"]),
                 int(r["mtu"]), int(r["transfer_bytes"]), float(r["throughput_bps"]), r["size_delivered_s"] != "",
                 r["link_calibration_ok"] != "false")
                for r in csv.DictReader(f) if fnmatch.fnmatchcase(r["campaign"], campaign.replace("%", "*"))]


def _store_rows(db: str, campaign: str) -> list[tuple]:
    import duckdb
    con = duckdb.connect(db, read_only=True)
    return con.execute(
        "SELECT r.variant, r.streams, l.rtt_ms, l.buffer_bytes, l.rate_bps, l.mtu, r.transfer_bytes, "
        "r.throughput_bps, r.size_delivered_s IS NOT NULL, coalesce(l.calibration_ok, true) "
        "FROM runs r JOIN links l ON l.link_id = r.link_id JOIN campaigns c ON c.campaign_id = r.campaign_id "
        "WHERE c.name LIKE ? AND r.status = 'ok' AND r.transfer_bytes IS NOT NULL", [campaign]).fetchall()


def configuration_alone(cells: list[dict], config: str) -> dict[tuple, list[float]]:
    """|M − P|/M per cell, by (variant, n): P from the configuration alone (campaign/priors.predict_bps: β the
    configured buffer, W_max half the autotuning limit, C the payload ceiling, the start-up lag
    priors.STARTUP_RTTS from the third validation store; nothing fitted on this store), backlog as measured."""
    out: dict[tuple, list[float]] = {}
    for c in cells:
        m = sum(c["runs"]) / len(c["runs"])
        p = predict_bps(c["variant"], c["streams"], rtt_s=c["rtt_s"], rate_bps=c["rate_bps"],
                        buffer_bytes=c["buffer_bytes"], mtu=c["mtu"], size_bytes=c["size_bytes"], config=config,
                        delivered=c["delivered"])
        out.setdefault((c["variant"], c["streams"]), []).append(abs(m - p) / m)
    return out


# the columns of --db: the default first, then the configurations judged beside it
COMPARED = tuple(dict.fromkeys((DEFAULT_CONFIGURATION, "bandwidth-switch", "trains-by-rate", "burst-by-rate", "ss-trains",
                                "single-flow", "paper")))


def print_configuration_alone(db: str, campaign: str, configs=COMPARED) -> None:
    """E [%] per variant × n from the configuration alone, every cell and without the links that missed their
    calibration (their runs carry link_rate_low: not the condition the cell names)."""
    cells = measured_cells(db, campaign)
    kept = [c for c in cells if c["calibrated"]]
    tables = {(name, which): configuration_alone(cs, name) for name in configs for which, cs in
              (("all", cells), ("calibrated", kept))}
    print(f"{db}, campaigns like {campaign!r}: {len(cells)} cells, {sum(len(c['runs']) for c in cells)} runs, "
          f"{sum(c['delivered'] for c in cells)} cells timed by delivery; {len(cells) - len(kept)} cells on links "
          f"that missed their calibration")
    print("E % from the configuration alone (nothing fitted on this store): all cells / calibrated links only")
    print(f"{'variant':>8} {'n':>3} {'cells':>5} | " + " | ".join(f"{name:>17}" for name in configs)
          + f" | {'sampling floor':>17}")
    for key in sorted(tables[configs[0], "all"]):
        errs = [tables[name, which].get(key, []) for name in configs for which in ("all", "calibrated")]
        cols = [f"{100 * sum(a) / len(a):7.2f} / {100 * sum(b) / len(b):7.2f}" if a and b else "-"
                for a, b in zip(errs[0::2], errs[1::2])]
        floors = [floor_of([c for c in cs if (c["variant"], c["streams"]) == key]) for cs in (cells, kept)]
        cols.append(" / ".join(f"{f:7.2f}" for f in floors))
        print(f"{key[0]:>8} {key[1]:3d} {len(errs[0]):5d} | " + " | ".join(f"{c:>17}" for c in cols))
    print("sampling floor: the E a model predicting every cell's true mean would show with these runs "
          "(models/validation.py sampling_floor: their spread, whatever the model)")


def floor_of(cells: list[dict]) -> float:
    """sampling_floor [%] of these cells' runs (nan for none or a cell of one run)."""
    if not cells:
        return float("nan")
    runs = [np.asarray(c["runs"], dtype=float) for c in cells]
    return sampling_floor([x.mean() for x in runs], [x.std(ddof=1) if x.size > 1 else np.nan for x in runs],
                          [x.size for x in runs])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--db"]:       # --db STORE [CAMPAIGN-LIKE]: E from the configuration alone on a measured store
        print_configuration_alone(argv[1], argv[2] if len(argv) > 2 else "models-newcond-%")
        return 0
    bad = []
    for rate, paths in DESIGNS.items():
        total = 0.0
        development = seen_before(rate)
        for path in paths:
            s = spec.load(path)
            close = too_close(cells_of_spec(s), development)
            bad += close
            secs = campaign_seconds(s)
            total += secs
            rtts = ", ".join(f"{p:g}" for p in sorted({round(p.rtt_s * 1e3, 3) for p in s.links}))
            print(f"{s.name}: {len(s.sweep())} runs ({', '.join(s.variants)}; n {list(s.streams)}; "
                  f"β {sorted({p.buffer_label for p in s.links})}; τ {rtts} ms; F {s.sizes[0] / 1e9:g} GB; "
                  f"{s.repetitions} reps), estimated {secs / 60:.1f} min; cells closer than 2 to a seen store: "
                  f"{len(close)}")
        print(f"total at {rate}: estimated {total / 3600:.2f} h ({DEFAULT_CONFIGURATION}'s predictions, "
              f"+{RUN_OVERHEAD_S:g} s per run, +{LINK_SETUP_S:g} s per link); a link that carries less takes longer")
    for cell, dist in bad:
        print(f"TOO CLOSE (distance {dist}): {cell}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
