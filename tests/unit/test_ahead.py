"""The locator's read-ahead thread (``pintime.locate.stream.ahead``): the same results in the same order as a
plain map, an error in the thread raised to the caller, and a caller that stops early leaves no thread
behind."""

from __future__ import annotations

import threading

import pytest
from pintime.errors import PintimeError
from pintime.locate.stream.ahead import ahead


def test_same_results_in_the_same_order():
    assert list(ahead(iter(range(50)), lambda x: x * x)) == [x * x for x in range(50)]


def test_an_error_in_the_thread_reaches_the_caller():
    def items():
        yield 1
        raise PintimeError("truncated file")

    out = ahead(items(), lambda x: x)
    assert next(out) == 1
    with pytest.raises(PintimeError, match="truncated"):
        next(out)


def test_stopping_early_ends_the_thread():
    before = threading.active_count()
    out = ahead(iter(range(1000)), lambda x: x)
    assert next(out) == 0
    out.close()  # the caller gives up (an error while locating)
    assert threading.active_count() == before
