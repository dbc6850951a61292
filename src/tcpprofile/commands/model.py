"""`tcpprofile model [predict]` — predicted throughput and the model's intermediate quantities;
`tcpprofile model fit --db DB` — fit β and W_max per dataset of a store and print E per variant and n,
in-sample and leave-one-RTT-out (duration-mode runs use the model's duration mode; lossy links its loss);
`tcpprofile model validate --db DB` — the validation protocol's table: E in-sample, leave-one-RTT-out and
leave-one-buffer-out per variant and n, beside the generic ramp-up/sustainment baseline (docs/models.md);
`tcpprofile model validate --db DB --by-novelty FILE…` — E per variant, n and how far each configuration is from the
development design, beside `paper` and the baseline (docs/models.md, "New-condition validation")."""

from __future__ import annotations

import argparse
import json
import math
import sys

from .. import units
from ..errors import ValidationError

NAME = "model"
HELP = "predict throughput from the TCP models, or fit them to a store"
ORDER = 80            # its place in `tcpprofile --help`

COLUMNS = (  # component, header, scale (value / scale is printed)
    ("throughput", "Θ Gbit/s", 1e9), ("case", "case", 1), ("subcase", "sub", 1), ("T_s", "T_s s", 1),
    ("N_s", "N_s MB", 8e6), ("W_m", "W_m MB", 8e6), ("T_a", "T_a s", 1), ("N_a", "N_a MB", 8e6), ("k", "k", 1),
)


def register(subparsers) -> None:
    from ..models.configurations import CONFIGURATIONS, DEFAULT_CONFIGURATION, SUMMARY
    from ..models.registry import MODELS

    p = subparsers.add_parser(NAME, help=HELP, description=__doc__)
    p.add_argument("action", nargs="?", choices=("predict", "fit", "validate"), default="predict",
                   help="predict (default), fit, or validate (the validation protocol's table)")
    p.add_argument("--variant", help=f"congestion control: {', '.join(MODELS)}")
    p.add_argument("--capacity", default="10Gbit", help="link capacity C (default 10Gbit)")
    p.add_argument("--rtt", nargs="+", help="minimum RTT τ; several values print a profile (e.g. 11.8ms 91.6ms)")
    p.add_argument("--buffer", help="bottleneck buffer β (e.g. 50MB)")
    p.add_argument("--wmax", default="inf", help="per-flow window limit W_max (default: none)")
    p.add_argument("--wmax-hard", default="inf", help="aggregate window limit W_maxH (default: none)")
    p.add_argument("--size", default="inf", help="transfer size F (default: infinite = sustained rate)")
    p.add_argument("--duration", help="transfer duration T (iperf3 -t; replaces --size), e.g. 15s")
    p.add_argument("--loss", type=float, default=0.0,
                   help="external loss: probability a segment is dropped, from 0 to below 1 (periodic 1 in N: 1/N)")
    p.add_argument("--streams", nargs="+", type=int, default=[1], help="parallel streams n (one or more)")
    p.add_argument("--mss", type=int, default=1448, help="segment size in bytes (default 1448)")
    p.add_argument("--initial-window", type=int, default=10, help="initial window in segments (default 10)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a variant parameter, e.g. a=0.02 (STCP), c=0.4 (CUBIC), adaptive_backoff=false (H-TCP)")
    p.add_argument("--db", help="store (DuckDB file) for `fit` and `validate`")
    p.add_argument("--campaign", action="append", default=[], metavar="NAME",
                   help="fit: only runs of this campaign (name or id; SQL LIKE, %% = any text; repeatable), "
                        "e.g. reproduce-quick-clean")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--queue-fill", action="store_true",
                   help="predict: loss when the window exceeds Cτ + β (ACK-clocked queue) instead of the paper's "
                        "Eq. (8) (docs/models.md); same as --set queue_fill=true. `fit` does this by default")
    p.add_argument("--eq8", action="store_true",
                   help="fit --configuration paper: the buffer overflows by the paper's Eq. (8), not at W = Cτ + β "
                        "(docs/models.md)")
    p.add_argument("--trajectory", action="store_true", help=argparse.SUPPRESS)   # removed: refused by run()
    p.add_argument("--configuration", metavar="NAME",
                   help=f"fit, validate: a named model configuration, one of {', '.join(CONFIGURATIONS)} "
                        f"(models/configurations.py: " + "; ".join(f"{k}: {v}" for k, v in SUMMARY.items())
                        + f"); default {DEFAULT_CONFIGURATION}, the one that passed validation (docs/models.md)")
    p.add_argument("--by-novelty", nargs="+", metavar="FILE",
                   help="validate: E per variant, n and how far each configuration is from the development design "
                        "(same cell / new n / new β / new τ / new F), beside the paper's rule and the HPDC'17 §3 "
                        "baseline; FILE: the development stores' campaign specs (.toml) or the stores table "
                        "(benchmarks/data/model-stores.csv: its development rows)")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="`fit`: leave out runs the instrument flagged (docs/testbed.md, fidelity)")
    p.set_defaults(func=run)


