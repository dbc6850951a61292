"""Readers of throughput results, one per format, behind one interface (base.Reader) and this explicit
registry: `read(data)` detects the format from the file's shape (JSON readers first, in order, then the
text readers) and returns the reader with its parsed runs (iperf.Parsed, as the iperf3 path produces),
or raises Unrecognised / IperfError naming why the file is not a result.

Formats: iperf3 -J (iperf3.py), pScheduler throughput results and run records (pscheduler.py), iperf2
client reports as text, plain or -e (iperf2_text.py), and as CSV, -y C (iperf2_csv.py).
"""

from __future__ import annotations

import json

from ...measure import iperf
from ...errors import IperfError
from . import iperf2_csv, iperf2_text, iperf3, pscheduler
from .base import Reader

# order matters: a pScheduler result has `intervals` as iperf3 does, but also `summary`
READERS: tuple[Reader, ...] = (pscheduler.READER, iperf3.READER, iperf2_csv.READER, iperf2_text.READER)
WHAT = "not an iperf3 -J, pScheduler or iperf2 result"


class Unrecognised(IperfError):
    """No reader recognises the file."""


def looked_for(json_value: bool) -> str:
    return "; ".join(r.looks_for for r in READERS if r.json == json_value)


def read(data: bytes) -> tuple[Reader, list[iperf.Parsed]]:
    """(the file's reader, its parsed runs); raises Unrecognised, or IperfError with the reader's reason."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise Unrecognised(f"not text (not UTF-8): {WHAT}") from None
    as_text = next((r for r in READERS if not r.json and r.detect(text)), None)
    if text.lstrip()[:1] in ("{", "[") and not (as_text and text.lstrip().startswith("[ ")):
        doc = _json(text)                         # an iperf2 report may start with '[  2] local …'
        reader = next((r for r in READERS if r.json and r.detect(doc)), None)
        if reader is None:
            raise Unrecognised(f"{WHAT}: JSON, but not {looked_for(True)}")
        return reader, reader.read(doc)
    if as_text is None:
        raise Unrecognised(f"{WHAT}: looked for JSON or {looked_for(False)}")
    return as_text, as_text.read(text)


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise Unrecognised(f"not JSON: {err.msg} (line {err.lineno}, column {err.colno}; truncated or not "
                           f"iperf3 -J output)") from None
    except (ValueError, RecursionError) as err:      # a number of > 4300 digits; nesting too deep
        raise Unrecognised(f"not JSON that can be read: {str(err).splitlines()[0][:80]}") from None
