"""`tcpprofile select`: choose (variant, streams, buffer) for a connection's RTT, with confidence."""

from __future__ import annotations

import argparse
import json
import sys

from .. import units
from ..cc.registry import canonical, known_names
from ..errors import ValidationError
from ..spec import LOSS_PARAMETER
from ..testbed.config import LOSS_MODES
from .options import parse_rtt_s
from .settings_text import print_settings, settings_json

NAME = "select"
HELP = "choose the transport for a connection's RTT (HPDC'17 §5)"
ORDER = 90            # its place in `tcpprofile --help`


def register(subparsers) -> None:
    p = subparsers.add_parser(NAME, help=HELP, description=__doc__)
    p.add_argument("--db", required=True, help="the store (DuckDB file)")
    p.add_argument("--rtt", help="the connection's RTT with a unit, e.g. 45ms")
    p.add_argument("--host", help="measure the RTT to HOST with ping")
    p.add_argument("--ping-count", type=int, default=5, help="pings for --host (default 5)")
    p.add_argument("--variants", nargs="+",
                   help=f"consider only these variants, as the store names them; known: {known_names()}")
    p.add_argument("--streams", nargs="+", type=int, help="consider only these stream counts")
    p.add_argument("--buffers", nargs="+", help="consider only these socket buffers (e.g. 256MB, auto)")
    p.add_argument("--size", help="condition: transfer size F of the runs (e.g. 20GB)")
    p.add_argument("--duration", help="condition: duration of the runs (e.g. 10s)")
    p.add_argument("--loss", help="condition: " + " | ".join(LOSS_FORMS))
    p.add_argument("--rate", help="condition: link rate C (e.g. 10Gbit)")
    p.add_argument("--link-buffer", help="condition: bottleneck buffer β as the campaign spec wrote it (e.g. BDP, 50MB)")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--reverse", action="store_true", default=None,
                           help="condition: reverse-direction runs (server to client, iperf3 -R)")
    direction.add_argument("--forward", action="store_true", default=None,
                           help="condition: forward-direction runs (client to server)")
    p.add_argument("--link-kind", choices=("emulated", "remote", "unknown"), help="condition: kind of link")
    p.add_argument("--exclude-flagged", action="store_true",
                   help="leave flagged runs out (link calibration missed, or run flags: docs/analysis.md)")
    p.add_argument("--top", type=int, default=5, help="configurations to print (default 5)")
    p.add_argument("--extrapolate", action="store_true",
                   help="allow model-backed estimates outside the measured RTT range (the model configuration "
                        "that passed validation, models/configurations.py DEFAULT_CONFIGURATION; docs/models.md)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--margin", default="1%",
                   help="indifference margin: within it of the best is a tie, which goes to the simplest (default 1%%)")
    p.add_argument("--boot", type=int, default=2000, help=argparse.SUPPRESS)   # kept for scripts: intervals are t
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print JSON (keys in docs/select.md)")
    p.add_argument("--apply", action="store_true", help="apply the settings (needs --netns or --host-settings)")
    p.add_argument("--netns", help="with --apply: the network namespace to apply the sysctls in")
    p.add_argument("--host-settings", action="store_true", help="with --apply: change the host's sysctls")
    p.set_defaults(func=run)


LOSS_FORMS = tuple(f"{m}:RATE" if m in LOSS_PARAMETER else m for m in LOSS_MODES)


def parse_loss(value: str) -> dict:
    """--loss none | periodic:RATE | uniform:RATE (testbed.config.LOSS_MODES) -> the loss_mode/loss_rate condition."""
    mode, sep, rate = value.partition(":")
    if mode not in LOSS_MODES or (mode in LOSS_PARAMETER) != bool(sep):
        raise ValidationError("--loss", f"expected one of {', '.join(LOSS_FORMS)}, got {value!r}")
    if mode not in LOSS_PARAMETER:
        return {"loss_mode": mode, "loss_rate": 0.0}
    try:
        p = float(rate)
    except ValueError:
        raise ValidationError("--loss", f"RATE must be a number, got {rate!r}") from None
    if not 0 < p < 1:      # periodic 1 in N: RATE = 1/N; uniform: the drop probability
        raise ValidationError("--loss", f"RATE must be above 0 and below 1, got {rate!r}")
    return {"loss_mode": mode, "loss_rate": p}


