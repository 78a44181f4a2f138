"""Work done ahead in a second thread: the next block read and restored while this one is located."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

T = TypeVar("T")
U = TypeVar("U")


def ahead(items: Iterator[T], work: Callable[[T], U], depth: int = 2) -> Generator[U, None, None]:
    """``work(item)`` of each item, made up to ``depth`` items ahead in a second thread: reading and
    restoring the next block (file reads and compiled kernels, which let go of the interpreter) overlap
    locating this one. The results and their order are those of ``map(work, items)``; an exception in the
    thread is raised here."""
    done = object()
    out: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                out.put(work(item))
            out.put(done)
        except BaseException as err:  # handed to the consumer, raised there
            out.put(err)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while (value := out.get()) is not done:
            if isinstance(value, BaseException):
                raise value
            yield value
    finally:
        stop.set()
        while thread.is_alive():  # unblock a put waiting on a full queue
            with contextlib.suppress(queue.Empty):
                out.get_nowait()
            thread.join(0.01)
