"""Stop signals that end a long task cleanly: while it runs, Ctrl-C, a kill or a hang-up only call back, so
the task finishes what it holds (a recording: its file and sidecar) instead of dying mid-write."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Ctrl-C, kill, the terminal closing (POSIX), Ctrl-Break (Windows): each where the platform has it
STOP_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")


def stop_signals() -> list[signal.Signals]:
    """The stop signals this platform has (Windows has no SIGHUP, POSIX no SIGBREAK)."""
    return [getattr(signal, name) for name in STOP_SIGNAL_NAMES if hasattr(signal, name)]


@contextmanager
def stop_signals_call(stop: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, each of :func:`stop_signals` calls ``stop`` with the signal's name ("SIGINT"
    for Ctrl-C) instead of raising KeyboardInterrupt or ending the process; the handlers before are back
    afterwards. Main thread only (elsewhere Python delivers no signal anyway). A signal ignored when the
    block starts stays ignored, as Python itself leaves it: a job started in the background
    (``nohup pintime record … &``) was shielded from the terminal's Ctrl-C and hangup on purpose."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        stop(signal.Signals(signum).name)

    previous = {s: signal.getsignal(s) for s in stop_signals()}
    for s, before in previous.items():
        if before is not signal.SIG_IGN:
            signal.signal(s, handler)
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)