def resolve_variants(given: list[str], held: set[str]) -> list[str]:
    """--variants as the store names them: a name the store holds as written, else the usual name of a known
    name or alias (cc/registry.py); refused, naming the store's variants and the known names, when the store
    holds none of the runs asked for."""
    held = {v for v in held if v is not None}       # runs whose file named no variant are not selectable
    out = []
    for name in given:
        if name not in held:
            try:
                name = canonical(name, "--variants")
            except ValidationError as err:
                raise ValidationError("--variants", f"{str(err).split(': ', 1)[1]}; the store holds: "
                                      f"{', '.join(sorted(held)) or 'no ok runs'}") from None
            if name not in held:
                raise ValidationError("--variants", f"the store holds no ok runs of {name!r}; it holds: "
                                      f"{', '.join(sorted(held)) or 'none'}")
        out.append(name)
    return out


def _conditions(args) -> dict:
    cond = {}
    if args.size is not None:
        cond["transfer_bytes"] = units.size_bytes("--size", args.size, units.Range(1))
    if args.duration is not None:
        cond["duration_s"] = units.seconds("--duration", args.duration, units.POSITIVE)
    if args.loss is not None:
        cond.update(parse_loss(args.loss))
    if args.rate is not None:
        cond["rate_bps"] = units.rate_bps("--rate", args.rate, units.POSITIVE)
    if args.link_buffer is not None:
        cond["link_buffer"] = args.link_buffer
    if args.reverse or args.forward:
        cond["reverse"] = bool(args.reverse)
    if args.link_kind is not None:
        cond["link_kind"] = args.link_kind
    return cond


def _buffers(values):
    if not values:
        return None
    return [None if v == "auto" else units.size_bytes("--buffers", v, units.Range(1)) for v in values]


def validate(args) -> None:
    from ..choose import decide, select as sel      # numpy and scipy load only for this command

    if (args.rtt is None) == (args.host is None):
        raise ValidationError("--rtt", "give exactly one of --rtt RTT or --host HOST")
    if args.host is not None:
        sel.validate_host(args.host)
    if args.top < 1:
        raise ValidationError("--top", f"must be at least 1, got {args.top}")
    if args.boot < 100:
        raise ValidationError("--boot", f"must be at least 100, got {args.boot}")
    args.margin = decide.parse_fraction("--margin", args.margin, lo=-1e-12)
    if args.apply and (args.netns is None) == (not args.host_settings):
        raise ValidationError("--apply", "needs exactly one target: --netns NS or --host-settings")
    if not args.apply and (args.netns or args.host_settings):
        raise ValidationError("--netns", "--netns/--host-settings only take effect with --apply")


def run(args) -> int:
    from ..choose import select as sel
    from ..hostcheck import apply
    from ..store import Store, reads

    validate(args)
    rtt_s = parse_rtt_s(args.rtt) if args.rtt is not None else None
    cond, buffers = _conditions(args), _buffers(args.buffers)
    ping = None
    if rtt_s is None:
        ping = sel.ping_rtt(args.host, count=args.ping_count)
        # ping's ms -> s: a base RTT, as the profiles' (configured τ, remote: TCP's min_rtt)
        rtt_s = ping["min_ms"] / 1e3
    with Store.open(args.db, read_only=True) as store:
        variants = args.variants and resolve_variants(args.variants, {r["variant"] for r in reads.profile_runs(store)})
        profiles = sel.load_profiles(store, variants=variants, streams=args.streams,
                                     buffers=buffers, conditions=cond, exclude_flagged=args.exclude_flagged)
    choice = sel.select(profiles, rtt_s, extrapolate=args.extrapolate, confidence=args.confidence,
                        n_boot=args.boot, seed=args.seed, margin=args.margin)
    settings = sel.host_settings(choice.recommended, rtt_s, profiles.conditions.get("rate_bps"),
                                 host=args.host)
    applied = None
    if args.apply:
        applied = apply.apply_settings(settings, netns=args.netns, host=args.host_settings)
    rows = apply.current_rows(settings, netns=args.netns)
    if args.json:
        doc = {**choice.to_json(), "rtt_source": "ping" if ping else "given", "ping": ping,
               "ranking": choice.to_json()["ranking"][:args.top],
               "settings": settings_json(settings, rows, args.netns), "applied": applied,
               "unknown_variant_left_out": profiles.unknown_variant_left_out}
        json.dump(doc, sys.stdout, indent=2, default=float)
        print()
    else:
        print_text(choice, settings, applied, ping, args.top, rows, args.netns)
        if profiles.unknown_variant_left_out:
            print(f"\nLeft out: {profiles.unknown_variant_left_out} runs whose files name no congestion-control "
                  f"variant (import them again with --variant NAME).")
    return 0


