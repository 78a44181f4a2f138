"""Stop signals taken over while a block runs: Ctrl-C, a kill, the terminal closing, Ctrl-Break — each
where the platform has it (Windows has no SIGHUP and no signal masks, POSIX no SIGBREAK)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")


def stop_signals(names: tuple[str, ...] = STOP_SIGNAL_NAMES) -> list[signal.Signals]:
    """The signals of ``names`` this platform has."""
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


@contextmanager
def handled(signals: list[signal.Signals], handler: Callable[[int, Any], None]) -> Iterator[None]:
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
def stop_signals_call(stop: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, each stop signal calls ``stop`` with the signal's name ("SIGINT" for Ctrl-C)
    instead of raising KeyboardInterrupt or ending the process (:func:`handled`'s rules)."""
    with handled(stop_signals(), lambda signum, frame: stop(signal.Signals(signum).name)):
        yield


@contextmanager
def held(signals: list[signal.Signals]) -> Iterator[None]:
    """``signals`` held back while the block runs, delivered when it ends: a step that must not be cut in
    two (a temporary file created and its name kept, so that it can be removed). Where the platform has
    no signal masks (Windows), nothing is held."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
