"""The embedded DuckDB store (schema in schema_v1.sql)."""

from .db import SCHEMA_VERSION, TABLES, Store, dumps

__all__ = ["SCHEMA_VERSION", "TABLES", "Store", "dumps"]
