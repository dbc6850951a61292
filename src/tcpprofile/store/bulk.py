"""Bulk insertion from column arrays (numpy), for importers and benchmarks that write millions of rows.

DuckDB scans a registered dict of numpy arrays directly, so no row-by-row executemany is needed.
Unlike Store.put_run this does not replace earlier attempts: callers insert fresh rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import TcpProfileError
from .db import TABLES, Store


def insert_columns(store: Store, table: str, columns: Mapping[str, np.ndarray]) -> int:
    """Insert len(column) rows into table in one statement; all columns must have equal length."""
    if table not in TABLES:
        raise TcpProfileError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
    unknown = set(columns) - set(store.columns(table))
    if unknown:
        raise TcpProfileError(f"{table}: unknown columns {sorted(unknown)}")
    arrays = {k: np.asarray(v) for k, v in columns.items()}
    sizes = {a.shape for a in arrays.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise TcpProfileError(f"{table}: columns must be 1-D arrays of equal length")
    name = f"_tcpp_bulk_{table}"
    cols = ", ".join(arrays)
    store.con.register(name, arrays)
    try:
        store.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {name}")
    finally:
        store.con.unregister(name)
    return int(next(iter(sizes))[0])