def _size(field: str, text: str) -> float:
    """A window or transfer size above 0, or 'inf'/'none' for no limit."""
    return math.inf if text.strip().lower() in ("inf", "none") else float(units.size_bytes(field, text, units.POSITIVE))


def _param(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValidationError("--set", f"expected NAME=VALUE, got {text!r}")
    low = value.strip().lower()
    if low in ("true", "false"):
        return name.strip(), low == "true"
    try:
        return name.strip(), int(value) if value.strip().isdigit() else float(value)
    except ValueError:
        raise ValidationError("--set", f"value of {name!r} must be a number or true/false, got {value!r}") from None


def _clean(v):
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _mb(v) -> str:
    return "-" if v is None else f"{v / 1e6:.3g}"


def _gb(v) -> str:
    return "time" if v is None else f"{v / 1e9:.3g}"


def _amount(d: dict) -> str:
    """The "size or duration" column: a size-mode dataset's transfer size F in GB, a duration-mode one's
    target duration T in s, each with its unit (one header over both)."""
    size, dur = d.get("transfer_bytes"), d.get("duration_target_s")
    if size is not None and size == size:
        return f"{size / 1e9:.3g} GB"
    return f"{dur:g} s" if dur is not None and dur == dur else "-"


def _wmax(d: dict) -> str:
    """W_max column: fitted [MB], or known from the store's socket-buffer limit."""
    mb = f"{d['wmax_bytes_fit'] / 1e6:.4g}"
    return f"{mb} known" if d.get("wmax_known") else mb


def _beta_fit(d: dict) -> tuple[str, str]:
    """(β fit MB, β fit ×cfg): the fitted β in MB, or (β = k×BDP datasets) the factor m of the configured
    buffer, each under its own header; the other column '-'."""
    m = d.get("buffer_multiple_fit")
    return ("-", f"{m:.3g}") if m is not None else (_mb(d["buffer_bytes_fit"]), "-")


def run(args) -> int:
    from ..models.configurations import checked

    if args.trajectory:   # removed (issue 32): configurations are chosen by name only
        raise ValidationError("--trajectory", "removed: use --configuration trajectory (the window's trajectory "
                                              "after slow start); without a configuration, fit and validate use "
                                              "the validated one")
    if args.configuration is not None:
        checked("--configuration", args.configuration)
    if args.by_novelty and args.action != "validate":
        raise ValidationError("--by-novelty", "only with `model validate`")
    if args.configuration is not None and args.action == "predict":
        raise ValidationError("--configuration", "only for fit and validate (predict takes --set NAME=VALUE)")
    return {"fit": _fit, "validate": _validate}.get(args.action, _predict)(args)


def _predict(args) -> int:
    import numpy as np

    from ..models import model_class
    from ..models.registry import printed_name

    if not args.variant:
        raise ValidationError("--variant", "required for predict")
    if not args.rtt:
        raise ValidationError("--rtt", "required for predict (one or more RTTs, e.g. 91.6ms)")
    if args.buffer is None:
        raise ValidationError("--buffer", "required for predict (bottleneck buffer, e.g. 50MB)")
    if not 0 <= args.loss < 1:
        raise ValidationError("--loss", f"a drop probability from 0 to below 1, got {args.loss!r}")
    params = dict(_param(s) for s in args.set)
    if args.queue_fill:
        params["queue_fill"] = True
    model = model_class(args.variant)(
        capacity_bps=units.rate_bps("--capacity", args.capacity, units.POSITIVE),
        buffer_bytes=float(units.size_bytes("--buffer", args.buffer)),
        wmax_bytes=_size("--wmax", args.wmax), wmax_hard_bytes=_size("--wmax-hard", args.wmax_hard),
        size_bytes=_size("--size", args.size), mss_bytes=args.mss, initial_window=args.initial_window,
        duration_s=None if args.duration is None else units.seconds("--duration", args.duration, units.POSITIVE))
    for name, value in params.items():
        model.set_params(**{name: value})
    tau = np.array([units.seconds("--rtt", r, units.RTT_S) for r in args.rtt])
    n = np.array(args.streams, dtype=float)
    comp = model.components(tau[:, None], n=n[None, :], loss=args.loss)
    name = printed_name(type(model))     # the papers' spelling: stcp
    rows = []
    for i, t in enumerate(tau):
        for j, s in enumerate(n):
            row = {"rtt_s": float(t), "streams": int(s)}
            row.update({k: _clean(v[i, j]) for k, v in comp.items()})
            rows.append(row)
    if args.json:
        json.dump({"variant": name, "params": {k: _clean(v) for k, v in model.get_params().items()},
                   "units": {"T_*": "s", "N_*, W_*, thresh": "bits", "S, throughput": "bit/s"},
                   "rows": rows}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{name}: C = {model.capacity_bps / 1e9:g} Gbit/s, β = {model.buffer_bytes / 1e6:g} MB, "
          f"W_max = {model.wmax_bytes / 1e6:g} MB/flow, F = {model.size_bytes / 1e9:g} GB")
    head = ["RTT ms", "n"] + [h for _, h, _ in COLUMNS]
    print("  ".join(f"{h:>10}" for h in head))
    for row in rows:
        cells = [f"{row['rtt_s'] * 1e3:10.2f}", f"{row['streams']:10d}"]
        for key, _, scale in COLUMNS:
            v = row[key]
            cells.append(f"{'-':>10}" if v is None else f"{v / scale:10.4g}")
        print("  ".join(cells))
    print("case 0: ends in slow start; 1: W_max ≤ Cτ; 2: W_max > Cτ (sub 1: W_m ≤ W_max, 2: W_m > W_max)")
    return 0


def _load(args, *, traces: bool = False):
    """The store's profile table (and, with traces, its runs' interval traces) for fit and validate."""
    import duckdb

    from ..models import fit_table_from_store
    from ..models.validation import load_traces

    if not args.db:
        raise ValidationError("--db", f"required for {args.action} (a tcpprofile store)")
    try:   # DuckDB directly, not Store.open: fit and validate also read flat `runs` tables (store.reads.fit_table)
        con = duckdb.connect(args.db, read_only=True)
    except duckdb.Error as err:
        raise ValidationError("--db", f"cannot open {args.db!r} as a DuckDB store: {err}") from None
    try:
        profiles = fit_table_from_store(con, campaigns=args.campaign or None, exclude_flagged=args.exclude_flagged)
        return profiles, (load_traces(con, profiles, campaigns=args.campaign or None,
                                      exclude_flagged=args.exclude_flagged) if traces else None)
    finally:
        con.close()


def _config(args) -> str:
    """The model configuration (models/configurations.py; a known name: run checked it): --configuration's, or
    DEFAULT_CONFIGURATION, the validated one."""
    from ..models.configurations import DEFAULT_CONFIGURATION

    return DEFAULT_CONFIGURATION if args.configuration is None else args.configuration


def _with_trajectory(args) -> bool:
    """Whether the selected configuration models the trajectory after slow start."""
    from ..models.configurations import configuration

    return bool(configuration(_config(args))[0].get("trajectory"))


def _fit(args) -> int:
    from ..models import fit_profiles
    from ..models.configurations import configuration, describe_configuration
    from ..models.fit import physical_buffer_missing
    from ..models.diagnostics import BOUND_REL, LEVEL, short

    if _with_trajectory(args) and args.eq8:
        raise ValidationError("--eq8", f"only with --configuration paper (the paper's rule): {_config(args)!r} models "
                                       "the trajectory, whose buffer overflows at W = Cτ + β")
    profiles, _ = _load(args)
    if args.queue_fill and args.eq8:
        raise ValidationError("--eq8", "not with --queue-fill: the buffer overflows one way or the other")
    params, variant_params = configuration(_config(args))
    fits = fit_profiles(profiles, **({"queue_fill": False} if args.eq8 else {}), variant_params=variant_params,
                        **params)
    if args.json:
        json.dump([f.as_dict() for f in fits], sys.stdout, indent=1)
        print()
        return 0
    if not fits:
        print("no successful runs of a modelled variant in the store"
              + (f" for campaign {', '.join(args.campaign)}" if args.campaign else ""))
        return 0
    print(f"{'variant':>8} {'rate Gbit/s':>11} {'buffer β':>9} {'sock buf':>8} {'size or duration':>16} {'loss':>12}"
          f" {'β fit MB':>9} {'β fit ×cfg':>10}"
          f" {'W_max fit MB':>12} {'d RTT':>5} {'n':>3} {'E %':>6} {'held-out E %':>12}  flags")
    for f in fits:
        d = f.as_dict()
        for s, e in d["E_percent"].items():
            # β as the store keys the dataset: the spec's words ("BDP") or, for plain tables, bytes
            buf = d.get("buffer") or (_mb(d["buffer_bytes"]) + "MB" if d.get("buffer_bytes") is not None else "-")
            loss = "none" if d.get("loss_mode") in (None, "none") else f"{d['loss_mode'][:4]} {d['loss_rate']:.3g}"
            held = d["E_heldout_percent"].get(s, float("nan"))
            sb = d.get("socket_buffer_bytes")
            sock = "auto" if sb is None or sb != sb else _mb(sb) + "MB"      # None/NaN: autotuned
            beta_mb, beta_factor = _beta_fit(d)
            print(f"{d['variant']:>8} {d['rate_bps'] / 1e9:11.3g} {buf:>9} {sock:>8} {_amount(d):>16} {loss:>12} "
                  f"{beta_mb:>9} {beta_factor:>10} "
                  f"{_wmax(d):>12} {d['startup_rtts']:5.2f} {s:3d} {e:6.2f} {held:12.2f}  "
                  f"{short(f.flags, f.structure)}")
    print("held-out: leave-one-RTT-out (fitted on the other RTTs, predicting the held-out one)")
    print(describe_configuration(_config(args)) + (" with --eq8" if args.eq8 else ""))
    print("fitted as measured (docs/models.md, \"Fitting measured runs\"): C = the link's payload ceiling; loss at "
          "W = Cτ + β" + (" (here: Eq. (8), --eq8)" if args.eq8
                          else " (--configuration paper --eq8: the paper's Eq. (8))")
          + ("; the trajectory after slow start" if _with_trajectory(args) else "")
          + "; d RTT = slow start's start-up lag, measured from the runs' first intervals (0: none measured); "
          "-t runs over iperf3's receiver interval T + τ + queue")
    for f in fits:
        for flag in f.flags:   # a flagged fit is never a plain number: each flag in words
            print(f"FLAGGED {f.key['variant']} β={f.key.get('buffer', f.key.get('buffer_bytes'))}: {flag['text']}")
    print(f"flags: a fitted parameter within {BOUND_REL:.0%} of its range's end (β:lower …), τ-structure = residuals "
          f"with a trend or curvature over τ ({LEVEL:g} level, stratified rank test), τ:n/t = too few RTTs to test "
          "it (docs/models.md, \"When a fit cannot explain the data\")")
    if any(f.buffer_multiple is not None for f in fits):
        print("β fit ×cfg: the configured buffer changes with τ (k×BDP), so β is fitted as a factor m of the "
              "configured one (β = m × buffer β)")
    for f in physical_buffer_missing(fits, params):
        where = f.key.get("buffer", f.key.get("buffer_bytes"))
        print(f"β fitted for {f.key['variant']} β={where}: its runs carry no configured buffer, which "
              f"{_config(args)} takes as β")
    if any(f.wmax_known for f in fits):
        print("W_max known: autotuned socket buffers, W_max = half the kernel's limit (not fitted; docs/models.md)")
    return 0


def _e(v: float) -> str:
    return f"{v:5.2f}" if v == v else "    -"


def _params(p: dict) -> str:
    beta = f"β={p['beta_multiple']:.3g}×" if p["beta_multiple"] is not None else f"β={_mb(p['beta_bytes'])}MB"
    wmax = f"W_max={p['wmax_bytes'] / 1e6:.4g}MB" + (" known" if p["wmax_known"] else "")
    return f"{p['buffer']}: {beta} {wmax} d={p['startup_rtts']:.2f}"


def _validate(args) -> int:
    from ..models.configurations import describe_configuration
    from ..models.validation import validate

    if args.eq8 or args.queue_fill:
        raise ValidationError("--eq8", "validate fits as `model fit` does (a named --configuration, or the validated "
                                       "one)")
    config = _config(args)
    if args.by_novelty:
        return _by_novelty(args, config)
    profiles, traces = _load(args, traces=True)
    cells = validate(profiles, traces, config=config).cells
    if args.json:
        json.dump([{**c.as_dict(), "model_configuration": config} for c in cells], sys.stdout, indent=1,
                  default=_clean)
        print()
        return 0
    if not cells:
        print("no successful runs of a modelled variant in the store")
        return 0
    print(describe_configuration(config))
    print("E % in-sample / leave-one-RTT-out / leave-one-buffer-out: the first-principles model (fitted as "
          "`model fit` fits) and the generic ramp-up/sustainment model (HPDC'17 §3), the baseline to beat")
    print(f"{'variant':>8} {'n':>3} {'size':>7} {'buffers':>24} {'RTTs':>4} {'cfgs':>4} {'runs':>4} | "
          f"{'model in':>8} {'rtt':>5} {'buf':>5} | {'floor':>5} | {'base in':>7} {'rtt':>5} {'buf':>5} | flags")
    for c in cells:
        d = c.key.get("duration_target_s")
        amount = f"{d:g}s" if d is not None and d == d else _gb(c.key.get("transfer_bytes")) + "GB"
        print(f"{c.key['variant']:>8} {c.streams:3d} {amount:>7} {','.join(c.buffers):>24} {len(c.rtts):4d} "
              f"{c.configs:4d} {c.runs:4d} | {_e(c.model['in']):>8} {_e(c.model['rtt'])} {_e(c.model['buffer'])} | "
              f"{_e(c.floor)} | {_e(c.baseline['in']):>7} {_e(c.baseline['rtt'])} {_e(c.baseline['buffer'])} | {c.codes}")
    print("fitted parameters (per buffer setting, over its RTTs and n; shared: leave-one-buffer-out's fit of one n "
          "over all settings):")
    seen = set()
    for c in cells:
        per_setting = "; ".join(_params(p) for p in c.params[:-1])
        if (c.key["variant"], per_setting) not in seen:
            seen.add((c.key["variant"], per_setting))
            print(f"  {c.key['variant']}: {per_setting}")
        print(f"  {c.key['variant']} n={c.streams}: {_params(c.params[-1])}")
    for c in cells:
        for text in dict.fromkeys(c.flags):
            print(f"FLAGGED {c.key['variant']} n={c.streams}: {text}")
    print("E = 100·mean|M − P|/M over the cell's (τ, buffer) configurations; floor: the E a model predicting every "
          "configuration's true mean would show with these runs (their spread; '-' with one run per configuration); "
          "'-': not computable (fewer than 3 RTTs or 2 buffer settings, or no interval traces for the baseline). "
          "Protocol: docs/models.md, \"Validation protocol\"")
    return 0


PAPER = "paper"   # the paper's first-principles rule (models/configurations.py), printed beside the chosen one
BASELINE = "baseline"   # the generic ramp-up/sustainment model of HPDC'17 §3 (validation._baseline)


def _by_novelty(args, config: str) -> int:
    """`model validate --by-novelty FILE…`: E per (variant, n, novelty group) in the validation's three modes, for
    the configuration, `paper` and the baseline (docs/models.md, "New-condition validation")."""
    from ..models.configurations import describe_configuration
    from ..models.novelty import development_cells
    from ..models.validation import MODES, by_novelty, validate
    from ..spec import load

    development = development_cells(args.by_novelty, load)   # validated at the boundary: a ValidationError
    profiles, traces = _load(args, traces=True)
    if not len(profiles.get("variant", ())):
        print("no successful runs of a modelled variant in the store")
        return 0
    chosen = validate(profiles, traces, config=config)
    predictions = {config: chosen.model}
    if config != PAPER:
        predictions[PAPER] = validate(profiles, traces, config=PAPER).model
    predictions[BASELINE] = chosen.baseline
    rows = by_novelty(profiles, predictions, development)
    if args.json:
        json.dump([{**r.as_dict(), "model_configuration": config} for r in rows], sys.stdout, indent=1)
        print()
        return 0
    print(describe_configuration(config))
    print("E % in-sample / leave-one-RTT-out / leave-one-buffer-out by novelty against the development design of "
          f"{' '.join(args.by_novelty)} ({len(set(development))} cells): {', '.join(predictions)}")
    names = list(predictions)
    print(f"{'variant':>8} {'n':>3} {'group':>22} {'dist':>4} {'cfgs':>4} {'runs':>4} | "
          + " | ".join(f"{name[:21]:>21}" for name in names))
    for r in rows:
        d = f"{r.distance[0]}" if r.distance[0] == r.distance[1] else f"{r.distance[0]}-{r.distance[1]}"
        print(f"{r.variant:>8} {r.streams:3d} {r.group:>22} {d:>4} {r.configs:4d} {r.runs:4d} | "
              + " | ".join(f"{' / '.join(_e(r.errors[name][m]) for m in MODES):>21}" for name in names))
    print("group: the dimensions (n, β, τ, F, C: the link rate) whose value no development cell of that variant "
          "and link had; "
          "'same cell': measured in development; 'new combination': each value measured, never together. "
          "dist: the fewest dimensions in which a configuration differs from a development cell. '-': not "
          "computable (fewer than 3 RTTs or 2 buffer settings, or no interval traces for the baseline). The fits' "
          "flags: `model validate` without --by-novelty")
    return 0
