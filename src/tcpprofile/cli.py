"""Command-line entry point. Subcommands live one per module in tcpprofile.commands.

The registry below is explicit: each module defines `register(subparsers)` (adds its parser and sets
`func`) and is imported only when the CLI starts, in this order.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import TcpProfileError, is_interrupt

# name shown in --help order -> module implementing it
COMMANDS: dict[str, str] = {
    "run": "tcpprofile.commands.run",
    "import": "tcpprofile.commands.import_",
    "export": "tcpprofile.commands.export",
    "testbed": "tcpprofile.commands.testbed",
    "cluster": "tcpprofile.commands.cluster",
    "cc": "tcpprofile.commands.cc",
    "analyze": "tcpprofile.commands.analyze",
    "model": "tcpprofile.commands.model",
    "select": "tcpprofile.commands.select",
    "tune": "tcpprofile.commands.tune",
    "hostcheck": "tcpprofile.commands.hostcheck",
    "report": "tcpprofile.commands.report",
    "reproduce": "tcpprofile.commands.reproduce",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcpprofile",
        description="Measure, explain and predict TCP throughput over dedicated high bandwidth×delay "
                    "connections, and choose the transport (variant, streams, buffer) with a stated confidence.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for modname in COMMANDS.values():
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as err:
            if err.name != modname:
                raise
            continue  # not built yet
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except TcpProfileError as err:
        print(f"tcpprofile {args.command}: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (KeyboardInterrupt, Exception) as err:
        if not is_interrupt(err):       # a SIGINT during a DuckDB query arrives as its RuntimeError
            raise
        print(f"tcpprofile {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
