"""Damaged campaign specs, made from the example specs (examples/*.toml) and a remote one: a value
replaced by another TOML value (1e400, ±inf, nan, a 40-digit or 64-bit integer, a string, a boolean,
a date, an empty or mixed list, a table), a key removed, an unknown key added, or the text cut short.

`dump(doc)` writes a TOML document (Raw values are written as they are: `Raw("1e400")` is the literal
TOML float 1e400, which tomllib reads as inf); `mutated_text(rng)` draws one damaged spec's text.
"""

from __future__ import annotations

import copy
import json
import random
import re
import tomllib
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REMOTE = {"campaign": {"name": "r", "seed": 3}, "remote": {"host": "10.0.0.2", "port": 5201, "rate": "10Gbit"},
          "transfer": {"variant": ["cubic"], "streams": [1, 2], "size": ["1GB"]}}


class Raw(str):
    """TOML text written as it is."""


REPLACEMENTS = (
    Raw("1e400"), Raw("-1e400"), Raw("inf"), Raw("-inf"), Raw("nan"), Raw("9" * 40), Raw("-0.0"),
    2**63 - 1, -2**63, 0, -1, 1, 2, 1.5, 0.0, 1e-300, True, False, "", "x", "1e400GB", "1e400s", "9e307Tbit",
    "10Gbit", "45.6ms", "BDP", "0xBDP", "1e400xBDP", "default", "cubic", [], [[]], [1, "a"], [True], {},
    {"mode": "periodic"}, {"mode": []}, {"mode": "uniform", "p": Raw("nan")}, {"x": 1},
    Raw("1979-05-27T07:32:00Z"), Raw("07:32:00"), Raw("1979-05-27"),
)
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def bases() -> list[dict]:
    return [tomllib.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.toml"))] + [copy.deepcopy(REMOTE)]


_BASES = bases()


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k)


def value(v) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + "}"
    return repr(v)   # int; float: repr gives inf / nan / 1e+300, all TOML


def dump(doc: dict) -> str:
    head, body = [], []
    for table, content in doc.items():
        if isinstance(content, dict) and not isinstance(content, Raw):
            body.append(f"[{_key(table)}]")
            body += [f"{_key(k)} = {value(v)}" for k, v in content.items()]
        else:
            head.append(f"{_key(table)} = {value(content)}")
    return "\n".join(head + body) + "\n"


def paths(node, prefix: tuple = ()) -> list[tuple]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths(v, prefix + (k,)))
    return out


def mutate(doc: dict, rng: random.Random, replacement=None) -> str:
    """Damage `doc` in place and return its TOML text. `replacement`: the value to put (drawn from
    REPLACEMENTS when None)."""
    kind = rng.choices(("replace", "remove", "add", "cut"), weights=(8, 2, 1, 1))[0]
    if kind == "cut":
        text = dump(doc)
        return text[: rng.randrange(len(text))]
    if kind == "add":
        holders = [doc] + [p for p in (_at(doc, q) for q in paths(doc)) if isinstance(p, dict)]
        rng.choice(holders)[rng.choice(("colour", "rate", "x y", "every"))] = rng.choice(REPLACEMENTS)
        return dump(doc)
    for _ in range(rng.randint(1, 3) if kind == "replace" else 1):
        path = rng.choice(paths(doc))
        parent = _at(doc, path[:-1])
        if kind == "remove":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(REPLACEMENTS) if replacement is None else replacement)
    return dump(doc)


def _at(doc, path: tuple):
    for k in path:
        doc = doc[k]
    return doc


def mutated_text(rng: random.Random, replacement=None) -> str:
    return mutate(copy.deepcopy(rng.choice(_BASES)), rng, replacement)
