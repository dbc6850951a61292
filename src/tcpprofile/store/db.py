"""The embedded store: a DuckDB file with a written, versioned schema.

A new store runs schema_v1.sql, then each migrate_vN.sql (N = 2 … SCHEMA_VERSION) in order; an
older store opened for writing runs the migrations it lacks, each in its own transaction with its
version row, so an interrupted upgrade leaves the store at its last complete version. An older store
opened read-only (select, analyze, export, report, model fit) is read as it is, through the current
schema: the file is attached read-only to an in-memory database whose views have every current table
and column, NULL where the older version had none (a table it lacked: no rows), and stays unchanged.

`Store.open(path)` creates or migrates the file and returns a Store; `store.con` is the DuckDB
connection for queries. Writers use the insert_* methods, which take plain dicts keyed by column name
(unknown keys are an error, absent keys take the column default); rows of runs, intervals and cwnd
are checked first (store/checks.py: no NaN, infinite or negative measurement; an 'ok' run has a
throughput). `with store.transaction():` makes several writes one: all stored, or none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb
import numpy as np

from .. import interrupts
from ..errors import TcpProfileError
from .checks import NON_NEGATIVE, check_columns

SCHEMA_VERSION = 10
TABLES = ("campaigns", "links", "runs", "intervals", "cwnd", "stops")


def _schema_sql(version: int) -> str:
    """The SQL that brings a store from version-1 to version (version 1: the base schema)."""
    name = "schema_v1.sql" if version == 1 else f"migrate_v{version}.sql"
    return resources.files(__package__).joinpath(name).read_text()


def _migrate(con: duckdb.DuckDBPyConnection, version: int | None) -> None:
    """Bring a connection's store from `version` (None: empty) to SCHEMA_VERSION, one transaction per
    version with its version row."""
    for v in range((version or 0) + 1, SCHEMA_VERSION + 1):
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(_schema_sql(v))
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [v])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The store's schema version; None: not a tcpprofile store (no schema_version table)."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()[0]
    if not exists:
        return None
    return con.execute("SELECT max(version) FROM schema_version").fetchone()[0]


@cache
def _current_columns() -> dict[str, list[tuple[str, str]]]:
    """(column, type) of every table of the current schema, in order (from an empty in-memory store)."""
    con = duckdb.connect(":memory:")
    try:
        _migrate(con, None)
        return {t: [(r[0], r[1]) for r in con.execute(f"DESCRIBE {t}").fetchall()]
                for t in ("schema_version", *TABLES)}
    finally:
        con.close()


def _read_as_current(path: str) -> duckdb.DuckDBPyConnection:
    """An in-memory connection that reads the older store at `path` (attached read-only, never written)
    through views of the current schema: a column the file lacks reads NULL, a table it lacks is empty."""
    con = duckdb.connect(":memory:")
    try:
        con.execute("ATTACH '{}' AS tcpp_stored (READ_ONLY)".format(path.replace("'", "''")))
        for table, columns in _current_columns().items():
            have = {r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'tcpp_stored' "
                "AND table_name = ?", [table]).fetchall()}
            cols = ", ".join(f'"{c}"' if c in have else f'CAST(NULL AS {kind}) AS "{c}"' for c, kind in columns)
            source = f" FROM tcpp_stored.main.{table}" if have else " WHERE false"
            con.execute(f"CREATE VIEW main.{table} AS SELECT {cols}{source}")
    except BaseException:
        con.close()
        raise
    return con


class Store:
    def __init__(self, con: duckdb.DuckDBPyConnection, path: str):
        self.con = con
        self.path = path
        self._depth = 0          # transaction() nesting: only the outermost begins and ends it
        self._columns = {t: [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()] for t in TABLES}

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False) -> "Store":
        path = str(path)
        if path != ":memory:" and not read_only:       # a reader creates nothing
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(path, read_only=read_only)
        except duckdb.Error as err:
            raise TcpProfileError(f"cannot open store {path}: {err}") from err
        version = schema_version(con)
        if version is None and read_only:
            raise TcpProfileError(f"{path} is not a tcpprofile store (no schema_version table)")
        if version is not None and version > SCHEMA_VERSION:
            raise TcpProfileError(
                f"{path} has schema version {version}; this tcpprofile reads up to {SCHEMA_VERSION}")
        if (version or 0) < SCHEMA_VERSION:
            if read_only:                # read as it is: the file is not written
                con.close()
                try:
                    con = _read_as_current(path)
                except duckdb.Error as err:
                    raise TcpProfileError(f"cannot read store {path} (schema version {version}) "
                                          f"as version {SCHEMA_VERSION}: {err}") from err
            else:
                _migrate(con, version)
        return cls(con, path)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def columns(self, table: str) -> list[str]:
        return list(self._columns[table])

    # -- writing -----------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction around the block: committed when it ends, rolled back when it raises
        (the store stays usable). A nested block joins the outer one."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._rollback()
            raise
        self._depth = 0
        with interrupts.held():       # a Ctrl-C is delivered after COMMIT has returned, not inside it
            try:
                self.con.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Roll back the open transaction, if one is left: DuckDB ends a transaction itself when a
        statement inside it is interrupted or its COMMIT fails, and then refuses a ROLLBACK; the
        exception that ended the block is the one to report."""
        try:
            self.con.execute("ROLLBACK")
        except duckdb.TransactionException:
            pass

    def insert_columns(self, table: str, columns: Mapping[str, Sequence]) -> int:
        """Insert rows given as equal-length columns (numpy arrays or lists; None is NULL) in one
        statement: DuckDB scans the registered arrays, ~100× faster than row-by-row inserts."""
        if table not in self._columns:
            raise TcpProfileError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
        unknown = set(columns) - set(self._columns[table])
        if unknown:
            raise TcpProfileError(f"{table}: unknown columns {sorted(unknown)}")
        arrays = {k: v if isinstance(v, np.ndarray) else np.array(v, dtype=object) for k, v in columns.items()}
        shapes = {a.shape for a in arrays.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise TcpProfileError(f"{table}: columns must be 1-D and of equal length")
        n = int(next(iter(shapes))[0])
        if n == 0:
            return 0
        name = f"_tcpp_insert_{table}"
        cols = ", ".join(arrays)
        self.con.register(name, arrays)
        try:
            # DuckDB reads object columns through Python: a Ctrl-C handled there becomes DuckDB's own error
            # ("Query interrupted", or a KeyboardInterrupt's text wrapped in duckdb.Error), no longer an interrupt
            with interrupts.held():
                self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {name}")
        finally:
            try:
                self.con.unregister(name)
            except duckdb.TransactionException:
                pass  # the insert failed inside a transaction: its error propagates, the rollback clears
        return n

    def _insert(self, table: str, rows: Iterable[Mapping]) -> int:
        """Insert rows (dicts); each row names its columns, absent ones take the column default."""
        known = set(self._columns[table])
        groups: dict[tuple, list[Mapping]] = {}
        for row in rows:
            unknown = set(row) - known
            if unknown:
                raise TcpProfileError(f"{table}: unknown columns {sorted(unknown)}")
            groups.setdefault(tuple(row), []).append(row)
        for cols, group in groups.items():
            columns = {c: [r[c] for r in group] for c in cols}
            if table in NON_NEGATIVE:
                check_columns(table, columns)
            self.insert_columns(table, columns)
        return sum(len(g) for g in groups.values())

    def insert_campaign(self, row: Mapping) -> None:
        """Insert a campaign unless one with that campaign_id exists (resuming keeps the original)."""
        if not self.con.execute("SELECT 1 FROM campaigns WHERE campaign_id = ?",
                                [row["campaign_id"]]).fetchone():
            self._insert("campaigns", [row])

    def insert_link(self, row: Mapping) -> None:
        self._insert("links", [row])

    def update_link(self, link_id: str, columns: Mapping) -> None:
        """Set some columns of one links row (a remote link's RTT, replaced by TCP's once runs measured it)."""
        unknown = set(columns) - set(self._columns["links"])
        if unknown or not columns:
            raise TcpProfileError(f"links: unknown or no columns {sorted(unknown)}")
        sets = ", ".join(f"{c} = ?" for c in columns)
        self.con.execute(f"UPDATE links SET {sets} WHERE link_id = ?", [*columns.values(), link_id])

    def put_run(self, row: Mapping, intervals: Iterable[Mapping] = (), cwnd: Iterable[Mapping] = ()) -> None:
        """Write a run with its intervals and cwnd samples atomically, replacing an earlier attempt."""
        run_id = row["run_id"]
        with self.transaction():
            for table in ("intervals", "cwnd", "runs"):
                self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            self._insert("runs", [row])
            self._insert("intervals", ({**r, "run_id": run_id} for r in intervals))
            self._insert("cwnd", ({**r, "run_id": run_id} for r in cwnd))

    def put_stops(self, campaign_id: str, rows: Iterable[Mapping]) -> None:
        """Replace the campaign's per-configuration stop decisions (table stops) in one transaction."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM stops WHERE campaign_id = ?", [campaign_id])
            self._insert("stops", ({**r, "campaign_id": campaign_id} for r in rows))
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- reading -----------------------------------------------------------------------------
    def finished_run_ids(self, campaign_id: str) -> set[str]:
        """Runs that need no further attempt: succeeded, or failed after their retry."""
        rows = self.con.execute(
            "SELECT run_id FROM runs WHERE campaign_id = ? AND status IN ('ok', 'failed')",
            [campaign_id]).fetchall()
        return {r[0] for r in rows}

    def query(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


def dumps(obj) -> str:
    """JSON for the *_json columns (sorted keys, so equal content stores equal text)."""
    return json.dumps(obj, sort_keys=True, default=str)
