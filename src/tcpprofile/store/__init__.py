"""The embedded DuckDB store (schema in schema_v1.sql)."""

from .db import SCHEMA_VERSION, TABLES, Store, dumps
from .expressions import TAU_MS_SQL

__all__ = ["SCHEMA_VERSION", "TABLES", "TAU_MS_SQL", "Store", "dumps"]
