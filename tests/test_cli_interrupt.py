"""Ctrl-C while DuckDB runs a query: DuckDB (2.0) turns the SIGINT into RuntimeError('Query interrupted'),
which the CLI must treat as the interrupt it is (exit 130, 'interrupted'), as the campaign's kill test
requires of every SIGINT (tests/test_campaign_kills.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb

from tcpprofile.errors import is_interrupt

LONG_QUERY = "SELECT count(*) FROM range(10000000000) t(x) WHERE x % 7 = 3"   # ~1 min on one thread (1.75 %/s here)
SRC = str(Path(__file__).resolve().parents[1] / "src")     # the child imports the tcpprofile under test
ONE_THREAD = {"threads": 1}     # however many cores a machine has, the query runs long after its interrupt

# The analyze command's function replaced by a long query; SIGINT to the process once the query runs:
# DuckDB's query_progress() is -1 until a query executes, then its percentage (duckdb Python API). A signal
# sent before that (a fixed delay on a loaded machine) raises KeyboardInterrupt in Python, which even a
# CLI catching only KeyboardInterrupt turns into exit 130: the test could not fail on the defect.
SCRIPT = f"""
import os, signal, sys, threading, time
import duckdb
import tcpprofile.commands.analyze as analyze
from tcpprofile.cli import main

def long_query(args):
    con = duckdb.connect(config={ONE_THREAD!r})

    def interrupt_once_running():
        while con.query_progress() < 0:
            time.sleep(0.01)            # polling interval of the readiness check
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    con.execute({LONG_QUERY!r}).fetchall()
    return 0

analyze.run = long_query
sys.exit(main(["analyze", "--db", "unused.duckdb"]))
"""


def test_sigint_during_a_query_exits_130_as_an_interrupt(tmp_path):
    """Fails with exit 1 and a traceback when the CLI catches only KeyboardInterrupt (the SIGINT lands
    while the query runs, by construction)."""
    res = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": SRC})
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
