"""Stop signals taken over while a block runs: Ctrl-C, a kill, the terminal closing."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, a kill, the terminal closing


@contextmanager
def handled(signals: tuple[signal.Signals, ...], handler: Callable[[int, Any], None]) -> Iterator[None]:
    """While the block runs, ``handler`` takes each of ``signals``; the previous handlers come back after
    it. Main thread only (elsewhere Python delivers no signal anyway). A signal ignored when the block
    starts stays ignored, as Python itself leaves it: a job started with ``nohup … &`` was shielded from
    the terminal's Ctrl-C and hangup on purpose."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in signals}
    for s, old in previous.items():
        if old is not signal.SIG_IGN:
            signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextmanager
def held(signals: tuple[signal.Signals, ...]) -> Iterator[None]:
    """``signals`` held back while the block runs, delivered when it ends: a step that must not be cut in
    two (a temporary file created and its name kept, so that it can be removed)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