def _gbps(x) -> str:
    return "–" if x is None else f"{x / 1e9:.3f}"


def _value(e) -> str:
    """An estimate in Gbit/s; '!' marks a model-backed one whose fit is flagged (explained below the ranking)."""
    return _gbps(e.throughput_bps) + ("!" if e.model_flags else "")


def print_text(choice, settings, applied, ping, top: int, rows, netns=None) -> None:
    from ..choose import select as sel

    src = f"ping -U {ping['host']}: min of {ping['count']}" if ping else "given"
    print(f"RTT {choice.rtt_ms:.3f} ms ({src}); runs: {sel.describe_conditions(choice.conditions)}")
    print(flagged_line(choice))
    pct = round(choice.confidence * 100)
    print(f"\n{'rank':>4}  {'configuration':<34} {'Gbit/s':>8}  {f'{pct}% CI':>17}  {'method':<12} "
          f"{'unflagged/flagged':>17}  profile runs")
    for i, e in enumerate(choice.ranking[:top]):
        ci = interval_cell(e)
        where = "model fit" if e.method == "extrapolated" else "at " + ",".join(f"{t:g}" for t in e.rtts_ms) + " ms"
        used, flagged = sum(e.repetitions), sum(e.flagged)
        print(f"{i + 1:>4}  {e.config.label():<34} {_value(e):>8}  {ci:>17}  "
              f"{e.method:<12} {f'{used - flagged}/{flagged}':>17}  {e.runs} ({where})")
    for e in choice.ranking[:top]:
        if e.interval_note():
            print(f"  – {e.config.label()}: {e.interval_note()} (now {'/'.join(map(str, e.repetitions))} at "
                  f"{', '.join(f'{t:g}' for t in e.rtts_ms)} ms)")
    if any(e.ci_clipped for e in choice.ranking[:top]):
        c = next(e.ceiling_bps for e in choice.ranking[:top] if e.ci_clipped)
        print(f"  * interval clipped to the physical range [0, {_gbps(c) if c else '∞'}] Gbit/s "
              f"(0 to the link rate C; the t interval reached beyond it)")
    if any(e.method == "extrapolated" for e in choice.ranking[:top]):
        from ..models.configurations import DEFAULT_CONFIGURATION, describe_configuration
        print(f"  model fit (extrapolated): {describe_configuration(DEFAULT_CONFIGURATION)}")
    for e in choice.ranking[:top]:
        for f in e.model_flags:
            print(f"  ! {e.config.label()}: model fit FLAGGED, the value is not a plain prediction: {f['text']}")
    for x in choice.excluded:
        print(f"  left out: {x['reason']}")
    c = choice.comparison
    if c.decision == "single":
        print("\nOnly one configuration can be estimated here.")
    elif c.decision == "extrapolated":
        print(f"\nBest vs runner-up: +{_gbps(c.difference_bps)} Gbit/s; significance not assessed "
              "(model-backed estimates carry the model's interval only).")
    elif c.decision == "insufficient":
        print(f"\nBest vs runner-up: +{_gbps(c.difference_bps)} Gbit/s; {insufficient(choice)}.")
    else:
        margin = f"margin {choice.margin * 100:g}% = {_gbps(c.margin_bps)} Gbit/s"
        print(f"\nBest vs runner-up: +{_gbps(c.difference_bps)} Gbit/s, {pct}% t interval "
              f"[{_gbps(c.ci_low_bps)}, {_gbps(c.ci_high_bps)}] ({margin}), "
              f"p(difference ≤ margin) = {c.p_value:.3g}: {verdict(choice)}.")
    if choice.recommended is not choice.best:
        print(f"Within {choice.margin * 100:g}% of the best by their estimates: prefer the simplest "
              f"({sel.TIE_BREAK})" + ("." if c.decision == "tie" else
                                      "; not shown within the margin, so more runs may change it."))
    r = choice.recommended
    print(f"\nRecommended: {r.config.label()} — expected {_value(r)} Gbit/s "
          f"({r.method}{', ' + r.model if r.model else ''})")
    if r.model_flags:
        print("  ! its model fit is FLAGGED (above): the model does not explain this profile; measure at this RTT")
    print_settings(settings, applied, rows, netns)


