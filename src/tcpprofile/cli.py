"""Command-line entry point. Subcommands live one per module in tcpprofile.commands, the package that is
their registry (commands/__init__.py): the command a command line names is the only one imported (all of
them, in their ORDER, for help).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .commands import COMMANDS
from .errors import TcpProfileError, is_interrupt

def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. Given the command line, only the command it names is imported and registered
    (a command's module may import the heavy parts: the campaign runner, the models; `tcpprofile select`
    should not pay for them); without one (`--help`, a typo) every command is, so help and the error
    list them all."""
    parser = argparse.ArgumentParser(
        prog="tcpprofile",
        description="Measure, explain and predict TCP throughput over dedicated high bandwidth×delay "
                    "connections, and choose the transport (variant, streams, buffer) with a stated confidence.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = next((a for a in argv or () if not a.startswith("-")), None)
    for name in [named] if named in COMMANDS else COMMANDS:
        importlib.import_module(COMMANDS[name]).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
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
