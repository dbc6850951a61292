"""The one interface every format reader has (formats/__init__.py keeps the registry)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...measure import iperf


@dataclass(frozen=True)
class Reader:
    """A format: `detect` says whether a decoded file is one (a JSON value for JSON formats, the text for
    text formats) from its shape alone; `read` turns it into one parsed run per direction it holds,
    raising IperfError (IperfDocumentError naming the field or line) when it is not a coherent result."""
    name: str                                   # in the importer's lines: 'iperf3 -J', 'iperf2 -y C', …
    looks_for: str                              # what detect looks for, in words (for a rejection)
    json: bool                                  # True: detect/read take the decoded JSON value
    detect: Callable[[object], bool]
    read: Callable[[object], list[iperf.Parsed]]
