"""Steps a Ctrl-C must not split: starting a child and recording it; committing a store's transaction.

Python raises KeyboardInterrupt between any two bytecodes of the main thread.  Landing inside
`subprocess.Popen` after the fork (the child has exec'd; the parent still waits on its error pipe), it
loses the Popen object: nobody can stop the child, which runs on orphaned (a 30 s iperf3 client).
Landing inside DuckDB's COMMIT, it leaves a transaction that may or may not have been committed.
`held()` keeps SIGINT and SIGTERM pending for the few statements of such a step and hands them to the
handlers that were installed (KeyboardInterrupt, a link's tear-down, `run`'s SIGTERM handler) as the
step ends, so the caller's own clean-up already knows what exists.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held() -> Iterator[None]:
    """Run the block with SIGINT/SIGTERM held; a signal that arrived meanwhile is delivered (once per
    signal number, in arrival order) to the previous handler when the block ends, even if it raised.
    Off the main thread (where Python runs no handlers) the block simply runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in HELD}
    if any(h is None for h in previous.values()):   # a handler installed from C: not ours to swap
        yield
        return
    arrived: list[tuple[int, object]] = []

    def note(signum, frame) -> None:
        if signum not in (s for s, _ in arrived):
            arrived.append((signum, frame))

    for s in HELD:
        signal.signal(s, note)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for signum, frame in arrived:
            _deliver(signum, frame, previous[signum])


def _deliver(signum: int, frame, handler) -> None:
    if callable(handler):
        handler(signum, frame)            # default_int_handler raises KeyboardInterrupt here
    elif handler == signal.SIG_DFL:       # the default action (SIGTERM: terminate) by the signal itself
        os.kill(os.getpid(), signum)
    # SIG_IGN: ignored, as it would have been
