"""`tcpprofile tune (--rtt RTT | --host HOST) --db DB`: race candidate (V, n, B) on one connection.

Exit status: 0 with a decision; 1 when every run failed; 2 with a one-line reason when it could not
run; 130 when interrupted (run the same command again to continue the race).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cc.registry import known_names

NAME = "tune"
HELP = "find the best (variant, streams, buffer) for one connection by racing"
ORDER = 100            # its place in `tcpprofile --help`


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP, description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="the store (every run is stored as a campaign)")
    p.add_argument("--rtt", help="emulate a link with this RTT (e.g. 87ms)")
    p.add_argument("--host", help="or race against the iperf3 server on HOST")
    p.add_argument("--port", type=int, default=5201, help="its port (default 5201)")
    p.add_argument("--rate", default="10Gbit", help="emulated link rate (default 10Gbit)")
    p.add_argument("--link-buffer", default="BDP", help="emulated bottleneck buffer (default BDP)")
    p.add_argument("--mtu", type=int, default=9000, help="emulated MTU (default 9000)")
    p.add_argument("--spec", help="take link and candidate grid from a campaign spec (one link configuration)")
    p.add_argument("--variants", nargs="+", default=["cubic", "htcp", "bbr"],
                   help=f"candidate variants (default cubic htcp bbr); known: {known_names()}")
    p.add_argument("--streams", nargs="+", type=int, default=[1, 4, 8], help="candidate stream counts")
    p.add_argument("--buffers", nargs="+", default=["default"], help="candidate socket buffers (default, 256MiB, …)")
    p.add_argument("--duration", default="10s", help="each run's duration (default 10s)")
    p.add_argument("--size", help="or each run's transfer size")
    p.add_argument("--budget", help="transfer time to spend at most (e.g. 20m)")
    p.add_argument("--margin", default="1%", help="indifference margin (default 1%%)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--rule", help="racing rule (default model: confirm with the validated model's priors; every rule: docs/tune.md); a wrong name lists them")
    p.add_argument("--first", type=int, help="rounds before the first test (default: the rule's own, docs/tune.md)")
    p.add_argument("--max-rounds", type=int, default=10, help="at most this many rounds (default 10)")
    p.add_argument("--seed", type=int, help="seed of the run order (default: drawn and recorded)")
    p.add_argument("--cluster", metavar="ADDRESS", help="race on a Ray cluster's testbed nodes (docs/cluster.md)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--apply", action="store_true", help="apply the settings (needs --netns or --host-settings)")
    p.add_argument("--netns", help="with --apply: the network namespace to apply the sysctls in")
    p.add_argument("--host-settings", action="store_true", help="with --apply: change the host's sysctls")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ..choose import decide, select as sel, tune
    from .. import spec as specs, units
    from ..errors import ValidationError
    from ..hostcheck import apply
    from ..store import Store, reads
    from .options import cluster_executor
    from .settings_text import print_settings, settings_json

    from ..campaign.rules import DEFAULT_RULE, RULES

    rule = DEFAULT_RULE if args.rule is None else args.rule
    if rule not in RULES:
        raise ValidationError("--rule", f"one of {', '.join(RULES)}, got {rule!r}")
    margin = decide.parse_fraction("--margin", args.margin, lo=-1e-12)
    confidence = decide.check_confidence("--confidence", args.confidence)
    if args.first is not None and not 2 <= args.first <= args.max_rounds:
        raise ValidationError("--first", f"must be from 2 to --max-rounds ({args.max_rounds}), got {args.first}")
    budget_s = None if args.budget is None else units.seconds("--budget", args.budget, units.POSITIVE)
    if args.apply and (args.netns is None) == (not args.host_settings):
        raise ValidationError("--apply", "needs exactly one target: --netns NS or --host-settings")
    if args.spec:
        s = specs.load(args.spec)
    else:
        s = tune.spec_for(rtt=args.rtt, host=args.host, port=args.port, rate=args.rate, link_buffer=args.link_buffer,
                          mtu=args.mtu, variants=args.variants, streams=args.streams, buffers=args.buffers,
                          duration=None if args.size else args.duration, size=args.size,
                          max_rounds=args.max_rounds, seed=args.seed)
    with Store.open(args.db) as store:
        res = tune.tune(s, store, margin=margin, confidence=confidence, first=args.first, budget_s=budget_s,
                        rule=rule, out=sys.stderr, executor=cluster_executor(s, args.cluster))
        settings = applied = rows = None
        if res.chosen:
            kernel = reads.variant_kernel(store, res.campaign_id, res.chosen["variant"])
            rtt_s = s.links[0].rtt_s or reads.mean_measured_rtt_s(store, res.campaign_id) or 0.0
            cfg = sel.Config(res.chosen["variant"], kernel["i"] or "", res.chosen["streams"],
                             res.chosen["socket_buffer_bytes"])
            est = sel.Estimate(cfg, res.chosen["mean_bps"], res.chosen["ci_low_bps"], res.chosen["ci_high_bps"],
                               "exact", [rtt_s], [1.0], [res.chosen["ok_runs"]], res.chosen["ok_runs"], None,
                               kernel_name=kernel["k"])
            settings = sel.host_settings(est, rtt_s, s.links[0].rate_bps, host=args.host)
            if args.apply:
                applied = apply.apply_settings(settings, netns=args.netns, host=args.host_settings)
            rows = apply.current_rows(settings, netns=args.netns)
    if args.json:
        json.dump({**res.to_json(), "margin": margin, "confidence": confidence,
                   "settings": settings_json(settings, rows, args.netns) if settings else None, "applied": applied},
                  sys.stdout, indent=2, default=str)
        print()
    else:
        print(tune.format_result(res, margin=margin, confidence=confidence))
        if settings:
            print_settings(settings, applied, rows, args.netns)
        print(f"store: {args.db}")
    return 0 if res.chosen else 1
