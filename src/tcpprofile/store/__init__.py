"""The embedded DuckDB store. Its schema is schema_v1.sql followed by migrate_v2.sql … migrate_vN.sql,
N = SCHEMA_VERSION, applied in that order (db.py)."""

from .db import SCHEMA_VERSION, TABLES, Store, dumps
from .expressions import TAU_MS_SQL

__all__ = ["SCHEMA_VERSION", "TABLES", "TAU_MS_SQL", "Store", "dumps"]
