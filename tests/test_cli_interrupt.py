"""Ctrl-C while DuckDB runs a query: DuckDB (2.0) turns the SIGINT into RuntimeError('Query interrupted'),
which the CLI must treat as the interrupt it is (exit 130, 'interrupted'), as the campaign's kill test
requires of every SIGINT (tests/test_campaign_kills.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

import duckdb

from tcpprofile.errors import is_interrupt

LONG_QUERY = "SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3"   # tens of seconds on one thread
ONE_THREAD = {"threads": 1}     # however many cores a machine has, the query outlasts the interrupt's delay

# The analyze command's function replaced by a long query; SIGINT to the process 0.5 s after the query is
# started (a timer started with the process could fire while a loaded machine is still importing the CLI).
SCRIPT = f"""
import os, signal, sys, threading
import duckdb
import tcpprofile.commands.analyze as analyze
from tcpprofile.cli import main

def long_query(args):
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    duckdb.connect(config={ONE_THREAD!r}).execute({LONG_QUERY!r}).fetchall()
    return 0

analyze.run = long_query
sys.exit(main(["analyze", "--db", "unused.duckdb"]))
"""


def test_sigint_during_a_query_exits_130_as_an_interrupt(tmp_path):
    """Fails with exit 1 and a traceback when the CLI catches only KeyboardInterrupt."""
    res = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().endswith("tcpprofile analyze: interrupted")


def test_the_exceptions_duckdb_raises_for_an_interrupt_are_interrupts():
    con = duckdb.connect(config=ONE_THREAD)
    done = threading.Event()

    def interrupt_until_done():     # an interrupt that comes before the query starts is lost: repeat it
        while not done.wait(0.1):
            con.interrupt()

    threading.Thread(target=interrupt_until_done, daemon=True).start()
    try:
        con.execute(LONG_QUERY).fetchall()
        raised = None
    except Exception as err:        # noqa: BLE001 - the exception DuckDB raises is what is tested
        raised = err
    finally:
        done.set()
    assert raised is not None and is_interrupt(raised)
    assert is_interrupt(KeyboardInterrupt())
    assert not is_interrupt(RuntimeError("Query failed"))
    assert not is_interrupt(ValueError("Query interrupted"))
