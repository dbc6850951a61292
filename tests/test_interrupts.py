"""A Ctrl-C between a child's start and its record, or inside a store's COMMIT, loses nothing.

Each case sends the signal to this process at the worst point of the step (inside Popen's return,
just after DuckDB's COMMIT) and checks what the step left: the child stopped, the row stored.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tcpprofile import interrupts
from tcpprofile.measure import iperf
from tcpprofile.store.db import Store


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_held_delivers_sigint_after_the_block():
    reached_end = False
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):          # bytecodes at which Python would have raised
                pass
            reached_end = True
    assert reached_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_hands_each_signal_once_to_the_installed_handler():
    got = []
    previous = signal.signal(signal.SIGTERM, lambda n, f: got.append(n))
    try:
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            assert got == []
        assert got == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is not None and got == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_held_delivers_even_when_the_block_raises():
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            raise ValueError("the block's own failure")


class _InterruptedStart:
    """A Host (iperf.Host) whose popen is interrupted as it returns: the child has started."""

    def __init__(self):
        self.started: list[subprocess.Popen] = []

    def popen(self, ns_role, argv, **kw):
        proc = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.started.append(proc)
        os.kill(os.getpid(), signal.SIGINT)
        return proc

    def run(self, ns_role, argv, *, check=True, timeout=None):
        raise AssertionError("not used")

    def stop_process(self, proc):
        iperf.LocalHost().stop_process(proc)


def test_a_ctrl_c_as_the_client_starts_leaves_no_client():
    host = _InterruptedStart()
    with pytest.raises(KeyboardInterrupt):
        iperf.run(host, "192.0.2.1", 5201, ["iperf3", "-c", "192.0.2.1"], timeout_s=5, start_server=False)
    (proc,) = host.started
    assert proc.returncode is not None and not _alive(proc.pid)


class _Connection:
    """DuckDB's connection, with a SIGINT sent to this process just after the COMMIT returns."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args):
        r = self._con.execute(sql, *args)
        if sql == "COMMIT":
            os.kill(os.getpid(), signal.SIGINT)
        return r

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_a_ctrl_c_at_commit_keeps_the_row_and_the_store(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as s:
        s.con.execute("CREATE TABLE t (x INTEGER)")
        real, s.con = s.con, _Connection(s.con)
        try:
            with pytest.raises(KeyboardInterrupt):      # not DuckDB's "cannot rollback"
                with s.transaction():
                    s.con.execute("INSERT INTO t VALUES (1)")
        finally:
            s.con = real
        with s.transaction():                           # usable afterwards
            s.con.execute("INSERT INTO t VALUES (2)")
        assert s.con.execute("SELECT x FROM t ORDER BY x").fetchall() == [(1,), (2,)]


class _InterruptsWhenRead:
    """A value DuckDB converts through Python (str): SIGINT arrives while the INSERT scans its column."""

    def __str__(self):
        os.kill(os.getpid(), signal.SIGINT)
        return "read"


def test_a_ctrl_c_while_duckdb_reads_the_inserted_columns_is_an_interrupt(tmp_path):
    # CI (the 20-kill test): SIGINT inside put_run's INSERT reached the link's handler inside DuckDB's scan
    # and came out as duckdb.Error (exit 1); DuckDB's own check gives RuntimeError "Query interrupted"
    with Store.open(tmp_path / "s.duckdb") as s:
        s.con.execute("CREATE TABLE t (a VARCHAR)")
        s._columns["t"] = ["a"]
        with pytest.raises(KeyboardInterrupt):
            with s.transaction():
                # past DuckDB's first vector of rows the interrupt surfaces as duckdb.Error, not KeyboardInterrupt
                s.insert_columns("t", {"a": ["x"] * 200_000 + [_InterruptsWhenRead(), "y"]})
        assert s.con.execute("SELECT count(*) FROM t").fetchall() == [(0,)]   # rolled back
        s.insert_columns("t", {"a": ["z"]})                                  # usable afterwards
        assert s.con.execute("SELECT a FROM t").fetchall() == [("z",)]