def interval_cell(e) -> str:
    """The CI column: low–high in Gbit/s ('*': clipped to [0, C]); '–' without one (the note below says why)."""
    if e.ci_low_bps is None:
        return "–"
    return f"{_gbps(e.ci_low_bps)}–{_gbps(e.ci_high_bps)}" + ("*" if e.ci_clipped else "")


def insufficient(choice) -> str:
    """Best vs runner-up when either has fewer than decide.MIN_INTERVAL_RUNS runs at an RTT used: no
    interval, and the repetitions of each that would decide (select.runs_to_decide)."""
    from ..choose.decide import MIN_INTERVAL_RUNS
    from ..choose.select import MAX_RUNS_TO_DECIDE

    c, best, second = choice.comparison, choice.best, choice.ranking[1]
    now = min(min(best.repetitions), min(second.repetitions))
    said = f"too few runs for an interval (fewer than {MIN_INTERVAL_RUNS} at an RTT used)"
    if best.decide_stat is None or second.decide_stat is None:
        return (f"{said}; no configuration of this group has repeated runs to judge the spread, so at least "
                f"{MIN_INTERVAL_RUNS - now} more of each are needed before anything decides")
    if c.decides_as is None:
        return f"{said}; the difference lies on the margin's edge, where no number of runs decides"
    would = "show them within the margin" if c.decides_as == "tie" else "separate them"
    if c.runs_to_decide is None:
        return f"{said}; more than {MAX_RUNS_TO_DECIDE} repetitions of each would be needed to {would}"
    return (f"{said}; about {c.runs_to_decide - now} more would decide: {c.runs_to_decide} repetitions of each "
            f"would {would}, if the means and spread stay as observed")


def verdict(choice) -> str:
    """Best vs runner-up in words: separated, a tie shown within ±margin, or not separated with the
    repetitions that would decide (select.runs_to_decide)."""
    c = choice.comparison
    m = f"±{_gbps(c.margin_bps)}"
    if c.decision == "significant":
        return f"separated: better by more than the margin (the interval lies above +{_gbps(c.margin_bps)})"
    if c.decision == "tie":
        return f"a tie: shown within the margin (the whole interval lies inside {m})"
    now = " and ".join(map(str, sorted({min(choice.best.repetitions), min(choice.ranking[1].repetitions)})))
    said = (f"not separated: the interval is neither above +{_gbps(c.margin_bps)} nor inside {m}, "
            f"so no tie is shown either")
    if c.decides_as is None:
        return f"{said}; the difference lies on the margin's edge, where no number of runs decides"
    would = "show them within the margin" if c.decides_as == "tie" else "separate them"
    if c.runs_to_decide is None:
        from ..choose.select import MAX_RUNS_TO_DECIDE
        return (f"{said}; more than {MAX_RUNS_TO_DECIDE} repetitions of each would be needed to "
                f"{would} (the difference is that close to the margin's edge)")
    return (f"{said}; about {c.runs_to_decide} repetitions of each (now {now}) would {would}, "
            f"if the means and spread stay as observed")


def flagged_line(choice) -> str:
    """Whether flagged runs count, and how many (grouping.FLAGGED_SQL)."""
    if choice.exclude_flagged:
        return f"Flagged runs left out (--exclude-flagged): {choice.flagged_left_out}."
    n = sum(e.runs_flagged for e in choice.ranking)
    return (f"Flagged runs included: {n} of the ranked profiles' runs (unflagged/flagged: runs at the RTTs "
            f"each estimate uses; --exclude-flagged leaves them out).")
