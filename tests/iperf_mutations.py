"""Damaged iperf3 documents, made from the real iperf3 3.12 files in tests/data/iperf3/ as a new user
would meet them: one to four values replaced (null, a string, a number, NaN, ±inf, a huge integer, an
empty list or object, a boolean), a key removed, or the text cut short.

`mutated_text(rng)` draws one damaged file's text; `rng` is a random.Random (a fixed seed for the
1,000-file check, Hypothesis's `st.randoms()` in the property tests).
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "iperf3"
SOURCES = ("one_stream.json", "four_streams.json", "reverse.json", "size_mode.json", "omit.json")
REPLACEMENTS = (None, "x", "", 0, -1, 1, 0.5, -2.5, 1e300, math.nan, math.inf, -math.inf, 10**30, 2**63,
                [], {}, True, False)

_DOCS = {name: json.loads((DATA / name).read_text()) for name in SOURCES}


def source(name: str) -> dict:
    return copy.deepcopy(_DOCS[name])


def paths(node, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path in a JSON value (containers and leaves)."""
    out = []
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return out
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths(v, prefix + (k,)))
    return out


def _parent(doc, path: tuple):
    for k in path[:-1]:
        doc = doc[k]
    return doc


def mutate(doc: dict, rng: random.Random) -> tuple[dict | None, str]:
    """Damage `doc` in place; returns (doc, description), or (None, text) for a cut-short text."""
    kind = rng.choices(("replace", "remove", "cut"), weights=(8, 2, 1))[0]
    if kind == "cut":
        text = json.dumps(doc, indent=1)
        return None, text[: rng.randrange(len(text))]
    done = []
    for _ in range(rng.randint(1, 4) if kind == "replace" else 1):
        path = rng.choice(paths(doc))
        parent = _parent(doc, path)
        if kind == "remove":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
            done.append(f"removed {path}")
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(REPLACEMENTS))
            done.append(f"{path} = {parent[path[-1]]!r}")
    return doc, "; ".join(done)


def mutated_text(rng: random.Random) -> tuple[str, str]:
    """(file text, what was done) for one damaged copy of a real iperf3 file."""
    name = rng.choice(SOURCES)
    doc, what = mutate(source(name), rng)
    if doc is None:
        return what, f"{name} cut short"
    # json.dumps writes NaN/Infinity as iperf3's own C printf would not, but Python's json (and so a
    # careless reader) accepts them: exactly the values the importer must refuse
    return json.dumps(doc, indent=1), f"{name}: {what}"
