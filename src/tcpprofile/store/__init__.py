"""The embedded DuckDB store. Its schema is schema_v1.sql followed by migrate_v2.sql … migrate_vN.sql,
N = SCHEMA_VERSION, applied in that order (db.py).

The store's way in and out lives here too: importer.py with its readers in formats/, export.py. The names
below load on first use (PEP 562 module __getattr__), so that importing a part that needs no connection
(export's table list for `tcpprofile export --help`) does not load DuckDB."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .db import SCHEMA_VERSION, TABLES, Store, dumps
    from .expressions import TAU_MS_SQL

__all__ = ["SCHEMA_VERSION", "TABLES", "TAU_MS_SQL", "Store", "dumps"]
_HOME = {"SCHEMA_VERSION": "db", "TABLES": "db", "Store": "db", "dumps": "db", "TAU_MS_SQL": "expressions"}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
