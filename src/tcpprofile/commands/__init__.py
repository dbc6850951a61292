"""The subcommands of `tcpprofile`, one module each: this package's modules are the registry (as the
campaign's racing rules, tcpprofile/registry.py), and cli.py reads it.

A command's module declares NAME (the command), HELP (its line in `tcpprofile --help`), ORDER (its place
there: the pipeline's order, measuring first) and `register(subparsers)`, which adds its parser under NAME
with HELP and sets `func`. A module without NAME is a helper that commands share (options.py,
settings_text.py, analyze_text.py), never a command. NAME and ORDER are read from the sources (registry.declared):
listing the commands imports none of them.
"""

from __future__ import annotations

from ..registry import declared

# command -> its module, in ORDER
COMMANDS: dict[str, str] = declared(__name__, __path__, order=True)
