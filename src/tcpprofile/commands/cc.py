"""`tcpprofile cc`: list, load and unload the congestion-control variants."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from .. import cc
from ..cc.registry import known_names

NAME = "cc"
HELP = "congestion-control catalogue: list, load, unload"
ORDER = 60            # its place in `tcpprofile --help`


def register(subparsers) -> None:
    p = subparsers.add_parser(NAME, help=HELP)
    sub = p.add_subparsers(dest="cc_command", required=True, metavar="ACTION")
    ls = sub.add_parser("list", help="the twelve variants, how this kernel provides each, loaded or not")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=_list)
    names = f"all, or one or more of: {known_names()}"
    ld = sub.add_parser("load", help="register our BPF ports / load modules so the variants are selectable")
    ld.add_argument("names", nargs="+", metavar="NAME", help=names)
    ld.set_defaults(func=_load)
    ul = sub.add_parser("unload", help="unregister what tcpprofile loaded (by id, ours only); one line per variant")
    ul.add_argument("names", nargs="+", metavar="NAME", help=names)
    ul.set_defaults(func=_unload)


def _list(args: argparse.Namespace) -> int:
    infos = cc.available()
    if args.json:
        print(json.dumps([asdict(i) for i in infos], indent=1))
        return 0
    rows = [("NAME", "IMPLEMENTATION", "KERNEL NAME", "LOADED", "OBJECT SHA256")]
    rows += [(i.name, i.implementation or "unavailable", i.kernel_name or "-", "yes" if i.loaded else "no",
              (i.object_sha256 or "-")[:16]) for i in infos]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        print("  ".join(f"{v:<{w}}" for v, w in zip(r, widths)).rstrip())
    return 0


def _load(args: argparse.Namespace) -> int:
    loaded = cc.ensure_loaded(args.names)
    print(f"loaded: {', '.join(loaded) or 'nothing new'}")
    return 0


def _unload(args: argparse.Namespace) -> int:
    """One line per variant; exit 1 only when one is still offered or in use (the rest are unloaded)."""
    results = cc.unload(args.names)
    for u in results:
        print(f"{u.name}: {u.message}" if u.ok else f"{u.name}: FAILED: {u.message}")
    return 0 if all(u.ok for u in results) else 1
